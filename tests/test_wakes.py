"""The wake store and the push-ack drain, on real files (no processes needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ackdeck.core.errors import CorruptState
from ackdeck.core.monitors import shown, wakes
from ackdeck.core.monitors.monitors import MatchedLine
from tests.helpers.cli import ackdeck, ackdeck_json

REPO = Path(__file__).resolve().parent.parent


def add(home: Path, name: str, *lines: tuple[int, int, str], session: str = "s", run: str = "r1"):
    return wakes.merge(
        home,
        session,
        name,
        run_id=run,
        kind="match",
        lines=[MatchedLine(a, b, t) for a, b, t in lines],
        filter="ERR",
        exclude=False,
        matches=len(lines),
        status="running",
    )


def test_unknown_fields_are_ignored(home: Path) -> None:
    add(home, "p", (0, 4, "ERR"))
    path = wakes.record_path(home, "s", "p")
    data = json.loads(path.read_text())
    data["from_a_newer_version"] = {"x": 1}
    data["lines"][0]["color"] = "red"
    path.write_text(json.dumps(data))
    res = wakes.drain(home, "s")
    assert [x.text for d in res.delivered for x in d.lines] == ["ERR"]


def test_a_corrupted_wake_file_is_skipped_kept_and_reported(home: Path, cli_env) -> None:
    add(home, "good", (0, 4, "ERR good"))
    bad = wakes.record_path(home, "s", "bad")
    bad.write_bytes(b'{"session": "s", "name": "bad", "lines": [tru')
    res = wakes.drain(home, "s")
    assert [x.text for d in res.delivered for x in d.lines] == ["ERR good"]
    assert res.skipped == [bad]
    assert bad.read_bytes() == b'{"session": "s", "name": "bad", "lines": [tru'  # untouched
    out = ackdeck(cli_env, "wakes", "list", "--session", "s")
    assert out.returncode == 0 and f"skipped malformed wake file {bad}" in out.stderr


def test_a_merge_into_a_corrupted_file_keeps_it_aside(home: Path) -> None:
    bad = wakes.record_path(home, "s", "p")
    bad.parent.mkdir(parents=True)
    bad.write_text("not json")
    add(home, "p", (0, 4, "ERR new"))
    records, skipped = wakes.scan_wakes(home, "s")
    assert [x.text for r in records for x in r.lines] == ["ERR new"]
    assert len(skipped) == 1 and skipped[0].read_text() == "not json"  # never deleted


def test_newest_50_lines_are_kept_with_a_dropped_count(home: Path) -> None:
    for i in range(60):
        add(home, "p", (i * 10, i * 10 + 10, f"ERR {i}"))
    (rec,) = wakes.list_wakes(home, "s")
    assert len(rec.lines) == 50 and rec.dropped == 10 and rec.total_matches == 60
    assert rec.lines[0].text == "ERR 10" and rec.lines[-1].text == "ERR 59"


def test_the_same_line_is_never_merged_twice(home: Path) -> None:
    add(home, "p", (0, 4, "ERR"))
    add(home, "p", (0, 4, "ERR"))  # e.g. a rescan after a supervisor crash
    add(home, "p", (0, 4, "ERR"), run="r2")  # same offsets in another run: a different line
    (rec,) = wakes.list_wakes(home, "s")
    assert [(x.run_id, x.start) for x in rec.lines] == [("r1", 0), ("r2", 0)]


def test_lines_merged_during_delivery_stay_pending(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(home, "p", (0, 6, "ERR 1"))
    real = shown.settle

    def merge_meanwhile(*a, **k):  # a supervisor merges while the drain is delivering
        add(home, "p", (6, 12, "ERR 2"))
        wakes.merge(
            home,
            "s",
            "p",
            run_id="r1",
            kind="exited",
            filter="ERR",
            exclude=False,
            status="exited",
            exit_code=1,
        )
        return real(*a, **k)

    monkeypatch.setattr(shown, "settle", merge_meanwhile)
    first = wakes.drain(home, "s")
    assert [x.text for d in first.delivered for x in d.lines] == ["ERR 1"]  # the snapshot only
    assert first.pending == 2  # ERR 2 and the exit notice
    monkeypatch.setattr(shown, "settle", real)
    second = wakes.drain(home, "s")
    assert [(d.kind, [x.text for x in d.lines]) for d in second.delivered] == [
        ("exited", ["ERR 2"])
    ]
    assert second.pending == 0 and wakes.drain(home, "s").delivered == []
    (rec,) = wakes.list_wakes(home, "s")
    assert rec.delivered_total == 2 and rec.lines == [] and not rec.notice_pending


def test_missing_shown_data_fails_open(home: Path) -> None:
    add(home, "p", (0, 4, "ERR"))  # no run directory, no read state at all
    assert [x.text for d in wakes.drain(home, "s").delivered for x in d.lines] == ["ERR"]


def test_dismiss(home: Path, cli_env) -> None:
    add(home, "p", (0, 4, "ERR"))
    assert wakes.dismiss(home, "s", "p") is True
    assert wakes.dismiss(home, "s", "p") is False
    bad = wakes.record_path(home, "s", "q")
    bad.write_text("{")
    with pytest.raises(CorruptState):
        wakes.dismiss(home, "s", "q")
    assert bad.exists()
    add(home, "r", (0, 4, "ERR"))
    assert ackdeck(cli_env, "wakes", "dismiss", "--session", "s", "r").returncode == 0
    out = ackdeck(cli_env, "wakes", "dismiss", "--session", "s", "r")
    assert out.returncode == 1 and "no wake" in out.stderr


def test_list_is_sorted_and_cli_lists_json(home: Path, cli_env) -> None:
    add(home, "zeta", (0, 1, "a"), session="b")
    add(home, "alpha", (0, 1, "b"), session="b")
    add(home, "mid", (0, 1, "c"), session="a")
    assert [(r.session, r.name) for r in wakes.list_wakes(home)] == [
        ("a", "mid"),
        ("b", "alpha"),
        ("b", "zeta"),
    ]
    rows = ackdeck_json(cli_env, "wakes", "list", "--session", "b")["wakes"]
    assert [(r["session"], r["name"]) for r in rows] == [("b", "alpha"), ("b", "zeta")]


def test_concurrent_merges_from_many_processes_lose_nothing(home: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ackdeck.core.monitors import wakes\n"
        "from ackdeck.core.monitors.monitors import MatchedLine\n"
        "w = int(sys.argv[2])\n"
        "for i in range(40):\n"
        "    wakes.merge(Path(sys.argv[1]), 's', 'p', run_id=f'r{w}', kind='match',\n"
        "        lines=[MatchedLine(i, i + 1, f'{w}-{i}')], filter='x', exclude=False,\n"
        "        matches=1, status='running')\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(home), str(w)], cwd=REPO)
        for w in range(4)
    ]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    (rec,) = wakes.list_wakes(home, "s")
    assert rec.total_matches == 160 and len(rec.lines) + rec.dropped == 160
    leftovers = [p.name for p in wakes.session_dir(home, "s").iterdir() if "ackdeck-tmp" in p.name]
    assert leftovers == []


def test_concurrent_drains_never_deliver_a_line_twice(home: Path) -> None:
    import threading

    for i in range(100):
        add(home, f"p{i:03d}", (0, 5, f"ERR {i}"))
    code = (
        "import json, sys\n"
        "from ackdeck.core.monitors import wakes\n"
        "r = wakes.drain(sys.argv[1], 's')\n"
        "print(json.dumps([x.text for d in r.delivered for x in d.lines]))\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(home)], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    got: list[str] = []
    lock = threading.Lock()

    def one() -> None:
        r = wakes.drain(home, "s")
        with lock:
            got.extend(x.text for d in r.delivered for x in d.lines)

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for p in procs:
        out, _ = p.communicate(timeout=60)
        got.extend(json.loads(out))
    assert sorted(got) == sorted(f"ERR {i}" for i in range(100))


def test_a_record_from_before_per_run_notices_still_delivers_its_notice(home: Path) -> None:
    path = wakes.record_path(home, "s", "p")
    path.parent.mkdir(parents=True)
    old = {
        "session": "s",
        "name": "p",
        "kind": "exited",
        "lines": [],
        "dropped": 0,
        "filter": "ERR",
        "exclude": False,
        "total_matches": 0,
        "status": "exited",
        "created_at": 1.0,
        "updated_at": 1.0,
        "run_id": "r1",
        "exit_code": 7,
        "notice_pending": True,
        "notice_seq": 1,
        "notice_run_id": "r1",
        "notice_status": "exited",
        "notice_exit_code": 7,
    }
    path.write_text(json.dumps(old))
    res = wakes.drain(home, "s")
    assert [(d.run_id, d.kind, d.exit_code) for d in res.delivered] == [("r1", "exited", 7)]
    assert wakes.drain(home, "s").delivered == []


def test_notices_of_two_runs_are_kept_apart(home: Path) -> None:
    for run, code in (("r1", 3), ("r2", 0)):
        wakes.merge(
            home,
            "s",
            "p",
            run_id=run,
            kind="exited",
            filter="ERR",
            exclude=False,
            status="exited",
            exit_code=code,
        )
    res = wakes.drain(home, "s")
    assert [(d.run_id, d.exit_code) for d in res.delivered] == [("r1", 3), ("r2", 0)]
