"""core/base/jsonfields.py and the records of ackdeck's state files: each record (a Struct)
reads its declared fields (`from_dict`, `loads`), refuses a damaged file, and writes the bytes
the files have always held (`dumps`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import RecordError
from ackdeck.core.monitors.runs import MonitorsState, RunMeta
from ackdeck.core.monitors.shown import ReadState
from ackdeck.core.monitors.wakes import WakeRecord
from ackdeck.core.rooms import policy
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file.receipts import ReceiptHeader
from ackdeck.core.rooms.file.room import ReadResult
from ackdeck.core.rooms.file.sidecar import AuditEntry, Sidecar
from ackdeck.core.service.notices import NoticeState, RoomMark, WakeMark


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


# Written by the previous implementation (pydantic's model API over annotations, before that
# pydantic itself), every field set: the same bytes must load and be written back.
WRITTEN_BEFORE: list[tuple[type[Struct], str]] = [
    (
        L.Ledger,
        (
            '{"version":1,"base":40,"epoch":2,"identity":{"dev":2049,"ino":77,"size":120,'
            '"head_len":120,"head_sha":"ab","mtime_ns":17,"birth_ns":null},'
            '"pending":{"identity":{"dev":2049,"ino":77,"size":120,"head_len":120,'
            '"head_sha":"ab","mtime_ns":17,"birth_ns":null},"base":60,"session":"agent",'
            '"acked":2,"at":5.5},"prev":[{"name":"prev-1","dev":1,"ino":2,"offset":3,'
            '"since":4.0,"held_at":null}],"acked_total":9,"preserved_total":1,'
            '"last_ack_at":6.25,"last_ack_session":"agent","late_total":0,"dead_total":1}'
        ),
    ),
    (
        ReceiptHeader,
        (
            '{"session":"s","epoch":2,"start":40,"end":60,"lines":2,"sha256":"cd",'
            '"read_at":7.5,"acked":false,"seen":{"dev":2049,"ino":77,"size":120,'
            '"head_len":120,"head_sha":"ab","mtime_ns":17,"birth_ns":null},'
            '"reader":"mcp-1","read_id":"r1","unlogged":0}'
        ),
    ),
    (
        WakeRecord,
        (
            '{"session":"s","name":"build","kind":"match","lines":[{"run_id":"r",'
            '"start":0,"end":4,"text":"ERR é ☃"}],"dropped":1,"filter":"ERR",'
            '"exclude":false,"total_matches":3,"status":"running","created_at":1.5,'
            '"updated_at":2.5,"delivered_total":1,"superseded_total":0,"run_id":"r",'
            '"exit_code":null,"notice_pending":true,"notice_seq":2,'
            '"notices":[{"run_id":"r","kind":"exited","status":"exited","exit_code":1,'
            '"seq":2}],"matches_by_run":{"r":3},"dropped_by_run":{"r":1},'
            '"dropped_span_by_run":{"r":[0,40]},"notice_run_id":"r",'
            '"notice_status":"exited","notice_exit_code":1}'
        ),
    ),
    (
        ReadState,
        (
            '{"session":"s","run_id":"r","cursor":40,"shown":[[0,4],[10,20]],'
            '"saw_end":true,"reads":3,"updated_at":9.5}'
        ),
    ),
    (
        RunMeta,
        (
            '{"name":"build","run_id":"r","argv":["make","-j","é"],"cwd":"/w",'
            '"session":"s","monitors":[{"pattern":"ERR","exclude":false,'
            '"cooldown_ms":1000,"max_events":null}],"pid":10,"supervisor_pid":9,'
            '"status":"exited","exit_code":0,"created_at":1.0,"started_at":1.25,'
            '"ended_at":3.5,"lost_reason":null}'
        ),
    ),
    (
        MonitorsState,
        (
            '{"resume_offset":40,"scanned_to":50,"monitors":[{"matches":1,"events":1,'
            '"suppressed":0,"seen":2,"resume_offset":40}],"done":false}'
        ),
    ),
    (
        NoticeState,
        (
            '{"rooms":{"/r/inbox.txt":{"epoch":1,"end":40,"file":[2049,77,null],'
            '"acked_total":3,"last_ack_at":2.5},"/r/b.txt":{"epoch":0,"end":4,'
            '"file":[1,2,3],"acked_total":0,"last_ack_at":null}},'
            '"wakes":{"build":{"created_at":2.0,"notice_seq":1,"lines":[["run",0,4]]}}}'
        ),
    ),
]


@pytest.mark.parametrize(
    ("record", "raw"), WRITTEN_BEFORE, ids=lambda v: getattr(v, "__name__", "")
)
def test_files_written_before_load_and_are_written_back_byte_for_byte(
    record: type[Struct], raw: str
) -> None:
    loaded = record.loads(raw.encode())
    assert loaded.dumps() == raw
    assert record.loads(loaded.dumps()) == loaded


# The audit log and the policy are written with json.dumps' default separators.
AUDIT = (
    '{"at": 1.5, "session": "s", "mode": "prefix", "epoch": 1, "start": 0, "end": 10, '
    '"acked": 2, "preserved": 1, "sha256": "ef", "dead": null}\n'
)
POLICY = b'{"overdue": 600.0, "max_deliveries": 3, "owner": "ops"}'


def test_the_audit_log_and_the_policy_keep_their_spaced_json(tmp_path: Path) -> None:
    entry = AuditEntry.from_dict(
        {
            "at": 1.5,
            "session": "s",
            "mode": "prefix",
            "epoch": 1,
            "start": 0,
            "end": 10,
            "acked": 2,
            "preserved": 1,
            "sha256": "ef",
        }
    )
    side = Sidecar(tmp_path / "inbox.txt")
    side.ensure(create=True)
    side.audit(entry)
    assert side.audit_file.read_text() == AUDIT
    assert AuditEntry.loads(AUDIT) == entry
    pol = policy.decode(POLICY, "test")
    assert (pol.overdue, pol.max_deliveries, pol.owner) == (600.0, 3, "ops")
    assert policy.encode(pol) == POLICY


def test_a_record_round_trips_and_ignores_unknown_fields() -> None:
    rec = WakeRecord.from_dict(_wake(from_a_newer_version=True))
    assert rec.created_at == 1.0 and isinstance(rec.created_at, float)
    assert rec.lines[0].text == "ERR" and rec.notice_seq == 0
    again = WakeRecord.loads(rec.dumps())
    assert again == rec and "from_a_newer_version" not in rec.to_json()


@pytest.mark.parametrize(
    "bad",
    [
        {"dropped": "0"},  # a number written as text is refused, not coerced
        {"dropped": 1.5},  # a fraction is not a count
        {"exclude": "yes"},
        {"total_matches": True},  # a bool is not an int in a state file
        {"lines": [{"run_id": "r", "start": 0, "end": 4}]},  # a line without its text
        {"lines": "ERR"},
        {"lines": ["ERR"]},
        {"status": None},  # not nullable
        {"matches_by_run": {"r": "3"}},
        {"dropped_span_by_run": {"r": [0]}},
        {"notices": [{"run_id": "r", "kind": "exited"}]},  # nested records are checked
    ],
)
def test_a_damaged_record_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(RecordError):
        WakeRecord.from_dict(_wake(**bad))


def test_an_integral_float_is_an_int_and_an_int_is_a_float() -> None:
    rec = WakeRecord.from_dict(_wake(dropped=2.0, created_at=3))
    assert rec.dropped == 2 and isinstance(rec.dropped, int)
    assert rec.created_at == 3.0 and isinstance(rec.created_at, float)


def test_missing_fields_and_bad_json_are_record_errors() -> None:
    with pytest.raises(RecordError, match="field required"):
        WakeRecord.from_dict({"session": "s"})
    with pytest.raises(RecordError, match="filter: field required"):  # required though nullable
        WakeRecord.from_dict({k: v for k, v in _wake().items() if k != "filter"})
    for raw in (b"{not json", b"\xff\xfe", b"[1, 2]"):
        with pytest.raises(RecordError):
            WakeRecord.loads(raw)


def test_mutable_defaults_are_not_shared_and_copies_take_changes() -> None:
    a, b = L.Ledger(), L.Ledger()
    a.prev.append(L.PrevInode(name="x", dev=1, ino=2, offset=0, since=0))
    assert b.prev == []
    c = a.replace(base=10)
    assert (c.base, a.base, c.prev) == (10, 0, a.prev)
    with pytest.raises(TypeError):
        a.replace(bsae=10)


def test_structs_are_immutable_values() -> None:
    r = ReadResult([b"a\n"], 0, 2, epoch=1)
    assert r == ReadResult(lines=[b"a\n"], start=0, end=2, epoch=1)
    assert r != ReadResult([b"a\n"], 0, 2, 2)
    assert "epoch=1" in repr(r)
    with pytest.raises(AttributeError):
        r.start = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        ReadResult([b"a\n"], 0, 2)  # type: ignore[call-arg]


def test_nested_maps_and_tuples_round_trip() -> None:
    state = NoticeState(
        rooms={"/r/inbox.txt": RoomMark(epoch=1, end=40, file=(1, 2, None))},
        wakes={"build": WakeMark(created_at=2.0, lines=[("run", 0, 4)])},
    )
    again = NoticeState.loads(state.dumps())
    assert again == state and again.wakes["build"].lines == [("run", 0, 4)]
    assert again.rooms["/r/inbox.txt"].file == (1, 2, None)
    with pytest.raises(RecordError):
        NoticeState.from_dict({"rooms": {"/r": {"epoch": "1", "end": 0}}})
    with pytest.raises(RecordError):
        NoticeState.from_dict({"rooms": {"/r": {"epoch": 1, "end": 0, "file": [1, None, 3]}}})
    with pytest.raises(RecordError):
        NoticeState.from_dict({"wakes": {"b": {"created_at": 1, "lines": [["run", 0]]}}})
