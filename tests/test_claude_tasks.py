"""Claude Code's task lists (issue 44, item 4): `ackdeck tasks` shows each task and flags a
holder that is gone, stalled or not alone; `ackdeck tasks release` gives one back under Claude
Code's per-task lock, only if it is unchanged since shown.

Task files, team configs and transcripts are written in the shapes Claude Code 2.1.328 writes
(core/clients/claude_code/tasks.py); the team's lead is a real process of this test, so "gone"
is judged on the real process table; the lock is raced against npm's proper-lockfile (driven
by node, tests/claude_teams/task_claimer.js), as Claude Code takes it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import ackdeck
from tests.helpers.paths import REPO
from tests.helpers.wait import eventually

SCRIPTS = Path(__file__).resolve().parent / "claude_teams"
NPM = Path(os.environ.get("ACKDECK_NPM_MODULES") or REPO / ".cache" / "npm" / "node_modules")
LIST = "session-1a2b3c4d"
SID = "1a2b3c4d-0000-4000-8000-000000000001"


def proc_start(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[19]


def task(
    n: int,
    subject: str,
    *,
    owner: str | None = None,
    status: str = "pending",
    blocked_by: list[str] | None = None,
) -> dict:
    doc: dict = {
        "id": str(n),
        "subject": subject,
        "description": f"do {subject}",
        "activeForm": f"doing {subject}",
        "status": status,
        "blocks": [],
        "blockedBy": blocked_by or [],
    }
    if owner is not None:
        doc["owner"] = owner
    return doc


def write_task(claude: Path, doc: dict, task_list: str = LIST) -> Path:
    path = claude / "tasks" / task_list / f"{doc['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / ".lock").touch()
    path.write_text(json.dumps(doc, indent=2))  # JSON.stringify(task, null, 2)
    return path


def write_team(claude: Path, lead_pid: int) -> None:
    base = claude / "teams" / LIST
    (base / "inboxes").mkdir(parents=True)
    members = [
        {
            "agentId": f"team-lead@{LIST}",
            "name": "team-lead",
            "agentType": "team-lead",
            "tmuxPaneId": "leader",
            "backendType": "in-process",
        },
        {
            "agentId": f"worker@{LIST}",
            "name": "worker",
            "agentType": "general-purpose",
            "tmuxPaneId": "in-process",
            "backendType": "in-process",
        },
        {
            "agentId": f"tester@{LIST}",
            "name": "tester",
            "agentType": "general-purpose",
            "tmuxPaneId": "in-process",
            "backendType": "in-process",
        },
    ]
    config = {
        "name": LIST,
        "leadAgentId": f"team-lead@{LIST}",
        "leadSessionId": SID,
        "leadProcess": {"pid": lead_pid, "procStart": proc_start(lead_pid)},
        "members": members,
    }
    (base / "config.json").write_text(json.dumps(config, indent=2))


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    d = tmp_path / "claude"
    d.mkdir()
    return d


@pytest.fixture
def env(tmp_path: Path, claude: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "ACKDECK_HOME": str(tmp_path / "a"),
        "CLAUDE_CONFIG_DIR": str(claude),
        "PYTHONPATH": str(REPO / "src"),
    }


@pytest.fixture
def lead():
    """A real process standing in for the team's lead session (in-process teammates live in
    it); killed by pid at the end."""
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def listed(env: dict[str, str]) -> dict:
    out = ackdeck(env, "tasks", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def tasks_of(env: dict[str, str]) -> dict[str, dict]:
    return {t["id"]: t for lst in listed(env)["lists"] for t in lst["tasks"]}


def test_a_task_held_by_a_killed_session_is_flagged_gone(
    env: dict[str, str], claude: Path, lead: subprocess.Popen
) -> None:
    write_team(claude, lead.pid)
    write_task(claude, task(1, "build", owner="worker", status="in_progress"))
    write_task(claude, task(2, "test", blocked_by=["1"]))
    write_task(claude, task(3, "ship", owner="worker", status="completed"))
    rows = tasks_of(env)
    assert [rows[i]["status"] for i in "123"] == ["in_progress", "pending", "completed"]
    assert rows["1"]["owner"] == "worker" and rows["2"]["blocked_by"] == ["1"]
    assert all(r["flag"] is None for r in rows.values())
    text = ackdeck(env, "tasks").stdout
    assert f"{LIST}  (live: its lead's process (pid {lead.pid}) runs)" in text
    os.kill(lead.pid, signal.SIGKILL)  # the teammates die with it: nobody gives task 1 back
    lead.wait()
    rows = tasks_of(env)
    assert rows["1"]["flag"] == "owner-gone"
    assert f"its lead's process (pid {lead.pid}) no longer runs" in rows["1"]["why"]
    assert rows["2"]["flag"] is None and rows["3"]["flag"] is None  # no owner; finished
    assert "! owner-gone: worker's session is gone" in ackdeck(env, "tasks").stdout


def test_an_owner_idle_while_holding_a_task_is_flagged_stalled(
    env: dict[str, str], claude: Path, lead: subprocess.Popen
) -> None:
    write_team(claude, lead.pid)
    write_task(claude, task(1, "build", owner="worker", status="in_progress"))
    idle = {
        "from": "worker",
        "text": json.dumps(
            {
                "type": "idle_notification",
                "from": "worker",
                "timestamp": "2026-12-07T03:00:00.000Z",
                "idleReason": "available",
            }
        ),
        "timestamp": "2026-12-07T03:00:00.000Z",
        "color": "blue",
        "msgV": 1,
        "msg_id": "00000000-0000-4000-8000-000000000009",
        "type": "message",
        "read": False,
    }
    inbox = claude / "teams" / LIST / "inboxes" / "team-lead.json"
    inbox.write_text(json.dumps([idle], indent=2))
    row = tasks_of(env)["1"]
    assert row["flag"] == "owner-stalled"
    assert row["why"] == "worker went idle while holding it in_progress"


def transcript(path: Path, calls: list[dict]) -> None:
    """Assistant records with TaskUpdate tool calls, as Claude Code writes its transcripts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "user", "message": {"role": "user", "content": "go"}})]
    for n, args in enumerate(calls):
        lines.append(
            json.dumps(
                {
                    "type": "assistant",
                    "sessionId": SID,
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"toolu_{n}",
                                "name": "TaskUpdate",
                                "input": args,
                            }
                        ],
                    },
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")


