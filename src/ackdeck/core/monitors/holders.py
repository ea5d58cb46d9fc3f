"""Which live processes belong to a run: its process group, and whoever holds its output.

A run is not over when its command exits: `cmd &` children, daemons and `nohup` jobs keep
writing into `output.log` through the descriptors they inherited. The supervisor watches until
no live process holds the file open for writing, and `kill` stops the command's process group
(and any escapee still writing the output) even after the group's leader is gone.

Everything here reads /proc (Linux). Where /proc is missing, only the group test remains
(`killpg(pgid, 0)`), and nothing counts as holding the output.
"""

from __future__ import annotations

import os

# pathlib for type checkers only: a run's supervisor passes str paths (and no contextlib: it
# brings collections and functools).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# Set in the command's environment (and so inherited by its children) so that a process group
# found alive after its leader exited is known to be this run's, not a reuse of the number.
RUN_MARK = "ACKDECK_RUN"


def mark_value(rdir: Path | str) -> str:
    return str(rdir)


def _pids() -> list[int] | None:
    try:
        return [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return None


def _stat_fields(pid: int) -> list[bytes] | None:
    """Fields after the command name: state ppid pgrp ... (None if the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def _live(fields: list[bytes] | None) -> bool:
    return bool(fields) and fields is not None and fields[0] not in (b"Z", b"X")


def group_members(pgid: int) -> list[int] | None:
    """Live (non-zombie) processes in group `pgid`; None when /proc cannot be read."""
    pids = _pids()
    if pids is None:
        return None
    out = []
    for pid in pids:
        fields = _stat_fields(pid)
        if _live(fields) and fields is not None and len(fields) > 2 and int(fields[2]) == pgid:
            out.append(pid)
    return out


def group_alive(pgid: int) -> bool:
    members = group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_time(pid: int) -> float | None:
    """When `pid` started (epoch seconds, about 1 s precise); None if unknown or gone."""
    fields = _stat_fields(pid)
    try:
        with open("/proc/stat", "rb") as f:
            btime = next(int(x.split()[1]) for x in f if x.startswith(b"btime "))
        assert fields is not None
        return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError, AssertionError):
        return None


def carries_mark(pid: int, rdir: Path | str) -> bool:
    """True if `pid`'s environment holds this run's mark (it descends from the run's command)."""
    want = f"{RUN_MARK}={mark_value(rdir)}".encode()
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return want in f.read().split(b"\0")
    except OSError:
        return False


def writers(path: Path | str, *, skip: int | None = None) -> list[int]:
    """Live processes holding `path` open for writing (any descriptor), except pid `skip`."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    want = os.path.realpath(path)  # /proc shows resolved paths (a home under a symlink)
    out = []
    for pid in _pids() or []:
        if pid == skip:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            link = f"/proc/{pid}/fd/{fd}"
            try:
                if os.readlink(link) != want:
                    continue
                fst = os.stat(link)
            except OSError:
                continue
            if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino) and _writable(pid, fd):
                if _live(_stat_fields(pid)):
                    out.append(pid)
                break
    return out


def _writable(pid: int, fd: str) -> bool:
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as f:
            for line in f:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & 3 in (1, 2)  # O_WRONLY or O_RDWR
    except (OSError, ValueError, IndexError):
        pass
    return True  # cannot tell: assume it may write (watch longer rather than miss a line)


def run_processes(rdir: Path, output: Path, pgid: int | None) -> list[int]:
    """Live processes of a run: its group's members and whoever writes its output."""
    found: set[int] = set(writers(output, skip=os.getpid()))
    if pgid is not None:
        found.update(group_members(pgid) or [])
    return sorted(found)


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):  # gone, or not ours: nothing to stop
            pass
