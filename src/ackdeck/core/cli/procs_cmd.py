"""`ackdeck run / output / ps / kill / wakes …`: monitored processes and their wakes."""

from __future__ import annotations

import errno
import os
import sys
import time

from ackdeck.core.cli import SESSION_HELP, session_of
from ackdeck.core.cli._output import (
    emit_json,
    for_terminal,
    json_text,
    report,
    say,
    stdout_fd,
    timeout_arg,
)

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

    from ackdeck.core.service.fleet.settings import FleetSettings
    from ackdeck.core.service.procs import OutputLines, Runs
    from ackdeck.core.service.wakes import Drained, Wakes


def register(sub: argparse._SubParsersAction) -> None:
    # argparse (with _Once) only while a parser is built: `wakes drain` is parsed without it.
    from ackdeck.core.cli._parsers import Once as _Once

    p = sub.add_parser(
        "run",
        help="start a command under a detached supervisor (returns at once)",
        usage="ackdeck run NAME [--session S] [--monitor REGEX [--exclude] [--cooldown-ms N] "
        "[--max-events N]] [--cwd DIR] [--replace] [--json] -- CMD [ARG ...]",
        description="Start CMD as a new run of NAME under a detached supervisor and return at "
        "once; stdout+stderr go to the run's output.log. Refused while a run of NAME is still "
        "running (--replace stops it first).",
    )
    p.add_argument("name", metavar="NAME", help="process name (reusable; each start is a run)")
    p.add_argument(
        "--session",
        metavar="S",
        action=_Once,
        help=f"owner session of wakes ({SESSION_HELP}); NAME@HOST: a session on another "
        "host of the fleet, where its wakes are forwarded; claude-team://TEAM/AGENT: a Claude "
        "Code teammate, each wake written into its mailbox",
    )
    p.add_argument(
        "--monitor",
        metavar="REGEX",
        action=_Once,
        help="wake the session on lines matching REGEX (once per run)",
    )
    p.add_argument("--exclude", action="store_true", help="wake on lines NOT matching REGEX")
    p.add_argument(
        "--cooldown-ms",
        metavar="N",
        type=int,
        default=None,
        action=_Once,
        help="batch window (default 1000)",
    )
    p.add_argument(
        "--max-events",
        metavar="N",
        type=int,
        default=None,
        action=_Once,
        help="stop the monitor after N wakes",
    )
    p.add_argument(
        "--cwd", metavar="DIR", default=None, action=_Once, help="working directory of the command"
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="stop NAME's running run first (TERM, KILL after 3 s), then start",
    )
    p.add_argument("--json", action="store_true", help="print the run (as `ps --json` does)")
    _fleet_options(p, filter_hosts=False)
    p.add_argument("cmd", nargs="+", metavar="CMD", help="the command and its arguments")
    p.set_defaults(handler=_run)

    p = sub.add_parser("output", help="read new output lines of a process (the agent's read)")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--session", default=None, help=f"reader session ({SESSION_HELP})")
    p.add_argument("--run-id", default=None, help="a specific run (default: the latest)")
    p.add_argument("--filter", metavar="RE", default=None, help="keep only lines matching RE")
    p.add_argument("--exclude", action="store_true", help="keep only lines NOT matching RE")
    p.add_argument(
        "--timeout", type=timeout_arg, default=0.0, help="wait up to SECS (0-600) for a line"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_output)

    p = sub.add_parser("ps", help="list runs with status and exit code")
    p.add_argument("--latest", action="store_true", help="only the newest run of each name")
    p.add_argument("--session", default=None, help="only the runs this session started")
    p.add_argument("--json", action="store_true")
    _fleet_options(p)
    p.set_defaults(handler=_ps)

    p = sub.add_parser(
        "kill",
        help="TERM the process group of a run (NAME's running one, or its latest), KILL later",
    )
    p.add_argument(
        "name", metavar="NAME|RUN_ID", nargs="?", default=None, help="process name or run id"
    )
    p.add_argument("--run-id", default=None, help="this run (of NAME, if given)")
    p.add_argument("--grace", type=float, default=3.0, help="seconds before KILL (default 3)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_kill)

    w = sub.add_parser("wakes", help="list, drain and dismiss monitor wakes")
    wsub = w.add_subparsers(dest="wakes_command", metavar="ACTION", required=True)
    p = wsub.add_parser("list", help="wake records (all sessions unless --session)")
    p.add_argument("--session", default=None)
    p.add_argument("--json", action="store_true")
    _fleet_options(p)
    p.set_defaults(handler=_wakes_list)

    p = wsub.add_parser("drain", help="deliver what the session was not shown, then ack it")
    p.add_argument("--session", default=None, help=f"owner session ({SESSION_HELP})")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--hook", action="store_true", help="for Stop hooks: print the text and exit 2 if any"
    )
    p.add_argument("--settle", type=float, default=2.0, help="max seconds to wait for reads")
    p.set_defaults(handler=_wakes_drain)

    p = wsub.add_parser("dismiss", help="remove a session's wake record for NAME")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--session", default=None, help=f"owner session ({SESSION_HELP})")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_wakes_dismiss)


