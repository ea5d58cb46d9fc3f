"""ackdeck core: consumed-only acks for rooms and a wake gate for monitors.

This package never imports Textual (tests/test_layering.py asserts it). Every surface
(CLI, MCP server, dashboard) calls into these modules.
"""
