"""`ackdeck` exits without tearing the interpreter down (ackdeck.core.cli.exit_now: ~7 ms of every
per-turn command), yet does everything a normal exit does that a caller can see: atexit
handlers run, buffered output is flushed, other threads are waited for, and a failed flush is
reported as Python reports it. Real interpreters, real pipes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _python(code: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    # Buffered stdout, as ackdeck's callers have it (a pipe), whatever the test runner's env.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", code], cwd=REPO, env=env, timeout=60, **kwargs
    )


def test_atexit_handlers_run_and_buffered_output_is_flushed() -> None:
    code = (
        "import atexit, sys\n"
        "from ackdeck.core.cli import exit_now\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "sys.stdout.write('buffered ')\n"
        "sys.stderr.write('to stderr')\n"
        "exit_now(3)\n"
    )
    out = _python(code, capture_output=True)
    assert (out.returncode, out.stdout, out.stderr) == (3, b"buffered atexit ran\n", b"to stderr")


def test_a_non_daemon_thread_is_waited_for_as_a_normal_exit_does() -> None:
    code = (
        "import sys, threading, time\n"
        "from ackdeck.core.cli import exit_now\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "exit_now(0)\n"
    )
    out = _python(code, capture_output=True)
    assert (out.returncode, out.stdout) == (0, b"thread done\n")


def test_a_failed_flush_is_reported_as_python_reports_it() -> None:
    """stdout's reader is gone before the flush: the same exit code (120) and report as a
    normal exit, not a silent success."""
    r, w = os.pipe()
    os.close(r)
    try:
        code = (
            "import sys\nfrom ackdeck.core.cli import exit_now\n"
            "sys.stdout.write('x' * 10)\nexit_now(0)\n"
        )
        fast = _python(code, stdout=w, stderr=subprocess.PIPE)
        plain = _python(
            "import sys\nsys.stdout.write('x' * 10)\n", stdout=w, stderr=subprocess.PIPE
        )
    finally:
        os.close(w)
    assert fast.returncode == plain.returncode == 120
    assert b"BrokenPipeError" in fast.stderr and b"BrokenPipeError" in plain.stderr
