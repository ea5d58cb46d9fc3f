"""A Claude Code task list as a queue room (`claude-tasks://LIST`, issue 45 item 2): claims
under Claude Code's per-task lock (raced here by npm's proper-lockfile itself, and by Claude
Code's blind TaskUpdate), leases kept in ackdeck's own state, a claim that is not ackdeck's
shown and never overwritten. Task files are written as Claude Code 2.1.328 writes them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.errors import TokenRefused
from ackdeck.core.rooms.claude_tasks.queue import ClaudeTasksQueue
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_json
from tests.helpers.paths import PATHS
from tests.helpers.proper_lockfile import SCRIPTS, WAIT, held, let_go, need_node, next_line
from tests.helpers.proper_lockfile import node_env as lock_env
from tests.helpers.wait import eventually

LIST = "session-abcd1234"
ROOM = f"claude-tasks://{LIST}"


def task(n: int, *, owner: str | None = None, status: str = "pending", after: str = "") -> dict:
    doc: dict = {
        "id": str(n),
        "subject": f"task {n}",
        "description": f"do task {n}",
        "activeForm": f"doing task {n}",
        "status": status,
        "blocks": [],
        "blockedBy": [after] if after else [],
    }
    if owner is not None:
        doc["owner"] = owner
    return doc


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    d = tmp_path / "claude"
    (d / "tasks" / LIST).mkdir(parents=True)
    (d / "tasks" / LIST / ".lock").touch()
    return d


def write(claude: Path, doc: dict) -> Path:
    path = claude / "tasks" / LIST / f"{doc['id']}.json"
    path.write_text(json.dumps(doc, indent=2))  # JSON.stringify(task, null, 2)
    return path


def path_of(claude: Path, n: int) -> Path:
    return claude / "tasks" / LIST / f"{n}.json"


def doc_of(claude: Path, n: int) -> dict:
    return json.loads(path_of(claude, n).read_bytes())


@pytest.fixture
def env(tmp_path: Path, claude: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")},
        "HOME": str(tmp_path / "home"),
        "ACKDECK_HOME": str(tmp_path / "ackdeck"),
        "CLAUDE_CONFIG_DIR": str(claude),
        "PYTHONPATH": PATHS,
    }


def claim(env: dict[str, str], session: str, *extra: str) -> dict:
    return ackdeck_json(env, "claim", ROOM, "--session", session, *extra)


def test_a_claim_writes_only_owner_and_status_and_keeps_the_lease_in_ackdecks_state(
    env: dict[str, str], claude: Path
) -> None:
    write(claude, task(1))
    write(claude, task(2, after="1"))  # blocked until 1 is completed
    got = claim(env, "worker", "--lease", "90s")
    assert got["claimed"] and got["offset"] == 1 and got["deliveries"] == 1
    assert doc_of(claude, 1) == task(1, owner="worker", status="in_progress")
    assert path_of(claude, 1).read_bytes() == json.dumps(doc_of(claude, 1), indent=2).encode()
    state = json.loads(locations.claude_tasks_queue(Path(env["ACKDECK_HOME"]), LIST).read_bytes())
    assert [(t["offset"], t["holder"], t["token"]) for t in state["tasks"]] == [(1, "worker", 1)]
    assert claim(env, "tester")["claimed"] is False  # 2 waits on 1
    done = ackdeck_json(env, "done", ROOM, got["token"])
    assert done["mode"] == "done"
    assert doc_of(claude, 1) == task(1, owner="worker", status="completed")
    again = ackdeck_json(env, "done", ROOM, got["token"])  # a lost reply retried: a no-op
    assert again["mode"] == "noop"
    second = claim(env, "tester")
    assert second["claimed"] and second["offset"] == 2
    rel = ackdeck_json(env, "release", ROOM, second["token"])
    assert rel["mode"] == "released"
    assert doc_of(claude, 2) == task(2, after="1")  # as Claude Code gives a task back
    out = ackdeck(env, "done", ROOM, second["token"])
    assert out.returncode == 4 and "refused" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_what_only_an_inbox_does_is_one_line_on_a_task_list(
    env: dict[str, str], claude: Path
) -> None:
    before = write(claude, task(1)).read_bytes()
    for args in (
        ("room", "status", ROOM),
        ("room", "read", ROOM, "--session", "s"),
        ("room", "ack", ROOM, "--session", "s"),
        ("room", "push", ROOM, "a task"),
        ("room", "trace", ROOM, "x1"),  # not a task id (a task's trace: its own test)
        ("room", "wait", ROOM, "--session", "s", "--timeout", "1"),
        ("claim", "claude-tasks://../x", "--session", "s"),
        ("done", ROOM, "not-a-token"),
        ("done", ROOM, "1-ffffffffT1"),
    ):
        out = ackdeck(env, *args)
        assert out.returncode != 0, args
        assert len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert path_of(claude, 1).read_bytes() == before


def test_a_16_way_claim_race_on_one_task_has_exactly_one_winner(
    env: dict[str, str], claude: Path
) -> None:
    """16 `ackdeck claim` processes started at once on a list with one task: exactly one
    claims it, the file names that one, and the others say nothing was claimable."""
    write(claude, task(1))
    procs = [
        subprocess.Popen(
            [*ACKDECK, "claim", ROOM, "--session", f"agent{n}", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(16)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=WAIT)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    winners = [r for r in results if r["claimed"]]
    assert len(winners) == 1, winners
    assert doc_of(claude, 1)["owner"] == json.loads(winners[0]["line"])["owner"]
    assert all("nothing to claim" in r["message"] for r in results if not r["claimed"])


def test_a_claim_made_through_claude_code_is_shown_and_never_overwritten(
    env: dict[str, str], claude: Path
) -> None:
    theirs = write(claude, task(1, owner="tester", status="in_progress"))
    before = theirs.read_bytes()
    write(claude, task(2))
    got = claim(env, "worker")
    assert got["offset"] == 2
    assert "task 1 by tester" in got["message"]
    nothing = claim(env, "other")
    assert nothing["claimed"] is False and "task 1 by tester" in nothing["message"]
    assert theirs.read_bytes() == before


def test_a_task_claude_code_has_locked_is_skipped_and_claimed_once_it_lets_go(
    env: dict[str, str], claude: Path
) -> None:
    """node holds Claude Code's lock on task 1 (proper-lockfile on 1.json): the claim waits
    through Claude Code's 30 retries, writes nothing to 1, takes 2; after node lets go, 1."""
    one = write(claude, task(1))
    write(claude, task(2))
    before = one.read_bytes()
    with held(one) as holder:
        got = claim(env, "worker")
        assert got["offset"] == 2
        assert "task 1 locked by Claude Code right now" in got["message"]
        assert one.read_bytes() == before
        let_go(holder)
    assert claim(env, "worker")["offset"] == 1
    assert not locations.claude_task_lock(one).exists()


