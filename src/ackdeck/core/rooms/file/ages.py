"""Ages of a file room's lines: when the oldest line, the oldest line nobody read, and each
session's oldest unread line were first seen (core/rooms/file/seen_marks.py dates them).

The decisions (which line is whose oldest unread) are pure; `file_ages` applies them to an
open room file and its marks. Only the first line at each cut is looked at, so a status with
ages on a million-line room costs a few preads and bisections more than one without.
"""

from __future__ import annotations

import os

from ackdeck.core.rooms.file import seen_marks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def line_end(fd: int, at: int, limit: int) -> int | None:
    """The file offset just past the line that starts at `at` (None: no complete line there)."""
    pos, size = at, 1 << 12  # most lines are short: a small read first, then larger ones
    while pos < limit:
        chunk = os.pread(fd, min(size, limit - pos), pos)
        if not chunk:
            return None
        nl = chunk.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(chunk)
        size = min(size * 4, 1 << 16)
    return None


def observe(marks_path: str, end: int, now: float) -> None:
    """Record a first-seen mark if the room holds complete bytes past the newest mark (room
    lock held). Cheap: the tail of the marks file, and one append only when something new
    arrived since an ackdeck process last looked."""
    if end > seen_marks.Marks(marks_path).newest_end():
        seen_marks.append(marks_path, end, now)


def file_ages(
    fd: int, base: int, complete_len: int, cuts: Mapping[str, int], marks_path: str
) -> tuple[float | None, float | None, dict[str, float | None]]:
    """(oldest line first seen, oldest line nobody read first seen, {session: its oldest
    unread line first seen}) for the room open at `fd`: `complete_len` bytes of complete lines,
    the first at logical offset `base`; `cuts`: where each session's read stopped (file
    offsets; sessions absent from it have everything unread)."""
    wanted: dict[int, int | None] = {}  # file offset of a line's start -> its logical end
    for at in {0, *cuts.values()}:
        if at < complete_len:
            end = line_end(fd, at, complete_len)
            wanted[at] = None if end is None else base + end
    known = [e for e in wanted.values() if e is not None]
    seen = seen_marks.Marks(marks_path).first_seen(known) if known else {}

    def first_seen(at: int) -> float | None:
        end = wanted.get(at)
        return None if end is None else seen.get(end)

    furthest = max(cuts.values(), default=0)
    return (
        first_seen(0),
        first_seen(furthest),
        {name: first_seen(cut) for name, cut in cuts.items()},
    )