def _fleet_options(p: argparse.ArgumentParser, *, filter_hosts: bool = True) -> None:
    """The fleet's options on `run`, `ps` and `wakes list`, imported only when their parser is
    built: the other commands of this module (`wakes drain` runs on every turn) get a
    stand-in."""
    import argparse  # loaded already: a parser is being built

    if isinstance(p, argparse.ArgumentParser):
        from ackdeck.core.cli._fleet import add_fleet_options

        add_fleet_options(p, filter_hosts=filter_hosts)


def _run(args: argparse.Namespace) -> int:
    from ackdeck.core.service import procs  # lazy: keeps every other command's start-up fast

    session, host = session_of(args.session), None
    if session.startswith("claude-team://"):  # a teammate's mailbox: its run writes the wakes
        from ackdeck.core.service import team_wakes

        session = team_wakes.bind(args.home, session)
    elif args.monitor is not None:  # only a monitor wakes anyone: only then is the owner's host
        from ackdeck.core.cli._fleet import wake_owner_of  # looked up (a fleet round trip)

        session, host = wake_owner_of(args, session)
    run = procs.start(
        args.home,
        args.name,
        list(args.cmd),
        session=session,
        wake_host=host,
        monitor=args.monitor,
        exclude=args.exclude,
        cooldown_ms=args.cooldown_ms,
        max_events=args.max_events,
        cwd=args.cwd,
        replace=args.replace,
    )
    started = f"started {run.name} run {run.run_id} pid {run.pid}"
    if args.json:
        report(started, lambda: emit_json(run.to_json()))
    else:
        report(started, lambda: say(started, flush=True))
    return 0


def _output(args: argparse.Namespace) -> int:
    from ackdeck.core.service import procs  # lazy: keeps every other command's start-up fast

    failed: list[OSError] = []

    def deliver(res: OutputLines) -> int:
        # Shown means delivered: only the lines the pipe accepted are recorded as shown.
        if args.json:
            doc = json_text(res.to_json()) + "\n"
            done = _write_stdout([doc.encode()], failed)
            return len(res.lines) if done == 1 else 0
        fd = stdout_fd()  # on a terminal a person reads them: escapes shown, not obeyed
        return _write_stdout([for_terminal(x + b"\n", fd) for x in res.lines], failed)

    res = procs.read_output(
        args.home,
        args.name,
        session_of(args.session),
        filter=args.filter,
        exclude=args.exclude,
        timeout=args.timeout,
        run_id=args.run_id,
        deliver=deliver,
    )
    if failed:
        raise failed[0]
    if not args.json:
        code = "" if res.exit_code is None else f" {res.exit_code}"
        say(f"[{res.name} {res.status}{code}]", file=sys.stderr)
    return 0


def _write_stdout(items: list[bytes], failed: list[OSError]) -> int:
    """Write `items` to stdout; how many were written whole before a write failed (the error is
    appended to `failed`). Written with os.write in blocks so a partial write is counted
    exactly: an item counts only once every one of its bytes was accepted."""
    if sys.stdout is None:  # descriptor 1 was closed (`>&-`): nothing can be delivered
        failed.append(OSError(errno.EBADF, "stdout is closed"))
        return 0
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError) as exc:
        if isinstance(exc, OSError):
            failed.append(exc)
            return 0
        fd = -1
    done = 0
    i = 0
    while i < len(items):
        j, size = i, 0
        while j < len(items) and (j == i or size + len(items[j]) <= _BLOCK):
            size += len(items[j])
            j += 1
        block = b"".join(items[i:j])
        written = 0
        broken = False
        try:
            while written < len(block):
                if fd < 0:  # stdout replaced by an object without a descriptor
                    sys.stdout.write(block[written:].decode("utf-8", "replace"))
                    sys.stdout.flush()
                    written = len(block)
                else:
                    written += os.write(fd, block[written:])
        except OSError as exc:
            failed.append(exc)
            broken = True
        # Count the items of this block that were accepted whole.
        for k in range(i, j):
            if written < len(items[k]):
                return done
            written -= len(items[k])
            done += 1
        if broken:
            return done
        i = j
    return done


_BLOCK = 64 << 10


