"""The monitors' values, as a run, its output and a wake's drain return them and every door
shows them (CLI `--json`, MCP structured content and outputSchema): `RunInfo`, `MonitorSpec`,
`OutputResult`, `WakeRecord` (and its `WakeLine`, `WakeNotice`), `Delivery`, `DrainResult`.

Apart from the engines that produce them (core/monitors/procs.py, output.py, wakes.py), so a
door that only names them (the MCP server's tool schemas, at start-up) imports no monitor
engine, supervisor or wake store: fast by not importing (tests/test_layering.py).
"""

from __future__ import annotations

from ackdeck.core.base.struct import Internal, Sparse, Struct, derived
from ackdeck.core.base.text import counted, display_lines

# On the hot path (tests/test_layering.py): typing is for type checkers only, and pathlib too
# (a run's supervisor merges wakes without it; the MCP door resolves `Path` in these
# annotations itself: core/mcp/reply.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import ClassVar

MAX_LINES = 50  # newest lines kept per wake record; older ones are counted in `dropped`

__all__ = [
    "MAX_LINES",
    "Delivery",
    "DrainResult",
    "MonitorSpec",
    "OutputResult",
    "RunInfo",
    "WakeItem",
    "WakeLine",
    "WakeNotice",
    "WakeRecord",
    "format_wake_text",
    "read_rest",
]


# ----- a run ---------------------------------------------------------------------------------
class MonitorSpec(Struct):
    """A run's monitor, as the run was started with it and every door shows it."""

    pattern: str
    exclude: bool = False  # inverted filter: wake on lines NOT matching
    cooldown_ms: int = 1000
    max_events: int | None = None


class RunInfo(Struct):
    """One run of a process, as every door shows it (start, ps, kill)."""

    name: str
    run_id: str
    pid: int | None
    status: str  # "running" | "exited" | "killed" | "lost"
    exit_code: int | None  # signals as 128+N
    started_at: float
    ended_at: float | None
    argv: list[str]
    cwd: str
    session: str
    monitors: list[MonitorSpec]
    matches: int  # total monitor matches so far in this run
    run_dir: Internal[Path]
    wake_host: Internal[str | None]  # the host of `session` when it is another host's

    @derived
    def next(self) -> str | None:
        """What to do next, in words (None once it ended)."""
        if self.status != "running":
            return None
        text = "Read its output with process_output (CLI: ackdeck output)."
        if self.monitors and self.wake_host is not None:
            # A drain here never delivers them: the fleet's publishers forward them.
            there = self.session.removesuffix(f"@{self.wake_host}")
            text += (
                f" Lines its monitor matches wake session {there!r} on host "
                f"{self.wake_host!r}: the fleet forwards them there, where its drain collects "
                f"them (wakes_drain; CLI there: ackdeck wakes drain --session {there})."
            )
        elif self.monitors:
            text += (
                f" Lines its monitor matches wake session {self.session!r}: collect them "
                "with wakes_drain (CLI: ackdeck wakes drain)."
            )
        return text


# ----- its output ------------------------------------------------------------------------------
class OutputResult(Struct):
    """New lines of a run's output for a session, as the run's output returns them and every
    door shows them."""

    name: str
    run_id: str
    status: str
    exit_code: int | None
    # Raw bytes of each returned line, without the newline (JSON: each line's text).
    lines: list[bytes]

    @derived
    def count(self) -> int:
        return len(self.lines)

    @derived
    def invalid_utf8(self) -> list[int]:
        """Indexes of the lines whose text replaced invalid bytes."""
        return display_lines(self.lines)[1]

    # Beyond the fixed API: the [start, end) byte range of each returned line in output.log.
    spans: Internal[list[tuple[int, int]]] = []
    # Something is left that the next read returns at once: output past this read's cap, or
    # lines the door could not carry. Not the running command's unterminated last line.
    more: bool = False
    waiting: int = 0  # how many lines were offered to the door and held back (0: unknown)

    @derived
    def next(self) -> str | None:
        """What to do next, in words."""
        if not self.more:
            return None
        what = counted(self.waiting, "more line") if self.waiting else "more output"
        return f"{what} waiting: call process_output (CLI: ackdeck output) again"

    def texts(self) -> list[str]:
        """Each line's text as the JSON shows it (invalid UTF-8 replaced)."""
        return display_lines(self.lines)[0]

    def first(self, n: int) -> OutputResult:
        """The same read cut to its first `n` lines (what one reply carries)."""
        if n >= len(self.lines):
            return self
        held = len(self.lines) - n + self.waiting
        return self.replace(lines=self.lines[:n], spans=self.spans[:n], more=True, waiting=held)


