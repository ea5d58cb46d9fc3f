"""`python -m bench startup`: how long the commands agents and hooks run on every turn take.

Each row is the median wall time of one `ackdeck …` command (a fresh interpreter, as a hook or a
producer script starts it), next to `python -c pass` in the same venv measured in the same
rounds: the commands run round-robin with the baseline, so a busy machine slows both alike.
Target: each command <= 1.5x `python -c pass`.

The `gated …` rows run the session-start, prompt and Stop hooks as `hooks install` writes
them and Claude Code runs them (`/bin/sh -c COMMAND`, the hook JSON on stdin): a sh gate that
starts ackdeck only when the hook may have something to say (issue 43, core/service/quiet.py).
"quiet": nothing changed since the hook last had nothing to say, so no Python starts; "a line
waits": the hook runs behind its gate and lists or counts it; "runs ackdeck": a home with a
run, whose supervisor the Stop hook must check, so it always runs. "gated end": the SessionEnd
hook as installed, a sh program that writes the hook's JSON into the session's end mark and
starts no Python (beside `ackdeck hooks end`, which it replaces).

The `mcp initialize` row is the time from starting `ackdeck mcp` to its answer to `initialize`,
against the time from starting `python -c 'import mcp.server.mcpserver; print(...)'` to its
line (the SDK the server is built on; both clocks stop at the first output, not at exit):
ackdeck's own overhead on top of importing the SDK must stay under 10%.

The `modules` column counts the modules each command imports beyond `python -c pass` (from
`-X importtime`, one run): deterministic, unlike the times, so it compares across machines and
loads; tests/test_layering.py holds each per-turn command to a budget of them. The machine's
load is printed before and after the rounds, and a run whose load went above ~0.5 per core is
marked not comparable (a busy machine slows `python -c pass` too and flatters the ratios).

Bytecode caches go to a temporary PYTHONPYCACHEPREFIX (written once by a warm-up round), so
the numbers are what an installed ackdeck costs, not a recompile of every module per run, and
the work tree stays clean even when PYTHONDONTWRITEBYTECODE is set.
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

from bench import load_average, load_line

ROUNDS = int(os.environ.get("ACKDECK_BENCH_STARTUP_ROUNDS", "21"))
TARGET = 1.5
MCP_TARGET = 1.10
SESSION = "bench"


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["ACKDECK_HOME"] = str(work / "home")
    return env


def _timed(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    t0 = time.perf_counter()
    out = subprocess.DEVNULL
    subprocess.run(argv, input=stdin, env=env, stdout=out, stderr=out, check=False)
    return time.perf_counter() - t0


def _module_count(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> int:
    """How many modules `argv` (a Python program) imports, from its -X importtime log."""
    env = dict(env, PYTHONPROFILEIMPORTTIME="1")
    done = subprocess.run(
        argv, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    lines = done.stderr.decode(errors="replace").splitlines()
    return sum(1 for x in lines if x.startswith("import time:") and "imported package" not in x)


def _until_first_line(argv: list[str], env: dict[str, str]) -> float:
    """Start `argv` and stop the clock at its first line of output (not at its exit: tearing
    down a big module graph at exit is not part of starting)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    proc.wait(timeout=60)
    return elapsed


