"""`python -m bench turn [--quick]`: what ackdeck's hooks add to one turn of a real agent.

Real Claude Code (`claude -p`, from .cache/npm: `make npm-cache`) runs offline against a
scripted stand-in of its model API on loopback (tests/helpers/model_stub.py, as in
tests/test_agent_loops.py): one turn, the model answers "done". Three projects, measured
interleaved in the same run: one with ackdeck's hooks installed in its `.claude/settings.json`
(`ackdeck hooks install`, the console script as users have it: SessionStart runs `hooks
bootstrap`, UserPromptSubmit `hooks prompt`, Stop `hooks stop`, Notification `hooks notify`,
SessionEnd `hooks end`), one without, and one with the same hooks doing nothing (each command
`exit 0`, matcher, timeout and async kept): the part of the cost that is Claude Code running a
hook at all, which no command can remove, apart from ackdeck's commands. Same client, same
stand-in, same room (empty: the common turn, nothing waiting). Each row is the median wall
time of the whole `claude -p` run, start to exit, and its range; the ratio is over the run
without hooks (and, printed beside it, the median of each round's own ratio, which a load
drifting during the run moves less). Each round starts with another project. Target:
ackdeck's hooks <= 1.10.

Beside the wall time, the CPU time of every process of the turn (Claude Code, its hooks, and
the async SessionEnd hook it starts detached), summed from getrusage: this process is a child
subreaper (Linux), so the detached hook is reparented to it and reaped after each turn. A busy
machine stretches wall times by more than the hooks cost, but hardly their CPU time: the CPU
line is the figure that compares across loads.

The first run of each project is a warm-up (the client's first start in a HOME, the bytecode
caches), and checks that the hooks ran: the bootstrap text reached the model. `--quick`: 3
rounds (default ACKDECK_BENCH_TURN_ROUNDS, 11: at 7 the median of a shared 2-core VM moved by
more than the hooks cost between runs).

`--timeline`: as many rounds again with Claude Code's own debug log (`--debug-file`, its
timestamps in ms), and the median time of each phase of the turn per project: start-up until
the session-start hooks ran, until the first model request, the reply, the Stop hooks, the
SessionEnd hooks, and the exit. The phases are found by lines of Claude Code 2.1.328's debug
log (TIMELINE); another release may word them otherwise (the phase is then left out).
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
from typing import Any

from bench import load_average, load_line

REPO = Path(__file__).resolve().parent.parent
CLAUDE = REPO / ".cache" / "npm" / "node_modules" / ".bin" / "claude"
ROUNDS = int(os.environ.get("ACKDECK_BENCH_TURN_ROUNDS", "11"))
QUICK_ROUNDS = 3
TARGET = 1.10
SESSION = "bench"
PROMPT = "Say done."
BOUND_S = 300  # only a hang reaches this: a turn against the loopback stand-in takes ~1 s


def _ackdeck() -> list[str]:
    script = Path(sys.executable).parent / "ackdeck"  # the console script hooks run
    return [str(script)] if script.exists() else [sys.executable, "-m", "ackdeck.core.cli"]


PLAIN = "claude -p, no hooks"
NULL = "claude -p, hooks doing nothing"
HOOKED = "claude -p, ackdeck hooks"
# Lines of Claude Code's debug log (2.1.328) that mark the phases of a `claude -p` turn, in
# order: (phase ending at the line, a substring of the line). The log's first line is the
# phase's start; the process's exit (measured here) ends the last.
TIMELINE = (
    ("start-up", "[STARTUP] Running setup()"),
    ("to session start (its hooks awaited)", "session.start: raised"),
    ("to the first request", "[API:timing] dispatching"),
    ("to the reply's first byte", "first byte after"),
    ("to the turn's end (Stop hooks)", "[engine] turn 1 end"),
    ("to shutting down", "[uds-messaging] Shutting down"),
    ("to the last line (SessionEnd hooks)", None),
)


def null_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with every command hook doing nothing (`exit 0`) and everything else as it
    was: what Claude Code costs to run these hooks, whatever they do."""
    out = json.loads(json.dumps(settings))
    for groups in out.get("hooks", {}).values():
        for group in groups:
            for hook in group.get("hooks", []):
                if hook.get("type") == "command":
                    hook["command"] = "exit 0"
    return out


def _project(work: Path, name: str, hooks: bool, env: dict[str, str], null: bool = False) -> Path:
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
        if null:
            settings = project / ".claude" / "settings.json"
            settings.write_text(json.dumps(null_hooks(json.loads(settings.read_text()))))
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


def _turn(project: Path, env: dict[str, str], debug: Path | None = None) -> tuple[float, float]:
    """The wall time of one `claude -p` turn, and the CPU time of all its processes. With
    `debug`, Claude Code writes its debug log there (timeline rounds only: it costs time)."""
    argv = [str(CLAUDE), "-p", PROMPT, "--output-format", "json", "--max-turns", "1"]
    if debug is not None:
        argv += ["--debug", "--debug-file", str(debug)]
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


def phases(log: str, exit_ms: float, start_ms: float) -> dict[str, float]:
    """The duration (ms) of each TIMELINE phase of one turn from Claude Code's debug log;
    `start_ms` and `exit_ms`: when the process was started and ended, on the log's clock
    (ms since the epoch). A phase whose line is missing is left out, and the next phase
    then runs from the last line found."""
    from datetime import UTC, datetime

    def at(line: str) -> float | None:
        try:  # 2026-12-07T17:24:18.066Z [DEBUG] ... (UTC)
            when = datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f")
        except ValueError:
            return None  # a continuation of a multi-line entry
        return when.replace(tzinfo=UTC).timestamp() * 1000

    stamped = [(t, line) for line in log.splitlines() if (t := at(line)) is not None]
    out: dict[str, float] = {}
    if not stamped:
        return out
    last = start_ms
    for name, marker in TIMELINE:
        found = (
            stamped[-1][0]
            if marker is None
            else next((t for t, line in stamped if marker in line), None)
        )
        if found is None:
            continue
        out[name] = found - last
        last = found
    out["to the exit"] = exit_ms - last
    return out


