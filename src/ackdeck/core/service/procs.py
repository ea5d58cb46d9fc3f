"""Process operations for every door: start, output, list, kill.

Their results are the monitors' own values (core/monitors/procs.py, core/monitors/output.py), so
this module imports those; the monitor engine behind them (RE2) loads when a pattern is compiled.
No per-turn command imports this module (the hot-path contract in pyproject.toml).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base.home import resolve_home
from ackdeck.core.base.names import check_name
from ackdeck.core.base.struct import Internal, Struct, derived
from ackdeck.core.errors import InvalidInput, ProcessError
from ackdeck.core.monitors.reconcile import reconcile_lost
from ackdeck.core.monitors.results import MonitorSpec, OutputResult, RunInfo
from ackdeck.core.service.roomref import PagedRef

if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from typing import Any

    from ackdeck.core.monitors.patterns import Pattern
    from ackdeck.core.service.lines import LineIndex

    HomeArg = str | os.PathLike[str] | Path | None
    Deliver = Callable[["OutputLines"], int]
    # Answers whether the run (with how many new lines) reached the screen.
    DeliverShown = Callable[[RunInfo, int], bool]


def user_pattern(pattern: str, what: str) -> Pattern:
    """A user's regex (a monitor's, a filter's, the terminal nudge's prompt), compiled for
    cleaned line bytes in linear time (RE2), or refused with one line before anything starts."""
    from ackdeck.core.monitors.monitors import compile_pattern

    return compile_pattern(pattern, what)


# `grace` of a kill: seconds between TERM and KILL.
MAX_GRACE = 60.0


def compile_regex(pattern: str, what: str = "monitor") -> Pattern:
    """A user regex compiled for RE2 exactly as monitors are (same syntax, same one-line
    InvalidInput): the dashboard's `/regex/` filter and its marks of monitor matches."""
    from ackdeck.core.monitors.patterns import compile_pattern  # RE2: loaded only when used

    return compile_pattern(pattern, what)


# ----- results ------------------------------------------------------------------------------
# A run, its monitors and a read of its output are the monitors' own values
# (core/monitors/procs.py, core/monitors/output.py); these names are the ones the doors use.
# (Imported for type checkers only above: the monitor engine loads when an operation runs.)
Run = RunInfo
Monitor = MonitorSpec
OutputLines = OutputResult


class Killed(RunInfo):
    """A run after a kill, and what the kill found."""

    was: str  # the status before the kill
    leftovers: bool  # the run had ended but left processes running, which the kill stopped
    leftovers_alive: bool  # ... and some of them still live


class Runs(Struct):
    session: str | None  # only this session's runs; None: every session's
    runs: Internal[list[RunInfo]]

    @derived
    def processes(self) -> list[RunInfo]:
        return self.runs

    skipped: list[Path]  # damaged run state files (meta.json), kept on disk


