"""`python -m bench turn [--quick]`: what ackdeck's hooks add to one turn of a real agent.

Real Claude Code (`claude -p`, from .cache/npm: `make npm-cache`) runs offline against a
scripted stand-in of its model API on loopback (tests/helpers/model_stub.py, as in
tests/test_agent_loops.py): one turn, the model answers "done". Two projects, measured
interleaved in the same run: one with ackdeck's hooks installed in its `.claude/settings.json`
(`ackdeck hooks install`, the console script as users have it: SessionStart runs `hooks
bootstrap`, UserPromptSubmit `hooks prompt`, Stop `hooks stop`, Notification `hooks notify`,
SessionEnd `hooks end`) and one without. Same client, same stand-in, same room (empty: the
common turn, nothing waiting). Each row is the median wall time of the whole `claude -p` run,
start to exit; the ratio is with hooks over without. Target: <= 1.10.

Beside the wall time, the CPU time of every process of the turn (Claude Code, its hooks, and
the async SessionEnd hook it starts detached), summed from getrusage: this process is a child
subreaper (Linux), so the detached hook is reparented to it and reaped after each turn. A busy
machine stretches wall times by more than the hooks cost, but hardly their CPU time: the CPU
line is the figure that compares across loads.

The first run of each project is a warm-up (the client's first start in a HOME, the bytecode
caches), and checks that the hooks ran: the bootstrap text reached the model. `--quick`: 3
rounds (default ACKDECK_BENCH_TURN_ROUNDS, 7).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import load_average, load_line

REPO = Path(__file__).resolve().parent.parent
CLAUDE = REPO / ".cache" / "npm" / "node_modules" / ".bin" / "claude"
ROUNDS = int(os.environ.get("ACKDECK_BENCH_TURN_ROUNDS", "7"))
QUICK_ROUNDS = 3
TARGET = 1.10
SESSION = "bench"
PROMPT = "Say done."
BOUND_S = 300  # only a hang reaches this: a turn against the loopback stand-in takes ~1 s


def _ackdeck() -> list[str]:
    script = Path(sys.executable).parent / "ackdeck"  # the console script hooks run
    return [str(script)] if script.exists() else [sys.executable, "-m", "ackdeck.core.cli"]


def _project(work: Path, name: str, hooks: bool, env: dict[str, str]) -> Path:
    project = work / name
    project.mkdir()
    if hooks:
        home = str(work / "ackdeck-home")
        subprocess.run(
            [
                *_ackdeck(),
                "--home",
                home,
                "hooks",
                "install",
                "--session",
                SESSION,
                "--room",
                str(work / "inbox.txt"),
                "--ackdeck",
                " ".join([*_ackdeck(), "--home", home]),
            ],
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
            timeout=BOUND_S,
        )
    return project


def _env(work: Path, url: str) -> dict[str, str]:
    # PYTHONPATH too: the hooks then run another source tree's ackdeck (a before/after run).
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM", "PYTHONPATH")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    user = work / "user"  # a throwaway HOME for the client
    env.update(
        HOME=str(user),
        XDG_CONFIG_HOME=str(user / ".config"),
        XDG_CACHE_HOME=str(user / ".cache"),
        XDG_DATA_HOME=str(user / ".local" / "share"),
        NO_COLOR="1",
        CI="1",
        ANTHROPIC_BASE_URL=url,
        ANTHROPIC_API_KEY="stub-key",
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        # As installed: bytecode cached (in a temporary prefix, the work tree stays clean).
        PYTHONPYCACHEPREFIX=str(work / "pycache"),
    )
    return env


def _subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux: prctl
    PR_SET_CHILD_SUBREAPER), so the CPU of a detached hook is counted; False elsewhere."""
    import ctypes

    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0)
    except (AttributeError, OSError):
        return False


def _cpu() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _children() -> set[int]:
    """This process's children now (/proc/self/task/*/children), orphans it reaps included."""
    pids: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            continue
    return pids


