"""Damaged state files: a directory or a FIFO where ackdeck keeps a wake record, a run's meta,
a read state, a notice state or a receipt. Each is skipped, kept on disk, reported in
`skipped`, and everything else keeps working; nothing ever blocks on a FIFO.

Every CLI call runs with a 60 s bound: a FIFO opened for reading without O_NONBLOCK hangs
for good, so a regression fails here instead of hanging the suite."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ackdeck.core.monitors import procs, wakes
from tests.helpers.cli import ackdeck, ackdeck_json
from tests.helpers.runs import wait_status


def _as_dir(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("kept")


def _as_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


DAMAGE: dict[str, Callable[[Path], None]] = {"directory": _as_dir, "fifo": _as_fifo}


def _kept(path: Path, kind: str) -> bool:
    st = os.lstat(path)
    return (kind == "directory" and (path / "inside").read_text() == "kept") or (
        kind == "fifo" and not os.path.isfile(path) and st.st_size == 0
    )


def _monitored(cli_env: dict[str, str], phome: Path, name: str, line: str) -> None:
    out = ackdeck(cli_env, "run", name, "--session", "s", "--monitor", "ERR", "--", "echo", line)
    assert out.returncode == 0, out.stderr
    wait_status(phome, name)


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_wake_record_blocks_nothing_else(phome: Path, cli_env, kind: str) -> None:
    _monitored(cli_env, phome, "p", "ERR one")
    _monitored(cli_env, phome, "q", "ERR two")
    bad = wakes.record_path(phome, "s", "p")
    DAMAGE[kind](bad)

    ps = ackdeck(cli_env, "ps")
    assert ps.returncode == 0 and "q " in ps.stdout, ps.stderr
    got = ackdeck_json(cli_env, "wakes", "drain", "--session", "s")
    assert isinstance(got, dict)
    assert [d["lines"] for d in got["delivered"]] == [["ERR two"]]  # q's wake still delivered
    assert got["skipped"] == [str(bad)]
    assert _kept(bad, kind)

    # The next supervisor of that name survives: it sets the damaged entry aside (kept,
    # still reported) and records its own wake.
    _monitored(cli_env, phome, "p", "ERR three")
    assert procs.get_run(phome, "p").exit_code == 0
    again = ackdeck_json(cli_env, "wakes", "drain", "--session", "s")
    assert isinstance(again, dict)
    assert [d["lines"] for d in again["delivered"]] == [["ERR three"]]
    (aside,) = [Path(p) for p in again["skipped"]]
    assert aside.name.startswith("p.json.corrupt-") and _kept(aside, kind)


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_run_meta_is_skipped_by_ps_and_reported(phome: Path, cli_env, kind: str) -> None:
    _monitored(cli_env, phome, "p", "ERR one")
    _monitored(cli_env, phome, "q", "ERR two")
    meta = procs.get_run(phome, "q").run_dir / "meta.json"
    DAMAGE[kind](meta)
    listed = ackdeck_json(cli_env, "ps")
    assert isinstance(listed, dict)
    assert [r["name"] for r in listed["processes"]] == ["p"]
    assert listed["skipped"] == [str(meta)]
    text = ackdeck(cli_env, "ps")
    assert text.returncode == 0 and f"skipped damaged run state {meta}" in text.stderr
    assert _kept(meta, kind)
    # The dashboard's scan says so in its header and shows the rest.
    from ackdeck.tui.state import scan

    snap = scan(phome, [], clock=lambda: 0.0)
    assert [r.name for r in snap.runs] == ["p"]
    assert any("skipped 1 damaged run state file," in e and "meta.json" in e for e in snap.errors)


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_read_state_fails_open_without_blocking(phome: Path, cli_env, kind: str) -> None:
    _monitored(cli_env, phome, "p", "ERR one")
    first = ackdeck(cli_env, "output", "p", "--session", "s")
    assert first.stdout == "ERR one\n"
    state = procs.get_run(phome, "p").run_dir / "reads" / "s.json"
    DAMAGE[kind](state)
    # Unreadable shown data fails open: the wake is delivered (never lost) ...
    got = ackdeck_json(cli_env, "wakes", "drain", "--session", "s")
    assert isinstance(got, dict) and [d["lines"] for d in got["delivered"]] == [["ERR one"]]
    # ... and the next read restarts from the top (redelivery), keeping the damaged entry.
    again = ackdeck(cli_env, "output", "p", "--session", "s")
    assert again.returncode == 0 and again.stdout == "ERR one\n", again.stderr
    (aside,) = state.parent.glob("s.json.corrupt-*")
    assert _kept(aside, kind)


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_receipt_is_one_line_and_the_room_still_works(
    tmp_path: Path, cli_env, kind: str
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"a\nb\n")
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "s").returncode == 0
    receipt = tmp_path / ".inbox.txt.ackdeck" / "receipts" / "s.rcpt"
    DAMAGE[kind](receipt)
    acked = ackdeck(cli_env, "room", "ack", str(room), "--session", "s")
    assert acked.returncode != 0 and len(acked.stderr.strip().splitlines()) == 1
    assert "not a regular file" in acked.stderr and str(receipt) in acked.stderr
    assert room.read_bytes() == b"a\nb\n"  # nothing removed
    status = ackdeck(cli_env, "room", "status", str(room), "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["rooms"][0]["pending"] == 2
    # Another session is not affected at all.
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "t").returncode == 0
    assert ackdeck(cli_env, "room", "ack", str(room), "--session", "t").returncode == 0
    assert room.read_bytes() == b""
    assert _kept(receipt, kind)


def test_a_fifo_notice_state_is_set_aside_not_waited_on(home: Path) -> None:
    from ackdeck.core.service.noticer import load_state, state_path

    path = state_path(home, "s", "channel")
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert load_state(path).to_json() == load_state(home / "missing.json").to_json()
    (aside,) = path.parent.glob("channel.json.corrupt-*")
    assert not aside.is_file() and not path.exists()


def test_read_state_refuses_every_non_regular_kind(tmp_path: Path) -> None:
    from ackdeck.core.base.statefile import read_state
    from ackdeck.core.errors import NotRegular

    f = tmp_path / "f"
    f.write_bytes(b"x")
    (tmp_path / "link").symlink_to(f)
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    assert read_state(f) == b"x" and read_state(tmp_path / "none") is None
    for name, kind in (("link", "a symlink"), ("dir", "a directory"), ("fifo", "a FIFO")):
        with pytest.raises(NotRegular, match=f"is {kind}, not a regular file"):
            read_state(tmp_path / name)
