"""The explicit step that reports runs whose supervisor died (status `lost`, a monitor-lost
wake). Listings of runs and wakes never do it (queries do not write); the doors call this first
where a user expects dead supervisors to show up: `ps`, `wakes list|drain`, the Stop hook, the
MCP wake and process tools, a dashboard scan.

Checking is cheap (`runs.unsupervised`: a meta.json read and an flock probe per running run);
`procs` and the monitor engine it loads are imported only when a run actually lost its
supervisor, so the hooks that run on every turn do not pay for them. The check names the runs
with the home as a string (made and checked as resolve_home does): pathlib, with `re`, `enum`
and `collections`, is not imported by a Stop hook in a home with a run (issue 43).
"""

from __future__ import annotations

from ackdeck.core.base.home import made_home
from ackdeck.core.monitors import runs

TYPE_CHECKING = False  # typing and pathlib for type checkers only (tests/test_layering.py)
if TYPE_CHECKING:
    import os
    from pathlib import Path


def reconcile_lost(home: str | os.PathLike[str] | Path | None) -> None:
    h = made_home(home)  # str(resolve_home(home))
    if runs.unsupervised(h):
        from pathlib import Path  # the monitor engine's: it works on Paths

        from ackdeck.core.monitors import procs  # only now: see the module docstring

        procs.reconcile(Path(h))
