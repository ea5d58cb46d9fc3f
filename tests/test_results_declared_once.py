"""One value type per concept at the backend boundary, declared once (issue #18).

Both backends return core/rooms/results.py's types; the service's results and their JSON
shapes (CLI --json, MCP outputSchema) take those facts from that declaration instead of
spelling them again, and streamed JSON is written by a writer that knows the shape."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from ackdeck.core.cli._output import JsonParts
from ackdeck.core.rooms import results as values
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.redis.room import RedisRoom
from ackdeck.core.service import rooms
from ackdeck.core.service.results import fields_of

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "src" / "ackdeck"  # the package (a src/ layout)


def _shapes_by_hand(source: str, where: str) -> list[tuple[str, set[str]]]:
    """Every SHAPE a class body of `source` declares by hand (`SHAPE = ...`, `SHAPE: T = ...`,
    whatever the value), with its constant keys. The base classes' empty default, which their
    subclasses' declarations fill, is not one."""
    found = []
    for cls in ast.walk(ast.parse(source)):
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in cls.body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if not any(isinstance(t, ast.Name) and t.id == "SHAPE" for t in targets):
                continue
            if isinstance(value, ast.Dict) and not value.keys:
                continue  # `SHAPE: ClassVar[dict[str, Any]] = {}` in a base class
            keys = set()
            if isinstance(value, ast.Dict):
                keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
            found.append((f"{where}:{node.lineno} {cls.name}", keys))
    return found


def _shapes_in_package() -> list[tuple[str, set[str]]]:
    found = []
    for path in sorted([*(PKG / "core").rglob("*.py"), *(PKG / "tui").rglob("*.py")]):
        found += _shapes_by_hand(path.read_text(), str(path.relative_to(PKG)))
    return found


def test_the_walker_finds_a_shape_declared_by_hand() -> None:
    source = (
        "class A(Result):\n    SHAPE = {'acked_total': int, 'lines': list[str]}\n"
        "class B(Struct):\n    SHAPE: ClassVar[dict[str, Any]] = {'x': int}\n"
        "class C(Struct):\n    SHAPE = dict(x=int)\n"
        "class Base(Struct):\n    SHAPE: ClassVar[dict[str, Any]] = {}\n"
    )
    found = _shapes_by_hand(source, "m.py")
    assert [w for w, _ in found] == ["m.py:2 A", "m.py:4 B", "m.py:6 C"]
    assert found[0][1] == {"acked_total", "lines"}


def test_no_shape_is_declared_by_hand() -> None:
    """Every JSON shape is derived from its class's declared fields (core/base/struct.py).
    This replaced a check that needed at least one SHAPE literal to exist (its premise), and
    is stronger: a shape written by hand anywhere in the package fails it, not only one that
    repeats a backend's field (a derived shape takes a backend's facts from its fields)."""
    assert _shapes_in_package() == [], "a JSON shape written by hand"


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
    tree = ast.parse((PKG / "core" / "rooms" / "room_backend.py").read_text())
    classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert classes == ["RoomBackend"]


def test_streamed_json_parts_make_the_object_json_dumps_makes() -> None:
    whole = {"room": "r", "path": "/r", "lines": ["é", "b"], "mode": "all", "acked": 2,
             "preserved": 0, "message": "m", "note": None, "proof": "estimate",
             "proof_note": "why", "unshown": 0, "next": None}  # fmt: skip
    parts = JsonParts(rooms.Acked.SHAPE)
    text = parts.part({k: whole[k] for k in ("room", "path", "lines")})
    rest = ("mode", "acked", "preserved", "message", "note", "proof", "proof_note", "unshown")
    rest += ("next",)
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