# ----- a wake record ---------------------------------------------------------------------------
class WakeNotice(Struct, kw_only=True):
    """A pending `exited` / `monitor-lost` notice of one run."""

    run_id: str
    kind: str
    status: str
    exit_code: int | None = None
    seq: int = 0  # a drain acks only the notice it delivered, not one merged meanwhile


class WakeRecord(Struct, kw_only=True):
    """What a monitor has to tell its owner session about one process name, as the wake
    store keeps it (every field, in this order: core/monitors/wakes.py) and `wakes list` shows
    it (the fields not `Internal`, and the derived keys)."""

    session: str
    name: str
    kind: str  # "match" | "monitor-lost" | "exited"

    @derived
    def pending(self) -> int:
        """Items waiting: each pending line, plus 1 per pending exit / monitor-lost notice."""
        return len(self.lines) + len(self.notices)

    lines: list[WakeLine]
    dropped: int
    filter: Internal[str | None]
    exclude: Internal[bool]
    total_matches: int
    status: str
    created_at: Internal[float]
    updated_at: Internal[float]
    delivered_total: int = 0
    superseded_total: int = 0
    # Cross-host wakes (docs/how-to/fleet.md, core/monitors/forwarding.py). On the run's host, a
    # record for a session on another host: `to_host` names that host, where the fleet's
    # publishers forward its items instead of a drain delivering them here; `on_the_way`
    # counts the lines and notices sent there and not yet confirmed imported, and
    # `forwarded_total` those confirmed. On the session's host, a record imported from the
    # run's host `from_host`.
    to_host: Sparse[str | None] = None
    on_the_way: Sparse[int | None] = None
    forwarded_total: Sparse[int | None] = None  # None: not a record for another host
    from_host: Sparse[str | None] = None

    @derived
    def exit_code(self) -> int | None:
        """The pending notice's exit code, else the latest event's."""
        return self.notice_exit_code if self.notice_pending else self.event_exit_code

    # Beyond the fixed API. The run and exit code of the latest event (the file's
    # `exit_code`); the pending notices, one per run; per run: matches merged and lines
    # dropped by the cap, not yet delivered.
    run_id: Internal[str | None] = None
    event_exit_code: Internal[int | None] = None
    notice_pending: Internal[bool] = False  # any notice pending (kept for older readers)
    notice_seq: Internal[int] = 0
    notices: Internal[list[WakeNotice]] = []
    matches_by_run: Internal[dict[str, int]] = {}
    # Not yet reported by a drain.
    dropped_by_run: Internal[dict[str, int]] = {}
    # Per run, the [start, end) byte span the not-yet-reported dropped lines lie in: if the
    # owner was shown all of it, every dropped line was shown and nothing is left to report.
    dropped_span_by_run: Internal[dict[str, tuple[int, int]]] = {}
    # The strongest pending notice in the single-slot form older readers (and records
    # written before per-run notices, migrated on read) use.
    notice_run_id: Internal[str | None] = None
    notice_status: Internal[str | None] = None
    notice_exit_code: Internal[int | None] = None
    # Forwarding (on the run's host): the batch on its way (kept until the session's host
    # confirms it imported it, sent again until then: a Redis that lost it gets it again), the
    # number of the last batch made, and per run the dropped lines forwarded so far.
    in_flight: Internal[Sparse[list[WakeItem] | None]] = None
    forward_batch: Internal[Sparse[int | None]] = None
    forwarded_dropped: Internal[Sparse[dict[str, int] | None]] = None
    # Importing (on the session's host): the newest batch of the run's host's record imported
    # here (batches only grow: one at or below it was imported already, however often it
    # arrives), and per run the dropped lines imported so far.
    imported_batch: Internal[Sparse[int | None]] = None
    imported_dropped: Internal[Sparse[dict[str, int] | None]] = None

    # The file keeps the latest event's exit code as `exit_code`, the key `wakes list` uses
    # for the derived one above.
    _file_keys: ClassVar[dict[str, str]] = {"event_exit_code": "exit_code"}

    @derived
    def notice(self) -> bool:
        """An exit / monitor-lost notice is pending."""
        return self.notice_pending


