"""The agent's read of a process's output (`task_await` / `bash_output` / `ackdeck output`).

Each session has its own cursor per run. A read returns the complete lines after the cursor
(the final unterminated fragment only once the process has ended), optionally filtered on the
cleaned text, and records exactly the byte ranges of the lines it returned as shown to that
session in that run. Lines a filter dropped are consumed (the cursor passes them) but are not
shown, so they can still wake the session.

Shown means delivered: a door that writes the lines somewhere that can fail (a pipe closed by
`| head`, a bounded MCP reply) passes `deliver`, which is called with the lines before anything
is recorded and answers how many of them really reached the reader. Only those count as shown
and only those move the cursor; the rest are returned by the next read and can still wake.

Concurrent reads by one session are serialised by a per-(session, run) lock around the
"read bytes, update cursor and shown set" step, so no line is ever returned twice. An
unfiltered read holds a lease for its whole duration (a delivery waits for it, bounded); a
filtered read holds one only while it commits, so a filtered long-poll never delays a wake.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ackdeck.core.base import locations
from ackdeck.core.base.home import resolve_home
from ackdeck.core.base.names import check_name
from ackdeck.core.base.statefile import open_state
from ackdeck.core.base.timeouts import check_timeout
from ackdeck.core.errors import InvalidInput
from ackdeck.core.monitors import gate, holders, shown
from ackdeck.core.monitors.monitors import Pattern, clean, compile_pattern
from ackdeck.core.monitors.procs import check_lost, get_run
from ackdeck.core.monitors.results import OutputResult
from ackdeck.core.monitors.runs import load_meta, meta_path, output_path, pid_alive

Clock = Callable[[], float]
MAX_READ = 16 << 20  # bytes consumed per read at most; the rest comes with the next read


# Called with the lines a read is about to return (under the session's read lock); answers how
# many of them, from the first, actually reached the reader. It must not raise for a failed
# write: it reports the count and lets the caller re-raise afterwards.
Deliver = Callable[[OutputResult], int]


def read_output(
    home: str | os.PathLike[str] | Path | None,
    name: str,
    session: str,
    *,
    filter: str | None = None,  # noqa: A002 - the tool's argument name
    exclude: bool = False,
    timeout: float = 0.0,
    run_id: str | None = None,
    clock: Clock = time.time,
    deliver: Deliver | None = None,
) -> OutputResult:
    """New lines for `session`; with `deliver`, only the lines it confirms count as shown and
    the result holds just those."""
    h = resolve_home(home)
    check_name(session)
    if exclude and filter is None:
        # `exclude` inverts the filter: without one it would silently return every line.
        raise InvalidInput("exclude inverts a filter; give filter as well")
    timeout = check_timeout(timeout)
    rx = compile_pattern(filter, "filter") if filter is not None else None
    info = get_run(h, name, run_id)
    rdir = info.run_dir
    deadline = time.monotonic() + max(0.0, timeout)
    whole = shown.lease(rdir, session) if rx is None else contextlib.nullcontext()
    with whole:
        while True:
            commit = shown.lease(rdir, session) if rx is not None else contextlib.nullcontext()
            with commit:
                res = _read_once(rdir, session, rx, exclude, clock, deadline, deliver)
            if res is not None:
                return res
            _wait_for_change(rdir, deadline)
            check_lost(h, rdir, clock=clock)


def _read_once(
    rdir: Path,
    session: str,
    rx: Pattern | None,
    exclude: bool,
    clock: Clock,
    deadline: float,
    deliver: Deliver | None,
) -> OutputResult | None:
    """One pass: the result to return, or None to wait for more output (nothing was returned)."""
    with shown.session_lock(rdir, session):
        # Status before bytes: if the run had ended by now, everything it wrote is in the file.
        meta = load_meta(rdir)
        assert meta is not None
        # A lost run whose command (or a child it left holding the output) still lives may
        # still extend its last line: not ended.
        ended = meta.status in ("exited", "killed") or (
            meta.status == "lost"
            and not pid_alive(meta.pid)
            and not holders.writers(output_path(rdir), skip=os.getpid())
        )
        state = shown.load_state(rdir, session)
        if state is None:
            if shown.state_is_corrupt(rdir, session):
                # Keep the unreadable file for inspection; restart from 0 (redelivery, never loss).
                p = shown.state_path(rdir, session)
                os.replace(p, locations.corrupt_aside(p, clock()))
            state = shown.ReadState(session=session, run_id=meta.run_id)
        start = state.cursor
        data = _pread(output_path(rdir), start, MAX_READ + 1)
        capped = len(data) > MAX_READ
        data = data[:MAX_READ]
        lines: list[bytes] = []
        spans: list[tuple[int, int]] = []
        pos = 0
        # A single line longer than MAX_READ is returned in pieces rather than never.
        for raw, s, e in _split(
            data, include_tail=(ended and not capped) or capped and b"\n" not in data
        ):
            pos = e
            if rx is not None and (rx.search(clean(raw)) is not None) == exclude:
                continue  # filtered out: consumed, not shown
            lines.append(raw)
            spans.append((start + s, start + e))
        at_end = ended and not capped and pos == len(data)
        result: OutputResult | None = None
        if lines or meta.status != "running" or time.monotonic() >= deadline:
            result = OutputResult(
                meta.name, meta.run_id, meta.status, meta.exit_code, lines, spans, more=capped
            )
            n = len(lines) if deliver is None else max(0, min(len(lines), deliver(result)))
            if n < len(lines):
                # Only what reached the reader is shown and consumed; the next read resumes
                # right after the last delivered line (filtered-out lines before it stay
                # consumed, later ones are simply filtered again).
                lines, spans = lines[:n], spans[:n]
                pos = spans[-1][1] - start if spans else 0
                at_end = False
                result = OutputResult(
                    meta.name, meta.run_id, meta.status, meta.exit_code, lines, spans, more=True
                )
        new_state = state.replace(
            cursor=start + pos,
            shown=gate.add_ranges(state.shown, spans),
            saw_end=state.saw_end or at_end,
            reads=state.reads + 1,
            updated_at=clock(),
        )
        if new_state.cursor != state.cursor or new_state.saw_end != state.saw_end or spans:
            shown.store_state(rdir, new_state)
        return result


def _split(data: bytes, *, include_tail: bool) -> Iterator[tuple[bytes, int, int]]:
    """(line without newline, start, end past the newline) for each line in data."""
    pos = 0
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            if include_tail:
                yield data[pos:], pos, n
            return
        yield data[pos:nl], pos, nl + 1
        pos = nl + 1


def _pread(path: Path, offset: int, size: int) -> bytes:
    fd = open_state(path)  # a FIFO in the log's place is refused, never waited on
    if fd is None:
        return b""
    try:
        parts: list[bytes] = []
        while size > 0:
            chunk = os.pread(fd, min(size, 4 << 20), offset)
            if not chunk:
                break
            parts.append(chunk)
            offset += len(chunk)
            size -= len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _wait_for_change(rdir: Path, deadline: float) -> None:
    """Block until output.log or meta.json changes, or a short slice passes (never spins)."""
    import watchfiles  # local: only waiting reads need the watcher

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return
    watched = {output_path(rdir).name, meta_path(rdir).name}
    # A short rust_timeout bounds the check-then-watch race and lets lost supervisors be seen.
    step_ms = max(10, min(250, int(remaining * 1000)))
    for _ in watchfiles.watch(
        rdir,
        watch_filter=lambda _c, p: os.path.basename(p) in watched,
        debounce=10,
        step=5,
        rust_timeout=step_ms,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        break
