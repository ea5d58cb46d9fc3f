"""`python -m bench mcp`: how long an agent client waits for `ackdeck mcp`'s tools.

Each row is the median wall time from starting a server to its answer to `tools/list` (after
`initialize` and `notifications/initialized`, as Codex and Gemini CLI open a session), beside
`python -c pass` (an interpreter's start and exit) and a minimal server on the same `mcp` SDK
(bench/minimal_mcp_server.py, one tool), measured round-robin in the same run so a busy
machine slows all alike. `import mcp.server.mcpserver` (the clock stops at its first line)
says how much of both servers' time is importing the SDK. ackdeck's own share is the
difference to the minimal server. `--quick` runs 3 rounds.

Bytecode caches go to a temporary PYTHONPYCACHEPREFIX (written by a warm-up round), so the
numbers are what an installed ackdeck costs and the work tree stays clean.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROUNDS = int(os.environ.get("ACKDECK_BENCH_MCP_ROUNDS", "15"))
QUICK_ROUNDS = 3
SDK = "mcp.server.mcpserver"


def _message(id_: int | None, method: str, params: dict[str, object]) -> bytes:
    doc: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        doc["id"] = id_
    return (json.dumps(doc) + "\n").encode()


def _tools_list(argv: list[str], env: dict[str, str]) -> float:
    """Start the server, open a session, stop the clock at the tools/list answer."""
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_message(1, "initialize", init))
    proc.stdin.flush()
    proc.stdout.readline()
    proc.stdin.write(_message(None, "notifications/initialized", {}))
    proc.stdin.write(_message(2, "tools/list", {}))
    proc.stdin.flush()
    # The server may say something first (a channel notice of the room's unread lines, on a
    # slow machine before the answer): the clock stops at the answer to request 2.
    answer = proc.stdout.readline()
    while answer and b'"id":2' not in answer.replace(b" ", b""):
        answer = proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(timeout=60)
    if b'"tools"' not in answer:
        raise RuntimeError(f"{argv[-1]}: no tools/list answer: {answer[:200]!r}")
    return elapsed


def _timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _first_line(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    proc.wait(timeout=60)
    return elapsed


def measure(rounds: int) -> dict[str, float]:
    """Median milliseconds per row."""
    py = sys.executable
    script = Path(py).parent / "ackdeck"  # the console script clients start
    ackdeck = [str(script)] if script.exists() else [py, "-m", "ackdeck.core.cli"]
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-mcp-") as tmp:
        work = Path(tmp)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        env["ACKDECK_HOME"] = str(work / "home")
        room = work / "inbox.txt"
        room.write_bytes(b"".join(b"[ts] [ops] bot: line %d\n" % i for i in range(20)))
        rows: dict[str, Callable[[], float]] = {
            "python -c pass": lambda: _timed([py, "-c", "pass"], env),
            f"import {SDK}": lambda: _first_line(
                [py, "-c", f"import {SDK}; print('imported', flush=True)"], env
            ),
            "minimal server tools/list": lambda: _tools_list(
                [py, "-m", "bench.minimal_mcp_server"], env
            ),
            "ackdeck mcp tools/list": lambda: _tools_list(
                [*ackdeck, "mcp", "--session", "bench", "--room", str(room)], env
            ),
        }
        for fn in rows.values():  # warm-up: writes the bytecode caches
            fn()
        times: dict[str, list[float]] = {name: [] for name in rows}
        for _ in range(rounds):
            for name, fn in rows.items():
                times[name].append(fn())
    return {name: statistics.median(ts) * 1000 for name, ts in times.items()}


def main(flags: list[str] | None = None) -> None:
    rounds = QUICK_ROUNDS if flags and "--quick" in flags else ROUNDS
    med = measure(rounds)
    base, minimal = med["python -c pass"], med["minimal server tools/list"]
    print(f"mcp: start to tools/list, median of {rounds} interleaved runs (ms)")
    print(f"{'what':<32}{'median':>8}{'x pass':>8}{'x minimal':>11}")
    for name, ms in med.items():
        print(f"{name:<32}{ms:>8.1f}{ms / base:>8.2f}{ms / minimal:>11.2f}")
    own = med["ackdeck mcp tools/list"] - minimal
    print(f"ackdeck's own share (ackdeck - minimal): {own:.1f} ms")


if __name__ == "__main__":
    main()
