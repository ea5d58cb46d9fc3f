"""The work queue through the doors around the agent: its Stop hook reminds it of a claim it
holds unfinished (cheaply: nothing is looked at for a session that never claimed), on a file
room and on a redis room, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import ackdeck
from tests.helpers.queues import QueueRooms


@pytest.fixture(params=["file", "redis"])
def rooms(request: pytest.FixtureRequest, tmp_path: Path) -> QueueRooms:
    server = request.getfixturevalue("redis_server") if request.param == "redis" else None
    return QueueRooms(request.param, tmp_path, server)


def stop(env: dict[str, str], room: str, session: str, active: bool):  # type: ignore[no-untyped-def]
    """The Stop hook as installed for `session`, its inbox an empty room beside the queue
    (the reminder does not depend on the rooms the hook watches)."""
    inbox = Path(env["ACKDECK_HOME"]).parent / "inbox.txt"
    inbox.touch()
    payload = {"hook_event_name": "Stop", "stop_hook_active": active, "session_id": "x"}
    return ackdeck(
        env, "hooks", "stop", "--session", session, "--room", str(inbox),
        input=json.dumps(payload),
    )  # fmt: skip


def test_the_stop_hook_reminds_an_agent_of_a_claim_it_has_not_finished(
    rooms: QueueRooms, cli_env: dict[str, str]
) -> None:
    room = rooms.make("tasks.txt", [b"fix test_parser\n", b"review a.py\n"])
    assert stop(cli_env, room, "agent", False).returncode == 0  # nothing held: it may stop
    got = json.loads(ackdeck(cli_env, "claim", room, "--session", "agent", "--json").stdout)
    out = stop(cli_env, room, "agent", False)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert got["token"] in out.stderr and "fix test_parser" in out.stderr
    assert "task_done" in out.stderr and "lease ends in" in out.stderr
    # Another session holds nothing: it is not reminded of the agent's claim.
    assert stop(cli_env, room, "other", False).returncode == 0
    # Already continuing because of a Stop hook: no second block for the same claim.
    again = stop(cli_env, room, "agent", True)
    assert again.returncode == 0 and got["token"] not in again.stderr
    # The reminder is a notice: it claimed, finished or released nothing.
    assert rooms.lines(room) == [b"fix test_parser\n", b"review a.py\n"]
    done = ackdeck(cli_env, "done", room, got["token"])
    assert done.returncode == 0, done.stderr
    assert stop(cli_env, room, "agent", False).returncode == 0  # finished: nothing to remind


def test_a_refused_token_ends_its_reminder(rooms: QueueRooms, cli_env: dict[str, str]) -> None:
    room = rooms.make("tasks.txt", [b"x\n"])
    got = json.loads(
        ackdeck(cli_env, "claim", room, "--session", "agent", "--lease", "0.1s", "--json").stdout
    )
    # Its lease ends; another session claims the line: the agent's token is superseded.
    from tests.helpers.wait import eventually

    def taken() -> bool:
        out = json.loads(ackdeck(cli_env, "claim", room, "--session", "b", "--json").stdout)
        return bool(out["claimed"])

    eventually(taken, what="the lease to end and the line to be claimed again", timeout=30)
    assert stop(cli_env, room, "agent", False).returncode == 2  # still marked: done will say
    out = ackdeck(cli_env, "done", room, got["token"])
    assert out.returncode == 4
    assert stop(cli_env, room, "agent", False).returncode == 0
    assert stop(cli_env, room, "b", False).returncode == 2  # b holds it now