def test_an_expired_lease_gives_the_task_back_and_fences_its_old_holder(
    tmp_path: Path, claude: Path
) -> None:
    write(claude, task(1))
    now = [1000.0]
    q = ClaudeTasksQueue(tmp_path / "a", claude / "tasks", LIST, clock=lambda: now[0])
    first = q.claim("worker", 60)
    now[0] += 61  # the worker stalled past its lease
    second = q.claim("tester", 60)
    assert second.claimed and second.offset == 1 and second.deliveries == 2
    assert "lease expired; given back" in second.message
    assert doc_of(claude, 1)["owner"] == "tester"
    renewed = q.update(str(second.token), "extend", 300)
    assert renewed.mode == "extended" and renewed.lease_until == now[0] + 300
    now[0] += 120  # past the first 60 s, within the renewal: still the tester's
    assert q.claim("worker", 60).claimed is False
    assert doc_of(claude, 1)["owner"] == "tester"
    for op in ("done", "extend", "release"):
        with pytest.raises(TokenRefused, match="superseded"):
            q.update(str(first.token), op)
    assert doc_of(claude, 1)["owner"] == "tester"
    assert q.update(str(second.token), "done").mode == "done"


def test_an_expired_lease_on_a_task_changed_since_is_left_as_it_is(
    tmp_path: Path, claude: Path
) -> None:
    """After our claim a teammate's TaskUpdate took the task (a blind write, as Claude Code's
    is): the lease's end gives nothing back, and no later claim overwrites the teammate's."""
    write(claude, task(1))
    now = [1000.0]
    q = ClaudeTasksQueue(tmp_path / "a", claude / "tasks", LIST, clock=lambda: now[0])
    mine = q.claim("worker", 60)
    taken = write(claude, task(1, owner="teammate", status="in_progress"))
    before = taken.read_bytes()
    now[0] += 61
    got = q.claim("tester", 60)
    assert got.claimed is False
    assert "changed since our claim (owner teammate, status in_progress), left as it is" in (
        got.message
    )
    assert "task 1 by teammate" in got.message
    with pytest.raises(TokenRefused):
        q.update(str(mine.token), "release")
    assert taken.read_bytes() == before


