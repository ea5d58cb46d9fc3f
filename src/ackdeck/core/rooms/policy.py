"""A room's policy: when its lines are overdue, after how many deliveries a line goes to the
dead-letter room, and which session the owner is (told by a wake about either).

It lives with the room (a file room's `<sidecar>/policy.json`, a redis room's meta hash field
`policy`), so every door that opens the room applies the same policy: set once with
`ackdeck room policy ROOM --overdue 10m --max-deliveries 3 --owner S`. Everything is off by
default.
"""

from __future__ import annotations

from ackdeck.core.base import locations
from ackdeck.core.base.jsontext import dumps
from ackdeck.core.base.names import check_name
from ackdeck.core.base.struct import Sparse, Struct
from ackdeck.core.errors import CorruptState, InvalidInput, InvalidName, RecordError

FILE = locations.POLICY
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_OVERDUE = 10 * 365 * 86400.0  # seconds; past this a threshold never fires: a typo
MAX_DELIVERIES = 1_000_000


class RoomPolicy(Struct, kw_only=True):
    overdue: float | None = None  # seconds a line may wait unacked (None: no alert)
    max_deliveries: int | None = None  # deliveries before the dead-letter room (None: never)
    # the session told about overdue rooms and dead letters (a wake store's directory name)
    owner: str | None = None
    # A work queue (core/rooms/queue.py): each line claimed by one session under a lease,
    # finished with `done`; max_deliveries then counts claims, not reads. A sparse key: a
    # policy.json written before it existed reads back the same.
    queue: Sparse[bool | None] = None

    def __init__(
        self,
        *,
        overdue: float | None = None,
        max_deliveries: int | None = None,
        owner: str | None = None,
        queue: bool | None = None,
    ) -> None:
        # Checked here, whoever builds one (a door's options, policy.json, the redis hash):
        # `max_deliveries: 0` moved lines never read, and an owner `../../x` became a path.
        super().__init__(
            overdue=check_overdue(overdue),
            max_deliveries=check_deliveries(max_deliveries),
            owner=None if owner is None else check_name(owner, "owner"),
            queue=True if queue else None,
        )

    def replace(self, **changes: object) -> RoomPolicy:
        """A copy with `changes`, checked as a new policy is (Struct's copy takes them as
        they are)."""
        return RoomPolicy(**{**self.to_json(), **changes})


def check_overdue(value: float | None) -> float | None:
    """`value` if it is a threshold in seconds that can fire (positive, finite, under ten
    years), else InvalidInput saying so."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"invalid overdue {value!r}: a number of seconds")
    if not 0 < value < MAX_OVERDUE:  # also refuses NaN and infinity
        raise InvalidInput(f"invalid overdue {value!r}: seconds above 0 and under ten years")
    return float(value)


def check_deliveries(value: int | None) -> int | None:
    """`value` if it is a delivery count from 1, else InvalidInput saying so."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"invalid max_deliveries {value!r}: a count from 1")
    if not 1 <= value <= MAX_DELIVERIES:
        raise InvalidInput(
            f"invalid max_deliveries {value!r}: a count from 1 to {MAX_DELIVERIES:,} "
            "(0 would move lines nobody read)"
        )
    return value


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
    if not 0 < value < MAX_OVERDUE:
        raise InvalidInput(f"invalid duration {text!r}: above 0 and under ten years (or off)")
    return value


def parse_deliveries(text: str) -> int | None:
    t = text.strip().lower()
    if t in ("off", "none", "0"):
        return None
    if not t.isdigit() or not 1 <= int(t) <= MAX_DELIVERIES:
        raise InvalidInput(f"invalid --max-deliveries {text!r}: a count from 1, or off")
    return int(t)


def decode(raw: bytes | str | None, where: str) -> RoomPolicy:
    """The policy stored at `where` (a file, a redis hash: anyone who can write them wrote
    it), refused in one line unless every field makes sense."""
    if not raw:
        return RoomPolicy()
    try:
        return RoomPolicy.loads(raw)
    except (ValueError, RecordError):
        why = f"corrupt room policy {where}; set it again with `room policy`"
        raise CorruptState(why) from None
    except (InvalidInput, InvalidName) as exc:
        why = f"room policy {where} refused: {exc}; set it again with `room policy`"
        raise CorruptState(why) from None


def encode(policy: RoomPolicy) -> bytes:
    return dumps(policy.to_json()).encode()
