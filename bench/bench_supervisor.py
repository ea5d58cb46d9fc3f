"""Memory of a supervisor (one per monitored run) against a bare interpreter, in the same run.

Starts a few real monitored runs under a scratch home, each printing a line and then sleeping:
five with a literal monitor (`ERROR`), and two with a regex monitor (`ERROR: .*failed`). RE2
is loaded at the first line that could match (one holding the regex's literal `ERROR: `;
core/monitors/patterns.py, Deferred), so the regex monitor is measured both ways, and both
rows are printed: one run whose output held no such line yet, and one whose output held one
that does not match (`ERROR: disk ok`), so RE2 is loaded and no wake is written. Each is
measured once its supervisor has scanned those lines; the supervisors' resident memory
(VmRSS) comes from /proc. The baseline is `python -c 'import time; time.sleep(5)'` started
with the same interpreter at the same time.

RE2 maps `_re2`, libstdc++ and libgcc_s: file pages that every process mapping them shares,
yet each one's RSS counts in full. So the RE2 row is also shown without them (RSS minus those
mappings' resident pages, from /proc/PID/smaps), and every row's private memory (RssAnon) and
proportional share (Pss, from /proc/PID/smaps_rollup: a shared page divided among the
processes mapping it) against the bare interpreter's, in the same run.

Bytecode caches go to a temporary PYTHONPYCACHEPREFIX, written by a warm-up run, as in
bench_startup: an installed ackdeck has them, and a supervisor compiling every module from
source (PYTHONDONTWRITEBYTECODE) keeps ~1 MiB more of the compiler's garbage than it needs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ackdeck.core.monitors import procs
from ackdeck.core.monitors.runs import load_meta, load_monitors_state
from bench import load_average, load_line

RUNS = 5


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def pss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    raise RuntimeError(f"no Pss for {pid}")


# RE2's shared libraries: its Python extension and the C++ runtime it links.
RE2_FILES = ("/_re2.", "/libstdc++.so", "/libgcc_s.so")


def re2_pages_kib(pid: int) -> int:
    """Resident KiB of the mappings of RE2's libraries in `pid` (0: not loaded)."""
    total, mine = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if not head[0].endswith(":"):  # a mapping's first line: range, perms, ..., path
                mine = len(head) >= 6 and any(part in head[5] for part in RE2_FILES)
            elif head[0] == "Rss:" and mine:
                total += int(head[1])
    return total


def wait_for(cond, what: str, timeout: float = 60.0):  # noqa: ANN001 - tiny local helper
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return value


def _warm_up(home: Path) -> None:
    """One monitored run to its end: writes the bytecode caches every supervisor then reads,
    a literal's and a regex's (with only a literal, the regex supervisor compiled RE2's
    wrapper from source and kept ~1.5 MiB more than an installed one: its row read 1.76x)."""
    monitors = [procs.MonitorSpec("ERROR"), procs.MonitorSpec("ERROR: .*failed")]
    # A line both match: since RE2 is loaded at the first candidate line, a warm-up without
    # one would leave RE2's wrapper uncached (the regex-loaded row read 1.80x, not 1.5x).
    argv = ["sh", "-c", "echo 'ERROR: warm-up failed'"]
    info = procs.start(home, "warm", argv, monitors=monitors)
    wait_for(lambda: (m := load_meta(info.run_dir)) is not None and m.status != "running", "warm")


# Every run prints one line before it sleeps, so each supervisor has scanned real output
# (the scan's libc helpers loaded) before it is measured, not only an empty log.
QUIET = "echo 'info: started'; exec sleep 30"
# A line holding the regex's literal (`ERROR: `) that does not match: RE2 must be loaded to
# tell, and no wake is written, so the row differs from the one before by RE2 alone.
CANDIDATE = "echo 'info: started'; echo 'ERROR: disk ok'; exec sleep 30"
REGEX = "ERROR: .*failed"


def _scanned(run: procs.RunInfo, upto: int) -> bool:
    state = load_monitors_state(run.run_dir)
    return state is not None and state.scanned_to >= upto


def _supervisor(run: procs.RunInfo, text: str, *, re2: bool = False) -> int:
    """The run's supervisor pid, once it has scanned the output `text` (and mapped RE2)."""
    meta = wait_for(lambda: load_meta(run.run_dir), "meta")
    # Scanned: every import the steady state needs has happened.
    wait_for(lambda: _scanned(run, len(text)), "a scan of the first lines")
    if re2:
        wait_for(lambda: re2_pages_kib(meta.supervisor_pid) > 0, "RE2 to be mapped")
    return meta.supervisor_pid


