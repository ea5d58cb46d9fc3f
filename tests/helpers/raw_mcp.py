"""A raw JSON-RPC client on a real `ackdeck mcp` process's stdin and stdout: for tests that
need what no SDK client does (cancel mid-call, send odd ids or hostile strings, name itself as
another client)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.helpers.cli import ACKDECK
from tests.helpers.paths import PATHS

LIMIT = 60.0  # only a real hang gets here


class RawClient:
    """A JSON-RPC client on a real `ackdeck mcp` process's stdin/stdout."""

    def __init__(
        self,
        home: Path,
        room: Path,
        session: str = "agent",
        client: str = "raw-test",
        extra: tuple[str, ...] = (),
    ) -> None:
        self.proc = subprocess.Popen(
            [
                *ACKDECK,
                "--home",
                str(home),
                "mcp",
                "--session",
                session,
                "--room",
                str(room),
                *extra,
            ],  # fmt: skip
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": PATHS},
        )
        self.messages: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": client, "version": "1"},
            },
            1,
        )
        self.wait_response(1)
        self.notify("notifications/initialized", {})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.messages.append(json.loads(line))
                self._cond.notify_all()

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def send_raw(self, line: str) -> None:
        """One message exactly as given (JSON the json module would not write)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any], rid: int) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, name: str, args: dict[str, Any], rid: int) -> None:
        self.request("tools/call", {"name": name, "arguments": args}, rid)

    def responses(self, rid: int) -> list[dict[str, Any]]:
        with self._cond:
            return [m for m in self.messages if m.get("id") == rid and "method" not in m]

    def wait_response(self, rid: int) -> dict[str, Any]:
        with self._cond:
            assert self._cond.wait_for(lambda: self.responses_locked(rid), LIMIT), rid
            return self.responses_locked(rid)[0]

    def responses_locked(self, rid: int) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("id") == rid and "method" not in m]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(LIMIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