def test_release_and_done_after_claude_codes_blind_claim_are_refused_and_leave_it(
    tmp_path: Path, claude: Path
) -> None:
    """We hold task 1; a teammate's TaskUpdate (Claude Code's own path: its per-task lock,
    then a blind merge of owner and status, run here by node) takes it. Our release must not
    give the teammate's claim away, nor our done complete it."""
    node = need_node()
    write(claude, task(1))
    q = ClaudeTasksQueue(tmp_path / "a", claude / "tasks", LIST)
    mine = q.claim("worker", 60)
    subprocess.run(
        [node, str(SCRIPTS / "task_claimer.js"), str(path_of(claude, 1)), "1", "teammate"],
        env=lock_env(), check=True, capture_output=True, timeout=WAIT,
    )  # fmt: skip
    theirs = path_of(claude, 1).read_bytes()
    with pytest.raises(TokenRefused, match="changed since our claim .owner teammate"):
        q.update(str(mine.token), "release")
    assert path_of(claude, 1).read_bytes() == theirs
    with pytest.raises(TokenRefused):  # the lease was dropped with the refusal
        q.update(str(mine.token), "done")
    assert path_of(claude, 1).read_bytes() == theirs
    assert doc_of(claude, 1)["owner"] == "teammate"


def test_claude_codes_blind_claims_racing_ours_lose_no_write_and_are_never_overwritten(
    env: dict[str, str], claude: Path, tmp_path: Path
) -> None:
    """node claims task 1 over and over the way Claude Code's TaskUpdate does (under the
    per-task lock, merging over whatever it reads: a blind write) while ackdeck claims and
    releases it as fast as it can. Every node write survives (its count is whole), and once
    the teammate holds the task no ackdeck claim or release succeeds: ackdeck never
    overwrites a claim that is not its own."""
    node = need_node()
    write(claude, task(1))
    count = 200
    q = ClaudeTasksQueue(tmp_path / "a", claude / "tasks", LIST)
    racer = subprocess.Popen(
        [node, str(SCRIPTS / "task_claimer.js"), str(path_of(claude, 1)), str(count), "teammate"],
        stdout=subprocess.PIPE,
        text=True,
        env=lock_env(),
    )
    ours = refused = 0
    try:
        while racer.poll() is None or ours + refused == 0:
            got = q.claim("worker", 60)
            if not got.claimed:
                refused += 1
                continue
            ours += 1
            assert got.line is not None and b'"owner": "worker"' in got.line
            try:
                q.update(str(got.token), "release")
            except TokenRefused as exc:
                assert "changed since our claim" in str(exc)
                refused += 1
        next_line(racer, "started")
        next_line(racer, "done")
    finally:
        if racer.poll() is None:
            racer.kill()
            racer.wait()
    assert racer.wait(WAIT) == 0
    final = doc_of(claude, 1)
    assert final["metadata"]["claims"] == count  # no write of node's was lost
    assert final["owner"] == "teammate" and final["status"] == "in_progress"
    # From the teammate's first claim on, ackdeck only ever refused.
    after = q.claim("worker", 60)
    assert after.claimed is False and "task 1 by teammate" in after.message
    print(f"race: {count} node claims; ackdeck claimed {ours}x, refused {refused}x")


