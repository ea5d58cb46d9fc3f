"""The prompt, Stop and session-start hooks name their home and what they keep in it with
plain strings (issue 43: pathlib, with `re`, `enum`, `functools` and `collections`, was ~2x a
bare interpreter of every hook that had something to say). Each string must name what the
Path code named for the homes where os.path and pathlib differ: relative, `~`, a trailing
`/`, `//` inside and in front, `.` and `..` parts, names that are not UTF-8, a symlinked
folder. The expected values are computed here with pathlib, as the hooks did
(`resolve_home`, then the Path functions of core/base/locations.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.base.home import made_home, resolve_home
from ackdeck.core.service import claims, quiet
from ackdeck.core.service.noticer import Noticer
from tests.helpers.cli import ackdeck, clean_env

NOT_UTF8 = os.fsdecode(b"ho\xffme\xfe")
SESSION = "s1"


def _homes(tmp: Path) -> list[str]:
    """Home specs, relative ones against `tmp` (the working directory of the test)."""
    (tmp / "d" / "sub").mkdir(parents=True)
    (tmp / "linked").symlink_to(tmp / "d" / "sub")
    t = str(tmp)
    return [
        "h",
        "./h/",  # a trailing `/`
        "d//h",
        "d/./sub/../h",  # `..` kept, as Path.absolute keeps it (not resolved)
        "linked/../h",  # past a symlinked folder: the kernel's parent, not lexical
        "linked/h/",
        "~/h",  # expanded against HOME, as resolve_home expands it
        "~",
        NOT_UTF8,
        f"d/{NOT_UTF8}/",
        f"{t}/d//sub/./h/",
        f"/{t}/h",  # a leading `//`: pathlib keeps it
        f"//{t}/h2",  # three: one
    ]


def _named(home: str | Path) -> dict[str, str]:
    """Every name a hook builds under its home, as text."""
    key = quiet.key(["/r.txt"])
    stamp = locations.quiet_stamp(home, SESSION, "stop", key)
    return {
        "notice_state": str(locations.notice_state(home, SESSION, "hooks")),
        "notice_lock": str(locations.notice_lock(home, SESSION, "hooks")),
        "stamp": str(stamp),
        "until": str(locations.quiet_until(stamp)),
        "text": str(locations.quiet_text(stamp)),
        "now": str(locations.quiet_now(home, SESSION)),
        "claims": str(locations.claims_dir(home, SESSION)),
        "claim": str(locations.claim_mark(home, SESSION, "1-abc")),
        "handed": str(locations.wake_handed(home, SESSION)),
        "agents": str(locations.agents_dir(home)),
        "mark": str(locations.presence_mark(home, SESSION, "stop")),
    }


def test_the_hooks_string_names_under_odd_homes_are_the_names_their_paths_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "me") + "/")  # `HOME=/home/me/`: `me//.ackdeck`
    for spec in _homes(tmp_path):
        for given in (spec, None):
            if given is None:
                monkeypatch.setenv("ACKDECK_HOME", spec)
            path_home = resolve_home(given)  # what the hooks named their home with
            home = made_home(given)
            assert home == str(path_home), spec
            assert _named(home) == _named(path_home), spec
            noticer = Noticer(home, SESSION, [], "hooks", wakes=False)
            assert noticer.path == str(Noticer(path_home, SESSION, [], "hooks").path), spec
            monkeypatch.delenv("ACKDECK_HOME", raising=False)


@pytest.mark.parametrize("spelled", ["{h}", "{h}/", "{h}//", "{hd}//.ackdeck", "{hd}/./.ackdeck"])
def test_the_gates_home_is_this_hooks_home_as_str_path_spelled_it(
    spelled: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate names its home from $HOME or $ACKDECK_HOME as the shell has it (`HOME=/me/`
    gives `/me//.ackdeck`); the hook writes a stamp only if that is its own home, compared as
    str(Path(...)) spelled both before."""
    hd = str(tmp_path / "me")
    home = made_home(os.path.join(hd, ".ackdeck"))
    gate_home = spelled.format(h=home, hd=hd)
    assert str(Path(gate_home)) == home  # the Path code's decision: the same home
    monkeypatch.setenv(quiet.GATE_HOME, gate_home)
    rooms = [str(tmp_path / "r.txt")]
    probe = quiet.probe(home, SESSION, "stop", quiet.key(rooms), rooms)
    assert probe is not None and probe.stamp == str(
        locations.quiet_stamp(Path(home), SESSION, "stop", quiet.key(rooms))
    )
    probe.settle(False, rooms)


