"""The terminal nudge: type one short line into an idle agent's tmux pane when something new
waits for its session (for agents without MCP channels: Codex, Gemini CLI, aider, Claude Code).

The nudge is a notice like the others (`core.service.notices`): it reads, acks and drains nothing,
and its own "already noticed" state (door `nudge`) makes it fire once per new thing. It only types
while the pane is idle: its visible content unchanged for `idle_ms` and, if a prompt regex is given,
that regex matching the last non-blank line, and not in a mode (copy mode: someone scrolls
back through it). A busy pane is waited for, never typed into.

`IdleWatch` is the pure decision; `Tmux` is the I/O (the `tmux` command, on an optional
socket name like `tmux -L NAME`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ackdeck.core.base.ranges import in_range
from ackdeck.core.errors import InvalidInput, PaneGone
from ackdeck.core.service import presence
from ackdeck.core.service.noticer import DEFAULT_WINDOW_S, Noticer
from ackdeck.core.service.notices import Notice, nudge_line
from ackdeck.core.service.procs import user_pattern

if TYPE_CHECKING:
    from ackdeck.core.monitors.patterns import Pattern

DEFAULT_IDLE_MS = 2000
# Between the typed text and its Enter. Agents' composers (Codex CLI, Claude Code) take an Enter
# that follows a fast burst of characters as a newline inside pasted text (Codex: within 120 ms),
# so an Enter sent at once left the nudge unsent in the composer.
DEFAULT_ENTER_DELAY_MS = 500
# Nudges an agent may leave unanswered (no read after them) before no more are typed and the
# owner is told: a nudge that does not bring a read is noise in its pane.
DEFAULT_MAX_UNANSWERED = 3


# ----- the pure decision ---------------------------------------------------------------------
@dataclass
class IdleWatch:
    """Feed it pane snapshots with their times; it says when the pane counts as idle."""

    idle_ms: int
    prompt: Pattern | None = None  # an RE2 user pattern (ackdeck.core.monitors.patterns)
    _content: str | None = field(default=None, init=False)
    _since: float = field(default=0.0, init=False)

    def observe(self, content: str, now: float) -> bool:
        """Record a snapshot taken at `now` (seconds); True if the pane is idle now."""
        if content != self._content:
            self._content = content
            self._since = now
            return False  # it just changed: busy, whatever the idle time
        if (now - self._since) * 1000 < self.idle_ms:
            return False
        return self.prompt is None or self.prompt_matches(content)

    def prompt_matches(self, content: str) -> bool:
        assert self.prompt is not None
        lines = [x for x in content.splitlines() if x.strip()]
        return bool(lines) and self.prompt.search(lines[-1].encode("utf-8")) is not None

    def reset(self) -> None:
        """After typing, the pane must show a fresh quiet period before the next nudge."""
        self._content = None


# ----- tmux ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tmux:
    target: str
    socket: str | None = None  # tmux -L NAME

    def _cmd(self, *args: str) -> list[str]:
        tmux = shutil.which("tmux")
        if tmux is None:
            raise InvalidInput("tmux is not installed (needed by ackdeck nudge)")
        return [tmux, *(["-L", self.socket] if self.socket else []), *args]

    def _run(self, *args: str) -> str:
        proc = subprocess.run(
            self._cmd(*args), capture_output=True, text=True, errors="replace", timeout=30
        )
        if proc.returncode != 0:
            reason = " ".join(proc.stderr.split()) or f"tmux exited {proc.returncode}"
            raise PaneGone(f"tmux pane {self.target!r} is not available: {reason}")
        return proc.stdout

    def check(self) -> str:
        """The pane's id; PaneGone if the target names no pane.

        display-message may fail to find its target and answer for the current pane instead
        (exit 0; tmux 3.3 for `work:0.5` or `work:9`), and an empty target means the current
        pane everywhere. capture-pane finds its target or fails, so it vouches for the target
        before and after the id is asked for: a pane that closed in between fails the second."""
        if not self.target.strip():
            raise PaneGone(
                "tmux pane '' is not a pane: give --tmux a target such as work:0.1 or %3"
            )
        self._run("capture-pane", "-p", "-t", self.target)  # raises PaneGone with tmux's reason
        pane = self._run("display-message", "-p", "-t", self.target, "#{pane_id}").strip()
        self._run("capture-pane", "-p", "-t", self.target)
        if not pane:
            raise PaneGone(f"tmux pane {self.target!r} does not exist")
        return pane

    def capture(self) -> str:
        # -p: to stdout; visible content only, so scrollback growth is not mistaken for activity
        return self._run("capture-pane", "-p", "-t", self.target)

    def in_mode(self) -> bool:
        """Whether the pane is in a mode (copy mode: someone scrolls back through it), where
        typed keys drive the mode instead of reaching the program."""
        return (
            self._run("display-message", "-p", "-t", self.target, "#{pane_in_mode}").strip() == "1"
        )

    def type_text(self, line: str) -> None:
        # -l: literal text (no key names); Enter is a separate key so it is never taken as text.
        self._run("send-keys", "-t", self.target, "-l", line)

    def press_enter(self) -> None:
        self._run("send-keys", "-t", self.target, "Enter")


# ----- the loop ------------------------------------------------------------------------------
class Nudger:
    def __init__(
        self,
        noticer: Noticer,
        tmux: Tmux,
        *,
        idle_ms: int = DEFAULT_IDLE_MS,
        prompt_regex: str | None = None,
        enter_delay_ms: int = DEFAULT_ENTER_DELAY_MS,
        max_unanswered: int = DEFAULT_MAX_UNANSWERED,
    ) -> None:
        # Idle for more than a day is never: the pane would never be nudged.
        in_range(idle_ms, "--idle-ms", 0, 86_400_000, integer=True)
        if not 0 <= enter_delay_ms <= 10_000:
            # At most 10 s: a stop waits for a nudge's text and its Enter (one shielded step).
            raise InvalidInput("--enter-delay-ms must be between 0 and 10000")
        prompt = user_pattern(prompt_regex, "prompt") if prompt_regex is not None else None
        self.noticer = noticer
        self.tmux = tmux
        self.idle = IdleWatch(idle_ms, prompt)
        self.poll_s = max(0.02, min(0.25, idle_ms / 4000))
        self.enter_delay_s = enter_delay_ms / 1000
        in_range(max_unanswered, "--max-unanswered", 1, 1000, integer=True)
        self.max_unanswered = max_unanswered

    async def wait_idle(self) -> None:
        # Said on stderr: the nudge runs in the foreground, and a user (or a test) can see
        # that something is due and the pane is what it waits for.
        print(
            f"ackdeck nudge: something new; waiting for pane {self.tmux.target} to be idle",
            file=sys.stderr,
            flush=True,
        )
        while True:
            content = await anyio.to_thread.run_sync(self.tmux.capture)
            if self.idle.observe(content, time.monotonic()):
                if not await anyio.to_thread.run_sync(self.tmux.in_mode):
                    return
                # Someone is looking at the pane: a fresh quiet period once they leave.
                self.idle.reset()
            await anyio.sleep(self.poll_s)

    async def send(self, notices: list[Notice]) -> bool:
        """Type the notices decided once the pane was idle (`wait_idle` runs first), unless
        the agent left `max_unanswered` nudges without a read: then none is typed, the
        owner is told (once, here and in the session's presence) and the notices count as
        told (a read resets the count, and what arrives after it is nudged again)."""
        home, session = Path(self.noticer.home), self.noticer.session
        unanswered, held = await anyio.to_thread.run_sync(presence.nudges_unanswered, home, session)
        if unanswered >= self.max_unanswered:
            if not held:
                presence.record(home, session, "nudge-held", unanswered=unanswered)
                print(
                    f"ackdeck nudge: {session} left {unanswered} nudges unanswered (no read "
                    "after them): no more are typed until it reads; see `ackdeck agents`",
                    file=sys.stderr,
                    flush=True,
                )
            return True
        line = nudge_line(notices)
        # Typed and then recorded by the caller with no checkpoint in between: a stop that
        # lands here waits for the keys, so a restart never types the same nudge again.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.tmux.type_text, line)
            await anyio.sleep(self.enter_delay_s)  # the composer's paste window closes first
            await anyio.to_thread.run_sync(self.tmux.press_enter)
        self.idle.reset()
        # Counted once typed: answered only when a read follows (core/presence/model.py).
        presence.record(home, session, "nudge", door="tmux", pane=self.tmux.target)
        print(f"ackdeck nudge: typed: {line}", file=sys.stderr, flush=True)
        return True

    def pin(self) -> None:
        """Check the pane and keep to it by its id (%N, never reused by a tmux server): a
        target like `work:0.1` is an index, and once that pane closes tmux renumbers, so the
        index names a neighbour (often a shell, where Enter runs the line). A closed pane is
        then a one-line error (PaneGone), never a nudge typed somewhere else."""
        self.tmux = Tmux(self.tmux.check(), self.tmux.socket)

    async def run(self, *, window: float = DEFAULT_WINDOW_S) -> None:
        await anyio.to_thread.run_sync(self.pin)  # the id again when the caller pinned already
        # Decided again once the pane is idle: what the agent read or drained while it was busy
        # is not news any more, and typing about it would start a turn for nothing.
        await self.noticer.run(self.send, window=window, ready=self.wait_idle)


def make_nudger(
    home: Path,
    session: str,
    rooms: Sequence[Path],
    target: str,
    *,
    socket: str | None = None,
    idle_ms: int = DEFAULT_IDLE_MS,
    prompt_regex: str | None = None,
    enter_delay_ms: int = DEFAULT_ENTER_DELAY_MS,
    max_unanswered: int = DEFAULT_MAX_UNANSWERED,
) -> Nudger:
    return Nudger(
        Noticer(home, session, rooms, "nudge"),
        Tmux(target, socket),
        idle_ms=idle_ms,
        prompt_regex=prompt_regex,
        enter_delay_ms=enter_delay_ms,
        max_unanswered=max_unanswered,
    )
