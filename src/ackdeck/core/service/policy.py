"""A room's policy for the doors: the rules for what a door's user types (`10m`, `off`, a
count), from core/rooms/policy.py, where the policy and its file live."""

from __future__ import annotations

from ackdeck.core.rooms.policy import RoomPolicy, parse_deliveries, parse_duration

__all__ = ["RoomPolicy", "parse_deliveries", "parse_duration"]
