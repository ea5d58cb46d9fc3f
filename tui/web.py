"""`ackdeck web`: the same dashboard in a browser, through textual-serve.

textual-serve starts one dashboard process per browser tab (`ackdeck tui` with the same
options) and relays the terminal over a websocket. It binds to loopback unless told otherwise:
the dashboard acts as the owner (reads, acks, pushes), so exposing it is a decision, not a
default; put it behind SSH forwarding (README) to watch from another machine.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def tui_command(tui_args: Sequence[str]) -> str:
    """The shell command textual-serve runs per browser session: this Python's `ackdeck tui`."""
    return shlex.join([sys.executable, "-m", "core.cli", "tui", *tui_args])


def start_message(host: str, port: int) -> str:
    where = f"http://{host}:{port}" if ":" not in host else f"http://[{host}]:{port}"
    if host in LOOPBACK:
        scope = "loopback only: this machine can open it (see the README for SSH forwarding)"
    else:
        scope = f"listening on {host}: anyone who can reach it acts as the owner"
    return f"ackdeck web: serving the dashboard on {where} ({scope})"


def serve(host: str, port: int, tui_args: Sequence[str]) -> int:
    from textual_serve.server import Server

    print(start_message(host, port), file=sys.stderr, flush=True)
    server = Server(tui_command(tui_args), host=host, port=port, title="ackdeck")
    server.serve()
    return 0
