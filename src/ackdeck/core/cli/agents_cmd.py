"""`ackdeck mcp …` (the agents' MCP server), `ackdeck hooks …` (agent hook wiring) and `ackdeck
nudge`: their argparse registration and the commands no agent's turn runs. The hooks a turn
runs are core/cli/hook_turns.py (bootstrap, prompt, stop) and core/cli/_hook_events.py
(notify, end): core/cli/_fast.py runs them without this module."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ackdeck.core import hook_install
from ackdeck.core.base.names import check_name
from ackdeck.core.cli import SESSION_HELP, _hook_events, session_of
from ackdeck.core.cli._output import say
from ackdeck.core.cli.hook_turns import bootstrap, prompt, stop
from ackdeck.core.errors import AckdeckError, InvalidInput

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable
    from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="run the MCP server (stdio) for one agent session and its rooms",
        description="Serve room_list_new, room_ack, room_push, room_status, process_start, "
        "process_output, process_list, process_kill, wakes_list, wakes_drain and agents_list "
        "over stdio, "
        "and push notifications/claude/channel notices of new room lines and wakes. Only the "
        "configured rooms are reachable; the first is the default.",
    )
    _session_of_agent(p)
    p.add_argument(
        "--room",
        action="append",
        required=True,
        metavar="PATH",
        help="a notification file the agent may use (repeatable; the first is the default)",
    )
    p.add_argument(
        "--no-channel",
        action="store_true",
        help="do not push notifications/claude/channel notices (tools only)",
    )
    p.add_argument(
        "--notice-window-ms",
        type=int,
        default=500,
        metavar="N",
        help="coalesce changes for up to N ms into one notice, and never notice more often "
        "(default 500)",
    )
    p.add_argument(
        "--reply-chars",
        type=int,
        default=None,
        metavar="N",
        help="the most characters one reply shows the model (default: what the connected "
        "client shows whole: Claude Code 40,000 characters, Codex 10,000 bytes, Gemini CLI 32,000, "
        "others 20,000); a read returns fewer lines and says how many more wait",
    )
    p.set_defaults(handler=_mcp)

    p = sub.add_parser(
        "nudge",
        help="type one line into an idle agent's tmux pane when something new waits for it",
        description="Watches the session's rooms and wakes like the MCP channel does and, when "
        "something new waits and the pane is idle, types one short line and Enter into it. "
        "Never while the pane is busy, never twice for the same thing; it reads, acks and "
        "drains nothing. Runs in the foreground until interrupted.",
    )
    _session_of_agent(p)
    p.add_argument("--tmux", required=True, metavar="TARGET", help="tmux pane, e.g. agents:0.1")
    p.add_argument(
        "--tmux-socket", default=None, metavar="NAME", help="tmux server socket name (tmux -L)"
    )
    p.add_argument("--room", action="append", default=[], metavar="PATH", help="repeatable")
    p.add_argument(
        "--idle-ms",
        type=int,
        default=2000,
        metavar="N",
        help="the pane counts as idle after its content stayed unchanged this long (2000)",
    )
    p.add_argument(
        "--prompt-regex",
        default=None,
        metavar="RE",
        help="also require the pane's last non-blank line to match (e.g. '^> ?$')",
    )
    p.add_argument(
        "--window-ms", type=int, default=500, metavar="N", help="coalescing window (500)"
    )
    p.add_argument(
        "--enter-delay-ms",
        type=int,
        default=500,
        metavar="N",
        help="wait this long between the typed line and its Enter (500): agents such as Codex "
        "CLI and Claude Code take an Enter right after fast typing as a newline in pasted text",
    )
    p.add_argument(
        "--max-unanswered",
        type=int,
        default=3,
        metavar="N",
        help="after N nudges without a read, type no more until the agent reads, and say so "
        "(3); `ackdeck agents` shows the count",
    )
    p.set_defaults(handler=_nudge)

    h = sub.add_parser("hooks", help="wire ackdeck into an agent's settings.json, and hook output")
    hsub = h.add_subparsers(dest="hooks_command", metavar="ACTION", required=True)

    p = hsub.add_parser(
        "install",
        help="add the session-start, prompt, stop, notification and session-end hooks to a "
        "Claude-Code-style settings.json",
        description="Creates the file if missing, keeps every other key and hook, backs the file "
        "up once (FILE.ackdeck-backup) before the first change, and changes nothing when the "
        "hooks are already there.",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--settings",
        default=None,
        metavar="FILE",
        help="settings file (default: .claude/settings.json in the current directory, the "
        "project's; .claude/settings.local.json keeps it out of version control)",
    )
    where.add_argument(
        "--user",
        action="store_true",
        help=f"install into the user-wide {hook_install.user_settings_path()} instead (every "
        "project then shares one session's wakes)",
    )
    _session_of_hook(p)
    p.add_argument(
        "--room", action="append", default=[], metavar="PATH", help="a room to report (repeatable)"
    )
    p.add_argument(
        "--ackdeck",
        default=None,
        metavar="CMD",
        help="how hooks invoke ackdeck (default: this installation's absolute path)",
    )
    p.add_argument(
        "--mcp-config",
        default=None,
        metavar="FILE",
        help="also write the matching MCP server (same ackdeck, home, session and rooms) into "
        "this mcpServers JSON file: the project's .mcp.json for Claude Code",
    )
    p.set_defaults(handler=_install)

    p = hsub.add_parser("bootstrap", help="print the session-start instructions for an agent")
    _session_of_hook(p)
    p.add_argument("--room", action="append", default=[], metavar="PATH")
    p.add_argument(
        "--gate",
        default=None,
        metavar="KEY",
        help="started by the installed gate (a sh prelude): write or remove its stamp KEY",
    )
    p.set_defaults(handler=bootstrap)

    p = hsub.add_parser("prompt", help="print unread room lines (never acks); silent if none")
    _session_of_hook(p)
    p.add_argument("--room", action="append", default=[], metavar="PATH")
    p.add_argument(
        "--gate",
        default=None,
        metavar="KEY",
        help="started by the installed gate (a sh prelude): write or remove its stamp KEY",
    )
    p.set_defaults(handler=prompt)

    p = hsub.add_parser(
        "stop",
        help="Stop hook: deliver wakes and tell about room lines that arrived during the turn",
        description="Reads the hook JSON on stdin. Exit 2 with the text (stdout and stderr) "
        "when a wake was delivered or new room lines arrived since a hook last told the "
        "session; exit 0 otherwise, so it never blocks twice in a row for nothing new. Room "
        "lines are only mentioned, never read or acked.",
    )
    _session_of_hook(p)
    p.add_argument("--room", action="append", default=[], metavar="PATH")
    p.add_argument(
        "--settle", type=float, default=2.0, metavar="SECS", help="as for wakes drain (2)"
    )
    p.add_argument(
        "--gate",
        default=None,
        metavar="KEY",
        help="started by the installed gate (a sh prelude): write or remove its stamp KEY",
    )
    p.set_defaults(handler=stop)

    p = hsub.add_parser(
        "notify",
        help="Notification hook: record that the agent waits for its owner (`ackdeck agents`)",
        description="Reads the hook JSON on stdin (notification_type, message) and records it "
        "in the session's presence; prints nothing.",
    )
    _session_of_hook(p)
    p.set_defaults(handler=_hook_events.notify)

    p = hsub.add_parser(
        "end",
        help="SessionEnd hook: record that the session ended (`ackdeck agents`)",
        description="Reads the hook JSON on stdin (reason) and records it in the session's "
        "presence; prints nothing.",
    )
    _session_of_hook(p)
    p.set_defaults(handler=_hook_events.end)


def _session_of_agent(p: argparse.ArgumentParser) -> None:
    """Commands that serve one agent session (`mcp`, `nudge`) must name it: with --session or,
    like every other command, $ACKDECK_SESSION. There is no default session here: a server
    guessing one would read and ack another agent's inbox."""
    p.add_argument(
        "--session",
        default=None,
        help="the agent's session name (default: $ACKDECK_SESSION; one of them is required)",
    )


