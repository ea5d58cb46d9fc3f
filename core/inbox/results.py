"""What a file room's operations return to the doors (core/inbox/rooms.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base.record import Struct

if TYPE_CHECKING:
    from ackdeck.core.inbox.ledger import AckMode


class ReadResult(Struct):
    lines: list[bytes]
    start: int
    end: int
    epoch: int
    # The complete lines as one buffer (exactly the bytes a receipt records), for doors that
    # write them out unchanged.
    data: bytes = b""


class AckResult(Struct):
    mode: AckMode
    acked: int
    preserved: int
    message: str
    lines: list[bytes] | None = None  # only for ack-all


class SessionStatus(Struct):
    in_flight: int
    unread: int


class RoomStatus(Struct):
    path: Path
    exists: bool
    pending: int
    partial_bytes: int
    acked_total: int
    preserved_total: int
    pushed_total: int
    epoch: int
    last_ack_at: float | None
    sessions: dict[str, SessionStatus] = {}  # copied per instance by Struct
    # Late unlocked writers: lines carried in from replaced inodes (ever), and replaced inodes
    # kept past their grace period right now because a process still holds them open.
    late_total: int = 0
    held_open: int = 0
