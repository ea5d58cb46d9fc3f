"""`ackdeck hooks bootstrap`, `hooks prompt` and `hooks stop`: the hooks an agent's turn runs
(SessionStart, UserPromptSubmit, Stop; core/hooks.py has what they say).

Apart from core/cli/agents_cmd.py (the argparse registration of `mcp`, `hooks` and `nudge`,
and the commands no turn runs: the MCP server, `hooks install`, the nudge) so that a hook,
parsed by core/cli/_fast.py without argparse, loads none of their bytecode
(tests/test_layering.py). Both parsers hand these handlers the same arguments.
"""

from __future__ import annotations

import os
import sys

from ackdeck.core import hooks
from ackdeck.core.base import locations
from ackdeck.core.base.names import check_name
from ackdeck.core.cli._output import say

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from ackdeck.core.service.quiet import Probe


def _presence(
    args: argparse.Namespace, kind: str, payload: dict[str, object], rooms: Sequence[str] = ()
) -> None:
    """Record the hook event in the session's presence (`ackdeck agents`)."""
    from ackdeck.core.service import presence

    presence.hook_event(home_of(args), check_name(args.session), kind, payload, rooms)


def bootstrap(args: argparse.Namespace) -> int:
    payload = hooks.read_hook_input()
    _presence(args, "start", payload, args.room)
    stamp = _probe(args, "bootstrap", getattr(args, "gate", None))  # before the look
    unread: dict[str, int] = {}  # each room's count as the marker saw it: looked at once
    queues: set[str] = set()
    told = hooks.rooms_told_marker(home_of(args), args.session, args.room, unread, queues)
    text = hooks.bootstrap_text(args.session, args.room, unread)
    if payload.get("source") in ("compact", "clear", "resume"):
        text = f"(ackdeck: reminder after {payload['source']})\n" + text
    say(text, flush=True)
    told()
    if stamp is not None:
        # The gate serves only a `startup` from the stamp, with this very text.
        quiet = (
            payload.get("source") == "startup"
            and len(unread) == len(args.room)
            and not any(unread.values())
            and not queues
        )
        stamp.settle(quiet, args.room, text=text + "\n")
    return 0


def prompt(args: argparse.Namespace) -> int:
    payload = hooks.read_hook_input()
    _presence(args, "prompt", payload)
    stamp = _probe(args, "prompt", getattr(args, "gate", None))  # before anything is looked at
    unread: dict[str, int] = {}  # each room's count as the marker saw it: looked at once
    queues: set[str] = set()
    told = hooks.rooms_told_marker(home_of(args), args.session, args.room, unread, queues)
    text = hooks.prompt_text(args.session, args.room, unread)
    # A wake an earlier stop handed over that the model was never shown (issue 41).
    again, keep = hooks.prompt_again(home_of(args), args.session, payload)
    text = "\n".join(t for t in (again, text) if t)
    if text:
        say(text, flush=True)
        keep()
    told()
    if stamp is not None:
        quiet = (
            not text
            and len(unread) == len(args.room)
            and not any(unread.values())
            and not queues
            and not os.path.lexists(locations.wake_handed(home_of(args), args.session))
        )
        stamp.settle(quiet, args.room)
    return 0


def _probe(args: argparse.Namespace, door: str, gate: str | None) -> Probe | None:
    """The gate's stamp in the making (core/service/quiet.py), or None without a gate."""
    if gate is None:
        return None
    from ackdeck.core.service import quiet

    return quiet.probe(home_of(args), check_name(args.session), door, gate, args.room)


def stop(args: argparse.Namespace) -> int:
    payload = hooks.read_hook_input()
    check_name(args.session)
    stamp = _probe(args, "stop", getattr(args, "gate", None))  # before anything is looked at
    outcome = hooks.stop_hook(
        home_of(args), args.session, args.room, payload, settle_timeout=args.settle, emit=_emit
    )
    if stamp is not None:
        stamp.settle(outcome.quiet, args.room)
    if not outcome.block:
        outcome.commit()
        _presence(args, "stop", payload)
        return 0
    if not outcome.written and not _emit(outcome.text):
        _presence(args, "stop", payload)
        return 1  # nothing reached the agent: the room notices are not recorded as told
    outcome.commit()
    from ackdeck.core.service import presence

    presence.record(home_of(args), args.session, "stop", blocked=True)
    return 2


def _emit(text: str) -> bool:
    """Claude Code feeds stderr back to the agent on exit 2, so stderr decides whether the
    text was delivered (the wakes are acked only then); stdout is for a human reading it."""
    if sys.stderr is None:  # started with stderr closed
        return False
    try:
        say(text, file=sys.stderr, flush=True)
    except OSError:
        return False
    try:
        say(text, flush=True)
    except OSError:
        # The agent already has it on stderr. Point stdout at /dev/null so the interpreter's
        # final flush cannot print a second error about the same broken pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except AttributeError:
        pass  # started with stdout closed
    return True


def home_of(args: argparse.Namespace) -> str:
    """The hooks' home, made and checked as resolve_home does, spelled as str(Path) spelled it
    (base/names.as_pathlib_would): a str, so pathlib stays off every turn (issue 43)."""
    from ackdeck.core.base.home import made_home

    return made_home(args.home)
