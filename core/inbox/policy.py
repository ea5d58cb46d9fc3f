"""A room's policy: when its lines are overdue, after how many deliveries a line goes to the
dead-letter room, and which session the owner is (told by a wake about either).

It lives with the room (a file room's `<sidecar>/policy.json`, a redis room's meta hash field
`policy`), so every door that opens the room applies the same policy: set once with
`ackdeck room policy ROOM --overdue 10m --max-deliveries 3 --owner S`. Everything is off by
default.
"""

from __future__ import annotations

import json

from ackdeck.core.base.jsonfields import JsonRecord, get_optional
from ackdeck.core.base.names import check_name
from ackdeck.core.errors import CorruptState, InvalidInput, RecordError

FILE = "policy.json"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class RoomPolicy(JsonRecord):
    def __init__(
        self,
        *,
        overdue: float | None = None,
        max_deliveries: int | None = None,
        owner: str | None = None,
    ) -> None:
        self.overdue = overdue  # seconds a line may wait unacked (None: no alert)
        self.max_deliveries = max_deliveries  # deliveries before the dead-letter room (None: never)
        self.owner = owner  # the session told about overdue rooms and dead letters

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> RoomPolicy:
        return cls(
            overdue=get_optional(d, float, "overdue"),
            max_deliveries=get_optional(d, int, "max_deliveries"),
            owner=get_optional(d, str, "owner"),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "overdue": self.overdue,
            "max_deliveries": self.max_deliveries,
            "owner": self.owner,
        }


def parse_duration(text: str) -> float | None:
    """`90`, `90s`, `10m`, `1h`, `2d` as seconds; `off` / `none` / `0` as None (no threshold)."""
    t = text.strip().lower()
    if t in ("off", "none", "0", ""):
        return None
    unit = _UNITS.get(t[-1:])
    number = t[:-1] if unit is not None else t
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise InvalidInput(f"invalid duration {text!r}: use e.g. 90s, 10m, 1h, 2d or off") from None
    if not 0 < value < 10 * 365 * 86400:
        raise InvalidInput(f"invalid duration {text!r}: it must be positive (or off)")
    return value


def parse_deliveries(text: str) -> int | None:
    t = text.strip().lower()
    if t in ("off", "none", "0"):
        return None
    if not t.isdigit() or not 1 <= int(t) <= 1_000_000:
        raise InvalidInput(f"invalid --max-deliveries {text!r}: a count from 1, or off")
    return int(t)


def checked(policy: RoomPolicy) -> RoomPolicy:
    if policy.owner is not None:
        check_name(policy.owner)
    return policy


def decode(raw: bytes | str | None, where: str) -> RoomPolicy:
    if not raw:
        return RoomPolicy()
    try:
        return RoomPolicy.from_json(raw)
    except (ValueError, RecordError):
        why = f"corrupt room policy {where}; set it again with `room policy`"
        raise CorruptState(why) from None


def encode(policy: RoomPolicy) -> bytes:
    return json.dumps(policy.to_dict()).encode()
