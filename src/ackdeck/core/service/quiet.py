"""The hook gate's stamps: when a prompt or Stop hook last found nothing to say (issue 43).

Claude Code runs every hook command through `/bin/sh -c`, and a Python start is ~3x a bare
interpreter however little the hook does: three blocking hooks made a one-turn session 1.39x
slower. Most turns have nothing to say, so the prompt and Stop hooks are installed behind a
gate (core/hook_install.py `gate_command`): a POSIX sh prelude of builtins only (`test`, `true`,
redirections; no fork) that exits 0 when a stamp proves nothing changed since a hook found
nothing to say, and `exec`s ackdeck otherwise.

A stamp certifies, for one door (`prompt`, `stop`), one session and one list of rooms (`key`),
that at its mtime the hook had nothing to say: no unread line in any room, and for `stop` no
wake pending or delivered, no room notice, no claim reminder, no hand-over to repeat. The gate
skips only while the stamp is strictly newer than every file whose change could give it
something to say: each room file, its directory, its sidecar and the sidecar's receipts (a
push, a plain `>>`, an ack, a room replaced or removed, a receipt dropped), and for `stop`
the session's wake directory (a wake record is written by rename). What a stamp cannot
follow, the gate checks itself every time (a hand-over file, held claims, any run a dead
supervisor could turn into a monitor-lost wake) or the stamp is never written (a redis or
queue room, a room on another filesystem than the home, whose mtimes another clock stamps).

The stamp's time is taken BEFORE the state it summarises: the probe file is created first
(its mtime, read back from the same filesystem the rooms are on, is the stamp's time), the
hook then looks and speaks, and only a hook that had nothing to say renames the probe into
place. A line that lands while the hook looks is newer than the probe, so the gate runs
ackdeck next time. The stamp is set MARGIN_NS before the probe's creation, because a write
stamps its file's mtime when it starts, before its bytes are visible: a push begun just
before the probe and visible just after the look would otherwise be older than the stamp and
unseen. A clock stepped back (the gate's own clock reading is not newer than the stamp) makes
the gate run ackdeck; so does a stamp past its expiry (`.until`, TTL_S later), which bounds
what a clock step that came back unnoticed could hide.
"""

from __future__ import annotations

import os

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.names import as_pathlib_would

# The hooks give a str home, and the stamp's names are then strings (locations keeps the type
# it is given): pathlib, with re, enum and collections, stays off a turn.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

DOORS = ("prompt", "stop")  # the per-turn doors; "bootstrap" (session start) is gated too
# Set by the gate to the home it looked in (core/hook_install.py `gate_command`).
GATE_HOME = "ACKDECK_GATE_HOME"
# How far before the look a stamp is set: longer than any single write of a line takes from
# stamping its file's mtime to making its bytes visible.
MARGIN_NS = 1_000_000_000
# How long a stamp holds: past it the gate runs ackdeck even if nothing changed.
TTL_S = 600


def key(rooms: Sequence[str]) -> str:
    """The stamp's name for one list of rooms, as the hook's command line spells them: the
    installer writes it into the gate, and the hook writes a stamp only under the key of the
    rooms it looked at (a hand-edited gate naming other rooms never gets a stamp)."""
    import hashlib  # only where a stamp is named: never on the gate's skipping path

    return hashlib.sha256("\0".join(rooms).encode()).hexdigest()[:16]


def watched(room: str) -> list[str]:
    """The files whose mtime the gate compares with the stamp for one room: the room, its
    directory, its sidecar and the sidecar's receipts (the gate requires the room itself, and
    compares the others when they exist: a missing one changed its parent's mtime)."""
    from pathlib import Path  # installing only (core/hook_install.py gate_command)

    side = locations.sidecar(Path(room))
    return [room, os.path.dirname(room), str(side), str(locations.receipts_dir(side))]


class Probe:
    """A stamp in the making: created before the hook looks (see the module docstring)."""

    def __init__(self, home: str, stamp: str, temp: str, taken_ns: int) -> None:
        self.home, self.stamp, self.temp, self.taken_ns = home, stamp, temp, taken_ns

    def settle(self, quiet: bool, rooms: Sequence[str], text: str | None = None) -> bool:
        """Put the stamp in place when the hook had nothing to say and the rooms can be
        followed by their mtimes; otherwise remove any stamp (the gate then runs ackdeck).
        `text`: what the gate prints in the hook's place while the stamp holds (the
        session-start hook's), written before the stamp. Answers whether a stamp was
        written. Never raises: a stamp is only a shortcut."""
        try:
            if quiet and _followable(self.home, rooms):
                if text is not None:
                    atomic.atomic_write(locations.quiet_text(self.stamp), text.encode())
                at = self.taken_ns - MARGIN_NS
                os.utime(self.temp, ns=(at, at))
                until = locations.quiet_until(self.stamp)
                later = self.taken_ns + TTL_S * 1_000_000_000
                _touch(until, later)
                os.replace(self.temp, self.stamp)
                return True
            _unlink(self.stamp)
        except OSError:
            _unlink(self.stamp)
        _unlink(self.temp)
        return False


def probe(
    home: str | Path, session: str, door: str, gate_key: str | None, rooms: Sequence[str]
) -> Probe | None:
    """Start a stamp for `door` before the hook looks; None when the hook was not started by
    a gate (`gate_key` None), the key is not its rooms', or the probe cannot be written."""
    if gate_key is None:
        return None
    home = os.fspath(home)  # the stamp's names as strings, whichever the caller gave
    stamp = locations.quiet_stamp(home, session, door, gate_key)
    gate_home = os.environ.get(GATE_HOME)
    # Spelled as resolve_home spells the home (`HOME=/home/me/` gives the gate
    # `/home/me//.ackdeck`): the same folder, not another home. A relative one never was the
    # (absolute) home: as_pathlib_would spells absolute paths only.
    if (
        gate_key != key(rooms)
        or gate_home is None
        or not os.path.isabs(gate_home)
        or as_pathlib_would(gate_home) != os.fspath(home)
    ):
        # A gate that names other rooms than its command, or that looked in another home
        # than this hook's (a wrapper setting its own): its stamps would prove nothing.
        _unlink(stamp)
        return None
    temp = atomic.temp_path_for(stamp)
    try:
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(temp), mode=0o700, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            # The filesystem's own clock, as the gate's `test -nt` will compare it.
            taken = os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
    except OSError:
        _unlink(stamp)
        return None
    return Probe(home, stamp, temp, taken)


def _followable(home: str, rooms: Sequence[str]) -> bool:
    """Whether a change to every room shows in mtimes the gate can compare with the stamp:
    absolute paths of regular files on the home's filesystem (one clock stamps both)."""
    import stat

    dev = os.stat(home).st_dev
    for r in rooms:
        if not os.path.isabs(r):
            return False
        st = os.stat(r)
        if not stat.S_ISREG(st.st_mode) or st.st_dev != dev:
            return False
    return True


def _touch(path: str, at_ns: int) -> None:
    temp = atomic.temp_path_for(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    os.utime(temp, ns=(at_ns, at_ns))
    os.replace(temp, path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
