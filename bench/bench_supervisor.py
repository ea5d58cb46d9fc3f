"""Memory of a supervisor (one per monitored run) against a bare interpreter, in the same run.

Starts a few real monitored runs (`sleep`, a literal monitor; one more with a regex monitor)
under a scratch home, waits until each supervisor has scanned its (empty) output once, and
reads the supervisors' resident memory (VmRSS) from /proc. The baseline is
`python -c 'import time; time.sleep(5)'` started with the same interpreter at the same time.

A regex monitor maps RE2 (`_re2`, libstdc++, libgcc_s): file pages that every process mapping
them shares, yet each one's RSS counts in full. So the regex row is also shown without them
(RSS minus those mappings' resident pages, from /proc/PID/smaps), and every row's private
memory (RssAnon) and proportional share (Pss, from /proc/PID/smaps_rollup: a shared page
divided among the processes mapping it) against the bare interpreter's, in the same run.

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
    info = procs.start(home, "warm", ["true"], monitors=monitors)
    wait_for(lambda: (m := load_meta(info.run_dir)) is not None and m.status != "running", "warm")


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
        infos = [
            procs.start(home, f"r{i}", ["sleep", "30"], monitors=[procs.MonitorSpec("ERROR")])
            for i in range(RUNS)
        ]
        # A monitor that needs a regex engine: RE2 is loaded (a plain literal, like the five
        # above, is searched with bytes.find and never loads it; issue 43).
        regex = procs.start(
            home, "regex", ["sleep", "30"], monitors=[procs.MonitorSpec("ERROR: .*failed")]
        )
        try:
            sups = []
            for info in infos:
                meta = wait_for(lambda i=info: load_meta(i.run_dir), "meta")
                # Scanned once: every import the steady state needs has happened.
                wait_for(lambda i=info: load_monitors_state(i.run_dir), "first scan")
                sups.append(meta.supervisor_pid)
            rmeta = wait_for(lambda: load_meta(regex.run_dir), "meta")
            wait_for(lambda: load_monitors_state(regex.run_dir), "first scan")
            rpid = rmeta.supervisor_pid
            regex_rss, regex_re2 = rss_kib(rpid), re2_pages_kib(rpid)
            regex_anon, regex_pss = rss_kib(rpid, "RssAnon"), pss_kib(rpid)
            # The bare interpreter was started before the five supervisors: it is up by now.
            sup_rss = sorted(rss_kib(p) for p in sups)
            base = rss_kib(bare.pid)
            # RssAnon: memory of this process alone. The rest of RSS is file pages (the
            # interpreter, libc, RE2 and libstdc++), which every process mapping them shares.
            sup_anon = sorted(rss_kib(p, "RssAnon") for p in sups)
            base_anon = rss_kib(bare.pid, "RssAnon")
            sup_pss = sorted(pss_kib(p) for p in sups)
            base_pss = pss_kib(bare.pid)
            peak = max(peak, load_average()[0])
        finally:
            for info in [*infos, regex]:
                procs.kill(home, info.name, grace=0.5)
            bare.kill()
            bare.wait()
    median = sup_rss[len(sup_rss) // 2]
    heavy = [m for m in ("textual", "mcp", "pydantic") if _imported_by_supervisor(m)]
    rows = [
        ("benchmark", "ackdeck", "baseline (same run)", "ratio"),
        (
            f"supervisor RSS (median of {RUNS})",
            f"{median / 1024:.1f} MiB",
            f"{base / 1024:.1f} MiB bare `python -c 'import time; time.sleep(5)'`",
            f"{median / base:.2f}",
        ),
        (
            "supervisor RSS, a regex monitor (RE2 loaded)",
            f"{regex_rss / 1024:.1f} MiB",
            f"{base / 1024:.1f} MiB bare",
            f"{regex_rss / base:.2f}",
        ),
        (
            "  the same, without RE2's library pages",
            f"{(regex_rss - regex_re2) / 1024:.1f} MiB",
            f"{base / 1024:.1f} MiB bare (RE2's pages: {regex_re2 / 1024:.1f} MiB)",
            f"{(regex_rss - regex_re2) / base:.2f}",
        ),
        (
            "supervisor private memory (RssAnon, median)",
            f"{sup_anon[len(sup_anon) // 2] / 1024:.1f} MiB",
            f"{base_anon / 1024:.1f} MiB bare",
            f"{sup_anon[len(sup_anon) // 2] / base_anon:.2f}",
        ),
        (
            "  a regex monitor's (RssAnon)",
            f"{regex_anon / 1024:.1f} MiB",
            f"{base_anon / 1024:.1f} MiB bare",
            f"{regex_anon / base_anon:.2f}",
        ),
        (
            "supervisor proportional share (Pss, median)",
            f"{sup_pss[len(sup_pss) // 2] / 1024:.1f} MiB",
            f"{base_pss / 1024:.1f} MiB bare",
            f"{sup_pss[len(sup_pss) // 2] / base_pss:.2f}",
        ),
        (
            "  a regex monitor's (Pss)",
            f"{regex_pss / 1024:.1f} MiB",
            f"{base_pss / 1024:.1f} MiB bare",
            f"{regex_pss / base_pss:.2f}",
        ),
        (
            f"{RUNS} monitored runs, total supervisor RSS",
            f"{sum(sup_rss) / 1024:.1f} MiB",
            f"{RUNS * base / 1024:.1f} MiB",
            f"{sum(sup_rss) / (RUNS * base):.2f}",
        ),
        ("heavy packages a supervisor imports", ", ".join(heavy) or "none", "", ""),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
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