def _mcp_initialize(argv: list[str], env: dict[str, str]) -> float:
    """Start the server, send `initialize`, stop the clock at its answer, then close stdin."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.flush()
    answer = proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(timeout=60)
    if b'"result"' not in answer:
        raise RuntimeError(f"mcp did not answer initialize: {answer[:200]!r}")
    return elapsed


def _date_back(*trees: Path) -> None:
    """Date every file of `trees` 30 s back but the gates' stamps (`quiet-*`): as a session
    quiet for a while, so the stamps hold (a stamp dated back could fall behind the code that
    wrote the session-start text, which the gate takes as an upgrade)."""
    back = 30_000_000_000
    for tree in trees:
        for path in [tree, *tree.rglob("*")]:
            if path.is_symlink() or path.name.startswith("quiet-"):
                continue
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns - back, st.st_mtime_ns - back))


def _gates(ackdeck: list[str], work: Path, env: dict[str, str]) -> dict[str, tuple[str, bytes]]:
    """The installed prompt and Stop hooks (as `hooks install` writes them) of a quiet session,
    settled on their stamps; of a session with a line waiting; of a home with a run."""
    from ackdeck.core import hook_install
    from ackdeck.core.base import locations
    from ackdeck.core.service import quiet

    stdin = json.dumps({"session_id": "x", "prompt": "hi", "stop_hook_active": False}).encode()
    start = (
        json.dumps({"session_id": "x", "source": "startup"}, separators=(",", ":")) + "\n"
    ).encode()  # one line, compact, as Claude Code writes it
    end = (
        json.dumps({"session_id": "x", "reason": "other"}, separators=(",", ":")) + "\n"
    ).encode()
    qroom, qhome = work / "quiet" / "inbox.txt", work / "quiet-home"
    qroom.parent.mkdir()
    qroom.touch()
    q = hook_install.hook_commands([*ackdeck, "--home", str(qhome)], SESSION, [qroom])
    broom, bhome = work / "busy" / "inbox.txt", work / "busy-home"
    broom.parent.mkdir()
    broom.write_bytes(b"[ts] [ops] bot: waiting\n")
    b = hook_install.hook_commands([*ackdeck, "--home", str(bhome)], SESSION, [broom])
    (locations.procs_dir(bhome) / "build").mkdir(parents=True)
    gates = {
        "gated bootstrap, quiet": (q["SessionStart"], start),
        "gated prompt, quiet": (q["UserPromptSubmit"], stdin),
        "gated stop, quiet": (q["Stop"], stdin),
        "gated prompt, a line waits": (b["UserPromptSubmit"], stdin),
        "gated stop, runs ackdeck": (b["Stop"], stdin),
        "gated bootstrap, a line waits": (b["SessionStart"], start),
        # The quiet session's presence folder exists (its first start ran ackdeck): a mark.
        "gated end": (q["SessionEnd"], end),
    }
    key = quiet.key([str(qroom)])
    doors = (*quiet.DOORS, "bootstrap")
    stamps = [locations.quiet_stamp(qhome, SESSION, d, key) for d in doors]

    def identity() -> list[tuple[int, int] | None]:
        return [(p.stat().st_ino, p.stat().st_mtime_ns) if p.exists() else None for p in stamps]

    for _ in range(4):
        before = identity()
        for name in ("gated bootstrap, quiet", "gated prompt, quiet", "gated stop, quiet"):
            cmd, data = gates[name]
            assert cmd is not None
            subprocess.run(["/bin/sh", "-c", cmd], input=data, env=env, capture_output=True)
        if None not in before and identity() == before:
            return {k: (v, d) for k, (v, d) in gates.items() if v is not None}
        _date_back(qroom.parent, qhome)
    raise RuntimeError("the quiet gates never settled on their stamps")


def main() -> None:
    py = sys.executable
    script = Path(py).parent / "ackdeck"  # the console script users and hooks run
    ackdeck = [str(script)] if script.exists() else [py, "-m", "ackdeck.core.cli"]
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-startup-") as tmp:
        work = Path(tmp)
        env = _env(work)
        room = work / "inbox.txt"
        room.write_bytes(b"".join(b"[ts] [ops] bot: line %d\n" % i for i in range(20)))
        r = str(room)

        def read_then_ack() -> float:
            _timed([*ackdeck, "room", "read", r, "--session", SESSION], env)  # not timed
            return _timed([*ackdeck, "room", "ack", r, "--session", SESSION], env)

        hook_stdin = json.dumps({"session_id": "x", "prompt": "hi"}).encode()
        notify_stdin = json.dumps(
            {"session_id": "x", "notification_type": "idle_prompt", "message": "waiting"}
        ).encode()
        end_stdin = json.dumps({"session_id": "x", "reason": "other"}).encode()
        # What each row runs, for its module count (the ack row counts the ack itself).
        argvs: dict[str, tuple[list[str], bytes]] = {
            "python -c pass": ([py, "-c", "pass"], b""),
            "room push": ([*ackdeck, "room", "push", r, "bench line"], b""),
            "room read": ([*ackdeck, "room", "read", r, "--session", SESSION], b""),
            "room ack": ([*ackdeck, "room", "ack", r, "--session", SESSION], b""),
            "room status": ([*ackdeck, "room", "status", r], b""),
            "wakes drain --hook": (
                [*ackdeck, "wakes", "drain", "--hook", "--session", SESSION],
                hook_stdin,
            ),
            "hooks prompt": (
                [*ackdeck, "hooks", "prompt", "--session", SESSION, "--room", r],
                hook_stdin,
            ),
            "hooks stop": (
                [*ackdeck, "hooks", "stop", "--session", SESSION, "--room", r],
                hook_stdin,
            ),
            "hooks bootstrap": (
                [*ackdeck, "hooks", "bootstrap", "--session", SESSION, "--room", r],
                b"",
            ),
            "hooks notify": ([*ackdeck, "hooks", "notify", "--session", SESSION], notify_stdin),
            "hooks end": ([*ackdeck, "hooks", "end", "--session", SESSION], end_stdin),
        }
        rows: dict[str, Callable[[], float]] = {
            "python -c pass": lambda: _timed([py, "-c", "pass"], env),
            "room push": lambda: _timed([*ackdeck, "room", "push", r, "bench line"], env),
            "room read": lambda: _timed([*ackdeck, "room", "read", r, "--session", SESSION], env),
            "room ack": read_then_ack,
            "room status": lambda: _timed([*ackdeck, "room", "status", r], env),
            "wakes drain --hook": lambda: _timed(
                [*ackdeck, "wakes", "drain", "--hook", "--session", SESSION], env, hook_stdin
            ),
            "hooks prompt": lambda: _timed(
                [*ackdeck, "hooks", "prompt", "--session", SESSION, "--room", r], env, hook_stdin
            ),
            "hooks stop": lambda: _timed(
                [*ackdeck, "hooks", "stop", "--session", SESSION, "--room", r], env, hook_stdin
            ),
            "hooks bootstrap": lambda: _timed(
                [*ackdeck, "hooks", "bootstrap", "--session", SESSION, "--room", r], env
            ),
            # Presence only (issue 32): Claude Code runs these on each notification and at the
            # session's end.
            "hooks notify": lambda: _timed(
                [*ackdeck, "hooks", "notify", "--session", SESSION], env, notify_stdin
            ),
            "hooks end": lambda: _timed(
                [*ackdeck, "hooks", "end", "--session", SESSION], env, end_stdin
            ),
        }
        for name, (cmd, data) in _gates(ackdeck, work, env).items():
            rows[name] = lambda cmd=cmd, data=data: _timed(["/bin/sh", "-c", cmd], env, data)
        sdk = "mcp.server.mcpserver"
        mcp_rows: dict[str, Callable[[], float]] = {
            f"import {sdk}": lambda: _until_first_line(
                [py, "-c", f"import {sdk}; print('imported', flush=True)"], env
            ),
            "mcp initialize": lambda: _mcp_initialize(
                [*ackdeck, "mcp", "--session", SESSION, "--room", r], env
            ),
        }
        everything = {**rows, **mcp_rows}
        for fn in everything.values():  # warm-up: writes the bytecode caches
            fn()
        modules = {name: _module_count(argv, env, stdin) for name, (argv, stdin) in argvs.items()}
        print(load_line("before"), flush=True)
        peak = load_average()[0]
        times: dict[str, list[float]] = {name: [] for name in everything}
        for _ in range(ROUNDS):
            for name, fn in everything.items():
                times[name].append(fn())
            peak = max(peak, load_average()[0])

    med = {name: statistics.median(ts) * 1000 for name, ts in times.items()}
    print(load_line("after", peak))
    print(f"startup, median of {ROUNDS} interleaved runs (ms); modules: imported beyond a bare")
    print("interpreter (the bare one: all it imports), from -X importtime")
    print(f"{'command':<30}{'median':>8}{'ratio':>7}{'target':>9}{'modules':>9}  result")
    bare = modules["python -c pass"]

    def row(
        label: str,
        ms: float,
        base: float,
        target: float | None,
        note: str = "",
        count: int | None = None,
    ) -> None:
        ratio = ms / base
        goal = f"<= {target:g}" if target else ""
        verdict = note or ("met" if target and ratio <= target else "missed")
        shown = "" if count is None else str(count)
        print(f"{label:<30}{ms:>8.1f}{ratio:>7.2f}{goal:>9}{shown:>9}  {verdict}")

    base = med["python -c pass"]
    row("python -c pass", base, base, None, "baseline", bare)
    for name in rows:
        if name.startswith("gated "):  # the installed command: sh, and Python only if needed
            row(name, med[name], base, TARGET)
        elif name != "python -c pass":
            row("ackdeck " + name, med[name], base, TARGET, count=modules[name] - bare)
    sdk_ms = med[f"import {sdk}"]
    row(f"import {sdk}", sdk_ms, sdk_ms, None, "baseline (the SDK)")
    row("ackdeck mcp initialize", med["mcp initialize"], sdk_ms, MCP_TARGET)


if __name__ == "__main__":
    main()
