"""ackdeck: consumed-only acks for agent inboxes and a wake gate for process monitors.

The one top-level name ackdeck installs. The library is `ackdeck.core` (the repository's `core/`
folder) and the dashboard `ackdeck.tui` (`tui/`); both folders are linked in here so that a
checkout, an editable install and a wheel all import the same names.

Kept empty on purpose: every command imports this package first, and the per-turn commands
must start fast. The version comes from the package metadata (`ackdeck.core.version`).
"""
