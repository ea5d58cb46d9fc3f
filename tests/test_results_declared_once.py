"""One value type per concept at the backend boundary, declared once (issue #18).

Both backends return core/inbox/results.py's types; the service's results and their JSON
shapes (CLI --json, MCP outputSchema) take those facts from that declaration instead of
spelling them again, and streamed JSON is written by a writer that knows the shape."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from ackdeck.core.cli._output import JsonParts
from ackdeck.core.inbox import results as values
from ackdeck.core.inbox.redis_room import RedisRoom
from ackdeck.core.inbox.rooms import Room
from ackdeck.core.service import rooms
from ackdeck.core.service.results import fields_of

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "src" / "ackdeck"  # the package (a src/ layout)
BACKEND_VALUES = (values.RoomStatus, values.SessionStatus, values.ReadResult, values.AckResult)


def _declared_fields() -> set[str]:
    # `path` names a room everywhere and `lines` are shown decoded (the door's own facts);
    # `sessions` is re-typed: each session's counts as their own result (SessionCounts).
    return {f for v in BACKEND_VALUES for f in v._fields} - {"path", "lines", "sessions"}


# Results of other concepts whose words happen to match (a wake's `pending` lines; one line's
# own `deliveries` in its journey, where the room status counts its oldest line's).
OTHER_CONCEPTS = ("core/service/wakes.py", "core/service/procs.py", "core/service/trace.py")


def _shape_dicts() -> list[tuple[str, set[str]]]:
    """Every dict literal assigned to a SHAPE in core/ and tui/, with its constant keys."""
    found = []
    for path in sorted([*(PKG / "core").rglob("*.py"), *(PKG / "tui").rglob("*.py")]):
        if str(path.relative_to(PKG)) in OTHER_CONCEPTS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "SHAPE" for t in node.targets)
                and isinstance(node.value, ast.Dict)
            ):
                keys = {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
                found.append((f"{path.relative_to(REPO)}:{node.lineno}", keys))
    return found


def test_no_shape_spells_out_a_fact_a_backend_value_type_declares() -> None:
    shapes = _shape_dicts()
    assert shapes, "the walker found no SHAPE at all"
    offenders = {where: sorted(keys & _declared_fields()) for where, keys in shapes}
    assert {w: k for w, k in offenders.items() if k} == {}


def test_the_room_results_json_carries_every_backend_fact() -> None:
    assert set(fields_of(values.RoomStatus)) - {"path", "sessions"} <= set(rooms.RoomState.SHAPE)
    # A session's result carries every backend fact, plus the ages derived from them.
    derived = set(rooms.SessionCounts.SHAPE) - set(fields_of(values.SessionStatus))
    assert set(fields_of(values.SessionStatus)) <= set(rooms.SessionCounts.SHAPE)
    assert derived == {"in_flight_age", "unread_age", "overdue"}
    # The asking session's own counts, its timestamps shown as ages.
    stamps = {"read_at", "oldest_unread_at"}
    assert set(fields_of(values.SessionStatus)) - stamps <= set(rooms.RoomState.SHAPE)
    assert {"in_flight_age", "unread_age"} <= set(rooms.RoomState.SHAPE)
    assert set(fields_of(values.ReadResult)) - {"lines", "data"} <= set(rooms.Lines.SHAPE)
    assert set(fields_of(values.AckResult)) <= set(rooms.Acked.SHAPE)
    # Its JSON is exactly its fields (no separate shape to keep in step).
    assert rooms.Pushed.SHAPE == fields_of(rooms.Pushed)
    assert list(rooms.Pushed.SHAPE)[:3] == ["room", "path", "offset"]


def test_both_backends_return_the_same_value_types() -> None:
    for method in ("read", "ack", "status"):
        file_kind = getattr(Room, method).__annotations__["return"]
        redis_kind = getattr(RedisRoom, method).__annotations__["return"]
        assert file_kind == redis_kind, method


def test_the_backend_interface_has_no_protocol_views_left() -> None:
    tree = ast.parse((PKG / "core" / "inbox" / "room_backend.py").read_text())
    classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert classes == ["RoomBackend"]


def test_streamed_json_parts_make_the_object_json_dumps_makes() -> None:
    whole = {"room": "r", "path": "/r", "lines": ["é", "b"], "mode": "all", "acked": 2,
             "preserved": 0, "message": "m", "note": None, "next": None}  # fmt: skip
    parts = JsonParts(rooms.Acked.SHAPE)
    text = parts.part({k: whole[k] for k in ("room", "path", "lines")})
    rest = ("mode", "acked", "preserved", "message", "note", "next")
    text += parts.part({k: whole[k] for k in rest})
    text += parts.end()
    assert text == json.dumps(whole, ensure_ascii=False) + "\n"


def test_streamed_json_parts_refuse_a_key_twice_one_not_in_the_shape_or_a_missing_one() -> None:
    parts = JsonParts(rooms.Acked.SHAPE)
    parts.part({"room": "r"})
    with pytest.raises(ValueError, match="twice"):
        parts.part({"room": "r"})
    with pytest.raises(ValueError, match="not a key"):
        parts.part({"colour": "red"})
    with pytest.raises(ValueError, match="lacks path"):
        parts.end()
    assert parts.abort() == "}\n"  # an unfinished object is still closed
