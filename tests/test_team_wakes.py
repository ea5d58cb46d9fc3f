"""A monitor that wakes a Claude Code teammate (issue 44 item 5): `ackdeck run NAME --session
claude-team://TEAM/AGENT --monitor RE -- CMD` writes each wake as ONE mailbox entry in Claude
Code's shape, under Claude Code's lock (raced here by npm's proper-lockfile itself), exactly
once: a supervisor killed -9 around its write never writes a wake twice, even when Claude Code
already delivered (removed) the entry meanwhile.

Real processes throughout: the CLI, the detached supervisor, node holding the lock.
tests/test_claude_agent_team.py drives real Claude Code with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.clients.claude_code.lock import STALE_S, MailboxLock
from ackdeck.core.monitors import team_wakes
from ackdeck.core.monitors.results import Delivery, DrainResult, WakeLine
from tests.helpers.cli import ackdeck, ackdeck_json, ackdeck_ok
from tests.helpers.paths import PATHS
from tests.helpers.proper_lockfile import held, let_go
from tests.helpers.wait import eventually

TEAM, AGENT = "session-abcd1234", "worker"
SPEC = f"claude-team://{TEAM}/{AGENT}"
SESSION = f"claude-team.{TEAM}.{AGENT}"
# Claude Code 2.1.328's entry, key for key and in its order (issue 44; a SendMessage's entry
# with a summary, seen in a real team's mailbox, has the same order without `color`).
SHAPE = ["from", "text", "summary", "timestamp", "color", "msgV", "msg_id", "type", "read"]
WAIT = 120.0


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    team = tmp_path / "claude" / "teams" / TEAM
    (team / "inboxes").mkdir(parents=True)
    members = [
        {"agentId": f"team-lead@{TEAM}", "name": "team-lead"},
        {"agentId": f"{AGENT}@{TEAM}", "name": AGENT, "backendType": "in-process"},
    ]
    (team / "config.json").write_text(json.dumps({"name": TEAM, "members": members}))
    box = team / "inboxes" / f"{AGENT}.json"
    older = {
        "from": "team-lead",
        "text": "start on the parser",
        "summary": "parser",
        "timestamp": "2026-12-07T05:00:00.000Z",
        "color": "blue",
        "msgV": 1,
        "msg_id": "00000000-0000-4000-8000-000000000001",
        "type": "message",
        "read": False,
    }
    box.write_text(json.dumps([older], indent=2))
    return box


@pytest.fixture
def env(tmp_path: Path, inbox: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")},
        "HOME": str(tmp_path / "home"),
        "ACKDECK_HOME": str(tmp_path / "ackdeck"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "PYTHONPATH": PATHS,
    }


def entries(inbox: Path) -> list[dict]:
    return json.loads(inbox.read_bytes())


def wakes_of(inbox: Path) -> list[dict]:
    return [d for d in entries(inbox) if d["from"] == team_wakes.SENDER]


def run(env: dict[str, str], name: str, script: str, *extra: str) -> dict:
    return ackdeck_json(
        env, "run", name, "--session", SPEC, "--monitor", "ERR", "--cooldown-ms", "50",
        *extra, "--", "sh", "-c", script,
    )  # fmt: skip


def meta(env: dict[str, str], name: str, run_id: str) -> dict:
    rdir = locations.run_dir(Path(env["ACKDECK_HOME"]), name, run_id)
    return json.loads((rdir / "meta.json").read_bytes())


def ended(env: dict[str, str], name: str, run_id: str) -> bool:
    return meta(env, name, run_id)["status"] != "running"


def pending(env: dict[str, str]) -> int:
    listed = ackdeck_json(env, "wakes", "list", "--session", SPEC)  # its mailbox names it
    return int(listed["pending"])


def test_a_wake_is_one_entry_in_claude_codes_shape_written_after_claude_code_lets_go(
    env: dict[str, str], inbox: Path
) -> None:
    """Claude Code (its own lock library) holds the mailbox while the monitor matches: nothing
    is written meanwhile, the wake stays pending; once it lets go, the wake arrives as one
    entry in its shape beside the entry already there."""
    with held(inbox) as holder:
        got = run(env, "job", "echo ERR one; echo ok")
        eventually(lambda: ended(env, "job", got["run_id"]), timeout=WAIT, what="the run's end")
        assert [d["text"] for d in entries(inbox)] == ["start on the parser"]
        assert pending(env) == 2  # the matched line and the exit notice
        let_go(holder)
    wake = eventually(lambda: wakes_of(inbox), timeout=WAIT, what="the wake in the mailbox")
    assert len(wake) == 1, wake  # the line and the exit together: one message
    (entry,) = wake
    assert list(entry) == SHAPE
    assert entry["type"] == "message" and entry["read"] is False and entry["msgV"] == 1
    assert "  ERR one" in entry["text"] and "exit code 0" in entry["text"]
    assert entry["summary"] == "ackdeck wake: job: 1 matched line, job exited"
    assert entries(inbox)[0]["text"] == "start on the parser"  # Claude Code's entry kept
    assert pending(env) == 0
    assert not locations.claude_inbox_lock(inbox).exists()
    assert [p.name for p in inbox.parent.iterdir()] == [inbox.name]  # no temp file left


def test_each_flush_is_its_own_entry_and_nothing_is_written_twice(
    env: dict[str, str], inbox: Path
) -> None:
    marker = inbox.parent.parent.parent / "go"
    got = run(
        env, "job", f"echo ERR one; while [ ! -e {marker} ]; do sleep 0.01; done; echo ERR two"
    )
    eventually(lambda: wakes_of(inbox), timeout=WAIT, what="the first wake")
    marker.touch()
    eventually(lambda: ended(env, "job", got["run_id"]), timeout=WAIT, what="the run's end")
    texts = [d["text"] for d in eventually(lambda: wakes_of(inbox)[1:] and wakes_of(inbox))]
    assert len(texts) == 2, texts
    assert "ERR one" in texts[0] and "ERR two" not in texts[0]
    assert "ERR two" in texts[1] and "ERR one" not in texts[1]
    assert len({d["msg_id"] for d in wakes_of(inbox)}) == 2


def test_wakes_racing_claude_codes_own_writes_lose_and_duplicate_nothing(
    env: dict[str, str], inbox: Path, tmp_path: Path
) -> None:
    """node writes 1,000 entries through proper-lockfile (pruning into a log, as newer Claude
    Code prunes) while a run's supervisor writes a wake for each of 60 matched lines spread
    over the same time: every node entry and every matched line is there exactly once."""
    from tests.helpers.proper_lockfile import SCRIPTS, need_node, node_env

    node = need_node()
    count, lines = 1000, 60
    log = tmp_path / "pruned.jsonl"
    go = tmp_path / "go"
    script = (
        f"while [ ! -e {go} ]; do sleep 0.01; done; "
        f"i=0; while [ $i -lt {lines} ]; do echo ERR $i; i=$((i+1)); sleep 0.02; done"
    )
    got = run(env, "job", script)
    writer = subprocess.Popen(
        [node, str(SCRIPTS / "race_writer.js"), str(inbox), str(log), str(count), "50"],
        stdout=subprocess.PIPE,
        text=True,
        env=node_env(),
    )
    try:
        eventually(lambda: b'"node 0"' in inbox.read_bytes() or log.exists(), what="node writing")
        go.touch()
        out, _ = writer.communicate(timeout=WAIT)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert out.startswith(f"done {count}"), out
    eventually(lambda: ended(env, "job", got["run_id"]), timeout=WAIT, what="the run's end")
    eventually(lambda: pending(env) == 0, timeout=WAIT, what="every wake written")
    pruned = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    every = pruned + entries(inbox)
    nodes = [d["text"] for d in every if d["from"] == "node"]
    assert sorted(nodes) == sorted(f"node {n}" for n in range(count))
    ours = [d for d in every if d["from"] == team_wakes.SENDER]
    matched = [x.strip() for d in ours for x in d["text"].splitlines() if x.startswith("  ERR")]
    assert sorted(matched) == sorted(f"ERR {n}" for n in range(lines))
    assert len({d["msg_id"] for d in ours}) == len(ours)
    # The two sides really interleaved (one after the other would prove nothing).
    order = [d["from"] for d in every]
    switches = sum(a != b for a, b in zip(order, order[1:], strict=False))
    assert switches >= 3, switches
    print(
        f"race: {count} node entries, {len(ours)} wake entries for {lines} lines, "
        f"{switches} alternations; node: {out.strip()}"
    )


def _killed_at(env: dict[str, str], tmp_path: Path, step: str) -> str:
    """A run whose supervisor is killed -9 at `step` of its first mailbox write; its run id."""
    marker = tmp_path / "paused"
    paused_env = {**env, "ACKDECK_TEST_PAUSE_AT": step, "ACKDECK_TEST_PAUSE_FILE": str(marker)}
    got = run(paused_env, "job", "echo ERR one")

    def at_step() -> bool:
        try:
            return marker.read_text() == step
        except FileNotFoundError:
            return False

    eventually(at_step, timeout=WAIT, what=f"the supervisor at {step}")
    pid = meta(env, "job", got["run_id"])["supervisor_pid"]
    os.kill(pid, signal.SIGKILL)
    eventually(lambda: not _alive(pid), timeout=WAIT, what="the supervisor gone")
    # It died holding Claude Code's lock: the lock is abandoned, and after `stale` (10 s) the
    # next taker removes it. Age it rather than wait (what 10 s of no refresh looks like).
    lock = locations.claude_inbox_lock(env_inbox(env))
    assert lock.is_dir()
    gone = time.time() - STALE_S - 1
    os.utime(lock, (gone, gone))
    return str(got["run_id"])


def env_inbox(env: dict[str, str]) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) / "teams" / TEAM / "inboxes" / f"{AGENT}.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (its parent has not reaped it yet) is dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_supervisor_killed_after_the_write_never_writes_the_wake_again(
    env: dict[str, str], inbox: Path, tmp_path: Path
) -> None:
    """Killed between the mailbox's rename and recording the wake as sent; Claude Code then
    delivers the entry (removes it, as 2.1.328 does). The mailbox no longer shows it was ever
    written, yet the next drain writes it no second time, and acks it."""
    _killed_at(env, tmp_path, "team-wake-written")
    (written,) = wakes_of(inbox)
    assert "ERR one" in written["text"]
    with MailboxLock(inbox):  # Claude Code delivers it: the entry leaves the file
        inbox.write_text(json.dumps([d for d in entries(inbox) if d != written], indent=2))
    out = ackdeck_ok(env, "wakes", "drain", "--session", SPEC, "--json")
    again = [d for d in wakes_of(inbox) if "ERR one" in d["text"]]
    assert again == [], again
    written = json.loads(out.stdout)["delivered"]  # what this drain put in the mailbox
    assert [x for d in written for x in d["lines"]] == [], written
    assert pending(env) == 0, out.stdout
    # What the dead supervisor left to say (its monitor lost) is still delivered, once.
    assert [d["text"] for d in wakes_of(inbox) if "monitor lost" in d["text"]] != []
    assert [p.name for p in inbox.parent.iterdir()] == [inbox.name]


def test_supervisor_killed_before_the_rename_writes_the_wake_exactly_once(
    env: dict[str, str], inbox: Path, tmp_path: Path
) -> None:
    """Killed with the new mailbox written aside and its intent recorded, before the rename:
    the wake is not in the mailbox; the next drain writes it, once, and leaves no temp file."""
    _killed_at(env, tmp_path, "team-wake-intent")
    assert wakes_of(inbox) == []
    assert len(list(inbox.parent.glob(".*.ackdeck-wake"))) == 1  # the write aside
    ackdeck_ok(env, "wakes", "drain", "--session", SPEC)
    again = [d for d in wakes_of(inbox) if "ERR one" in d["text"]]
    assert len(again) == 1, wakes_of(inbox)
    ackdeck_ok(env, "wakes", "drain", "--session", SPEC)
    assert len([d for d in wakes_of(inbox) if "ERR one" in d["text"]]) == 1
    assert pending(env) == 0
    assert [p.name for p in inbox.parent.iterdir()] == [inbox.name]


def test_a_teammate_the_team_does_not_have_is_one_line_and_nothing_starts(
    env: dict[str, str], inbox: Path
) -> None:
    for spec, says in (
        (f"claude-team://{TEAM}/nobody", "no member 'nobody'"),
        ("claude-team://a/b/c", "invalid session"),
        ("claude-team://../x", "invalid session"),
    ):
        out = ackdeck(env, "run", "job", "--session", spec, "--monitor", "x", "--", "true")
        assert out.returncode != 0
        assert says in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr
    assert not (Path(env["ACKDECK_HOME"]) / "procs" / "job").exists()


# ----- the pure decisions -------------------------------------------------------------------
def _drained(*lines: tuple[int, int], kind: str = "match") -> DrainResult:
    d = Delivery(
        name="job", run_id="r1", kind=kind, filter="ERR", exclude=False,
        lines=[WakeLine(run_id="r1", start=s, end=e, text=f"ERR {s}") for s, e in lines],
        total_matches=len(lines),
    )  # fmt: skip
    return DrainResult(delivered=[d], superseded=0, pending=0, skipped=[])


def test_an_interrupted_write_counts_as_written_exactly_when_its_rename_happened() -> None:
    intent = team_wakes.Intent(msg_id="m", items=["a", "b"])
    assert team_wakes.resolved(intent, temp_left=True, in_inbox=False) == []
    assert team_wakes.resolved(intent, temp_left=False, in_inbox=False) == ["a", "b"]
    assert team_wakes.resolved(intent, temp_left=False, in_inbox=True) == ["a", "b"]
    assert team_wakes.resolved(None, temp_left=False, in_inbox=False) == []


def test_items_already_sent_are_left_out_and_the_same_items_get_the_same_id() -> None:
    res = _drained((0, 8), (8, 16), kind="exited")
    keys = [k for d in res.delivered for k in team_wakes.item_keys(d)]
    assert len(keys) == 3
    rest = team_wakes.unsent(res, {keys[0]})
    assert [x.start for x in rest.delivered[0].lines] == [8]
    assert rest.delivered[0].kind == "exited"
    assert team_wakes.unsent(res, set(keys)).delivered == []
    assert team_wakes.msg_id_of("s", keys) == team_wakes.msg_id_of("s", keys[::-1])
    assert team_wakes.msg_id_of("s", keys) != team_wakes.msg_id_of("s", keys[1:])
    assert team_wakes.mailbox_session(SPEC) == SESSION


# ----- the writer, in this process (the supervisor's own calls, without a supervisor) --------
def test_the_writer_puts_each_item_in_the_mailbox_once_and_finishes_an_interrupted_write(
    tmp_path: Path, inbox: Path, env: dict[str, str]
) -> None:
    from ackdeck.core.base.statefile import store_record
    from ackdeck.core.errors import InvalidInput

    home = tmp_path / "ackdeck"
    assert team_wakes.bind(home, SPEC, env) == SESSION
    with pytest.raises(InvalidInput, match="no member 'nobody'"):
        team_wakes.bind(home, f"claude-team://{TEAM}/nobody", env)
    assert team_wakes.deliverer(home, "agent") is None  # not a mailbox session
    hand = team_wakes.deliverer(home, SESSION, clock=lambda: 1_800_000_000.0)
    assert hand is not None
    first = _drained((0, 8), (8, 16))
    assert hand(first) is True
    (wake,) = wakes_of(inbox)
    assert list(wake) == SHAPE and "ERR 0" in wake["text"] and "ERR 8" in wake["text"]
    assert entries(inbox)[0]["text"] == "start on the parser"  # Claude Code's entry kept
    assert hand(first) is True and len(wakes_of(inbox)) == 1  # sent already: not again

    sent_path = locations.team_wake_sent(home, SESSION)
    sent = team_wakes.load_record(sent_path, team_wakes.Sent)
    assert sent is not None and sent.intent is None
    # Killed after its temp file and intent, before the rename: the temp is still there, so
    # the items were not written; the next write puts them in, once.
    second = _drained((16, 24))
    keys = [k for d in second.delivered for k in team_wakes.item_keys(d)]
    msg_id = team_wakes.msg_id_of(SESSION, keys)
    store_record(sent_path, sent.replace(intent=team_wakes.Intent(msg_id=msg_id, items=keys)))
    temp = locations.team_wake_temp(inbox, msg_id)
    temp.write_bytes(b"[]")
    assert hand(second) is True
    assert not temp.exists()
    assert [w["text"].count("ERR 16") for w in wakes_of(inbox)] == [0, 1]
    # Killed after the rename, before the end was recorded: no temp file left, so the items
    # count as written and are never written again.
    third = _drained((24, 32))
    keys = [k for d in third.delivered for k in team_wakes.item_keys(d)]
    msg_id = team_wakes.msg_id_of(SESSION, keys)
    sent = team_wakes.load_record(sent_path, team_wakes.Sent)
    assert sent is not None
    store_record(sent_path, sent.replace(intent=team_wakes.Intent(msg_id=msg_id, items=keys)))
    assert hand(third) is True
    assert len(wakes_of(inbox)) == 2 and not any("ERR 24" in w["text"] for w in wakes_of(inbox))