def _when(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%H:%M:%S", time.localtime(ts))


def _ps(args: argparse.Namespace) -> int:
    from ackdeck.core.cli._fleet import fleet_of
    from ackdeck.core.service import procs  # lazy: keeps every other command's start-up fast

    settings = fleet_of(args)
    listed = procs.list_runs(args.home, session=args.session, latest_only=args.latest)
    for p in listed.skipped:
        say(f"ackdeck: warning: skipped damaged run state {p} (kept on disk)", file=sys.stderr)
    if settings is not None:
        return _fleet_ps(args, settings, listed)
    if args.json:
        emit_json(listed.to_json())
        return 0
    say(f"{'NAME':<20} {'RUN ID':<26} {'PID':>7} {'STATUS':<8} {'EXIT':>4} STARTED  ENDED")
    for r in listed.runs:
        code = "-" if r.exit_code is None else str(r.exit_code)
        pid = "-" if r.pid is None else str(r.pid)
        say(
            f"{r.name:<20} {r.run_id:<26} {pid:>7} {r.status:<8} {code:>4} "
            f"{_when(r.started_at)} {_when(r.ended_at)}"
        )
    return 0


def _fleet_ps(args: argparse.Namespace, settings: FleetSettings, listed: Runs) -> int:
    """Every host's runs (this host's from disk, the others' newest run of each name and every
    live one): a HOST column, and `fleet` in the JSON."""
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.cli._fleet import cell, fleet_rows, number

    home = resolve_home(args.home)
    local = listed.to_json()["processes"]
    whole = args.session is None and args.latest
    fleet = fleet_rows(
        args,
        settings,
        home,
        "runs",
        local,
        snapshot={"runs": local} if whole else None,
        keep=None if args.session is None else (lambda r: r.get("session") == args.session),
    )
    if args.json:
        emit_json({**listed.to_json(), "processes": fleet.rows, "fleet": fleet.fleet.to_json()})
        return 0
    say(
        f"{'HOST':<16} {'NAME':<20} {'RUN ID':<26} {'PID':>7} {'STATUS':<8} {'EXIT':>4} "
        "STARTED  ENDED"
    )
    for r in fleet.rows:
        say(
            f"{cell(r.get('host')):<16} {cell(r.get('name')):<20} {cell(r.get('run_id')):<26} "
            f"{cell(r.get('pid')):>7} {cell(r.get('status')):<8} {cell(r.get('exit_code')):>4} "
            f"{_when(number(r.get('started_at')))} {_when(number(r.get('ended_at')))}"
        )
    return 0


def _kill(args: argparse.Namespace) -> int:
    from ackdeck.core.service import procs  # lazy: keeps every other command's start-up fast

    name, run_id = args.name, args.run_id
    if name is not None and run_id is None:
        name, run_id = procs.kill_target(args.home, name)
    done = procs.kill(args.home, name, run_id=run_id, grace=args.grace)
    report(
        f"{done.name} run {done.run_id} is {done.status}",
        lambda: _killed(args, done),
    )
    return 0


def _killed(args: argparse.Namespace, done: Any) -> None:
    info = done
    if args.json:
        emit_json(done.to_json())
    elif done.was != "running" and not done.leftovers:
        say(f"{info.name} run {info.run_id} is not running ({info.status})", file=sys.stderr)
    elif done.leftovers:
        left = "; some still live" if done.leftovers_alive else ""
        say(
            f"{info.name} run {info.run_id} had {info.status}; stopped the processes it left "
            f"running{left}",
            flush=True,
        )
    else:
        say(
            f"{info.name} run {info.run_id}: {info.status} (exit code {info.exit_code})",
            flush=True,
        )


def _skipped(paths: list[Path]) -> None:
    for p in paths:
        say(f"ackdeck: warning: skipped malformed wake file {p} (kept on disk)", file=sys.stderr)


def _wakes_list(args: argparse.Namespace) -> int:
    from ackdeck.core.cli._fleet import fleet_of
    from ackdeck.core.service import wakes  # lazy: keeps every other command's start-up fast

    settings = fleet_of(args)
    listed = wakes.list_wakes(args.home, _wake_session(args.session))
    _skipped(listed.skipped)
    if settings is not None:
        return _fleet_wakes(args, settings, listed)
    if args.json:
        emit_json(listed.to_json())
        return 0
    if listed.wakes:
        say(listed.text())  # the words MCP wakes_list says of the same records
    return 0


def _fleet_wakes(args: argparse.Namespace, settings: FleetSettings, listed: Wakes) -> int:
    """Every host's wake records: `HOST session/name: ...` lines, and `fleet` in the JSON."""
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.base.text import counted
    from ackdeck.core.cli._fleet import cell, fleet_rows, number

    local = listed.to_json()["wakes"]
    fleet = fleet_rows(
        args,
        settings,
        resolve_home(args.home),
        "wakes",
        local,
        snapshot={"wakes": local} if args.session is None else None,
        keep=None if args.session is None else (lambda r: r.get("session") == args.session),
    )
    if args.json:
        pending = sum(
            int(number(r.get("pending")) or 0) for r in fleet.rows if not r.get("to_host")
        )
        emit_json(
            {
                **listed.to_json(),
                "wakes": fleet.rows,
                "pending": pending,
                "fleet": fleet.fleet.to_json(),
            }
        )
        return 0
    for r in fleet.rows:
        notice = " + notice" if r.get("notice") else ""
        got = r.get("lines")
        lines: list[Any] = got if isinstance(got, list) else []
        done = (
            f"{cell(r.get('delivered_total'))} delivered, {cell(r.get('superseded_total'))} "
            "superseded"
        )
        if r.get("to_host"):  # delivered on its host, after the fleet forwards it
            done = f"{cell(r.get('forwarded_total'))} forwarded to {cell(r.get('to_host'))}"
            if r.get("on_the_way"):
                done += f" ({cell(r.get('on_the_way'))} on the way)"
        origin = f" (from host {cell(r.get('from_host'))})" if r.get("from_host") else ""
        say(
            f"{cell(r.get('host'))} {cell(r.get('session'))}/{cell(r.get('name'))}{origin}: "
            f"{cell(r.get('kind'))}, {counted(len(lines), 'pending line')}{notice}, "
            f"{done}, status {cell(r.get('status'))}"
        )
        for line in lines:
            say(f"  {cell(line)}")
    return 0


def _wakes_drain(args: argparse.Namespace) -> int:
    session = session_of(args.session)
    # A bad --settle is refused by the drain even with nothing to deliver (NaN fails here).
    if not args.json and 0 <= args.settle <= 60 and "://" not in session:
        from ackdeck.core.service.pending import nothing_to_drain

        # Most turns of a Stop hook's drain: nothing to deliver, and no modules to load for it.
        if nothing_to_drain(args.home, session):
            return 0
    from ackdeck.core.base.text import safe  # `re`: only for a drain with something to say
    from ackdeck.core.service import wakes  # lazy: keeps every other command's start-up fast

    failed: list[OSError] = []

    def deliver(res: Drained) -> bool:
        # Acked only once the whole report reached stdout (a pipe closed early acks nothing)
        # and, with --hook, also stderr: Claude Code-style Stop hooks feed stderr back to the
        # agent on exit 2, so a report that never reached it must stay pending. stderr last:
        # once it is written the agent has it.
        text = safe(res.text(), keep="\t\n") + "\n"  # the matched lines are a producer's
        doc = json_text(res.to_json()) + "\n" if args.json else text
        if _write_stdout([doc.encode()], failed) != 1:
            return False
        return not args.hook or _write_stderr(text.encode(), failed)

    if session.startswith("claude-team://"):  # into the teammate's mailbox, not to stdout
        from ackdeck.core.service import team_wakes

        res = team_wakes.drain(args.home, session)
        if args.json:
            emit_json(res.to_json())
        else:
            say(f"{session}: {len(res.delivered)} wake(s) written to the mailbox")
        return 0
    res = wakes.drain(args.home, session, settle_timeout=args.settle, deliver=deliver)
    _skipped(res.skipped)
    if failed:
        raise failed[0]
    if args.json and not res.delivered:
        emit_json(res.to_json())
    if args.hook and res.delivered:
        return 2
    return 0


def _write_stderr(data: bytes, failed: list[OSError]) -> bool:
    """Write `data` whole to descriptor 2 (never through print: with stderr closed, print falls
    back to stdout). False, with the error appended to `failed`, if it was not all written."""
    from ackdeck.core.base.byteio import write_all
    from ackdeck.core.cli import ClosedStream  # main's stand-in for a closed stderr

    if sys.stderr is None or isinstance(sys.stderr, ClosedStream):  # `2>&-`: nothing delivered
        failed.append(OSError(errno.EBADF, "stderr is closed"))
        return False
    try:
        sys.stderr.flush()
        write_all(2, data)
    except OSError as exc:
        failed.append(exc)
        return False
    return True


def _wake_session(given: str | None) -> str | None:
    """A teammate's mailbox (`claude-team://TEAM/AGENT`) names the session its wakes are kept
    under; any other session is itself."""
    if given is None or not given.startswith("claude-team://"):
        return given
    from ackdeck.core.service import team_wakes

    return team_wakes.mailbox_session(given)


def _wakes_dismiss(args: argparse.Namespace) -> int:
    from ackdeck.core.service import wakes  # lazy: keeps every other command's start-up fast

    session = _wake_session(session_of(args.session)) or session_of(args.session)
    done = wakes.dismiss(args.home, session, args.name)
    if args.json:
        what = f"dismissed the wake {done.name!r} of session {done.session!r}"
        report(what if done.dismissed else "nothing dismissed", lambda: emit_json(done.to_json()))
    if not done.dismissed:
        say(
            f"ackdeck: error: no wake for {done.name!r} in session {done.session!r}",
            file=sys.stderr,
        )
        return 1
    return 0
