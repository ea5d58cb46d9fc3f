"""ackdeck: consumed-only acks for agent inboxes and a wake gate for process monitors.

The one top-level name ackdeck installs, in a src/ layout: the library is `ackdeck.core`
(src/ackdeck/core) and the dashboard `ackdeck.tui` (src/ackdeck/tui), real folders, so a
checkout, an editable install and a wheel import the same files every tool reads.

Kept empty on purpose: every command imports this package first, and the per-turn commands
must start fast. The version comes from the package metadata (`ackdeck.core.version`).
"""
