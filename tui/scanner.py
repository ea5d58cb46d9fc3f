"""A scanner process: counts rooms (`Room.status`) outside the dashboard's interpreter.

Counting a flooded room holds the GIL for long stretches (bytes.count over the whole file);
done in a thread, it would delay the UI thread's handling of new lines. The dashboard starts
`python -m tui.scanner` once and sends it one request per scan over a pipe; the child answers
with the pickled `Snapshot`. Both ends are this package, so pickle is safe here. No Textual.

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
from pathlib import Path
from typing import IO

from .state import Snapshot, scan_at

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

    def scan(self, home: Path | None, rooms: list[Path | str], now: float) -> Snapshot:
        with self._lock:
            proc = self._proc
            if proc.poll() is not None or proc.stdin is None or proc.stdout is None:
                raise ScannerGone("the scanner process exited")
            try:
                _write(proc.stdin, (home, rooms, now))
                # Bounded: a scanner that stops answering (stuck, or its pipe kept open by
                # something else) must not freeze the counters; it is replaced instead.
                ready, _, _ = select.select([proc.stdout], [], [], REPLY_TIMEOUT_S)
                if not ready:
                    proc.kill()
                    raise ScannerGone(f"the scanner did not answer in {REPLY_TIMEOUT_S:.0f} s")
                reply = _read(proc.stdout)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                raise ScannerGone(f"the scanner process failed: {exc}") from None
        if isinstance(reply, Exception):
            raise reply
        if not isinstance(reply, Snapshot):
            raise ScannerGone("the scanner process sent something unexpected")
        return reply

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
    while True:
        try:
            request = _read(stdin)
        except EOFError:
            return 0
        try:
            assert isinstance(request, tuple) and len(request) == 3
            home, rooms, now = request
            reply: object = scan_at(home, rooms, now)
        except Exception as exc:  # noqa: BLE001 - sent back and raised in the dashboard
            reply = RuntimeError(f"scan failed: {exc}")
        _write(stdout, reply)


if __name__ == "__main__":
    sys.exit(main())