@pytest.mark.parametrize("other", ["", ".", "me/.ackdeck", "{h}x", "{h}/..", "/{h}"])
def test_a_gate_that_looked_in_another_home_gets_no_stamp(
    other: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative, empty and other homes (`//` in front is another one to POSIX): the Path code
    compared str(Path(gate_home)), never equal to the absolute home; so must the string code
    (no stamp, the gate runs ackdeck)."""
    monkeypatch.chdir(tmp_path)
    home = made_home(str(tmp_path / "me" / ".ackdeck"))
    monkeypatch.setenv(quiet.GATE_HOME, other.format(h=home))
    rooms = [str(tmp_path / "r.txt")]
    assert quiet.probe(home, SESSION, "stop", quiet.key(rooms), rooms) is None


def test_a_claim_kept_under_a_str_home_is_the_one_a_path_home_reminds_of(tmp_path: Path) -> None:
    home = made_home(str(tmp_path) + "//h/")
    mark = {"room": "/r.txt", "token": "1-abc", "line": "task", "claimed_at": 1.0, "until": 9.0}
    Path(locations.claim_mark(home, SESSION, "1-abc")).parent.mkdir(parents=True)
    Path(locations.claim_mark(home, SESSION, "1-abc")).write_text(json.dumps(mark))
    assert claims.reminder(home, SESSION, 5.0) == claims.reminder(Path(home), SESSION, 5.0)
    claims.moved(home, SESSION, "1-abc", 20.0)
    assert claims.held(Path(home), SESSION)[0]["until"] == 20.0
    claims.forget(home, SESSION, "1-abc")
    assert claims.held(Path(home), SESSION) == []


def test_a_stop_hook_under_an_odd_relative_home_keeps_its_state_where_the_path_code_did(
    tmp_path: Path,
) -> None:
    """The operation, not only the names: a Stop hook run by the CLI with a relative,
    `//`-spelled, non-UTF-8, trailing-slash home tells the line waiting and records it as told
    in the file the Path code named; the next stop has nothing new to say."""
    (tmp_path / "d").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "d")
    room = tmp_path / "r.txt"
    room.write_bytes(b"hello\n")
    spec = f"linked//./{NOT_UTF8}/"
    want = Path(os.path.join(tmp_path, spec))  # Path(...).absolute() in the hook's folder
    env = clean_env()
    args = ["hooks", "stop", "--home", spec, "--session", SESSION, "--room", str(room)]
    first = ackdeck(env, *args, cwd=tmp_path, input="{}")
    assert first.returncode == 2 and "got new lines while you worked" in first.stderr
    state = locations.notice_state(want, SESSION, "hooks")
    assert state.is_file() and (tmp_path / "d" / NOT_UTF8 / "notices").is_dir()
    second = ackdeck(env, *args, cwd=tmp_path, input='{"stop_hook_active": true}')
    assert second.returncode == 0 and second.stderr == ""


def test_a_hand_over_kept_under_a_str_home_makes_its_folder_and_reads_back(
    tmp_path: Path,
) -> None:
    """The prompt hook hands an unproven hand-over again with the hooks' str home; the record's
    folder (the session's wakes) may not exist yet: it was made with Path.mkdir, which a
    str has not. Kept where the Path code kept it, and read back through a Path home."""
    from ackdeck.core.clients.claude_code import handed

    home = made_home(str(tmp_path) + "//h/")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type":"user"}\n')
    handed.hand_over(home, SESSION, str(transcript), "wake text", None, at_stop=False)
    kept = Path(locations.wake_handed(Path(home), SESSION))
    assert kept.is_file() and str(kept) == locations.wake_handed(home, SESSION)
    again = handed.unproven(Path(home), SESSION)
    assert again is not None and again.text == "wake text"


# ----- a Stop hook in a home with a run: the reconcile and the drain on str paths -------------
RUN_ID = "20261207T000000000-abcdef"


def _a_run(home: str | Path, name: str, status: str, *, monitors: bool = False) -> Path:
    """A run of `name` for SESSION, kept with the Path code (as `ackdeck run` keeps one),
    whose supervisor is gone (never started long ago: a running one is lost)."""
    from ackdeck.core.monitors import runs

    rdir = runs.run_dir(Path(home), name, RUN_ID)
    rdir.mkdir(parents=True)
    meta = runs.RunMeta(
        name=name, run_id=RUN_ID, argv=["make"], cwd="/", session=SESSION, status=status,
        monitors=[runs.MonitorModel(pattern="ERROR")] if monitors else [],
        exit_code=0 if status == "exited" else None, created_at=1.0, started_at=1.0,
    )  # fmt: skip
    runs.store_meta(rdir, meta)
    runs.output_path(rdir).write_bytes(b"ok\n")
    return rdir


def _drain_names(home: str | Path) -> dict[str, str]:
    """Every name a Stop hook's reconcile and drain build under its home, as text."""
    rdir = locations.run_dir(home, "build", RUN_ID)
    return {
        "procs": str(locations.procs_dir(home)),
        "run": str(rdir),
        "meta": str(locations.run_meta(rdir)),
        "supervisor_lock": str(locations.supervisor_lock(rdir)),
        "shown_state": str(locations.shown_state(rdir, SESSION)),
        "shown_lease": str(locations.shown_lease(rdir, SESSION, "7.0123abcd")),
        "session": str(locations.wake_session_dir(home, SESSION)),
        "record": str(locations.wake_record(home, SESSION, "build")),
        "wake_lock": str(locations.wake_lock(home, SESSION)),
        "drain_lock": str(locations.drain_lock(home, SESSION)),
    }


def test_a_drains_string_names_under_odd_homes_are_the_names_their_paths_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reconcile lists the runs and the settle the leases with the hooks' str home (their
    Path code had `.exists()` and `.name`, which a str has not): the same runs, leases and
    files as the Path code found under every odd home."""
    from ackdeck.core.monitors import runs, shown

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "me") + "/")
    dead = 2**22 + 1  # above the largest pid_max: no process has it
    for spec in _homes(tmp_path):
        path_home, home = resolve_home(spec), made_home(spec)
        assert _drain_names(home) == _drain_names(path_home), spec
        rdir = locations.run_dir(path_home, "build", RUN_ID)
        if not rdir.exists():  # two specs may name one home
            _a_run(path_home, "build", "running")  # its supervisor gone: unsupervised
            locations.shown_dir(rdir).mkdir()
        locations.shown_lease(rdir, SESSION, f"{dead}.0123abcd").touch()  # a dead reader's
        assert [str(p) for p in runs.run_dirs(path_home)] == runs.run_dirs(home) == [str(rdir)]
        assert [str(p) for p in runs.unsupervised(path_home)] == runs.unsupervised(home), spec
        (found,) = runs.run_dirs(home)
        leases = shown.leases(found, SESSION)
        assert leases == [str(p) for p in shown.leases(rdir, SESSION)] and len(leases) == 1
        assert [shown.lease_pid(p) for p in leases] == [dead]
        assert shown.settle([found], SESSION, 0.0)  # the dead reader's lease: removed
        assert shown.leases(rdir, SESSION) == []


def test_the_str_exists_answers_as_paths_exists(tmp_path: Path) -> None:
    """`atomic.exists` on a str says what Path.exists says: False for what is not there, the
    error for what cannot be told (os.path.exists would hide it as False)."""
    from ackdeck.core.base.atomic import exists

    (tmp_path / "f").touch()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "shut").mkdir()
    (tmp_path / "shut" / "x").touch()
    names = ["f", "missing", "f/under-a-file", "loop", "shut/x", "nul\0"]
    told = {n: exists(str(tmp_path / n)) for n in names[:-1]} | {"nul\0": exists("nul\0")}
    assert told == {n: (tmp_path / n).exists() for n in names[:-1]} | {"nul\0": False}
    (tmp_path / "shut").chmod(0)
    try:
        if os.geteuid() != 0:  # root reads through the missing permission
            with pytest.raises(PermissionError):
                (tmp_path / "shut" / "x").exists()
            with pytest.raises(PermissionError):
                exists(str(tmp_path / "shut" / "x"))
    finally:
        (tmp_path / "shut").chmod(0o700)


def test_guard_a_stop_hook_under_an_odd_home_with_runs_tells_each_wake_once(
    tmp_path: Path,
) -> None:
    """A guard (the Path code passed it too): the operation, under a relative, `//`-spelled,
    non-UTF-8, symlinked home with a trailing slash. A run whose supervisor died is reported
    lost, a matched line of another run is told (past a dead reader's lease), each once, and
    acked in the records the Path code named; a malformed record is kept and still reported by
    a Path-home listing. The next stop has nothing to say of them."""
    from ackdeck.core.monitors import runs, wakes
    from ackdeck.core.monitors.monitors import MatchedLine

    (tmp_path / "d").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "d")
    spec = f"linked//./{NOT_UTF8}/"
    want = Path(os.path.join(tmp_path, spec))  # Path(...).absolute() in the hook's folder
    want.mkdir()
    lost = _a_run(want, "lost", "running", monitors=True)
    build = _a_run(want, "build", "exited", monitors=True)
    locations.shown_dir(build).mkdir()
    lease = locations.shown_lease(build, SESSION, f"{2**22 + 1}.0123abcd")  # a dead reader's
    lease.touch()
    wakes.merge(
        want, SESSION, "build", run_id=RUN_ID, kind="match", lines=[MatchedLine(3, 9, "ERROR")],
        filter="ERROR", exclude=False, matches=1, status="exited",
    )  # fmt: skip
    bad = locations.wake_record(want, SESSION, "broken")
    bad.write_text("{not json")
    env = clean_env()
    args = ["hooks", "stop", "--home", spec, "--session", SESSION]
    first = ackdeck(env, *args, cwd=tmp_path, input="{}")
    assert first.returncode == 2, first.stderr
    told = first.stderr
    assert told.count("[lost run") == 1 and "monitor lost" in told, told
    assert told.count("[build run") == 1 and "  ERROR" in told, told
    meta = runs.load_meta(lost)
    assert meta is not None and meta.status == "lost"
    records, skipped = wakes.scan_wakes(want, SESSION)
    assert {r.name: (r.pending, r.delivered_total) for r in records} == {
        "build": (0, 1),
        "lost": (0, 0),
    }
    assert skipped == [bad] and bad.read_text() == "{not json"
    assert not lease.exists()  # the settle let go of the dead reader's lease
    second = ackdeck(env, *args, cwd=tmp_path, input='{"stop_hook_active": true}')
    assert "[build run" not in second.stderr and "[lost run" not in second.stderr
    assert second.returncode == 0, second.stderr


def test_guard_a_drain_with_a_str_home_reports_malformed_records_as_paths(
    tmp_path: Path,
) -> None:
    """A guard: a drain given the hooks' str home returns what it returned given a Path (the
    doors show `skipped`, the MCP schema declares Paths), and acks the same."""
    from ackdeck.core.service import wakes as service

    home = made_home(str(tmp_path) + "//h/")
    bad = locations.wake_record(Path(home), SESSION, "broken")
    bad.parent.mkdir(parents=True)
    bad.write_text("[]")
    drained = service.drain(home, SESSION, settle_timeout=0)
    assert drained.skipped == [bad] and all(isinstance(p, Path) for p in drained.skipped)
    assert drained.to_json() == service.drain(Path(home), SESSION, settle_timeout=0).to_json()