def _timeline(projects: dict[str, Path], env: dict[str, str], rounds: int, work: Path) -> None:
    """Rounds with Claude Code's debug log; the median of each phase per project."""
    got: dict[str, list[dict[str, float]]] = {name: [] for name in projects}
    for i in range(rounds):
        for name, project in projects.items():
            log = work / "logs" / f"debug-{i}-{project.name}.txt"
            start = time.time() * 1000
            wall, _ = _turn(project, env, debug=log)
            got[name].append(phases(log.read_text(errors="replace"), start + wall * 1000, start))
    names = [n for n, _ in TIMELINE] + ["to the exit"]
    print(f"where the time goes: Claude Code's debug log, median of {rounds} runs (ms)")
    print(f"{'phase':<40}" + "".join(f"{_short(n):>10}" for n in projects))
    for phase in names:
        cells = []
        for name in projects:
            seen = [r[phase] for r in got[name] if phase in r]
            cells.append(f"{statistics.median(seen):>10.1f}" if seen else f"{'-':>10}")
        print(f"{phase:<40}" + "".join(cells))


def _short(case: str) -> str:
    return {PLAIN: "no hooks", NULL: "exit 0", HOOKED: "ackdeck"}.get(case, case[:9])


def main(flags: list[str] | None = None) -> None:
    if not CLAUDE.exists() or shutil.which("node") is None:
        print(f"skipped: no Claude Code at {CLAUDE} (run `make npm-cache`) or no node")
        return
    sys.path.insert(0, str(REPO))  # the model stand-in lives with the tests
    from tests.helpers.model_stub import ModelStub

    flags = flags or []
    rounds = QUICK_ROUNDS if "--quick" in flags else ROUNDS
    reaper = _subreaper()
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-turn-") as tmp:
        work = Path(tmp)
        (work / "inbox.txt").touch()
        # The timeline's logs go into a folder of their own, made before the warm-up: a file
        # created beside the room dates the room's folder, and the gates then run ackdeck
        # (a room replaced by a rename must be looked at).
        (work / "logs").mkdir()
        # One stand-in for every run: each turn is answered "done" (the script's default).
        with ModelStub([]) as stub:
            env = _env(work, stub.url)
            projects = {
                PLAIN: _project(work, "plain", False, env),
                NULL: _project(work, "null", True, env, null=True),
                HOOKED: _project(work, "hooked", True, env),
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
            order = list(projects.items())
            for i in range(rounds):
                # Each round starts with another project: none always runs right after the
                # same one (a turn leaves the page cache and the CPU's frequency to the next).
                for name, project in order[i % len(order) :] + order[: i % len(order)]:
                    wall, cpu = _turn(project, env)
                    times[name].append(wall)
                    cpus[name].append(cpu)
                peak = max(peak, load_average()[0])
            if "--timeline" in flags:
                _timeline(projects, env, rounds, work)
                peak = max(peak, load_average()[0])
    print(load_line("after", peak))
    med = {name: statistics.median(ts) * 1000 for name, ts in times.items()}
    base = med[PLAIN]
    print(f"one claude -p turn, median of {rounds} interleaved runs (ms)")
    print(f"{'case':<34}{'median':>9}{'ratio':>7}{'target':>9}  {'result':<9}{'range':>17}")
    for name, ms in med.items():
        ratio = ms / base
        # The median's precision: rounded to whole ms, a range could start above its median.
        spread = f"{min(times[name]) * 1000:.1f}-{max(times[name]) * 1000:.1f}"
        if name == PLAIN:
            verdict, target = "baseline", ""
        elif name == NULL:
            verdict, target = "control", ""
        else:
            verdict = "met" if ratio <= TARGET else "missed"
            target = "<= " + format(TARGET, "g")
        print(f"{name:<34}{ms:>9.1f}{ratio:>7.2f}{target:>9}  {verdict:<9}{spread:>17}")
    print(
        f"hooks add {med[HOOKED] - base:+.0f} ms per turn: Claude Code running them "
        f"{med[NULL] - base:+.0f} ms (the same hooks doing nothing), ackdeck's commands "
        f"{med[HOOKED] - med[NULL]:+.0f} ms"
    )
    # Each round's own ratio: a load that drifts during the run moves both turns of a round
    # alike. Printed beside the verdict, which stays on the ratio of the medians.
    paired = {
        name: statistics.median(t / b for t, b in zip(times[name], times[PLAIN], strict=True))
        for name in (NULL, HOOKED)
    }
    print(
        f"median of each round's ratio: hooks doing nothing {paired[NULL]:.2f}, "
        f"ackdeck hooks {paired[HOOKED]:.2f}"
    )
    used = {name: statistics.median(ts) * 1000 for name, ts in cpus.items()}
    plain, null, hooked = used[PLAIN], used[NULL], used[HOOKED]
    whose = "every process of the turn" if reaper else "without the detached hooks (no subreaper)"
    print(
        f"CPU per turn ({whose}), median: {plain:.1f} -> {hooked:.1f} ms, "
        f"hooks add {hooked - plain:+.0f} ms of CPU: Claude Code running them "
        f"{null - plain:+.0f} ms, ackdeck's commands {hooked - null:+.0f} ms"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
