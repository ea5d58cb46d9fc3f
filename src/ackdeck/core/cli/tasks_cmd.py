"""`ackdeck tasks`: Claude Code's task lists, each task's holder flagged when it is gone or
stalled or when two agents each work it; `ackdeck tasks release LIST ID`: give one back, under
Claude Code's own lock, only if it is still what was shown (docs/how-to/claude-teams.md)."""

from __future__ import annotations

import argparse
import os

from ackdeck.core.base.text import safe
from ackdeck.core.cli._output import emit_json, say
from ackdeck.core.cli._words import column_width


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tasks",
        help="Claude Code's task lists: each task, its owner and status, what needs a look",
        description="Every task of every list in $CLAUDE_CONFIG_DIR/tasks (or ~/.claude/tasks): "
        "id, status, owner, blocked-by, subject, and a flag when its owner's session is gone, "
        "its owner went idle holding it, or two agents each hold it by their own transcripts "
        "(a blind write: the last writer's name is in the file). Reads only.",
    )
    p.add_argument("--json", action="store_true", help="the lists as JSON")
    p.set_defaults(handler=_list)
    tsub = p.add_subparsers(dest="tasks_action", metavar="ACTION", required=False)
    rel = tsub.add_parser(
        "release",
        help="give a task back (owner removed, status pending) if it is still as shown",
        description="Under Claude Code's per-task lock, removes the owner and sets the status "
        "to pending, as Claude Code does for a teammate that shut down, only if the task is "
        "still the version `ackdeck tasks` showed (--seen) held by the owner it showed "
        "(--owner); otherwise writes nothing and says what changed (exit 3).",
    )
    rel.add_argument("task_list", metavar="LIST", help="the task list (e.g. session-1a2b3c4d)")
    rel.add_argument("task_id", metavar="ID", help="the task's id")
    rel.add_argument(
        "--seen", required=True, metavar="VERSION", help="its VERSION as `ackdeck tasks` showed"
    )
    rel.add_argument(
        "--owner", required=True, metavar="OWNER", help="its owner as shown ('' for none)"
    )
    rel.add_argument("--json", action="store_true", help="the result as JSON")
    rel.set_defaults(handler=_release)


def _list(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ackdeck.core.base.locations import default_home
    from ackdeck.core.service.claude_tasks import list_tasks

    # A look: ackdeck's home is read for its queue leases, never created.
    home = Path(args.home) if args.home else default_home(os.environ)
    found = list_tasks(home=home)
    if args.json:
        emit_json(found.to_json())
        return 0
    for problem in found.problems:
        say(f"note: {safe(problem)}")
    if not found.lists:
        say("no Claude Code task lists ($CLAUDE_CONFIG_DIR/tasks or ~/.claude/tasks)")
        return 0
    for lst in found.lists:
        say(f"{safe(lst.name)}  ({lst.team}: {safe(lst.team_why)})")
        if not lst.tasks:
            say("  (no tasks)")
            continue
        ow = column_width([safe(t.owner or "-") for t in lst.tasks], 24)
        say(
            f"  {'ID':>4} {'STATUS':<11} {'OWNER':<{ow}} {'VERSION':<12} {'BLOCKED-BY':<10} SUBJECT"
        )
        for t in lst.tasks:
            blocked = ",".join(t.blocked_by) or "-"
            say(
                f"  {safe(t.id):>4} {t.status:<11} {safe(t.owner or '-'):<{ow}} {t.version:<12} "
                f"{safe(blocked):<10} {safe(t.subject)}"
            )
            if t.flag is not None:
                say(f"  {'':>4} ! {t.flag}: {safe(t.why or '')}")
    return 0


def _release(args: argparse.Namespace) -> int:
    from ackdeck.core.service.claude_tasks import release

    done = release(args.task_list, args.task_id, seen=args.seen, owner=args.owner or None)
    if args.json:
        emit_json(done.to_json())
    else:
        say(safe(done.message))
    # Refused, nothing written: 3, as a refused cold ack (docs/reference/exit-codes.md).
    return 0 if done.released else 3
