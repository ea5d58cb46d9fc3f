"""Queue rooms of either kind for the queue tests: a file room or a redis room (a real
redis-server), made, opened and looked at the same way, so one test runs on both.

A spec is what the doors take: a file path or a `redis://` URL."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.service.refs import parse_room
from tests.helpers.cli import here_env
from tests.helpers.paths import REPO

if TYPE_CHECKING:
    from ackdeck.core.rooms.file.queue import FileQueue
    from ackdeck.core.rooms.redis.queue import RedisQueue


def open_queue(spec: str, *, fencing: bool = True, clock: Any = None) -> FileQueue | RedisQueue:
    """The queue of the room `spec` names (a process of its own opens it so)."""
    kw = {} if clock is None else {"clock": clock}
    room = parse_room(spec).open(**kw)
    if spec.startswith("redis://"):
        from ackdeck.core.rooms.redis.queue import RedisQueue

        return RedisQueue(room, fencing=fencing)  # type: ignore[arg-type]
    from ackdeck.core.rooms.file.queue import FileQueue

    return FileQueue(room, fencing=fencing)  # type: ignore[arg-type]


class QueueRooms:
    """Makes queue rooms of one kind (`kind`: file or redis) and reads them back."""

    def __init__(self, kind: str, tmp_path: Path, server: Any = None) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.server = server

    def make(
        self, name: str, lines: list[bytes], *, max_deliveries: int | None = None, **policy: Any
    ) -> str:
        """A queue room holding `lines` (each ending in a newline)."""
        if self.kind == "file":
            path = self.tmp_path / name
            path.write_bytes(b"".join(lines))
            spec = str(path)
        else:
            spec = self.server.url()
        room = parse_room(spec).open()
        try:
            room.set_policy(RoomPolicy(queue=True, max_deliveries=max_deliveries, **policy))
            if self.kind == "redis":
                for line in lines:
                    room.push(line.rstrip(b"\n"))
        finally:
            room.close()
        return spec

    def append(self, spec: str, line: bytes) -> None:
        """A producer that knows nothing of ackdeck: `>>` to a file, XADD to a stream."""
        if self.kind == "file":
            with open(spec, "ab") as f:
                f.write(line)
        else:
            self._redis().xadd(self._key(spec), {b"line": line.rstrip(b"\n")})

    def lines(self, spec: str) -> list[bytes]:
        """The lines in the room now (claimed or not), each with its newline."""
        if self.kind == "file":
            data = Path(spec).read_bytes()
            return [x + b"\n" for x in data.split(b"\n")[:-1]]
        got = self._redis().xrange(self._key(spec))
        return [f[b"line"] + b"\n" for _, f in got]

    def dead(self, spec: str) -> list[bytes]:
        """The dead-letter room's lines."""
        if self.kind == "file":
            path = Path(spec + ".dead")
            if not path.exists():
                return []
            return [x + b"\n" for x in path.read_bytes().split(b"\n")[:-1]]
        got = self._redis().xrange(self._key(spec, ".dead"))  # a room of its own
        return [f[b"line"] + b"\n" for _, f in got]

    def completed(self, spec: str) -> int:
        """How many lines left the room as done (audited), dead letters apart."""
        if self.kind == "file":
            import json

            side = Path(spec).with_name(f".{Path(spec).name}.ackdeck")
            audit = side / "audit.jsonl"
            if not audit.exists():
                return 0
            entries = [json.loads(x) for x in audit.read_text().splitlines()]
            return sum(int(e["acked"]) for e in entries if e["mode"] in ("prefix", "recovered"))
        entries = self._redis().xrange(self._key(spec) + ":audit")
        return sum(1 for _, f in entries if f.get(b"mode") == b"done")

    def _key(self, spec: str, suffix: str = "") -> str:
        from ackdeck.core.base.locations import redis_room_key

        return redis_room_key(spec.rsplit("/", 1)[1] + suffix)

    def _redis(self) -> Any:
        import redis

        return redis.Redis(port=self.server.port, socket_timeout=10)


# ----- agent processes (tests/helpers/queue_agent.py, queue_racer.py) ----------------------------
def start(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", f"tests.helpers.{module}", *args],
        cwd=REPO,
        env=here_env(**(env or {})),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class Agents:
    """N agent processes (tests/helpers/queue_agent.py) on one room, one log."""

    def __init__(
        self,
        room: str,
        log: Path,
        lease: float,
        overrun: float,
        *extra: str,
        env: dict[str, str] | None = None,
    ):
        self.room, self.log, self.lease, self.overrun, self.extra = (
            room, log, lease, overrun, extra
        )  # fmt: skip
        self.env = env
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str) -> None:
        self.procs[name] = start(
            "queue_agent",
            self.room,
            name,
            str(self.log),
            str(self.lease),
            str(self.overrun),
            *self.extra,
            env=self.env,
        )

    def kill9(self, name: str) -> None:
        p = self.procs[name]
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)

    def stop(self) -> None:
        Path(str(self.log) + ".stop").touch()
        for name, p in self.procs.items():
            try:
                _, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise AssertionError(f"agent {name} did not stop") from None
            assert p.returncode == 0, err

    def kill_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def log_of(log: Path) -> dict[str, collections.Counter[str]]:
    """For each event (start, done, refused): task -> how many times."""
    events: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    if log.exists():
        for line in log.read_text().splitlines():
            kind, task, _token = line.split()
            events[kind][task] += 1
    return events


def stale_dones(log: Path) -> list[str]:
    """Dones accepted for a lease that a later claim of the same task had superseded (with
    fencing, once a task was claimed again its older tokens can never complete it)."""
    newest: dict[str, int] = {}
    dones: list[tuple[str, int]] = []
    for line in log.read_text().splitlines():
        kind, task, token = line.split()
        number = int(token.split("-")[0])
        if kind == "start":
            newest[task] = max(newest.get(task, 0), number)
        elif kind == "done":
            dones.append((task, number))
    return [f"{task} {n}" for task, n in dones if n < newest[task]]