# ----- operations -----------------------------------------------------------------------------
def start(
    home: HomeArg,
    name: str,
    argv: list[str],
    *,
    session: str,
    monitor: str | None = None,
    exclude: bool = False,
    cooldown_ms: int | None = None,
    max_events: int | None = None,
    cwd: str | None = None,
    replace: bool = False,
    replace_own_only: bool = False,
    wake_host: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Run:
    """Start `argv` as a new run of `name`; with `monitor`, matching lines wake `session`
    (`wake_host`: a session `NAME@HOST` on that host, see `fleet.wake_owner`). Refused while
    a run of `name` is alive, unless `replace` (which stops it first; with `replace_own_only`
    only if `session` started it)."""
    from ackdeck.core.monitors import procs

    check_name(name, "process")
    check_name(session)
    if not argv:
        raise InvalidInput('no command given: name one, e.g. `-- pytest -x` or ["pytest", "-x"]')
    if monitor is None and (exclude or cooldown_ms is not None or max_events is not None):
        raise InvalidInput("exclude, cooldown and max-events need a monitor regex")
    monitors = []
    if monitor is not None:
        monitors.append(
            procs.MonitorSpec(
                monitor,
                exclude=exclude,
                cooldown_ms=1000 if cooldown_ms is None else cooldown_ms,
                max_events=max_events,
            )
        )
    if not isinstance(replace, bool):
        raise InvalidInput("replace must be true or false")
    return procs.start(
        resolve_home(home),
        name,
        list(argv),
        session=session,
        monitors=monitors,
        cwd=cwd,
        replace=replace,
        replace_own_only=replace_own_only,
        wake_host=wake_host,
        clock=clock,
    )


def read_output(
    home: HomeArg,
    name: str,
    session: str,
    *,
    filter: str | None = None,  # noqa: A002 - the documented argument
    exclude: bool = False,
    timeout: float = 0.0,
    run_id: str | None = None,
    deliver: Deliver | None = None,
) -> OutputLines:
    """New lines of `name` for `session`. `deliver` gets the lines about to be returned and
    answers how many of them, from the first, reached the reader: only those count as shown
    (and are in the result, whose `more` says lines were held back)."""
    from ackdeck.core.monitors.output import read_output as read

    # Validated once, in core: the name, the session, the filter (RE2), `exclude` that needs a
    # filter, the timeout (ackdeck.core.base.timeouts).
    offered = [0]

    def hand_over(res: Any) -> int:
        offered[0] = len(res.lines)
        if deliver is None:
            return len(res.lines)
        return deliver(res)

    res = read(
        resolve_home(home),
        name,
        session,
        filter=filter,
        exclude=exclude,
        timeout=timeout,
        run_id=run_id,
        deliver=hand_over,
    )
    held = offered[0] - len(res.lines)
    more = res.more or held > 0
    return res.replace(more=more, waiting=held)


class OutputLog(PagedRef):
    """A run's output.log, paged for display (the output screen's lines)."""

    def __init__(self, run: RunInfo) -> None:
        from pathlib import Path

        from ackdeck.core.monitors.runs import output_path

        self.path = output_path(Path(run.run_dir))
        self.display = str(self.path)
        self.name = self.path.name

    def lines(self) -> LineIndex:
        from ackdeck.core.service.lines import LineIndex

        return LineIndex.open(self.path)


def show_output(home: HomeArg, name: str, session: str, *, deliver: DeliverShown) -> RunInfo:
    """A person looks at `name`'s output (the dashboard's output screen): its newest run, and
    the lines of that run new to `session`, read as `session` without waiting. `deliver` gets
    the run and the number of new lines and answers whether they reached the screen: only then
    are they recorded as shown to `session` (its own shown set: an agent's wake for the same
    lines is not suppressed). Returns the run."""
    from ackdeck.core.monitors.procs import get_run

    run = get_run(resolve_home(home), name)

    def on_screen(res: OutputLines) -> int:
        return len(res.lines) if deliver(run, len(res.lines)) else 0

    read_output(home, name, session, timeout=0.0, run_id=run.run_id, deliver=on_screen)
    return run


def list_runs(home: HomeArg, *, session: str | None = None, latest_only: bool = False) -> Runs:
    """Runs (of `session` only, if given), oldest first per name; with latest_only the newest
    run of each name and every older run still alive (never hidden while it runs). Dead
    supervisors are first reported as `lost`: the explicit reconcile step (the listing itself
    never writes)."""
    from ackdeck.core.monitors import procs

    h = resolve_home(home)
    if session is not None:
        check_name(session)
    reconcile_lost(h)
    runs, skipped = procs.scan_runs(h, latest_only=latest_only, keep_live=True)
    return Runs(session, [r for r in runs if session is None or r.session == session], skipped)


def run_names(home: HomeArg) -> list[str]:
    """The names that have at least one run (what shell completion offers for NAME). A query:
    it reads directories and writes nothing, not even the lost-supervisor step."""
    from ackdeck.core.monitors.runs import run_dirs

    return sorted({d.parent.name for d in run_dirs(resolve_home(home))})


def kill(
    home: HomeArg,
    name: str | None = None,
    *,
    run_id: str | None = None,
    grace: float = 3.0,
    session: str | None = None,
) -> Killed:
    """TERM a run, KILL after `grace` seconds. The run is `run_id` (of `name`, if both are
    given), or else `name`'s live run (its newest one if there are several), or else its latest.
    With `session`, only that session's own runs may be killed (the MCP door: an agent stops
    what it started)."""
    from ackdeck.core.monitors import procs

    if isinstance(grace, bool) or not 0 <= grace <= MAX_GRACE:
        raise InvalidInput(f"grace must be between 0 and {MAX_GRACE:g} seconds")
    h = resolve_home(home)
    before = _target(h, name, run_id)
    if session is not None and before.session != session:
        raise ProcessError(
            f"process {before.name!r} belongs to session {before.session!r}, not {session!r}; "
            "only its owner may kill it here"
        )
    # A run that ended may have left children running (`cmd &`): kill stops those too.
    leftovers = before.status != "running" and procs.alive(before)
    info = procs.kill(h, before.name, grace=grace, run_id=before.run_id)
    alive = leftovers and procs.alive(info)
    return Killed(**vars(info), was=before.status, leftovers=leftovers, leftovers_alive=alive)


def _target(h: Path, name: str | None, run_id: str | None) -> RunInfo:
    from ackdeck.core.monitors import procs

    if name is None and run_id is None:
        raise InvalidInput("name the process or its run id")
    if name is None:
        return procs.find_run(h, check_name(run_id or "", "run id"))
    check_name(name, "process")
    if run_id is not None:
        found = procs.find_run(h, run_id)
        if found.name != name:
            raise ProcessError(f"run {run_id!r} is a run of {found.name!r}, not of {name!r}")
        return found
    live = procs.live_runs(h, name)
    return live[-1] if live else procs.get_run(h, name)


def kill_target(home: HomeArg, target: str) -> tuple[str | None, str | None]:
    """What one word on the command line names: (None, run_id) for the id of a run that is not
    also a process name, else (name, None) (a name wins: `kill NAME` stays what it always was,
    and an unknown word is reported as an unknown process)."""
    from ackdeck.core.monitors import procs
    from ackdeck.core.monitors.runs import run_dirs

    h = resolve_home(home)
    if run_dirs(h, check_name(target, "process")):
        return target, None
    try:
        procs.find_run(h, target)
    except ProcessError:
        return target, None
    return None, target