def _memory(pid: int) -> tuple[int, int, int, int]:
    """RSS, RSS without RE2's library pages, RssAnon and Pss of `pid`, in KiB."""
    rss = rss_kib(pid)
    return rss, rss - re2_pages_kib(pid), rss_kib(pid, "RssAnon"), pss_kib(pid)


def main() -> None:
    before = load_line("before")
    peak = load_average()[0]
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-sup-") as tmp:
        home = Path(tmp)
        # Supervisors inherit this environment (procs.start passes os.environ on).
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
        _warm_up(home)
        bare = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])

        def start(name: str, pattern: str, script: str) -> procs.RunInfo:
            monitors = [procs.MonitorSpec(pattern)]
            return procs.start(home, name, ["sh", "-c", script], monitors=monitors)

        infos = [start(f"r{i}", "ERROR", QUIET) for i in range(RUNS)]
        # A monitor that needs a regex engine. Since issue 43 RE2 is loaded at the first line
        # that could match (one holding `ERROR: `), so this one is measured twice: a run whose
        # output held no such line yet, and one whose output did (RE2 loaded).
        waiting = start("regex-before", REGEX, QUIET)
        loaded = start("regex-after", REGEX, CANDIDATE)
        try:
            quiet = "info: started\n"
            sups = [_supervisor(info, quiet) for info in infos]
            wpid = _supervisor(waiting, quiet)
            lpid = _supervisor(loaded, quiet + "ERROR: disk ok\n", re2=True)
            w_re2 = re2_pages_kib(wpid)
            regex_before, regex_after = _memory(wpid), _memory(lpid)
            # The bare interpreter was started before the supervisors: it is up by now.
            lit = [_memory(p) for p in sups]
            base = _memory(bare.pid)
            peak = max(peak, load_average()[0])
        finally:
            for info in [*infos, waiting, loaded]:
                procs.kill(home, info.name, grace=0.5)
            bare.kill()
            bare.wait()

    def median(k: int) -> int:
        return sorted(m[k] for m in lit)[len(lit) // 2]

    def row(what: str, kib: int, k: int, note: str = "bare") -> tuple[str, str, str, str]:
        ratio = f"{kib / base[k]:.2f}"
        return (what, f"{kib / 1024:.1f} MiB", f"{base[k] / 1024:.1f} MiB {note}", ratio)

    heavy = [m for m in ("textual", "mcp", "pydantic") if _imported_by_supervisor(m)]
    limit = 1.3
    verdict = {
        name: "meets" if kib / base[0] <= limit else "MISSES"
        for name, kib in (
            ("literal", median(0)),
            ("before", regex_before[0]),
            ("after", regex_after[0]),
        )
    }
    rows = [
        ("benchmark", "ackdeck", "baseline (same run)", "ratio"),
        row(
            f"supervisor RSS, a literal monitor (median of {RUNS})",
            median(0),
            0,
            "bare `python -c 'import time; time.sleep(5)'`",
        ),
        row("supervisor RSS, a regex monitor, no candidate line yet", regex_before[0], 0),
        row("supervisor RSS, a regex monitor after a candidate (RE2 loaded)", regex_after[0], 0),
        row(
            "  the same, without RE2's library pages",
            regex_after[1],
            0,
            f"bare (RE2's pages: {(regex_after[0] - regex_after[1]) / 1024:.1f} MiB)",
        ),
        row("supervisor private memory (RssAnon), literal, median", median(2), 2),
        row("  a regex monitor's, no candidate", regex_before[2], 2),
        row("  a regex monitor's, RE2 loaded", regex_after[2], 2),
        row("supervisor proportional share (Pss), literal, median", median(3), 3),
        row("  a regex monitor's, no candidate", regex_before[3], 3),
        row("  a regex monitor's, RE2 loaded", regex_after[3], 3),
        (
            f"{RUNS} monitored runs, total supervisor RSS",
            f"{sum(m[0] for m in lit) / 1024:.1f} MiB",
            f"{RUNS * base[0] / 1024:.1f} MiB",
            f"{sum(m[0] for m in lit) / (RUNS * base[0]):.2f}",
        ),
        ("heavy packages a supervisor imports", ", ".join(heavy) or "none", "", ""),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    print(
        f"target RSS <= {limit}x bare: literal monitor {verdict['literal']} it; regex monitor"
        f" before a candidate line {verdict['before']} it (RE2 mapped: {w_re2} KiB);"
        f" regex monitor with RE2 loaded {verdict['after']} it"
    )
    print(before)
    print(load_line("after", peak))


def _imported_by_supervisor(module: str) -> bool:
    code = f"import sys, ackdeck.core.monitors.supervisor; print({module!r} in sys.modules)"
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return out.stdout.strip() == "True"


if __name__ == "__main__":
    main()
