"""The explicit step that reports runs whose supervisor died (status `lost`, a monitor-lost
wake). Listings of runs and wakes never do it (queries do not write); the doors call this first
where a user expects dead supervisors to show up: `ps`, `wakes list|drain`, the Stop hook, the
MCP wake and process tools, a dashboard scan.

Checking is cheap (`runs.unsupervised`: a meta.json read and an flock probe per running run);
`procs` and the monitor engine it loads are imported only when a run actually lost its
supervisor, so the hooks that run on every turn do not pay for them.
"""

from __future__ import annotations

import os
from pathlib import Path

from ackdeck.core.base.home import resolve_home
from ackdeck.core.monitors import runs


def reconcile_lost(home: str | os.PathLike[str] | Path | None) -> None:
    h = resolve_home(home)
    if runs.unsupervised(h):
        from ackdeck.core.monitors import procs  # only now: see the module docstring

        procs.reconcile(h)