def _reap(before: set[int]) -> None:
    """Wait for the turn's descendants still running (a detached async hook), bounded. Only
    the children that were not there `before` the turn: under `make bench` this process has
    others that never end (an earlier bench's multiprocessing resource tracker), and waiting
    for any child hung there."""
    end = time.monotonic() + BOUND_S
    while time.monotonic() < end:
        left = _children() - before
        if not left:
            return
        for pid in left:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass  # not ours to wait for (reaped meanwhile)
        time.sleep(0.005)  # polling a process table, not synchronising a test
    raise RuntimeError("a hook of the turn was still running after the bound")


def _turn(project: Path, env: dict[str, str]) -> tuple[float, float]:
    """The wall time of one `claude -p` turn, and the CPU time of all its processes."""
    argv = [str(CLAUDE), "-p", PROMPT, "--output-format", "json", "--max-turns", "1"]
    before = _children()
    cpu0 = _cpu()
    t0 = time.perf_counter()
    done = subprocess.run(
        argv, cwd=project, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=BOUND_S
    )
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"claude -p failed ({done.returncode}): {done.stderr[-500:]!r}")
    _reap(before)
    return elapsed, _cpu() - cpu0


def main(flags: list[str] | None = None) -> None:
    if not CLAUDE.exists() or shutil.which("node") is None:
        print(f"skipped: no Claude Code at {CLAUDE} (run `make npm-cache`) or no node")
        return
    sys.path.insert(0, str(REPO))  # the model stand-in lives with the tests
    from tests.helpers.model_stub import ModelStub

    rounds = QUICK_ROUNDS if flags and "--quick" in flags else ROUNDS
    reaper = _subreaper()
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-turn-") as tmp:
        work = Path(tmp)
        (work / "inbox.txt").touch()
        # One stand-in for every run: each turn is answered "done" (the script's default).
        with ModelStub([]) as stub:
            env = _env(work, stub.url)
            projects = {
                "claude -p, no hooks": _project(work, "plain", False, env),
                "claude -p, ackdeck hooks": _project(work, "hooked", True, env),
            }
            for project in projects.values():  # warm-up
                _turn(project, env)
            said = json.dumps(stub.turns())
            if f"you are session {SESSION!r}" not in said:
                raise RuntimeError("the hooks did not run: no bootstrap text reached the model")
            print(load_line("before"), flush=True)
            peak = load_average()[0]
            times: dict[str, list[float]] = {name: [] for name in projects}
            cpus: dict[str, list[float]] = {name: [] for name in projects}
            for _ in range(rounds):
                for name, project in projects.items():
                    wall, cpu = _turn(project, env)
                    times[name].append(wall)
                    cpus[name].append(cpu)
                peak = max(peak, load_average()[0])
    print(load_line("after", peak))
    med = {name: statistics.median(ts) * 1000 for name, ts in times.items()}
    base = med["claude -p, no hooks"]
    print(f"one claude -p turn, median of {rounds} interleaved runs (ms)")
    print(f"{'case':<28}{'median':>9}{'ratio':>7}{'target':>9}  result")
    for name, ms in med.items():
        ratio = ms / base
        if name == "claude -p, no hooks":
            print(f"{name:<28}{ms:>9.1f}{ratio:>7.2f}{'':>9}  baseline")
        else:
            verdict = "met" if ratio <= TARGET else "missed"
            print(f"{name:<28}{ms:>9.1f}{ratio:>7.2f}{'<= ' + format(TARGET, 'g'):>9}  {verdict}")
    print(f"hooks add {med['claude -p, ackdeck hooks'] - base:+.0f} ms per turn")
    cpu = {name: statistics.median(ts) * 1000 for name, ts in cpus.items()}
    plain, hooked = cpu["claude -p, no hooks"], cpu["claude -p, ackdeck hooks"]
    whose = "every process of the turn" if reaper else "without the detached hooks (no subreaper)"
    print(
        f"CPU per turn ({whose}), median: {plain:.1f} -> {hooked:.1f} ms, "
        f"hooks add {hooked - plain:+.0f} ms of CPU"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
