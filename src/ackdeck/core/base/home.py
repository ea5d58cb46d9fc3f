"""The state directory shared by every ackdeck process (CLI, supervisors, MCP server, dashboard):
where it is and that it exists. What lives in it (procs/, wakes/, notices/, alerts/, starts/,
redis-doubts/) is named in core/base/locations.py, the one module that names every file."""

from __future__ import annotations

import os

from ackdeck.core.base import locations
from ackdeck.core.errors import InvalidInput

TYPE_CHECKING = False  # pathlib is imported where a Path is built: not by home_str's callers
if TYPE_CHECKING:
    from pathlib import Path


def resolve_home(home: str | os.PathLike[str] | None) -> Path:
    """None -> $ACKDECK_HOME or ~/.ackdeck; created 0700 if missing; returned absolute."""
    from pathlib import Path

    return Path(made_home(home))


def made_home(home: str | os.PathLike[str] | None) -> str:
    """resolve_home as a plain string, created and checked the same way (the hooks that only
    record their event run without pathlib: core/cli/_hook_events.py)."""
    given = None if home is None else os.fspath(home)
    path = _as_pathlib_would(home_str(given))
    if "\0" in path:
        raise InvalidInput("home path contains a NUL byte")
    if not given and not os.environ.get("ACKDECK_HOME") and os.path.expanduser("~") == "~":
        # No HOME and no passwd entry (a container's arbitrary uid): never a `~` folder here.
        raise InvalidInput("cannot tell the home directory: set HOME, or ACKDECK_HOME")
    try:
        # 0700: wake texts and process output can hold secrets; other users have no business here.
        os.makedirs(path, mode=0o700, exist_ok=True)
    except FileExistsError:
        raise InvalidInput(f"home {path} exists and is not a directory") from None
    except PermissionError:
        raise InvalidInput(f"cannot create home {path}: permission denied") from None
    if not os.path.isdir(path):
        raise InvalidInput(f"home {path} is not a directory")
    return path


def home_str(home: str | None) -> str:
    """The home resolve_home names, as a plain string, neither created nor checked (the
    per-turn `wakes drain` lists two folders in it without pathlib: core/service/pending.py).
    The same rule: `home`, else $ACKDECK_HOME, else ~/.ackdeck; `~` expanded; made absolute
    against the working directory without resolving `..` (as Path.absolute)."""
    if home is None or home == "":
        home = os.environ.get("ACKDECK_HOME") or os.path.join(os.path.expanduser("~"), ".ackdeck")
    home = os.path.expanduser(home)
    return home if os.path.isabs(home) else os.path.join(os.getcwd(), home)


def _as_pathlib_would(path: str) -> str:
    """An absolute path as str(Path(path)) spells it: repeated slashes and `.` parts gone, no
    trailing slash, `..` kept (not resolved: a symlink may be in front of it), POSIX's two
    leading slashes kept."""
    lead = "//" if path.startswith("//") and not path.startswith("///") else "/"
    return lead + "/".join(p for p in path.split("/") if p not in ("", "."))


# Re-exported for the callers that already import them from here; named in locations.
procs_dir = locations.procs_dir
starts_dir = locations.starts_dir
wakes_dir = locations.wakes_dir
alerts_dir = locations.alerts_dir