def test_two_agents_working_one_task_is_detected_from_their_transcripts(
    env: dict[str, str], claude: Path, lead: subprocess.Popen
) -> None:
    """The blind-write race: worker and tester each claimed task 1 (TaskUpdate merges
    blindly, the last writer's name is in the file); each transcript says it holds it."""
    write_team(claude, lead.pid)
    write_task(claude, task(1, "build", owner="tester", status="in_progress"))
    write_task(claude, task(2, "docs", owner="worker", status="in_progress"))
    project = claude / "projects" / "-w-proj"
    transcript(project / f"{SID}.jsonl", [{"taskId": "1", "owner": "worker"}])
    sub = project / SID / "subagents"
    for name in ("worker", "tester"):
        transcript(
            sub / f"agent-a{name}-0f.jsonl",
            [{"taskId": "1", "status": "in_progress", "owner": name}],
        )
        (sub / f"agent-a{name}-0f.meta.json").write_text(
            json.dumps({"teamName": LIST, "name": name})
        )
    # worker moved on to task 2 and gave nothing back; then tester finished nothing either.
    transcript(
        sub / "agent-aworker-0f.jsonl",
        [
            {"taskId": "1", "status": "in_progress", "owner": "worker"},
            {"taskId": "2", "status": "in_progress", "owner": "worker"},
        ],
    )
    rows = tasks_of(env)
    assert rows["1"]["flag"] == "two-agents"
    assert sorted(rows["1"]["workers"]) == ["tester", "worker"]
    assert "the file says tester (the last write won)" in rows["1"]["why"]
    assert rows["2"]["flag"] is None and rows["2"]["workers"] == ["worker"]
    # The loser lets go: one holder left, nothing to flag.
    transcript(
        sub / "agent-aworker-0f.jsonl",
        [
            {"taskId": "1", "status": "in_progress", "owner": "worker"},
            {"taskId": "1", "status": "pending"},
        ],
    )
    assert tasks_of(env)["1"]["flag"] is None


