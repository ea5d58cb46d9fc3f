"""What the benches share: the machine's load, printed with every timing table."""

from __future__ import annotations

import os

# Above this load average per core the figures of a run are not comparable with a quiet run's:
# other processes take the cores, and a ratio against a baseline measured in the same run is
# flattered when the baseline (a bare `python -c pass`) is slowed more than the command
# (issue 43: the per-turn regression went unnoticed that way). ~1 on the 2-core VM.
QUIET_LOAD_PER_CORE = 0.5


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages, from /proc/loadavg (os.getloadavg elsewhere)."""
    try:
        with open("/proc/loadavg") as f:
            one, five, fifteen = (float(x) for x in f.read().split()[:3])
        return one, five, fifteen
    except OSError:
        return os.getloadavg()


def is_quiet(load: float, cores: int | None = None) -> bool:
    """Whether a run at this load average gives figures comparable with a quiet run's."""
    return load <= QUIET_LOAD_PER_CORE * (cores or os.cpu_count() or 1)


def load_line(when: str, peak: float | None = None) -> str:
    """One line saying the load a run ran at and whether its figures can be compared.
    `peak`: the highest 1-minute load seen during the run (the decision uses it when given)."""
    one, five, fifteen = load_average()
    cores = os.cpu_count() or 1
    worst = max(one, peak if peak is not None else one)
    limit = QUIET_LOAD_PER_CORE * cores
    said = f"load average {when}: {one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min), {cores} cores"
    if is_quiet(worst, cores):
        return f"{said}: quiet (<= {limit:g}), figures comparable"
    return (
        f"{said}: NOT COMPARABLE (load {worst:.2f} > {limit:g}: other processes share the "
        "cores; rerun on a quiet machine)"
    )