def _agent_session(args: argparse.Namespace, command: str) -> str:
    session = args.session or os.environ.get("ACKDECK_SESSION")
    if not session:
        raise InvalidInput(
            f"ackdeck {command} serves one agent session: give --session S or set ACKDECK_SESSION"
        )
    return check_name(session)


def _session_of_hook(p: argparse.ArgumentParser) -> None:
    """The agent session a hook reports to or installs for: the one rule of every command."""
    p.add_argument(
        "--session", default=session_of(None), help=f"the agent's session ({SESSION_HELP})"
    )


def _window(ms: int, flag: str) -> float:
    """A coalescing window given in ms, as seconds: one rule for every door that notices."""
    if not 10 <= ms <= 600_000:
        raise InvalidInput(f"{flag} must be between 10 and 600000")
    return ms / 1000


def _mcp(args: argparse.Namespace) -> int:
    # Imported here: the SDK is heavy and only this subcommand needs it.
    from ackdeck.core.mcp.server import DoorConfig, serve

    window = _window(args.notice_window_ms, "--notice-window-ms")
    config = DoorConfig.make(
        _agent_session(args, "mcp"), args.room, args.home, reply_chars=args.reply_chars
    )
    serve(config, channel=not args.no_channel, notice_window=window)
    return 0


def _ackdeck_command(explicit: str | None) -> list[str]:
    import shlex

    if explicit:
        return shlex.split(explicit)
    # Prefer the script of this very installation (same venv) over whatever PATH finds first.
    sibling = os.path.join(os.path.dirname(sys.executable), "ackdeck")
    if os.access(sibling, os.X_OK):
        return [os.path.abspath(sibling)]
    import shutil  # not at the top: the per-turn hook commands never need it

    found = shutil.which("ackdeck")
    if found:
        return [os.path.abspath(found)]
    # Not on PATH (e.g. run as `python -m ackdeck.core.cli`): this interpreter can still run it.
    return [sys.executable, "-m", "ackdeck.core.cli"]


