"""A real `redis-server` on loopback for the redis room tests (no fakeredis: locking, kill -9,
persistence and blocking reads need the real thing)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.helpers.wait import eventually

MISSING = "redis-server is not installed (make test installs it when run as root)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One server process in its own directory, with an append-only file fsynced on every
    write (the persistence test kills it with -9 and restarts it on the same files)."""

    def __init__(
        self,
        workdir: Path,
        *,
        password: str | None = None,
        persist: bool = True,
        bind: tuple[str, ...] = ("127.0.0.1",),
    ) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip(MISSING)
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.password = password
        self.persist = persist  # False (benchmarks): no AOF, so no fsync in any timing
        self.bind = bind  # loopback first (the readiness probe), then any other address
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [
            "redis-server",
            "--bind", *self.bind,
            "--port", str(self.port),
            "--dir", str(self.dir),
            "--save", "",
            "--appendonly", "yes" if self.persist else "no",
            "--appendfsync", "always",
            "--daemonize", "no",
            "--logfile", str(self.dir / "redis.log"),
        ]  # fmt: skip
        if self.password:
            argv += ["--requirepass", self.password]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        self._wait_ready()

    def _wait_ready(self) -> None:
        import redis

        client = redis.Redis(port=self.port, password=self.password, socket_timeout=5)

        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                log = (self.dir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited at start:\n{log}")
            try:
                # PING answers while the AOF is still loading; wait for a real command.
                client.exists("ackdeck:ready-probe")
            except (redis.ConnectionError, redis.BusyLoadingError):
                return False
            return True

        try:
            eventually(ready, what=f"redis-server to answer on port {self.port}", every=0.05)
        finally:
            client.close()

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill9()

    def url(self, name: str | None = None, *, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}/{name or new_room_name()}"


def new_room_name() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"
