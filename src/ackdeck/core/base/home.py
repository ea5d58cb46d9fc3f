"""The state directory shared by every ackdeck process (CLI, supervisors, MCP server, dashboard):
where it is and that it exists. What lives in it (procs/, wakes/, notices/, alerts/, starts/,
redis-doubts/) is named in core/base/locations.py, the one module that names every file."""

from __future__ import annotations

import os

from ackdeck.core.base import locations
from ackdeck.core.base.names import as_pathlib_would
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
    named = _named(given)
    if "\0" in named:
        raise InvalidInput("home path contains a NUL byte")
    if named.startswith("~"):
        # A `~` expanduser could not expand (no HOME and no passwd entry, as in a container's
        # arbitrary uid; or `~user` of no user): never a folder named `~` in the working
        # directory. Path.expanduser raised RuntimeError on it, a traceback.
        raise InvalidInput(
            f"cannot expand ~ in the home {named}: set HOME, or give an absolute --home or "
            "ACKDECK_HOME"
        )
    path = as_pathlib_would(named if os.path.isabs(named) else os.path.join(os.getcwd(), named))
    try:
        # 0700: wake texts and process output can hold secrets; other users have no business here.
        _mkdir(path, 0o700)
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
    named = _named(home)
    return named if os.path.isabs(named) else os.path.join(os.getcwd(), named)


def _named(home: str | None) -> str:
    """The home as given, or by the environment, with `~` expanded; not made absolute."""
    if home is None or home == "":
        home = os.environ.get("ACKDECK_HOME") or os.path.join(os.path.expanduser("~"), ".ackdeck")
    return os.path.expanduser(home)


def make_dirs(path: str, mode: int = 0o700) -> None:
    """Path(path).mkdir(mode, parents=True, exist_ok=True) on a string (the hooks' notice
    state: core/service/noticer.py)."""
    _mkdir(path, mode)


def _mkdir(path: str, mode: int) -> None:
    """Path.mkdir(mode, parents=True, exist_ok=True) on a string, in its order: the folder
    itself first, its parents (at the default mode) only when it is missing them, so a path
    that cannot be made (too long a name) leaves no parents behind, and the error names the
    folder it was about."""
    try:
        os.mkdir(path, mode)
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if parent == path:
            raise
        _mkdir(parent, 0o777)
        _mkdir(path, mode)
    except OSError:
        if not os.path.isdir(path):
            raise


# Re-exported for the callers that already import them from here; named in locations.
procs_dir = locations.procs_dir
starts_dir = locations.starts_dir
wakes_dir = locations.wakes_dir
alerts_dir = locations.alerts_dir