def _install(args: argparse.Namespace) -> int:
    from ackdeck.core.mcp import server_config

    check_name(args.session)
    ackdeck = _ackdeck_command(args.ackdeck)
    commands = hook_install.hook_commands(ackdeck, args.session, args.room, args.home)
    # Built before anything is written: a server that cannot be made (no room) writes nothing.
    server = (
        server_config.server_argv(ackdeck, args.session, args.room, args.home)
        if args.room or args.mcp_config
        else None
    )
    target = (
        hook_install.user_settings_path()
        if args.user
        else _path(args.settings)
        if args.settings
        else hook_install.default_settings_path()
    )
    _said_installed(hook_install.install(target, commands), commands, args.session)
    if server is not None:
        _pair_server(server, args.mcp_config)
    return 0


def _said_installed(
    result: hook_install.InstallResult, commands: dict[str, str | None], session: str
) -> None:
    if not result.changed:
        say(f"{result.path}: ackdeck hooks already installed; nothing changed")
        return
    verb = "created" if result.created else "updated"
    say(f"{result.path}: {verb} with ackdeck hooks for session {session!r}")
    if result.backup is not None:
        say(f"backup of the previous file: {result.backup}")
    for event in hook_install.EVENTS:
        command = commands.get(event)
        if command and "; exec " in command:  # a gate: what it runs, not its sh program
            runs = command.rsplit("; exec ", 1)[1].split(" <<", 1)[0]
            say(f"  {event}: {runs}  (behind its gate)")
        elif command:
            say(f"  {event}: {command}")


def _pair_server(server: list[str], mcp_config: str | None) -> None:
    """Write the MCP server that goes with the hooks into `mcp_config`, or say which one it is
    (and warn when the project's .mcp.json runs another home, session or rooms)."""
    import shlex

    from ackdeck.core.mcp import server_config

    line = shlex.join(server)
    if mcp_config is None:
        differ = server_config.disagreement(server_config.project_config(), server)
        if differ:
            say(
                f"ackdeck: warning: the {server_config.SERVER_NAME!r} server in "
                f"{server_config.PROJECT_FILE} differs from these hooks: {differ}; run again "
                f"with --mcp-config {server_config.PROJECT_FILE} to make them agree",
                file=sys.stderr,
            )
        say(
            "the MCP server to run with these hooks (same home, session and rooms; "
            "--mcp-config FILE writes it):"
        )
        say(f"  {line}")
        return
    written = server_config.install_server(mcp_config, server_config.server_entry(server))
    if not written.changed:
        say(f"{written.path}: ackdeck MCP server already there; nothing changed")
        return
    verb = "created" if written.created else "updated"
    say(f"{written.path}: {verb} with the MCP server for the same home, session and rooms")
    if written.backup is not None:
        say(f"backup of the previous file: {written.backup}")
    say(f"  {server_config.SERVER_NAME}: {line}")


def _path(text: str) -> Path:
    from pathlib import Path  # `hooks install`'s: not loaded by the hooks themselves

    return Path(text)


def _nudge(args: argparse.Namespace) -> int:
    import anyio

    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.nudge import make_nudger

    window = _window(args.window_ms, "--window-ms")
    session = _agent_session(args, "nudge")
    nudger = make_nudger(
        resolve_home(args.home),
        session,
        args.room,
        args.tmux,
        socket=args.tmux_socket,
        idle_ms=args.idle_ms,
        prompt_regex=args.prompt_regex,
        enter_delay_ms=args.enter_delay_ms,
        max_unanswered=args.max_unanswered,
    )
    nudger.pin()  # a missing pane is a one-line error before anything else
    say(
        f"ackdeck nudge: watching session {session!r} for pane {args.tmux}",
        file=sys.stderr,
        flush=True,
    )
    anyio.run(_run_until_signalled, lambda: nudger.run(window=window))
    return 0


async def _run_until_signalled(main: Callable[[], Awaitable[None]]) -> None:
    """Run `main` until it returns or SIGTERM/SIGINT arrives; a signal cancels it at its next
    checkpoint, so shielded steps (typing a nudge and recording it) finish first."""
    import signal

    import anyio

    failed: AckdeckError | None = None
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        try:
            await main()
        except AckdeckError as exc:
            # Raised out of the task group it would arrive wrapped in an ExceptionGroup (a
            # traceback); a pane that closed is a one-line error.
            failed = exc
        tg.cancel_scope.cancel()
    if failed is not None:
        raise failed