def test_a_claimer_killed_between_its_lease_and_the_task_write_leaves_it_claimable(
    env: dict[str, str], claude: Path, tmp_path: Path
) -> None:
    """kill -9 after the lease was recorded, before Claude Code's file was written: the file
    is untouched; once that lease ends, the task is handed out (a redelivery, never a loss,
    and never a task owned with no lease)."""
    one = write(claude, task(1))
    before = one.read_bytes()
    marker = tmp_path / "paused"
    paused_env = {
        **env,
        "ACKDECK_TEST_PAUSE_AT": "claude-task-claim",
        "ACKDECK_TEST_PAUSE_FILE": str(marker),
    }
    proc = subprocess.Popen(
        [*ACKDECK, "claim", ROOM, "--session", "worker", "--lease", "1s"],
        env=paused_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        eventually(lambda: marker.exists(), timeout=WAIT, what="the claim paused")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert one.read_bytes() == before
    lock = locations.claude_task_lock(one)
    if lock.exists():  # it died holding Claude Code's lock: abandoned, stale after 10 s
        os.utime(lock, (0, 0))
    got = eventually(
        lambda: (c := claim(env, "tester"))["claimed"] and c, timeout=WAIT, what="the lease's end"
    )
    assert got["offset"] == 1 and got["deliveries"] == 2
    assert doc_of(claude, 1)["owner"] == "tester"


async def test_the_agents_door_claims_and_finishes_a_claude_code_task(
    env: dict[str, str], claude: Path, tmp_path: Path
) -> None:
    """task_claim and task_done over MCP (the official SDK's client, a real `ackdeck mcp`)
    on a task list: the same tools, the same results as on a file queue."""
    import sys

    from mcp import Client, StdioServerParameters

    from tests.helpers.paths import REPO

    write(claude, task(1))
    args = ["-m", "ackdeck.core.cli", "--home", env["ACKDECK_HOME"], "mcp", "--session"]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*args, "worker", "--room", ROOM],
        env={k: env[k] for k in ("PYTHONPATH", "HOME", "CLAUDE_CONFIG_DIR")},
        cwd=str(REPO),
    )
    async with Client(params, read_timeout_seconds=60) as client:
        got = await client.call_tool("task_claim", {"lease": 120})
        assert not got.is_error, got
        assert got.structured_content is not None
        claimed = got.structured_content
        assert claimed["claimed"] and claimed["offset"] == 1
        assert doc_of(claude, 1)["owner"] == "worker"
        done = await client.call_tool("task_done", {"token": claimed["token"]})
        assert not done.is_error and done.structured_content is not None
        assert done.structured_content["mode"] == "done"
    assert doc_of(claude, 1)["status"] == "completed"


