"""The hook gate (issue 43): the installed prompt and Stop hooks are a sh prelude that starts
no Python when a stamp proves nothing changed since they last had nothing to say
(core/service/quiet.py, core/hook_install.py `gate_command`). Its one duty: never skip a hook that
has something to say. Real files, the real gate through `/bin/sh -c` as Claude Code runs it,
real ackdeck processes and plain `>>` producers; the hook's own run is in-process only where a
push must land at an exact point inside it (between taking the stamp, looking, and settling).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core import hook_install, hooks
from ackdeck.core.base import locations
from ackdeck.core.cli import _fast
from ackdeck.core.monitors import wakes
from ackdeck.core.service import quiet
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.hooks import execs
from tests.helpers.wait import eventually

SESSION = "agent"
PAST_S = 30  # how far back a test's setup is dated: well beyond quiet.MARGIN_NS


class Deck:
    """One session's files and its gated hooks, installed as `hooks install` writes them."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.root = tmp_path
        self.home = Path(env["ACKDECK_HOME"])
        self.room = tmp_path / "rooms" / "inbox.txt"
        self.room.parent.mkdir()
        self.room.touch()
        self.env = env
        cmds = hook_install.hook_commands(ACKDECK, SESSION, [self.room])
        prompt, stop = cmds["UserPromptSubmit"], cmds["Stop"]
        assert prompt is not None and stop is not None
        self.gates = {"prompt": prompt, "stop": stop}
        self.key = quiet.key([str(self.room)])

    def stamp(self, door: str) -> Path:
        return locations.quiet_stamp(self.home, SESSION, door, self.key)

    def gate(self, door: str) -> subprocess.CompletedProcess[str]:
        """The gated hook as Claude Code runs it: `/bin/sh -c`, its JSON on stdin."""
        return subprocess.run(
            ["/bin/sh", "-c", self.gates[door]],
            capture_output=True,
            text=True,
            cwd=self.root,  # the project's directory, as Claude Code starts its hooks
            env=self.env,
            timeout=60,
            input=json.dumps({"hook_event_name": door, "stop_hook_active": False}),
        )

    def date_back(self) -> None:
        """Date every file of the test but the gates' own PAST_S back: as if the session had
        been quiet for a while (the stamp is set MARGIN_NS before its look, so files a hook
        touched a moment ago are never older than it)."""
        _date_back(self.root)

    def quiet(self) -> None:
        """Run both gated hooks until each has written a stamp the gate skips on."""
        for _ in range(3):
            for door in quiet.DOORS:
                done = self.gate(door)
                assert done.returncode == 0 and done.stdout == "", done
            self.date_back()
            if not any(self.ran(door) for door in quiet.DOORS):
                return
        raise AssertionError("the gates never settled on a stamp")

    def clock_past_stamps(self) -> None:
        """Wait until the filesystem's clock (a file's mtime, coarse: one tick may stamp many
        writes) is past every stamp, so the gate's own clock reading cannot be what makes
        it run ackdeck: what a test checks then decides it."""
        probe = self.root / ".clock"
        latest = max(
            (self.stamp(d).stat().st_mtime_ns for d in quiet.DOORS if self.stamp(d).exists()),
            default=0,
        )

        def past() -> bool:
            probe.write_bytes(b"")
            return probe.stat().st_mtime_ns > latest

        eventually(past, what="the filesystem clock to pass the stamps")

    def ran(self, door: str, expect_code: int = 0) -> bool:
        """Run the gate; whether ackdeck ran behind it (a run replaces or removes the stamp,
        a skip leaves it as it was)."""
        before = _identity(self.stamp(door))
        done = self.gate(door)
        assert done.returncode == expect_code, done
        return _identity(self.stamp(door)) != before or before is None

    def in_process(
        self, door: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> tuple[int, str]:
        """The hook the gate execs, run in this process (so a push can land inside it)."""
        argv = [*execs(self.gates[door])[len(ACKDECK) :]]
        args = _fast.parse_turn(argv)
        assert args is not None and args.gate == self.key
        monkeypatch.setenv(quiet.GATE_HOME, str(self.home))
        monkeypatch.setenv("ACKDECK_HOME", str(self.home))
        monkeypatch.setattr(sys, "stdin", None)  # no hook JSON: read_hook_input gives {}
        code = args.handler(args)
        out = capsys.readouterr()
        return code, out.out + out.err


def tells(door: str, done: subprocess.CompletedProcess[str], text: str) -> bool:
    """Whether the hook told the agent of `text`: the prompt lists the line, the Stop hook
    blocks with the room's notice."""
    if door == "prompt":
        return done.returncode == 0 and text in done.stdout
    return done.returncode == 2 and "got new lines while you worked" in done.stderr


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def ackdeck_push(room: Path, text: str, env: dict[str, str]) -> None:
    done = ackdeck(env, "room", "push", str(room), text)
    assert done.returncode == 0, done.stderr


def plain_push(room: Path, text: str, env: dict[str, str]) -> None:
    """A producer that appends without ackdeck: the room's mtime is the only signal."""
    subprocess.run(["/bin/sh", "-c", f'printf "%s\\n" "{text}" >> "{room}"'], check=True)


PUSHES = {"ackdeck push": ackdeck_push, "plain >>": plain_push}


@pytest.fixture
def deck(tmp_path: Path, cli_env: dict[str, str]) -> Iterator[Deck]:
    yield Deck(tmp_path, cli_env)


def test_a_quiet_session_skips_both_hooks_without_starting_ackdeck(deck: Deck) -> None:
    deck.quiet()
    for door in quiet.DOORS:
        assert not deck.ran(door)
        assert not deck.ran(door)  # the gate's own clock reading changes nothing it compares


# ----- a push at every point around the stamp -------------------------------------------------
POINTS = ("before the stamp", "between stamp and look", "between look and settle", "after")


@pytest.mark.parametrize("push", PUSHES)
@pytest.mark.parametrize("point", POINTS)
def test_a_line_pushed_at_any_point_around_the_prompt_stamp_is_listed_at_the_next_prompt(
    deck: Deck,
    point: str,
    push: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Fails if the stamp were taken after the look (the line pushed between look and settle
    would be older than it) or if the gate skipped on equal mtimes."""
    deck.quiet()
    text = f"[t1] ops: {point} by {push}"
    land = lambda: PUSHES[push](deck.room, text, deck.env)  # noqa: E731
    look = hooks.rooms_told_marker
    again = hooks.prompt_again

    def look_after_push(*a: Any, **k: Any) -> Any:
        land()
        return look(*a, **k)

    def push_after_look(*a: Any, **k: Any) -> Any:
        land()  # the hook already looked at the rooms: it cannot list this line
        return again(*a, **k)

    # The order alone must hold: without the margin (tested on its own below), so a stamp
    # taken after the look fails here.
    monkeypatch.setattr(quiet, "MARGIN_NS", 0)
    if point == "before the stamp":
        land()
    elif point == "between stamp and look":
        monkeypatch.setattr(hooks, "rooms_told_marker", look_after_push)
    elif point == "between look and settle":
        monkeypatch.setattr(hooks, "prompt_again", push_after_look)
    code, said = deck.in_process("prompt", monkeypatch, capsys)
    assert code == 0
    monkeypatch.undo()
    deck.clock_past_stamps()
    if point == "after":
        land()
    listed = text in said
    if not listed:  # not in this prompt's text: the next prompt must list it
        nxt = deck.gate("prompt")
        assert nxt.returncode == 0 and text in nxt.stdout, (point, nxt)
    assert listed or point in ("between look and settle", "after")


@pytest.mark.parametrize("push", PUSHES)
@pytest.mark.parametrize("point", POINTS)
def test_a_line_pushed_at_any_point_around_the_stop_stamp_is_told_at_the_next_stop(
    deck: Deck,
    point: str,
    push: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    deck.quiet()
    text = f"[t1] ops: {point} by {push}"
    land = lambda: PUSHES[push](deck.room, text, deck.env)  # noqa: E731
    stop_hook = hooks.stop_hook

    def around(*a: Any, **k: Any) -> Any:
        if point == "between stamp and look":
            land()
        outcome = stop_hook(*a, **k)
        if point == "between look and settle":
            land()  # the hook already looked: this stop cannot tell it
        return outcome

    monkeypatch.setattr(quiet, "MARGIN_NS", 0)  # as for the prompt
    if point == "before the stamp":
        land()
    monkeypatch.setattr(hooks, "stop_hook", around)
    code, said = deck.in_process("stop", monkeypatch, capsys)
    monkeypatch.undo()
    deck.clock_past_stamps()
    if point == "after":
        land()
    told = code == 2 and "got new lines while you worked" in said
    if not told:
        nxt = deck.gate("stop")
        assert nxt.returncode == 2 and "got new lines" in nxt.stderr, (point, nxt)
    assert told or point in ("between look and settle", "after")


@pytest.mark.parametrize("door", quiet.DOORS)
def test_a_line_whose_write_began_just_before_the_stamp_is_not_skipped(
    deck: Deck,
    door: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A write stamps its file's mtime as it starts, before its bytes are visible: a line
    whose write began just before the probe and became visible just after the look carries
    an mtime older than the probe. Fails without quiet.MARGIN_NS."""
    deck.quiet()
    taken: list[int] = []
    probe = quiet.probe

    def keep(*a: Any, **k: Any) -> Any:
        p = probe(*a, **k)
        assert p is not None
        taken.append(p.taken_ns)
        return p

    monkeypatch.setattr(quiet, "probe", keep)
    settle = quiet.Probe.settle

    def write_then_settle(self: quiet.Probe, *a: Any, **k: Any) -> bool:
        plain_push(deck.room, "[t1] ops: slow write", deck.env)
        # Its write began half a second before the probe (a writer preempted that long).
        began = self.taken_ns - 500_000_000
        os.utime(deck.room, ns=(began, began))
        return settle(self, *a, **k)

    monkeypatch.setattr(quiet.Probe, "settle", write_then_settle)
    deck.in_process(door, monkeypatch, capsys)
    monkeypatch.undo()
    deck.clock_past_stamps()
    assert taken and deck.stamp(door).exists()  # the hook had nothing to say: a stamp
    assert tells(door, deck.gate(door), "slow write")


@pytest.mark.parametrize("door", quiet.DOORS)
def test_a_room_as_new_as_the_stamp_is_not_skipped(deck: Deck, door: str) -> None:
    """Equal mtimes prove nothing (a coarse clock stamps both in one tick): fails if the gate
    compared with >= (or `! room -nt stamp`)."""
    deck.quiet()
    plain_push(deck.room, "[t1] ops: same tick", deck.env)
    at = deck.stamp(door).stat().st_mtime_ns
    os.utime(deck.room, ns=(at, at))
    deck.clock_past_stamps()
    assert tells(door, deck.gate(door), "same tick")


def test_a_wake_recorded_around_the_stop_stamp_is_delivered(
    deck: Deck, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deck.quiet()
    stop_hook = hooks.stop_hook

    def wake_after_look(*a: Any, **k: Any) -> Any:
        outcome = stop_hook(*a, **k)
        wakes.merge(
            deck.home,
            SESSION,
            "build",
            run_id="run1",
            kind="exited",
            filter=None,
            exclude=False,
            status="exited",
            exit_code=1,
        )
        return outcome

    monkeypatch.setattr(hooks, "stop_hook", wake_after_look)
    code, _ = deck.in_process("stop", monkeypatch, capsys)
    monkeypatch.undo()
    deck.clock_past_stamps()
    assert code == 0
    nxt = deck.gate("stop")
    assert nxt.returncode == 2 and "exit code 1" in nxt.stderr


# ----- what the stamp cannot follow: the gate runs ackdeck every time --------------------------
def _handed(deck: Deck) -> None:
    path = locations.wake_handed(deck.home, SESSION)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")


def _claims(deck: Deck) -> None:
    locations.claims_dir(deck.home, SESSION).mkdir(parents=True)


def _run(deck: Deck) -> None:
    (locations.procs_dir(deck.home) / "build").mkdir(parents=True)


def _expired(deck: Deck) -> None:
    for door in quiet.DOORS:
        os.utime(locations.quiet_until(deck.stamp(door)), (1, 1))


def _clock_back(deck: Deck) -> None:
    ahead = (PAST_S + 3600) * 1_000_000_000  # the stamp is from the future: a clock stepped back
    for door in quiet.DOORS:
        st = deck.stamp(door).stat()
        os.utime(deck.stamp(door), ns=(st.st_atime_ns + ahead, st.st_mtime_ns + ahead))


def _no_room(deck: Deck) -> None:
    deck.room.rename(deck.room.with_name("moved.txt"))


def _no_stamp(deck: Deck) -> None:
    for door in quiet.DOORS:
        deck.stamp(door).unlink()


def _no_home(deck: Deck) -> None:
    # ackdeck makes it absolute from its working directory; the gate does not guess.
    deck.env["ACKDECK_HOME"] = "relative-home"


def _sidecar_gone(deck: Deck) -> None:
    side = locations.sidecar(deck.room)
    os.rename(side, side.with_name(".elsewhere"))


REASONS: dict[str, tuple[Callable[[Deck], None], tuple[str, ...]]] = {
    "an unproven hand-over": (_handed, quiet.DOORS),
    "held queue claims": (_claims, ("stop",)),
    "a run whose supervisor may die": (_run, ("stop",)),
    "an expired stamp": (_expired, quiet.DOORS),
    "a clock stepped back": (_clock_back, quiet.DOORS),
    "a missing room": (_no_room, quiet.DOORS),
    "no stamp": (_no_stamp, quiet.DOORS),
    "a home the gate cannot name": (_no_home, quiet.DOORS),
    "a sidecar moved away": (_sidecar_gone, quiet.DOORS),
}


@pytest.mark.parametrize("reason", REASONS)
def test_what_the_stamp_cannot_follow_makes_the_gate_run_ackdeck(deck: Deck, reason: str) -> None:
    make, doors = REASONS[reason]
    locations.sidecar(deck.room).mkdir()  # as once a line was pushed and acked
    deck.quiet()
    make(deck)
    for door in doors:
        before = _identity(deck.stamp(door))
        done = deck.gate(door)
        assert done.returncode in (0, 2), done
        after = _identity(deck.stamp(door))
        if make is _no_home:  # ackdeck ran, in the home it resolved
            assert (deck.root / "relative-home").is_dir()
            continue
        assert before is None or after != before, (reason, door)


def test_no_stamp_where_the_hook_cannot_vouch_for_it(
    deck: Deck, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another home than the gate's, a key that is not its rooms', a room on another
    filesystem than the home: the hook never writes a stamp the gate would misread."""
    deck.room.parent.mkdir(exist_ok=True)
    rooms = [str(deck.room)]
    monkeypatch.setenv(quiet.GATE_HOME, str(deck.home / "other"))
    assert quiet.probe(deck.home, SESSION, "stop", deck.key, rooms) is None
    monkeypatch.setenv(quiet.GATE_HOME, str(deck.home))
    assert quiet.probe(deck.home, SESSION, "stop", "0" * 16, rooms) is None
    p = quiet.probe(deck.home, SESSION, "stop", deck.key, rooms)
    assert p is not None and p.settle(True, rooms) and deck.stamp("stop").exists()
    shm = Path("/dev/shm")
    if shm.is_dir() and os.stat(shm).st_dev != os.stat(deck.home).st_dev:
        elsewhere = shm / f"ackdeck-gate-{os.getpid()}.txt"
        elsewhere.touch()
        try:
            p = quiet.probe(
                deck.home, SESSION, "stop", quiet.key([str(elsewhere)]), [str(elsewhere)]
            )
            assert p is not None and not p.settle(True, [str(elsewhere)])
        finally:
            elsewhere.unlink()


def test_a_redis_room_or_an_assignment_in_the_command_installs_no_gate() -> None:
    cmds = hook_install.hook_commands(ACKDECK, SESSION, ["redis://127.0.0.1:6399/0/inbox"])
    assert cmds["Stop"] is not None and "exec" not in cmds["Stop"]
    cmds = hook_install.hook_commands(["ACKDECK_HOME=/x", "ackdeck"], SESSION, ["/r/inbox.txt"])
    assert cmds["Stop"] is not None and "--gate" not in cmds["Stop"]


def test_a_gate_names_the_home_its_command_pins() -> None:
    cmds = hook_install.hook_commands(["ackdeck", "--home", "/srv/deck"], SESSION, ["/r/inbox.txt"])
    stop = cmds["Stop"]
    assert stop is not None and stop.startswith("h=/srv/deck;")


# ----- through real Claude Code ----------------------------------------------------------------
def _date_back(root: Path) -> None:
    """Date every file under `root` PAST_S back but the gates' stamps (`quiet-*`, with their
    expiry and text), which stay at the time they were taken: a stamp dated back could fall
    behind the code that wrote the session-start text (a checkout seconds old), which the
    gate rightly takes as an upgrade."""
    back = PAST_S * 1_000_000_000
    for path in [root, *root.rglob("*")]:
        if os.path.islink(path) or path.name.startswith("quiet-"):
            continue
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns - back, st.st_mtime_ns - back))


def test_a_real_claude_turn_starts_no_python_hook_when_quiet_and_lists_a_waiting_line(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1.x runs the gate with `/bin/sh -c` (checked in its bundle and here):
    a quiet turn leaves the three stamps as they were (no ackdeck behind any gate) while the
    gates still mark the turn for `ackdeck agents`; a line appended with a plain `>>` before
    the next turn reaches the model through the prompt hook."""
    from tests.helpers import agent_clients as clients
    from tests.helpers.agent_clients import Setup
    from tests.helpers.model_stub import ModelStub

    clients.need_client("claude")
    s = Setup(tmp_path).make()
    key = quiet.key([str(s.room)])
    doors = (*quiet.DOORS, "bootstrap")
    stamps = [locations.quiet_stamp(s.home, s.session, d, key) for d in doors]
    with ModelStub([]) as stub:  # every turn is answered "done"
        for _ in range(4):  # the first turns create what later turns compare (a wake folder)
            before = [_identity(p) for p in stamps]
            done = clients.claude(s, stub.url, "Say done.", max_turns=1)
            assert done.returncode == 0, done.stderr[-2000:]
            if None not in before and [_identity(p) for p in stamps] == before:
                break
            _date_back(s.root)
        else:
            raise AssertionError("the gated hooks never settled on their stamps")
        started = os.stat(s.root).st_mtime  # dated back: any presence event is later

        def turn_recorded() -> bool:
            from ackdeck.core.presence import history

            kinds = [e["ev"] for e in history.events(s.home, s.session) if e["t"] > started]
            return {"start", "prompt", "stop"} <= set(kinds)

        eventually(turn_recorded, what="the gates to mark the quiet turn")

        plain_push(s.room, "[t1] ops: deploy the fix", s.base_env())
        done = clients.claude(s, stub.url, "Say done.", max_turns=1)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "deploy the fix" in json.dumps(stub.turns()[-1])


def test_a_skipped_turn_still_shows_in_ackdeck_agents(deck: Deck) -> None:
    """A gate that skips marks the turn (a mark's mtime, no Python): `ackdeck agents` shows
    the session working after its prompt and idle after its stop, as a hook run would."""

    def state() -> str:
        out = ackdeck(deck.env, "agents", "--json")
        assert out.returncode == 0, out.stderr
        (row,) = [a for a in json.loads(out.stdout)["agents"] if a["session"] == SESSION]
        return str(row["state"])

    deck.quiet()
    assert not deck.ran("prompt")
    assert state() == "working"
    assert not deck.ran("stop")
    assert state() == "idle"
    assert not deck.ran("prompt")
    assert state() == "working"


# ----- the session-start hook ------------------------------------------------------------------
def _start(deck: Deck, source: str = "startup") -> subprocess.CompletedProcess[str]:
    """The gated session-start hook with the one line of JSON Claude Code writes (compact)."""
    cmds = hook_install.hook_commands(ACKDECK, SESSION, [deck.room])
    start = cmds["SessionStart"]
    assert start is not None
    line = json.dumps(
        {"session_id": "3f1c0d6e-5b7a", "hook_event_name": "SessionStart", "source": source},
        separators=(",", ":"),
    )
    return subprocess.run(
        ["/bin/sh", "-c", start],
        capture_output=True,
        text=True,
        cwd=deck.root,
        env=deck.env,
        timeout=60,
        input=line + "\n",
    )


def _bootstrap_stamp(deck: Deck) -> Path:
    return locations.quiet_stamp(deck.home, SESSION, "bootstrap", deck.key)


def _settled_start(deck: Deck) -> str:
    """Run the session-start gate until it serves the text from its stamp; that text."""
    said = _start(deck).stdout
    for _ in range(3):
        deck.date_back()
        before = _identity(_bootstrap_stamp(deck))
        done = _start(deck)
        assert done.returncode == 0 and done.stdout == said, done
        if before is not None and _identity(_bootstrap_stamp(deck)) == before:
            return said
    raise AssertionError("the session-start gate never settled on its stamp")


def test_a_quiet_session_start_prints_the_hooks_own_text_without_starting_ackdeck(
    deck: Deck,
) -> None:
    said = _settled_start(deck)
    assert f"you are session {SESSION!r}" in said and "(0 unread)" in said
    before = _identity(_bootstrap_stamp(deck))
    assert _start(deck).stdout == said  # byte for byte what the hook printed
    assert _identity(_bootstrap_stamp(deck)) == before
    # `ackdeck agents` still sees the start, with Claude Code's session id.
    from ackdeck.core.presence import history

    facts = history.load(deck.home, SESSION)
    assert facts.turn == "start" and facts.claude_session == "3f1c0d6e-5b7a"


@pytest.mark.parametrize("push", PUSHES)
def test_a_line_waiting_at_session_start_is_counted_by_the_hook(deck: Deck, push: str) -> None:
    _settled_start(deck)
    PUSHES[push](deck.room, "[t1] ops: waiting at start", deck.env)
    done = _start(deck)
    assert done.returncode == 0 and "(1 unread)" in done.stdout


@pytest.mark.parametrize("source", ["compact", "clear", "resume"])
def test_a_start_after_compaction_is_never_served_from_the_stamp(deck: Deck, source: str) -> None:
    """Only a `startup` has the stamp's text; the others say the context was reset."""
    _settled_start(deck)
    done = _start(deck, source)
    assert done.returncode == 0 and f"(ackdeck: reminder after {source})" in done.stdout


def test_a_start_stamp_older_than_the_code_that_wrote_its_text_is_not_served(
    deck: Deck, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade (or an edit) rewrites the modules that write the session-start text: a stamp
    older than them serves an outdated text, so the gate runs ackdeck."""
    from ackdeck.core.service import instructions

    copy = deck.root / "instructions.py"
    copy.write_bytes(Path(instructions.__file__).read_bytes())
    monkeypatch.setattr(instructions, "__file__", str(copy))  # what the gate compares
    deck.date_back()
    said = _settled_start(deck)
    before = _identity(_bootstrap_stamp(deck))
    copy.touch()  # the upgrade
    deck.clock_past_stamps()
    assert _start(deck).stdout == said
    assert _identity(_bootstrap_stamp(deck)) != before  # ackdeck ran and wrote its text again
