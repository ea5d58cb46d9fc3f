"""Claude Code team mailboxes as rooms (`claude-team://TEAM/AGENT`, issue 33).

The mailboxes here are fixtures written in the exact shape Claude Code 2.1.328's
`TeammateMailbox` code writes (read from its bundled source: `JSON.stringify(entries, null, 2)`,
entries `{from, text, timestamp, color?, summary?, msgV, msg_id, type, read}`, control messages
as JSON in `text`), because a real team needs a model. The lock is raced against npm's
proper-lockfile, the library Claude Code's lock copies, driven by node (tests/claude_teams/*.js;
`make npm-cache` installs it; without node or it, those tests skip with one line).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.clients.claude_code import mailbox as mb
from ackdeck.core.clients.claude_code.lock import STALE_S, MailboxLock
from ackdeck.core.errors import InvalidInput, MailboxLocked
from ackdeck.core.rooms.claude_team.room import ClaudeMailboxRoom
from ackdeck.core.service.refs import parse_room
from tests.helpers.cli import ackdeck
from tests.helpers.proper_lockfile import SCRIPTS, WAIT, need_node, node_env
from tests.helpers.wait import eventually

REPO = Path(__file__).resolve().parent.parent


def perm_request(rid: str, tool: str = "Bash") -> str:
    return json.dumps(
        {
            "type": "permission_request",
            "request_id": rid,
            "agent_id": "worker",
            "tool_name": tool,
            "tool_use_id": "toolu_1",
            "description": "rm -rf build",
            "input": {"command": "rm -rf build"},
            "permission_suggestions": [],
        }
    )


def entry(sender: str, text: str, stamp: str, *, read: bool = False, n: int = 0) -> dict:
    """An entry as Claude Code 2.1.328 writes it (`writeToMailbox`)."""
    return {
        "from": sender,
        "text": text,
        "timestamp": stamp,
        "color": "blue",
        "msgV": 1,
        "msg_id": f"00000000-0000-4000-8000-{n:012d}",
        "type": "message",
        "read": read,
    }


def write_team(teams: Path, team: str = "demo") -> Path:
    """A team as Claude Code lays it out: config.json and one mailbox per agent."""
    base = teams / team
    (base / "inboxes").mkdir(parents=True)
    members = [
        {"agentId": f"team-lead@{team}", "name": "team-lead", "agentType": "team-lead",
         "joinedAt": 1, "tmuxPaneId": "leader", "cwd": "/w", "subscriptions": [],
         "backendType": "in-process"},
        {"agentId": f"worker@{team}", "name": "worker", "agentType": "general-purpose",
         "model": "sonnet", "joinedAt": 1, "tmuxPaneId": "%3", "cwd": "/w",
         "subscriptions": [], "backendType": "tmux", "color": "blue"},
        {"agentId": f"tester@{team}", "name": "tester", "agentType": "general-purpose",
         "joinedAt": 1, "tmuxPaneId": "%4", "cwd": "/w", "subscriptions": [],
         "backendType": "tmux"},
    ]  # fmt: skip
    (base / "config.json").write_text(
        json.dumps({"name": team, "leadAgentId": f"team-lead@{team}", "members": members})
    )
    lead = [
        entry("worker", "parser done", "2026-12-04T16:59:00.000Z", n=1),
        entry("worker", perm_request("perm-1"), "2026-12-04T17:00:00.000Z", n=2),
        entry("tester", perm_request("perm-2", "Edit"), "2026-12-04T17:00:30.000Z", n=3),
        entry(
            "worker",
            json.dumps({"type": "idle_notification", "from": "worker",
                        "timestamp": "2026-12-04T17:01:00.000Z", "idleReason": "available"}),
            "2026-12-04T17:01:00.000Z", read=True, n=4,
        ),
    ]  # fmt: skip
    # perm-2 was answered: the answer went to the asker's mailbox.
    answer = json.dumps(
        {"type": "permission_response", "request_id": "perm-2", "subtype": "success"}
    )
    tester = [entry("team-lead", answer, "2026-12-04T17:02:00.000Z", n=5)]
    worker = [{"from": "team-lead", "text": "write tests", "timestamp": "2026-12-04T16:50:00.000Z",
               "read": False}]  # an older version's entry: no msgV, msg_id, type  # fmt: skip
    for name, docs in (("team-lead", lead), ("tester", tester), ("worker", worker)):
        (base / "inboxes" / f"{name}.json").write_text(json.dumps(docs, indent=2))
    return teams


@pytest.fixture
def teams(tmp_path: Path) -> Path:
    return write_team(tmp_path / "claude" / "teams")


@pytest.fixture
def env(tmp_path: Path, teams: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "ACKDECK_HOME": str(tmp_path / "ackdeck"),
        "CLAUDE_CONFIG_DIR": str(teams.parent),
        "PYTHONPATH": str(REPO / "src"),
    }


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), os.stat(path).st_mtime_ns


# ----- 1. the mailbox as a room ------------------------------------------------------------
def test_counters_mean_what_they_mean_elsewhere(teams: Path) -> None:
    clock = mb.parse_timestamp("2026-12-04T17:10:00.000Z")
    assert clock is not None
    room = ClaudeMailboxRoom(teams, "demo", "team-lead", clock=lambda: clock)
    st = room.status()
    # 4 entries in the file; 3 wait for the agent (pending), the read one waits for nothing.
    assert (st.pending, st.acked_total, st.pushed_total) == (3, 0, 4)
    agent = st.sessions["team-lead"]  # its one reader: 3 unread, 1 read
    assert (agent.unread, agent.in_flight) == (3, 0)
    assert st.oldest_pending_at == st.oldest_unread_at
    assert st.checked_at is not None and st.oldest_unread_at is not None
    assert st.checked_at - st.oldest_unread_at == 11 * 60  # from the oldest unread timestamp
    assert agent.oldest_unread_at == st.oldest_unread_at
    s = room.summary()
    assert s.senders == {"worker": [3, 2], "tester": [1, 1]}
    kinds = [(e.kind, e.pending) for e in s.events]
    # perm-1 waits; perm-2 was answered (in tester's mailbox); an idle notice is not a request
    assert kinds == [
        ("permission_request", True),
        ("permission_request", False),
        ("idle_notification", False),
    ]
    assert [e.request_id for e in s.pending] == ["perm-1"]
    lines = room.tail(10)
    assert b"WAITING permission_request: worker asks permission to use Bash" in lines[1]
    assert b"WAITING" not in lines[2] and b"worker is idle (available)" in lines[3]


def test_room_status_and_trace_through_the_cli(env: dict[str, str], teams: Path) -> None:
    out = ackdeck(env, "room", "status", "claude-team://demo/team-lead", "--json")
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)["rooms"]
    assert (row["pending"], row["acked_total"], row["pushed_total"]) == (3, 0, 4)
    assert row["sessions"]["team-lead"]["unread"] == row["unread"] == 3
    assert row["oldest_unread_age"] > 0
    out = ackdeck(
        env, "room", "status", "claude-team://demo/team-lead", "--session", "team-lead", "--json"
    )
    (row,) = json.loads(out.stdout)["rooms"]
    assert row["unread"] == 3 and row["unread_age"] == row["oldest_unread_age"]
    out = ackdeck(env, "room", "trace", "claude-team://demo/team-lead", "1")
    assert out.returncode == 0, out.stderr
    assert "permission_request" in out.stdout and "unread" in out.stdout


def test_parse_room_names_a_mailbox(env: dict[str, str], teams: Path) -> None:
    ref = parse_room("claude-team://demo/worker", env=env)
    assert ref.display == "claude-team://demo/worker"
    assert ref.watch_dirs() == [teams / "demo" / "inboxes"]
    assert ref.watches(str(teams / "demo" / "inboxes" / "worker.json"))
    lines = ref.lines()
    assert lines.first_page() and lines.count == 1 and "write tests" in lines.line(0)
    for bad in ("claude-team://demo", "claude-team://a/b/c", "claude-team://de mo/x"):
        with pytest.raises(InvalidInput, match="claude-team://TEAM/AGENT"):
            parse_room(bad, env=env)


# ----- looking is not reading ---------------------------------------------------------------
def test_looking_never_changes_the_mailbox(env: dict[str, str], teams: Path) -> None:
    inbox = locations.claude_inbox(teams, "demo", "team-lead")
    before = snapshot(inbox)
    room = ClaudeMailboxRoom(teams, "demo", "team-lead")
    room.status(), room.tail(5), room.trace(0), room.find("parser"), room.summary()
    lines = parse_room("claude-team://demo/team-lead", env=env).lines()
    lines.first_page(), lines.catch_up()
    for args in (("room", "status"), ("room", "trace", "--match", "parser")):
        assert ackdeck(env, *args, "claude-team://demo/team-lead").returncode == 0
    out = ackdeck(env, "room", "read", "claude-team://demo/team-lead", "--session", "s")
    assert out.returncode != 0 and "its agent reads it" in out.stderr
    out = ackdeck(env, "room", "ack", "claude-team://demo/team-lead", "--session", "s")
    assert out.returncode != 0 and "its agent reads it" in out.stderr
    assert snapshot(inbox) == before
    assert sorted(os.listdir(inbox.parent)) == ["team-lead.json", "tester.json", "worker.json"]


# ----- 2. another version's shape, a half-written file, a top level not an array -----------
BAD = {
    "half-written": (b'[\n  {\n    "from": "worker",\n    "te', "not complete JSON"),
    "top level": (b'{"messages": []}', "the top level is an object"),
    "another shape": (b'[{"sender": "worker", "body": "hi", "ts": 1}]', "entry 0 is not one"),
    "read not a boolean": (
        b'[{"from": "w", "text": "t", "timestamp": "x", "read": "yes"}]',
        "its 'read' is a string",
    ),
    "not UTF-8": (b'[{"from": "\xff"}]', "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_shape_is_one_line_and_nothing_written(
    case: str, env: dict[str, str], teams: Path
) -> None:
    raw, why = BAD[case]
    inbox = locations.claude_inbox(teams, "demo", "worker")
    inbox.write_bytes(raw)
    before = snapshot(inbox)
    for args in (
        ("room", "status", "claude-team://demo/worker"),
        ("room", "push", "claude-team://demo/worker", "hello"),
        ("room", "trace", "claude-team://demo/worker", "--match", "x"),
    ):
        out = ackdeck(env, *args)
        assert out.returncode != 0, (args, out.stdout)
        (line,) = out.stderr.strip().splitlines()
        assert str(inbox) in line and why in line and "expected Claude Code's mailbox" in line
    assert snapshot(inbox) == before
    assert sorted(os.listdir(inbox.parent)) == ["team-lead.json", "tester.json", "worker.json"]


def test_an_empty_file_is_an_empty_mailbox(teams: Path) -> None:
    # Claude Code creates a mailbox exclusively, then writes `[]`: a reader may see it empty.
    inbox = locations.claude_inbox(teams, "demo", "worker")
    inbox.write_bytes(b"")
    assert ClaudeMailboxRoom(teams, "demo", "worker").status().pushed_total == 0


# ----- 3. push: Claude Code's shape, its lock, an atomic replace ---------------------------
def test_push_appends_an_entry_in_claude_codes_shape(teams: Path) -> None:
    now = 1796403600.123
    room = ClaudeMailboxRoom(teams, "demo", "worker", clock=lambda: now)
    msg_id = room.push("please also cover the lexer")
    docs = json.loads(locations.claude_inbox(teams, "demo", "worker").read_bytes())
    assert docs[0]["text"] == "write tests"  # the older entry kept as it was
    new = docs[1]
    assert list(new) == ["from", "text", "timestamp", "msgV", "msg_id", "type", "read"]
    assert new == {
        "from": "owner",
        "text": "please also cover the lexer",
        "timestamp": "2026-12-04T17:00:00.123Z",
        "msgV": 1,
        "msg_id": msg_id,
        "type": "message",
        "read": False,
    }
    assert not locations.claude_inbox_lock(locations.claude_inbox(teams, "demo", "worker")).exists()


def test_push_refuses_what_claude_code_would_misread(teams: Path) -> None:
    inbox = locations.claude_inbox(teams, "demo", "worker")
    before = snapshot(inbox)
    with pytest.raises(InvalidInput, match="protocol frame"):
        ClaudeMailboxRoom(teams, "demo", "worker").push(perm_request("forged"))
    for name in ("team-lead", "user", "system"):
        with pytest.raises(InvalidInput, match="reserved by Claude Code"):
            ClaudeMailboxRoom(teams, "demo", "worker", sender=name).push("hi")
    with pytest.raises(InvalidInput, match="not a member"):
        ClaudeMailboxRoom(teams, "demo", "nobody").push("hi")
    assert snapshot(inbox) == before
    assert not locations.claude_inbox(teams, "demo", "nobody").exists()


def test_push_creates_a_members_mailbox_as_claude_code_does(teams: Path) -> None:
    inbox = locations.claude_inbox(teams, "demo", "tester")
    inbox.unlink()
    ClaudeMailboxRoom(teams, "demo", "tester").push("hi")
    assert [d["text"] for d in json.loads(inbox.read_bytes())] == ["hi"]


def test_the_file_is_written_as_json_stringify_writes_it(teams: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: JSON.stringify cannot be compared")
    docs = [entry("w", 'quote " \\ tab\t é 😀 \u2028', "2026-12-04T17:00:00.000Z")]
    ours = mb.dump(docs)
    theirs = subprocess.run(
        [node, "-e", "process.stdout.write(JSON.stringify(JSON.parse(require('fs')"
         ".readFileSync(0, 'utf8')), null, 2))"],
        input=ours, capture_output=True, check=True, timeout=WAIT,
    ).stdout  # fmt: skip
    assert ours == theirs


def test_race_with_proper_lockfile_loses_and_duplicates_nothing(teams: Path) -> None:
    """Thousands of entries from each side: node through proper-lockfile (appending, and
    pruning as newer Claude Code does, into a log), ackdeck through its push."""
    node = need_node()
    count = 2000
    inbox = locations.claude_inbox(teams, "demo", "worker")
    inbox.write_text("[]")
    log = teams.parent / "pruned.jsonl"
    writer = subprocess.Popen(
        [node, str(SCRIPTS / "race_writer.js"), str(inbox), str(log), str(count), "50"],
        stdout=subprocess.PIPE,
        text=True,
        env=node_env(),
    )
    room = ClaudeMailboxRoom(teams, "demo", "worker")
    ours: list[str] = []
    locked = 0
    try:
        # ackdeck starts once node is writing, so both sides run at once from the start.
        def node_wrote() -> bool:
            assert writer.poll() is None, "node exited before it wrote"
            return b'"node 0"' in inbox.read_bytes() or log.exists()

        eventually(node_wrote, timeout=WAIT, what="node's first entry")
        for n in range(count):
            while True:
                try:
                    ours.append(room.push(f"ackdeck {n}"))
                    break
                except MailboxLocked:
                    locked += 1  # the push wrote nothing; the owner tries again
        out, _ = writer.communicate(timeout=WAIT)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, out
    assert out.startswith(f"done {count}")
    kept = json.loads(inbox.read_bytes())
    pruned = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    texts = [d["text"] for d in pruned + kept]
    assert sorted(texts) == sorted(
        [f"node {n}" for n in range(count)] + [f"ackdeck {n}" for n in range(count)]
    )
    assert len(set(texts)) == 2 * count
    # each side's own entries in the order it wrote them
    assert [t for t in texts if t.startswith("ackdeck")] == [f"ackdeck {n}" for n in range(count)]
    assert [t for t in texts if t.startswith("node")] == [f"node {n}" for n in range(count)]
    # The two sides really interleaved (a race that ran one side after the other proves
    # nothing): node entries landed between ackdeck's (how often depends on the machine's load;
    # 91 to 300-odd alternations were seen on two shared cores).
    switches = sum(a[:4] != b[:4] for a, b in zip(texts, texts[1:], strict=False))
    assert switches >= 3, switches
    ids = {d["msg_id"] for d in pruned + kept if d["from"] == "owner"}
    assert ids == set(ours)
    assert not locations.claude_inbox_lock(inbox).exists()
    print(
        f"race: {count} + {count} entries, {switches} alternations, ackdeck retried {locked}x, "
        f"node: {out.strip()}"
    )


def read_line(proc: subprocess.Popen[str], want: str) -> None:
    """The next line `proc` prints, which must be `want` (readline blocks until it comes; a
    hung holder is stopped by the test's timeout)."""
    assert proc.stdout is not None
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(WAIT)
    assert got and got[0].strip() == want, got


def test_a_holder_past_its_staleness_keeps_its_lock(teams: Path) -> None:
    """proper-lockfile refreshes a held lock's mtime: past `stale` it is still not stale, so a
    push waits through its retries and writes nothing, then succeeds once it is released."""
    node = need_node()
    inbox = locations.claude_inbox(teams, "demo", "worker")
    before = snapshot(inbox)
    holder = subprocess.Popen(
        [node, str(SCRIPTS / "hold_lock.js"), str(inbox)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=node_env(),
    )
    try:
        read_line(holder, "locked")
        room = ClaudeMailboxRoom(teams, "demo", "worker")
        with pytest.raises(MailboxLocked, match="nothing written"):
            room.push("early")
        read_line(holder, "past-stale")  # held longer than STALE_S, refreshed all along
        with pytest.raises(MailboxLocked, match="nothing written"):
            room.push("late")
        assert snapshot(inbox) == before
        assert holder.stdin is not None
        holder.stdin.close()
        read_line(holder, "released")  # never "compromised": ackdeck did not take it over
        assert holder.wait(WAIT) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    room.push("after")
    assert [d["text"] for d in json.loads(inbox.read_bytes())][-1] == "after"


def test_an_abandoned_lock_is_taken_over_after_its_staleness(teams: Path) -> None:
    inbox = locations.claude_inbox(teams, "demo", "worker")
    lock_dir = locations.claude_inbox_lock(inbox)
    lock_dir.mkdir()
    fresh = time.time() - STALE_S + 60  # a holder that refreshed a moment ago: not stale
    os.utime(lock_dir, (fresh, fresh))
    with pytest.raises(MailboxLocked):
        MailboxLock(inbox, sleep=lambda _s: None).acquire()
    gone = time.time() - STALE_S - 1  # its holder died: no refresh for longer than stale
    os.utime(lock_dir, (gone, gone))
    ClaudeMailboxRoom(teams, "demo", "worker").push("after a crash")
    assert not lock_dir.exists()
    assert json.loads(inbox.read_bytes())[-1]["text"] == "after a crash"


def test_a_lock_taken_over_mid_write_writes_nothing(teams: Path) -> None:
    inbox = locations.claude_inbox(teams, "demo", "worker")
    before = snapshot(inbox)
    room = ClaudeMailboxRoom(teams, "demo", "worker")

    def steal(docs: list[dict]) -> list[dict]:
        # Another taker judged our lock stale, removed it and took it (its own mtime).
        lock_dir = locations.claude_inbox_lock(inbox)
        os.rmdir(lock_dir)
        os.mkdir(lock_dir)
        return [*docs, mb.new_entry("owner", "lost?", time.time())]

    with pytest.raises(Exception, match="taken over"):
        room._rewrite(steal)
    assert snapshot(inbox) == before
    assert [p.name for p in inbox.parent.iterdir() if "tmp" in p.name] == []
    assert locations.claude_inbox_lock(inbox).is_dir()  # the other taker's lock, left alone


# ----- 4. never marked read on the agent's behalf, unless the owner says so -------------------
def test_mark_read_is_explicit_confirmed_and_limited_to_what_was_shown(
    env: dict[str, str], teams: Path
) -> None:
    inbox = locations.claude_inbox(teams, "demo", "team-lead")
    shown = json.loads(
        ackdeck(env, "team", "show", "claude-team://demo/team-lead", "--json").stdout
    )
    keys = [e["key"] for e in shown["entries"]]
    before = snapshot(inbox)
    # no terminal to ask and no --yes: refused, nothing written
    out = ackdeck(env, "team", "mark-read", "claude-team://demo/team-lead", keys[0])
    assert out.returncode != 0 and "confirm with --yes" in out.stderr
    # a key that was never shown (another mailbox's): refused before anything is asked
    other = json.loads(ackdeck(env, "team", "show", "claude-team://demo/worker", "--json").stdout)
    out = ackdeck(
        env,
        "team",
        "mark-read",
        "claude-team://demo/team-lead",
        other["entries"][0]["key"],
        "--yes",
    )
    assert out.returncode != 0 and "nothing marked" in out.stderr
    assert snapshot(inbox) == before
    out = ackdeck(
        env,
        "team",
        "mark-read",
        "claude-team://demo/team-lead",
        keys[1],
        keys[3],
        "--yes",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "room": "claude-team://demo/team-lead",
        "marked": 1,  # keys[3] was read already
        "not_marked": [keys[3]],
    }
    after = json.loads(inbox.read_bytes())
    assert [d["read"] for d in after] == [False, True, False, True]
    # only the flag changed: every other byte of every entry is as Claude Code wrote it
    assert [{**d, "read": None} for d in after] == [
        {**d, "read": None} for d in json.loads(before[0])
    ]


def test_team_list_shows_members_with_pane_and_state(env: dict[str, str], teams: Path) -> None:
    out = ackdeck(env, "team", "list", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = {r["name"]: r for r in doc["members"]}
    assert rows["worker"]["state"] == "waiting"  # its permission request is unanswered
    assert rows["worker"]["pane"] == "%3" and rows["worker"]["model"] == "sonnet"
    assert rows["tester"]["state"] == "active"  # its request was answered
    assert rows["team-lead"]["unread"] == 3 and rows["team-lead"]["pane"] == "leader"
    assert doc["mailboxes"] == [
        "claude-team://demo/team-lead",
        "claude-team://demo/tester",
        "claude-team://demo/worker",
    ]


def test_members_idle_from_the_newest_notice(teams: Path) -> None:
    from ackdeck.core.service.claude_teams import members

    inbox = locations.claude_inbox(teams, "demo", "team-lead")
    docs = json.loads(inbox.read_bytes())
    docs = [d for d in docs if "permission_request" not in d["text"]]  # answered and pruned
    inbox.write_text(json.dumps(docs, indent=2))
    rows = {r.name: r for r in members({"CLAUDE_CONFIG_DIR": str(teams.parent)})}
    assert rows["worker"].state == "idle" and rows["worker"].room == "claude-team://demo/worker"


# ----- the dashboard -------------------------------------------------------------------------
async def test_the_dashboard_lists_teams_and_counts_as_core_does(
    teams: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import fixed_clock, quiet_config, screen_text, settle
    from ackdeck.tui.widgets.tables import RoomsTable

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(teams.parent))
    inbox = locations.claude_inbox(teams, "demo", "team-lead")
    before = snapshot(inbox)
    home = tmp_path / "ackdeck"
    home.mkdir()
    app = make_app(quiet_config([], home=home, claude_teams=True), clock=fixed_clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        table = app.main.query_one(RoomsTable)
        assert sorted(table._keys) == [
            "claude-team://demo/team-lead",
            "claude-team://demo/tester",
            "claude-team://demo/worker",
        ]
        row = table._rows[table._keys.index("claude-team://demo/team-lead")]
        cells = [c[0] if isinstance(c, tuple) else str(c) for c in row]
        st = ClaudeMailboxRoom(teams, "demo", "team-lead").status()
        assert cells[1:5] == [f"{st.pending:,}", "0", "0", "0"]
        assert cells[5].startswith("team-lead:3")  # unread by its agent
        text = screen_text(app)
        assert "demo/team-lead" in text
    assert snapshot(inbox) == before  # the dashboard looked; nothing was marked read
    off = quiet_config([], home=home, claude_teams=False)
    assert off.room_paths() == []


def test_the_dashboard_maps_a_mailbox_change_to_its_room(env: dict[str, str], teams: Path) -> None:
    from ackdeck.tui.watch_map import WatchMap

    key = "claude-team://demo/worker"
    wm = WatchMap([(key, parse_room(key, env=env))])
    inboxes = teams / "demo" / "inboxes"
    assert str(inboxes) in wm.parents
    assert wm.room_of(str(inboxes / "worker.json")) == (key, False)
    assert wm.room_of(str(inboxes / "tester.json"))[0] is None  # another agent's: not this room


def test_team_members_are_agents(env: dict[str, str], teams: Path) -> None:
    """`ackdeck agents` (and agents_list, the dashboard) list every team member after the
    sessions, its state from the mailboxes: an unanswered permission request is waiting for the
    owner; its pane is shown. Listing them changes no mailbox."""
    before = {p: snapshot(p) for p in sorted(teams.glob("demo/inboxes/*.json"))}
    out = ackdeck(env, "agents", "--json")
    assert out.returncode == 0, out.stderr
    rows = {a["session"]: a for a in json.loads(out.stdout)["agents"]}
    assert set(rows) == {"demo/team-lead", "demo/worker", "demo/tester"}
    worker = rows["demo/worker"]
    assert worker["origin"] == "claude-team" and worker["state"] == "waiting"
    assert worker["pane"] == "%3" and worker["rooms"] == ["claude-team://demo/worker"]
    assert worker["unread"] == 1  # "write tests", from the lead
    assert worker["since"] is not None  # the request's time
    assert rows["demo/tester"]["state"] == "working"  # its request was answered
    assert rows["demo/team-lead"]["state"] == "working"  # its last notice: an answer it sent
    assert rows["demo/team-lead"]["unread"] == 3
    text = ackdeck(env, "agents")
    assert text.returncode == 0 and "pane %3: a request of its waits" in text.stdout
    none = ackdeck(env, "agents", "--no-claude-teams", "--json")
    assert json.loads(none.stdout)["agents"] == []
    assert {p: snapshot(p) for p in before} == before


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(at))


def test_a_mailbox_with_6_of_10_read_counts_4_unread_with_one_age_in_every_door(
    env: dict[str, str], teams: Path
) -> None:
    # Issue 42, class 6: `room status` said 10 unread at room level and 4 for the agent, the
    # room's unread_age was the oldest entry's (a read one), and `ackdeck agents` gave the
    # member no age at all. Claude Code delivers only unread entries (and prunes read ones
    # when it next delivers), so 4 wait, and the oldest of those has waited the longest.
    now = time.time()
    docs = [
        entry("team-lead", f"done {i}", _iso(now - 3600 + i), read=True, n=100 + i)
        for i in range(6)
    ] + [entry("team-lead", f"todo {i}", _iso(now - 600 + i), n=200 + i) for i in range(4)]
    (teams / "demo" / "inboxes" / "worker.json").write_text(json.dumps(docs, indent=2))
    oldest_unread = mb.parse_timestamp(docs[6]["timestamp"])
    assert oldest_unread is not None
    spec = "claude-team://demo/worker"

    def status(*extra: str) -> dict:
        out = ackdeck(env, "room", "status", spec, *extra, "--json")
        assert out.returncode == 0, out.stderr
        (row,) = json.loads(out.stdout)["rooms"]
        return row

    checked = time.time()
    room, mine = status(), status("--session", "worker")
    agents = ackdeck(env, "agents", "--json")
    assert agents.returncode == 0, agents.stderr
    (member,) = [a for a in json.loads(agents.stdout)["agents"] if a["session"] == "demo/worker"]
    assert room["unread"] == mine["unread"] == member["unread"] == 4
    assert room["sessions"]["worker"]["unread"] == 4
    expected = checked - oldest_unread  # ~600 s; the read entries are ~3600 s old
    slack = time.time() - checked + 5  # the three commands ran one after another
    for age in (
        room["unread_age"],
        room["oldest_unread_age"],
        mine["unread_age"],
        member["oldest_unread_age"],
    ):
        assert age is not None and abs(age - expected) <= slack, (age, expected)
    # What waits is what counts as pending: the read entries are done (pruned by Claude
    # Code at its next delivery), and the oldest pending entry is the oldest unread.
    assert room["pending"] == 4 and room["pushed_total"] == 10
    assert abs(room["oldest_pending_age"] - expected) <= slack