class WakeItem(Struct, kw_only=True):
    """One item of a wake record on its way to the session's host, as the fleet's stream and
    the forwarding record's batch hold it: a matched line, an exit / monitor-lost notice, or
    the count of a run's lines the cap dropped (cumulative, `upto`: it cannot count twice)."""

    origin: str  # the run's host
    session: str  # the owner session, on the target host
    name: str  # the process, on the run's host
    batch: int  # the forwarding record's batch it travels in
    run_id: str
    what: str  # "line" | "notice" | "dropped"
    start: int = 0
    end: int = 0
    text: str = ""
    kind: str = "match"  # a notice's: "exited" | "monitor-lost"
    status: str = ""  # the run's status when it was forwarded
    exit_code: int | None = None
    seq: int = 0  # a notice's sequence number in the forwarding record
    upto: int = 0  # "dropped": the run's dropped lines forwarded so far, these included
    filter: str | None = None
    exclude: bool = False
    matches: int = 0  # the run's matches so far

    @property
    def record_name(self) -> str:
        """The record it joins on the session's host: the process as `NAME@HOST`, so that a
        process of the same name there stays another record."""
        return f"{self.name}@{self.origin}"


# ----- a wake's delivery -----------------------------------------------------------------------
class WakeLine(Struct, kw_only=True):
    run_id: str
    start: int
    end: int
    text: str

    def __json__(self) -> str:
        """A delivered line is shown as its text (core/base/struct.py encodes it so; the wake
        record's file keeps the whole line)."""
        return self.text


class Delivery(Struct):
    """One delivered wake, as the drain returns it and every door shows it."""

    name: str
    run_id: str
    kind: str
    filter: str | None
    exclude: bool
    lines: list[WakeLine]
    total_matches: int
    status: str = ""
    exit_code: int | None = None
    # Matched lines of this run that the per-record cap (MAX_LINES) dropped unseen: they are
    # not in `lines`; read them with `ackdeck output NAME --run-id RUN --filter REGEX`.
    dropped: int = 0
    host: Sparse[str | None] = None  # the run's host, when it is another one (`NAME@HOST`)

    @derived
    def read_rest(self) -> str | None:
        """The command that reads the lines the cap dropped (None: none dropped)."""
        return read_rest(self) if self.dropped else None


class DrainResult(Struct, kw_only=True):
    """What a drain delivered to `session` (the service names the session)."""

    session: str = ""
    delivered: list[Delivery]
    superseded: int
    pending: int
    skipped: list[Path]

    def text(self) -> str:
        """What the agent reads (Stop hook, MCP text, `wakes drain` without --json)."""
        return format_wake_text(self)


def read_rest(d: Delivery) -> str:
    """The command that reads the matched lines a capped record dropped."""
    how = " --exclude" if d.exclude else ""
    import shlex  # here: only a wake with a filter needs it, every drain loads this module

    flt = f" --filter {shlex.quote(d.filter)}{how}" if d.filter else ""
    if d.host is not None:  # the run's output is on its own host, under its own name
        name = d.name.removesuffix(f"@{d.host}")
        return f"ackdeck output {name} --run-id {d.run_id}{flt} (on host {d.host})"
    return f"ackdeck output {d.name} --run-id {d.run_id}{flt}"


def format_wake_text(result: DrainResult) -> str:
    """The text a Stop hook or an MCP reply shows the agent."""
    if not result.delivered:
        return ""
    out = [f"ackdeck: {counted(len(result.delivered), 'process wake')}"]
    for d in result.delivered:
        head = f"[{d.name} run {d.run_id}]"
        if d.kind == "monitor-lost":
            out.append(
                f"{head} monitor lost: the supervisor died; output after this point is not "
                "being watched (check `ackdeck output`)"
            )
        elif d.kind == "exited":
            code = "unknown" if d.exit_code is None else str(d.exit_code)
            out.append(f"{head} process {d.status or 'exited'} with exit code {code}")
        if d.lines:
            how = "not matching" if d.exclude else "matching"
            out.append(
                f"{head} {counted(len(d.lines), 'new line')} {how} /{d.filter}/ "
                f"({counted(d.total_matches, 'match')} in total):"
            )
            out.extend(f"  {x.text}" for x in d.lines)
        if d.dropped:
            out.append(
                f"{head} {counted(d.dropped, 'older matched line')} "
                f"{'was' if d.dropped == 1 else 'were'} not kept (at most {MAX_LINES} "
                f"per pending wake); read them with `{read_rest(d)}`"
            )
    if result.superseded:
        n = result.superseded
        were = "was" if n == 1 else "were"
        out.append(f"({counted(n, 'line')} already shown by a read {were} not repeated)")
    return "\n".join(out)
