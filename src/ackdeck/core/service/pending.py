"""Whether a session's drain could have anything to deliver, told without the wake modules.

`ackdeck wakes drain` runs on every turn of an agent whose Stop hook a user wrote with it
(`wakes drain --hook`), and most turns find nothing: no wake record for the session, and no
run whose supervisor could have died (the drain's reconcile turns a dead one into a
monitor-lost wake). Both are told by listing two folders. Only when either has an entry, or
anything is in doubt, are the wake modules loaded (pathlib, `re`, json and the monitor
engine's parts cost more than the listing: issue 43). The answer is a snapshot, as the
drain's own is: a wake written just after it is delivered by the next drain.
"""

from __future__ import annotations

import os

from ackdeck.core.base import locations
from ackdeck.core.base.home import home_str
from ackdeck.core.errors import AckdeckError


def nothing_to_drain(home: str | None, session: str) -> bool:
    """True only when `session` (a valid name) has no wake record, kept or corrupt, and the
    home has no run at all; False when anything is there or cannot be told (a bad name, a
    folder that cannot be listed): the drain then looks, and says what is wrong."""
    try:
        h = home_str(home)
        return not (
            _entries(locations.wake_session_dir_str(h, session))
            or _entries(locations.procs_dir_str(h))
        )
    except (AckdeckError, OSError, ValueError):  # a bad name, a NUL: the drain says it
        return False


def _entries(folder: str) -> bool:
    """Does `folder` hold anything but the locks (names with a leading dot, as scan_dir
    skips them)? Missing: nothing."""
    try:
        with os.scandir(folder) as it:
            return any(not e.name.startswith(".") for e in it)
    except FileNotFoundError:
        return False