def test_real_claude_code_sees_the_queue_claim_and_completion_and_keeps_its_own(
    tmp_path: Path,
) -> None:
    """Real interactive Claude Code (2.1.328, task tools on, offline in tmux): its lead creates
    tasks 1 and 2 and takes 1 with TaskUpdate. `ackdeck claim` names 1 as the lead's and takes
    2; `done` completes it; Claude Code's own TaskGet then reports task 2 completed (it reads
    what ackdeck wrote), and task 1 is still the lead's, byte for byte."""
    from tests.helpers.claude_tmux import claude_in_tmux
    from tests.helpers.model_stub import LEAD, Call, Say, TeamStub

    look = Call("TaskGet", {"taskId": "2"})
    script = [
        Call("ToolSearch", {"query": "select:TaskCreate,TaskUpdate,TaskGet", "max_results": 5}),
        Call("TaskCreate", {"subject": "build", "description": "do build", "activeForm": "b"}),
        Call("TaskCreate", {"subject": "test", "description": "do test", "activeForm": "t"}),
        Call("TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "team-lead"}),
        Say("made"),
        look,
        Say("checked"),
    ]
    with (
        TeamStub({LEAD: script}) as stub,
        claude_in_tmux(
            tmp_path, stub.url, "make tasks", extra_env={"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
        ) as cc,
    ):
        lists = eventually(
            lambda: [d for d in (cc.claude / "tasks").glob("session-*") if (d / "2.json").exists()],
            timeout=WAIT,
            what="Claude Code's two tasks",
        )
        one = lists[0] / "1.json"
        eventually(
            lambda: json.loads(one.read_bytes()).get("owner") == "team-lead",
            timeout=WAIT,
            what="task 1 taken by the lead",
        )
        eventually(lambda: stub.played.get(LEAD, 0) >= 5, timeout=WAIT, what="the lead idle")
        lead_holds = one.read_bytes()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")},
            "ACKDECK_HOME": str(tmp_path / "ackdeck"),
            "CLAUDE_CONFIG_DIR": str(cc.claude),
            "PYTHONPATH": PATHS,
        }
        room = f"claude-tasks://{lists[0].name}"
        got = ackdeck_json(env, "claim", room, "--session", "worker")
        assert got["claimed"] and got["offset"] == 2, got
        assert "task 1 by team-lead" in got["message"]
        assert ackdeck_json(env, "done", room, got["token"])["mode"] == "done"
        # The owner asks the lead to look: typed, then sent once it shows on the screen.
        subprocess.run([*cc.tmux, "send-keys", "-l", "check task 2"], check=True)
        eventually(lambda: "check task 2" in cc.screen(), timeout=WAIT, what="the typed line")
        subprocess.run([*cc.tmux, "send-keys", "Enter"], check=True)
        eventually(lambda: stub.played.get(LEAD, 0) >= 7, timeout=WAIT, what="the lead's look")
        seen = stub.result_of(look)
        assert "Task #2: test" in seen and "Status: completed" in seen, seen
        assert one.read_bytes() == lead_holds
        assert stub.errors == []


def test_ackdeck_tasks_shows_a_queue_holder_as_working_until_its_lease_ends(
    env: dict[str, str], claude: Path, tmp_path: Path
) -> None:
    """`ackdeck tasks` flags a holder that is no member of the list's team as gone; a holder
    with a live ackdeck lease is working (the lease's end shown), and one whose lease ended is
    stalled, not gone."""
    from ackdeck.core.service.claude_tasks import list_tasks

    team = claude / "teams" / LIST
    team.mkdir(parents=True)
    members = [{"agentId": f"team-lead@{LIST}", "name": "team-lead"}]
    (team / "config.json").write_text(json.dumps({"name": LIST, "members": members}))
    write(claude, task(1))
    home = Path(env["ACKDECK_HOME"])
    got = ClaudeTasksQueue(home, claude / "tasks", LIST).claim("worker", 600)
    assert got.claimed and got.lease_until is not None
    until = got.lease_until

    def row(at: float) -> dict:
        found = list_tasks(env, clock=lambda: at, home=home)
        return found.lists[0].tasks[0].to_json()

    assert row(until - 60)["flag"] is None and "lease ends in 60 s" in row(until - 60)["why"]
    out = ackdeck_json(env, "tasks")  # the CLI reads the same leases (its clock: now)
    assert out["lists"][0]["tasks"][0]["flag"] is None, out
    ended = row(until + 30)
    assert ended["flag"] == "owner-stalled" and "lease ended 30 s ago" in ended["why"]
    assert list_tasks(env, clock=lambda: until - 60).lists[0].tasks[0].flag == "owner-gone"


async def test_the_tasks_screen_shows_a_queue_holder_as_working(
    tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard's Tasks screen reads the same leases: the queue's holder (no team member)
    is not flagged gone; a holder without a lease still is."""
    from ackdeck.tui.app import make_app
    from ackdeck.tui.screens.tasks import TasksScreen
    from ackdeck.tui.testing import quiet_config, settle
    from tests.helpers.wait import eventually_async

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    team = claude / "teams" / LIST
    team.mkdir(parents=True)
    members = [{"agentId": f"team-lead@{LIST}", "name": "team-lead"}]
    (team / "config.json").write_text(json.dumps({"name": LIST, "members": members}))
    write(claude, task(1))
    write(claude, task(2, owner="ghost", status="in_progress"))
    home = tmp_path / "ackdeck"
    home.mkdir()
    assert ClaudeTasksQueue(home, claude / "tasks", LIST).claim("worker", 600).offset == 1
    app = make_app(quiet_config([], home=home, claude_teams=True))
    async with app.run_test(size=(150, 32)) as pilot:
        await settle(pilot)
        app.push_screen(TasksScreen())
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        await eventually_async(lambda: bool(screen.rows), what="the tasks listed")
        assert screen.rows[f"{LIST}/2"].flag == "owner-gone"
        assert screen.rows[f"{LIST}/1"].flag is None
        assert "lease ends in" in (screen.rows[f"{LIST}/1"].why or "")


def test_the_service_claims_and_finishes_a_task_in_this_process(
    tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The doors' own path (service/deck.py -> claude_tasks_ref), without a subprocess: a claim
    # handed over through the door's delivery step, a task file no one may misread, done.
    from ackdeck.core.service.deck import Deck

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    write(claude, task(1))
    write(claude, task(2, owner="tester", status="in_progress"))
    deck = Deck(tmp_path / "ackdeck", "agent", [ROOM], door="cli")
    (ref,) = deck.rooms
    assert deck.label(ref) == LIST  # as the doors name a room: its short name
    handed: list[str] = []
    got = deck.claim(ref, lease=60, deliver=lambda c: handed.append(c.token or ""))
    assert got.claimed and handed == [got.token] and got.token is not None
    assert doc_of(claude, 1)["owner"] == "agent" and doc_of(claude, 1)["status"] == "in_progress"
    assert doc_of(claude, 2)["owner"] == "tester"  # a claim not ackdeck's: never touched
    none_left = deck.claim(ref)
    assert not none_left.claimed and "tester" in none_left.message
    done = deck.task(ref, got.token, "done")
    assert done.mode == "done" and doc_of(claude, 1)["status"] == "completed"
    with pytest.raises(TokenRefused):
        deck.task(ref, got.token, "release")  # finished: its token gives nothing back


# ----- dead letters, trace, metrics (what the file and redis queues have) ----------------------
def dead_lines(env: dict[str, str]) -> list[bytes]:
    dead = locations.claude_tasks_dead_room(Path(env["ACKDECK_HOME"]), LIST)
    return dead.read_bytes().splitlines() if dead.exists() else []


def test_a_task_claimed_max_deliveries_times_goes_to_the_dead_letter_room_left_as_it_is(
    env: dict[str, str], claude: Path
) -> None:
    write(claude, task(1))
    write(claude, task(2))
    out = ackdeck(env, "room", "policy", ROOM, "--max-deliveries", "2", "--owner", "boss")
    assert out.returncode == 0, out.stderr
    now = [1000.0]
    home = Path(env["ACKDECK_HOME"])
    q = ClaudeTasksQueue(home, claude / "tasks", LIST, clock=lambda: now[0])
    assert q.claim("a", 60).offset == 1
    now[0] += 61
    second = q.claim("b", 60)
    assert (second.offset, second.deliveries) == (1, 2)
    now[0] += 61  # delivered twice, never done: not handed out a third time
    third = q.claim("c", 600)
    assert third.claimed and third.offset == 2 and third.dead_lettered == 1
    assert f"task 1 moved to the dead-letter room {q.dead_room}" in third.message
    # Left as Claude Code has it: given back at the lease's end (our claim's bytes were still
    # there), as Claude Code gives back a departed teammate's task; never claimed again.
    assert doc_of(claude, 1) == task(1)
    line = f"{ROOM} task 1: task 1 (claimed 2 times without a done, last by b; left in Claude "
    assert dead_lines(env) == [(line + "Code's list as it is)").encode()]
    assert q.claim("d", 60).claimed is False
    for op in ("done", "extend", "release"):
        with pytest.raises(TokenRefused, match="dead-letter room"):
            q.update(str(second.token), op)
    assert doc_of(claude, 1) == task(1) and len(dead_lines(env)) == 1
    # The owner was told, as for a file or redis queue's dead letter.
    wakes = ackdeck_json(env, "wakes", "list", "--session", "boss")
    assert "dead-letter room" in json.dumps(wakes), wakes


def test_a_task_changed_since_our_claim_goes_to_the_dead_letter_room_unwritten(
    env: dict[str, str], claude: Path
) -> None:
    """A teammate's blind TaskUpdate took the task after our claim, then handed it back with
    its own edits: the task is dead-lettered (delivered max_deliveries times by us) and its
    file is never written by ackdeck: the teammate's bytes stay."""
    write(claude, task(1))
    assert ackdeck(env, "room", "policy", ROOM, "--max-deliveries", "1").returncode == 0
    now = [1000.0]
    q = ClaudeTasksQueue(Path(env["ACKDECK_HOME"]), claude / "tasks", LIST, clock=lambda: now[0])
    assert q.claim("a", 60).claimed
    write(claude, task(1, owner="teammate", status="in_progress"))
    now[0] += 61
    assert q.claim("b", 60).claimed is False  # the teammate's: shown, left as it is
    edited = {**task(1), "description": "do task 1, the teammate's way"}
    theirs = write(claude, edited).read_bytes()
    got = q.claim("b", 60)
    assert got.claimed is False and got.dead_lettered == 1
    assert path_of(claude, 1).read_bytes() == theirs
    assert dead_lines(env) == [
        f"{ROOM} task 1: task 1 (claimed 1 time without a done, last by a; left in Claude "
        "Code's list as it is)".encode()
    ]


def test_a_kill_between_the_dead_letter_line_and_its_mark_writes_the_line_again_never_none(
    env: dict[str, str], claude: Path, tmp_path: Path
) -> None:
    write(claude, task(1))
    assert ackdeck(env, "room", "policy", ROOM, "--max-deliveries", "1").returncode == 0
    got = claim(env, "a", "--lease", "1s")
    assert got["claimed"]
    eventually(lambda: time.time() > got["lease_until"], timeout=WAIT, what="the lease's end")
    marker = tmp_path / "paused"
    paused_env = {
        **env,
        "ACKDECK_TEST_PAUSE_AT": "claude-task-after-dead-append",
        "ACKDECK_TEST_PAUSE_FILE": str(marker),
    }
    proc = subprocess.Popen(
        [*ACKDECK, "claim", ROOM, "--session", "b"],
        env=paused_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        eventually(lambda: marker.exists(), timeout=WAIT, what="the dead letter paused")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert len(dead_lines(env)) == 1  # the line is there; the task not yet marked dead
    again = claim(env, "c")
    assert again["claimed"] is False and again["dead_lettered"] == 1
    # The next claim wrote it again: a duplicate in the dead-letter room, never a loss, and
    # the task was never handed out past max_deliveries.
    lines = dead_lines(env)
    assert len(lines) == 2 and lines[0] == lines[1] and b"task 1: task 1" in lines[0]
    assert claim(env, "d")["claimed"] is False and len(dead_lines(env)) == 2
    assert doc_of(claude, 1) == task(1)


def test_room_trace_shows_each_claim_expiry_release_and_completion_of_a_task(
    env: dict[str, str], claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ackdeck.core.service.deck import Deck
    from tests.helpers.clock import Clock

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    write(claude, task(1))
    write(claude, task(2, after="1"))
    clock = Clock()
    d = Deck(Path(env["ACKDECK_HOME"]), "a", [ROOM], clock=clock)
    (ref,) = d.rooms
    assert d.claim(ref, lease=10).offset == 1
    clock.t += 11  # a's lease ends
    b = Deck(Path(env["ACKDECK_HOME"]), "b", [ROOM], clock=clock).claim(ref, lease=10)
    assert b.token is not None
    held = d.trace(ref, offset=1).lines[0]
    assert [(c.session, c.end) for c in held.claims or []] == [("a", "expired"), ("b", "holding")]
    assert held.summary.startswith("claimed by b; the lease ends in")
    d.task(ref, b.token, "release")
    c = Deck(Path(env["ACKDECK_HOME"]), "c", [ROOM], clock=clock).claim(ref, lease=10)
    assert c.token is not None and c.offset == 1
    d.task(ref, c.token, "done")
    done = d.trace(ref, offset=1).lines[0]
    assert [(h.session, h.token, h.end) for h in done.claims or []] == [
        ("a", 1, "expired"),
        ("b", 2, "released"),
        ("c", 3, "done"),
    ]
    assert done.summary == "done by c (claimed 3 times)" and done.text == b"task 1"
    assert not done.present  # completed in Claude Code's list
    text = "\n".join(done.report())
    assert "expired" in text and "released" in text and "done       by c" in text
    assert d.trace(ref, offset=2).lines[0].summary == "never claimed through the queue"
    # The CLI door: the same journey, one process.
    out = ackdeck_json(env, "room", "trace", ROOM, "1")
    assert [h["end"] for h in out["lines"][0]["claims"]] == ["expired", "released", "done"]


def test_the_queue_view_and_metrics_count_a_task_lists_claims_expiries_and_dead_letters(
    env: dict[str, str], claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ackdeck.core.service import metrics
    from ackdeck.core.service.queue import file_queue
    from tests.helpers.clock import Clock

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    for n in (1, 2, 3, 4):
        write(claude, task(n))
    home = Path(env["ACKDECK_HOME"])
    clock = Clock()
    q = ClaudeTasksQueue(home, claude / "tasks", LIST, clock=clock)
    from ackdeck.core.rooms.policy import RoomPolicy

    q.set_policy(RoomPolicy(queue=True, max_deliveries=1))
    assert q.claim("s", 5).offset == 1  # will expire
    clock.t += 6
    assert q.claim("s", 60).offset == 2  # 1 was delivered once (max 1): dead; 2 handed out
    assert q.claim("s", 5).offset == 3
    clock.t += 6  # 3's lease ends; 2's runs
    view = file_queue(q).view()
    assert (view.claimed, view.expired, view.dead, view.unclaimed) == (1, 1, 1, 1)
    assert [(h.offset, h.holder, h.deliveries) for h in view.held] == [(2, "s", 1), (3, "s", 1)]
    assert view.held[0].claimed_at is not None and view.held[0].until > clock.t
    assert doc_of(claude, 3)["owner"] == "s"  # a look gives nothing back
    # The exporter reads the real clock, decades past this test's: both leases have ended.
    text = metrics.exposition([ROOM], home).decode()
    got = {
        line.split("{")[0]: line.rsplit(" ", 1)[1]
        for line in text.splitlines()
        if line.startswith("ackdeck_queue_")
    }
    assert got == {
        "ackdeck_queue_claimed_lines": "0.0",
        "ackdeck_queue_expired_lines": "2.0",
        "ackdeck_queue_dead_lines_total": "1.0",
    }, text


def test_the_owner_dead_letters_a_claimed_task_and_its_holder_is_refused(
    env: dict[str, str], claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ackdeck.core.service.deck import Deck

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    write(claude, task(1))
    home = Path(env["ACKDECK_HOME"])
    worker, owner = Deck(home, "worker", [ROOM]), Deck(home, "owner", [ROOM])
    got = worker.claim(worker.rooms[0], lease=600)
    assert got.token is not None and doc_of(claude, 1)["owner"] == "worker"
    dead = owner.dead_letter(owner.rooms[0], got.token)
    assert dead.mode == "dead" and "moved to the dead-letter room" in dead.message
    # Given back first (still our claim's bytes), then never handed out by the queue again.
    assert doc_of(claude, 1) == task(1)
    assert len(dead_lines(env)) == 1 and b"last by worker" in dead_lines(env)[0]
    with pytest.raises(TokenRefused, match="dead-letter room"):
        worker.task(worker.rooms[0], got.token, "done")
    assert worker.claim(worker.rooms[0]).claimed is False


def test_done_next_on_a_task_list_finishes_one_task_and_claims_the_next(
    env: dict[str, str], claude: Path
) -> None:
    write(claude, task(1))
    write(claude, task(2))
    got = claim(env, "worker")
    out = ackdeck_json(env, "done", ROOM, got["token"], "--next", "--session", "worker")
    assert out["mode"] == "done" and out["claimed_next"]["offset"] == 2
    assert doc_of(claude, 1)["status"] == "completed"
    assert doc_of(claude, 2) == task(2, owner="worker", status="in_progress")


@pytest.mark.parametrize(
    "state",
    [
        {"queue_id": "x" * 1_000_000, "next_token": 1, "tasks": []},
        {"queue_id": "ab12", "next_token": 0, "tasks": []},
        {"queue_id": "ab12", "next_token": 1, "tasks": [], "max_deliveries": 0},
        {"queue_id": "ab12", "next_token": 1, "tasks": [], "owner": "../x"},
    ],
    ids=["huge-queue-id", "token-zero", "max-deliveries-zero", "owner-a-path"],
)
def test_a_queue_state_value_ackdeck_never_writes_is_one_line_and_no_claim(
    env: dict[str, str], claude: Path, state: dict
) -> None:
    """A hand-edited (or damaged) state file: a claim must not hand out a token nobody can use
    (a megabyte long, or numbered 0) nor act on a policy nobody could have set."""
    before = write(claude, task(1)).read_bytes()
    path = locations.claude_tasks_queue(Path(env["ACKDECK_HOME"]), LIST)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(state))
    out = ackdeck(env, "claim", ROOM, "--session", "s")
    assert out.returncode == 1 and out.stdout == "", out.stdout[:200]
    assert out.stderr.count("\n") == 1 and "move it aside" in out.stderr, out.stderr[:300]
    assert len(out.stderr) < 500
    assert path_of(claude, 1).read_bytes() == before


def test_the_owners_dead_letter_waits_for_claude_codes_lock_and_changes_nothing_while_held(
    env: dict[str, str], claude: Path
) -> None:
    """node holds Claude Code's lock on the claimed task (proper-lockfile on 1.json): the
    owner's dead letter, which gives the task back first, refuses in one line after Claude
    Code's retries, with nothing written anywhere; once node lets go, it goes through."""
    one = write(claude, task(1))
    got = claim(env, "worker")
    claimed = one.read_bytes()
    with held(one) as holder:
        out = ackdeck(env, "release", ROOM, got["token"], "--dead")
        assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr and "lock" in out.stderr
        assert one.read_bytes() == claimed and dead_lines(env) == []
        let_go(holder)
    # Nothing changed: the worker's lease still holds, and the owner's retry goes through.
    assert ackdeck_json(env, "extend", ROOM, got["token"])["mode"] == "extended"
    dead = ackdeck_json(env, "release", ROOM, got["token"], "--dead")
    assert dead["mode"] == "dead" and doc_of(claude, 1) == task(1)
    assert len(dead_lines(env)) == 1
