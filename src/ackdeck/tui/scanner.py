"""A scanner process: counts rooms (`Room.status`) outside the dashboard's interpreter.

Counting a flooded room holds the GIL for long stretches (bytes.count over the whole file);
done in a thread, it would delay the UI thread's handling of new lines. The dashboard starts
`python -m ackdeck.tui.scanner` once and sends it a `ScanRequest` per look over a pipe; the
child answers with one or more pickled `ScanDelta`s (parts while a long first count goes on,
the last one `final`). The child keeps its `RoomCounter` between requests, so it counts only
what changed. Both ends are this package, so pickle is safe here. No Textual.

Frames: 8-byte big-endian length, then a pickle.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO

from .room_counts import RoomCounter, ScanDelta, ScanRequest

REPO = Path(__file__).resolve().parent.parent
_LEN = struct.Struct(">Q")


# Counting even a flooded room takes well under a second; far longer means the scanner is stuck.
REPLY_TIMEOUT_S = 10.0


class ScannerGone(Exception):
    """The scanner process exited or broke the protocol; the caller scans in-thread."""


def _write(stream: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LEN.pack(len(data)) + data)
    stream.flush()


def _read(stream: IO[bytes]) -> object:
    head = stream.read(_LEN.size)
    if len(head) != _LEN.size:
        raise EOFError
    size = _LEN.unpack(head)[0]
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return pickle.loads(data)


class Scanner:
    """The parent's handle. One request at a time (callers are serialized by a lock)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "ackdeck.tui.scanner"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=str(REPO),
        )
        self._lock = threading.Lock()
        self._rooms: list[Path | str] | None = None  # the room list the child has
        self._sent: object = None  # the list it came in (the app passes the same one again)

    def _compact(self, req: ScanRequest) -> ScanRequest:
        # The room list is sent once, not with every look (3,000 paths pickled each time).
        if req.rooms is self._sent or req.rooms == self._rooms:
            return replace(req, rooms=None)
        self._rooms, self._sent = list(req.rooms or []), req.rooms
        return req

    def scan(self, req: ScanRequest, emit: Callable[[ScanDelta], None]) -> None:
        """Send `req`; `emit` every part of the answer, up to the final one."""
        with self._lock:
            proc = self._proc
            if proc.poll() is not None or proc.stdin is None or proc.stdout is None:
                raise ScannerGone("the scanner process exited")
            try:
                _write(proc.stdin, self._compact(req))
                while True:
                    # Bounded: a scanner that stops answering (stuck, or its pipe kept open
                    # by something else) must not freeze the counters; it is replaced.
                    ready, _, _ = select.select([proc.stdout], [], [], REPLY_TIMEOUT_S)
                    if not ready:
                        proc.kill()
                        raise ScannerGone(f"the scanner did not answer in {REPLY_TIMEOUT_S:.0f} s")
                    reply = _read(proc.stdout)
                    if isinstance(reply, Exception):
                        raise reply
                    if not isinstance(reply, ScanDelta):
                        raise ScannerGone("the scanner process sent something unexpected")
                    emit(reply)
                    if reply.final:
                        return
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                raise ScannerGone(f"the scanner process failed: {exc}") from None

    def close(self) -> None:
        """Closing stdin ends the child's loop; terminate it if it is mid-scan."""
        proc = self._proc
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass  # already gone: nothing left to tell it
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    counter = RoomCounter()
    while True:
        try:
            request = _read(stdin)
        except EOFError:
            return 0
        try:
            assert isinstance(request, ScanRequest)
            counter.scan(request, lambda part: _write(stdout, part))
        except Exception as exc:  # noqa: BLE001 - sent back and raised in the dashboard
            _write(stdout, RuntimeError(f"scan failed: {exc}"))


if __name__ == "__main__":
    sys.exit(main())
