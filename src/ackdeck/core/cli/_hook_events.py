"""`ackdeck hooks notify` and `ackdeck hooks end`: the hooks that only record their event in
the session's presence (`ackdeck agents`) and print nothing.

Claude Code starts them directly (the Notification hook has no gate; the SessionEnd hook's
gate runs this when it cannot write its mark), so they are per-turn commands of their own:
the hook's stdin JSON (core/hook_input.py), the home as a plain string (made and checked as
resolve_home does), one append to the presence log. No pathlib, `re`, collections or the
hooks module (tests/test_layering.py keeps their imports). Both parsers
(core/cli/_fast.py and agents_cmd's argparse) hand the command here.
"""

from __future__ import annotations

from ackdeck.core.base.home import made_home
from ackdeck.core.base.names import check_name
from ackdeck.core.hook_input import read_hook_input
from ackdeck.core.service import presence

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse  # or core/cli/_fast.py's Args, which has the same attributes


def notify(args: argparse.Namespace) -> int:
    return _record(args, "notify")


def end(args: argparse.Namespace) -> int:
    return _record(args, "end")


def _record(args: argparse.Namespace, kind: str) -> int:
    # The order agents_cmd's other hooks keep: the stdin first, then the home, then the name.
    payload = read_hook_input()
    presence.hook_event(made_home(args.home), check_name(args.session), kind, payload)
    return 0