def test_release_only_if_unchanged_since_shown_else_one_line_saying_what_changed(
    env: dict[str, str], claude: Path
) -> None:
    path = write_task(claude, task(1, "build", owner="worker", status="in_progress"))
    shown = tasks_of(env)["1"]
    # Meanwhile another agent claimed it (a blind write).
    write_task(claude, task(1, "build", owner="tester", status="in_progress"))
    before = path.read_bytes()
    out = ackdeck(
        env, "tasks", "release", LIST, "1", "--seen", shown["version"], "--owner", shown["owner"]
    )
    assert out.returncode == 3
    assert out.stdout.strip() == (
        f"task 1 of {LIST}: changed since it was shown: its owner is now tester (shown: "
        "worker), status in_progress; nothing written"
    )
    assert path.read_bytes() == before
    # Shown again, released: the owner key removed, pending, as Claude Code gives one back.
    shown = tasks_of(env)["1"]
    out = ackdeck(
        env,
        "tasks",
        "release",
        LIST,
        "1",
        "--seen",
        shown["version"],
        "--owner",
        "tester",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["released"] is True
    doc = json.loads(path.read_bytes())
    assert "owner" not in doc and doc["status"] == "pending"
    assert doc["activeForm"] == "doing build"  # every other key kept
    assert path.read_bytes() == json.dumps(doc, indent=2, ensure_ascii=False).encode()
    assert not Path(str(path) + ".lock").exists()
    again = ackdeck(
        env, "tasks", "release", LIST, "1", "--seen", tasks_of(env)["1"]["version"], "--owner", ""
    )
    assert again.returncode == 3 and "pending already; nothing written" in again.stdout


def test_bad_task_files_and_names_are_one_line(env: dict[str, str], claude: Path) -> None:
    write_task(claude, task(1, "build"))
    bad = claude / "tasks" / LIST / "2.json"
    bad.write_bytes(b'{"id": "2", "subject": ')
    os.mkfifo(claude / "tasks" / LIST / "3.json")
    out = ackdeck(env, "tasks")
    assert out.returncode == 0, out.stderr
    notes = [line for line in out.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2 and "2.json: not complete JSON" in notes[0]
    assert "3.json: not a regular file" in notes[1]
    for args, said in (
        (["../x", "1"], "not a task list"),
        ([LIST, "9"], "9.json: no such task"),
        ([LIST, "2"], "2.json: not complete JSON"),
        ([LIST, "3"], "3.json: not a regular file"),
    ):
        out = ackdeck(env, "tasks", "release", *args, "--seen", "x", "--owner", "")
        assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert said in out.stderr and "Traceback" not in out.stderr
    assert not list((claude / "tasks" / LIST).glob("*.json.lock"))  # every lock given back


def need_lockfile() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the proper-lockfile interop tests skip")
    if not (NPM / "proper-lockfile").is_dir():
        pytest.skip(f"{NPM} has no proper-lockfile: run `make npm-cache`")
    return node


def test_release_racing_proper_lockfile_loses_no_claim(env: dict[str, str], claude: Path) -> None:
    """node claims the task 300 times through proper-lockfile, as Claude Code does, each claim
    counted in the file; ackdeck releases it as often as it can meanwhile, each release
    checked against what it was shown. Not one of node's writes is lost (each release read
    under the lock), and every release either happened or said what changed."""
    from ackdeck.core.service.claude_tasks import read_task, release

    node = need_lockfile()
    path = write_task(claude, task(1, "build", owner="worker", status="in_progress"))
    count = 300
    claimer = subprocess.Popen(
        [node, str(SCRIPTS / "task_claimer.js"), str(path), str(count), "worker"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "NODE_PATH": str(NPM)},
    )
    try:
        assert claimer.stdout is not None
        assert claimer.stdout.readline().strip() == "started"
        released = refused = 0
        cenv = {"CLAUDE_CONFIG_DIR": str(claude)}
        while claimer.poll() is None:
            shown = read_task(LIST, "1", cenv)
            done = release(LIST, "1", seen=shown.version, owner=shown.owner, env=cenv)
            if done.released:
                released += 1
            else:
                refused += 1
                assert "changed since it was shown" in done.message or "pending already" in (
                    done.message
                )
        rest = claimer.stdout.read()
        assert claimer.wait() == 0 and "done" in rest, rest
    finally:
        if claimer.poll() is None:
            claimer.kill()
            claimer.wait()
    doc = json.loads(path.read_bytes())
    assert doc["metadata"]["claims"] == count  # no claim lost to a release's write
    assert released > 0
    eventually(lambda: not Path(str(path) + ".lock").exists(), what="the lock released")


async def test_the_tasks_screen_flags_first_and_releases_only_what_it_showed(
    tmp_path: Path, claude: Path, lead: subprocess.Popen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`T` on the Agents panel opens the tasks; a flagged task comes first; `R` then `y`
    releases the highlighted one only if it is still as shown: changed meanwhile, nothing is
    written and the owner is told what changed."""
    from ackdeck.tui.app import make_app
    from ackdeck.tui.screens.modals import ConfirmScreen
    from ackdeck.tui.screens.tasks import TasksScreen
    from ackdeck.tui.testing import quiet_config, screen_text, settle
    from tests.helpers.wait import eventually_async

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    write_team(claude, lead.pid)
    write_task(claude, task(1, "build", owner="team-lead", status="in_progress"))
    path = write_task(claude, task(2, "[b]docs[/b]", owner="ghost", status="in_progress"))
    home = tmp_path / "ackdeck"
    home.mkdir()
    app = make_app(quiet_config([], home=home, claude_teams=True))
    async with app.run_test(size=(150, 32)) as pilot:
        await settle(pilot)
        await pilot.press("shift+tab")  # the Agents panel, whose footer offers T
        await settle(pilot)
        assert "Tasks" in screen_text(app)
        await pilot.press("T")
        await settle(pilot)
        assert isinstance(app.screen, TasksScreen)
        screen = app.screen
        await eventually_async(lambda: bool(screen.rows), what="the tasks listed")
        assert list(screen.rows) == [f"{LIST}/2", f"{LIST}/1"]  # flagged first
        assert screen.rows[f"{LIST}/2"].flag == "owner-gone"
        assert "[b]docs[/b]" in screen_text(app)  # shown as written, never as markup
        # Changed after it was shown: the release writes nothing and says what changed.
        write_task(claude, task(2, "[b]docs[/b]", owner="tester", status="in_progress"))
        before = path.read_bytes()
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        await eventually_async(
            lambda: screen.rows[f"{LIST}/2"].owner == "tester", what="the tasks read again"
        )
        assert path.read_bytes() == before
        assert any(
            "its owner is now tester (shown: ghost)" in n.message for n in app._notifications
        )
        # Shown again, as it is now: released.
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        await eventually_async(
            lambda: screen.rows[f"{LIST}/2"].owner is None, what="the release shown"
        )
        doc = json.loads(path.read_bytes())
        assert "owner" not in doc and doc["status"] == "pending"
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, TasksScreen)


def test_a_real_claude_code_task_held_by_a_killed_session_is_flagged_then_released(
    tmp_path: Path,
) -> None:
    """A real interactive `claude` (2.1.328, task tools on) creates task 1 and claims it;
    killed with -9 before giving it back, the task stays in_progress: `ackdeck tasks` flags
    it (its session's process, a zombie until tmux reaps it, runs no more) and the release
    gives it back in the shape Claude Code itself writes."""
    from tests.helpers.claude_tmux import claude_in_tmux
    from tests.helpers.model_stub import Call, ModelStub, Say

    script = [
        Call("ToolSearch", {"query": "select:TaskCreate,TaskUpdate", "max_results": 5}),
        Call(
            "TaskCreate", {"subject": "build", "description": "do build", "activeForm": "building"}
        ),
        Call("TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "team-lead"}),
        Say("done"),
    ]
    with (
        ModelStub(script) as stub,
        claude_in_tmux(
            tmp_path, stub.url, "make a task", extra_env={"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
        ) as cc,
    ):
        env = {
            **os.environ,
            "HOME": str(tmp_path / "home"),
            "ACKDECK_HOME": str(tmp_path / "a"),
            "CLAUDE_CONFIG_DIR": str(cc.claude),
            "PYTHONPATH": str(REPO / "src"),
        }

        def claimed() -> dict | None:
            rows = tasks_of(env)
            return rows["1"] if rows.get("1", {}).get("status") == "in_progress" else None

        row = eventually(claimed, what="task 1 claimed by the real session")
        assert row["owner"] == "team-lead" and row["flag"] is None
        [record] = (cc.claude / "sessions").glob("*.json")
        os.kill(int(record.stem), signal.SIGKILL)

        def flagged() -> dict | None:
            now = tasks_of(env)["1"]
            return now if now["flag"] == "owner-gone" else None

        row = eventually(flagged, what="the task flagged once its session was killed")
        path = cc.claude / "tasks" / row["task_list"] / "1.json"
        written_by_claude = json.loads(path.read_bytes())

        def released() -> subprocess.CompletedProcess[str] | None:
            out = ackdeck(
                env,
                "tasks",
                "release",
                row["task_list"],
                "1",
                "--seen",
                row["version"],
                "--owner",
                "team-lead",
            )
            if out.returncode != 0 and "stayed held" in out.stderr:
                # The kill can land while Claude Code holds the task's lock (a busy CI drew
                # it): the lock stays until it is stale (10 s, proper-lockfile's rule), and
                # until then the release writes nothing and says to try again, as a person
                # would. Any other failure is returned, and fails below.
                assert "nothing written (try again)" in out.stderr, out.stderr
                return None
            return out

        out = eventually(released, what="the release, once a dead holder's lock is stale")
        assert out.returncode == 0, out.stdout + out.stderr
        doc = json.loads(path.read_bytes())
        assert doc == {k: v for k, v in written_by_claude.items() if k != "owner"} | {
            "status": "pending"
        }
        assert path.read_bytes() == json.dumps(doc, indent=2).encode()  # JSON.stringify's
        assert stub.errors == []


def test_two_agents_are_found_after_the_team_and_its_session_are_gone(
    env: dict[str, str], claude: Path
) -> None:
    """No team folder and no registry record left (the session exited or its files were
    cleaned): the transcripts are found by the list's ID8, and the race is still shown."""
    write_task(claude, task(1, "build", owner="tester", status="in_progress"))
    sub = claude / "projects" / "-w-proj" / SID / "subagents"
    transcript(claude / "projects" / "-w-proj" / f"{SID}.jsonl", [])
    for name in ("worker", "tester"):
        transcript(
            sub / f"agent-a{name}-0f.jsonl",
            [{"taskId": "1", "status": "in_progress", "owner": name}],
        )
        (sub / f"agent-a{name}-0f.meta.json").write_text(json.dumps({"name": name}))
    row = tasks_of(env)["1"]
    assert row["flag"] == "two-agents" and sorted(row["workers"]) == ["tester", "worker"]
