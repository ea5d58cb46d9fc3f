"""core/base/record.py: the typed records behind ackdeck's state files, and the result structs."""

from __future__ import annotations

import pytest

from ackdeck.core.errors import RecordError
from ackdeck.core.inbox import ledger as L
from ackdeck.core.inbox.rooms import ReadResult
from ackdeck.core.watch.wakes import WakeRecord


def _wake(**extra: object) -> dict[str, object]:
    return {
        "session": "s",
        "name": "build",
        "kind": "match",
        "lines": [{"run_id": "r", "start": 0, "end": 4, "text": "ERR"}],
        "dropped": 0,
        "filter": "ERR",
        "exclude": False,
        "total_matches": 1,
        "status": "running",
        "created_at": 1,
        "updated_at": 2.5,
        **extra,
    }


def test_a_record_round_trips_and_ignores_unknown_fields() -> None:
    rec = WakeRecord.model_validate(_wake(from_a_newer_version=True))
    assert rec.created_at == 1.0 and isinstance(rec.created_at, float)
    assert rec.lines[0].text == "ERR" and rec.notice_seq == 0
    again = WakeRecord.model_validate_json(rec.model_dump_json())
    assert again == rec and "from_a_newer_version" not in rec.model_dump()


@pytest.mark.parametrize(
    "bad",
    [
        {"dropped": "0"},  # a number written as text is refused, not coerced
        {"exclude": "yes"},
        {"total_matches": True},
        {"lines": [{"run_id": "r", "start": 0, "end": 4}]},  # a line without its text
        {"lines": "ERR"},
    ],
)
def test_a_damaged_record_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(RecordError):
        WakeRecord.model_validate(_wake(**bad))


def test_missing_fields_and_bad_json_are_record_errors() -> None:
    with pytest.raises(RecordError, match="Field required"):
        WakeRecord.model_validate({"session": "s"})
    for raw in (b"{not json", b"\xff\xfe", b"[1, 2]"):
        with pytest.raises(RecordError):
            WakeRecord.model_validate_json(raw)


def test_mutable_defaults_are_not_shared_and_copies_take_updates() -> None:
    a, b = L.Ledger(), L.Ledger()
    a.prev.append(L.PrevInode(name="x", dev=1, ino=2, offset=0, since=0))
    assert b.prev == []
    c = a.model_copy(update={"base": 10})
    assert (c.base, a.base, c.prev) == (10, 0, a.prev)


def test_structs_are_immutable_values() -> None:
    r = ReadResult([b"a\n"], 0, 2, epoch=1)
    assert r == ReadResult(lines=[b"a\n"], start=0, end=2, epoch=1)
    assert r != ReadResult([b"a\n"], 0, 2, 2)
    assert "epoch=1" in repr(r)
    with pytest.raises(AttributeError):
        r.start = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        ReadResult([b"a\n"], 0, 2)  # type: ignore[call-arg]


def test_nested_maps_and_aliases_round_trip() -> None:
    from ackdeck.core.agents.notices import NoticeState, RoomMark, WakeMark

    state = NoticeState(
        rooms={"/r/inbox.txt": RoomMark(epoch=1, end=40)},
        wakes={"build": WakeMark(created_at=2.0, lines=[("run", 0, 4)])},
    )
    again = NoticeState.model_validate_json(state.model_dump_json())
    assert again == state and again.wakes["build"].lines == [("run", 0, 4)]
    with pytest.raises(RecordError):
        NoticeState.model_validate({"rooms": {"/r": {"epoch": "1", "end": 0}}})
    with pytest.raises(RecordError):
        NoticeState.model_validate({"wakes": {"b": {"created_at": 1, "lines": [["run", 0]]}}})
