"""Installing ackdeck's hooks into a Claude-Code-style settings.json (`ackdeck hooks install`,
and the set-ups that pair the hooks with their MCP server, core/mcp/server_config.py): the
command of each hook, the sh gate in front of the session-start, prompt, Stop and
SessionEnd hooks (core/service/quiet.py decides with it), and the merge into the file.

`merge_hooks` is the pure decision (what the settings become); `install` is the I/O around it:
parse (a malformed file is left untouched), back up once, write atomically.

Apart from core/hooks.py (what the hooks print, on every turn) so that a hook loads none of
this (tests/test_layering.py counts the bytecode a turn loads).
"""

from __future__ import annotations

import os
import stat

# partial from _functools: functools imports collections (tests/test_layering.py).
from typing import TYPE_CHECKING

from ackdeck.core.base import atomic
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.names import check_name
from ackdeck.core.base.struct import Struct
from ackdeck.core.clients import claude_code
from ackdeck.core.errors import InvalidInput
from ackdeck.core.hook_input import STDIN_WAIT_S, read_hook_input  # noqa: F401 (re-exported)

# The service (rooms, wakes) is imported by the hooks that look at rooms or wakes: `hooks
# notify` and `hooks end` only record presence, and installing needs neither.

if TYPE_CHECKING:
    # The hooks name the home, the gate's stamp and the notices' state with strings: pathlib
    # (with re, enum, urllib.parse, ipaddress) is imported only by installing, in a function.
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from typing import Any


EVENTS = claude_code.HOOK_EVENTS
# Seconds before the agent runner gives up on a hook. The Stop hook may wait (bounded) for
# in-flight output reads to settle before it decides what to deliver, so it gets more.
TIMEOUTS = {
    "SessionStart": 15,
    "UserPromptSubmit": 15,
    "Stop": 60,
    "Notification": 15,
    "SessionEnd": 15,
}
# The hooks whose output nobody reads (presence only: `hooks notify`, `hooks end`) are installed
# `"async": true`: Claude Code then starts them in the background ("runs in background without
# blocking", 2.1.x; detached, so a SessionEnd hook outlives a `claude -p` that exits at once)
# and does not wait for them (issue 43). The other three print what the agent must see, or
# block the stop: never async (a skipped gated one marks its turn's presence, gate_command).
ASYNC_EVENTS = frozenset({"Notification", "SessionEnd"})
_PRESENCE_ONLY = frozenset({("hooks", "notify"), ("hooks", "end")})
# Subcommand tokens that identify ackdeck's own hook for each event (the older Stop hook,
# `wakes drain --hook`, is still recognised so that installing replaces it; a gated hook is
# recognised by the command its prelude `exec`s).
_SIGNATURES: dict[str, tuple[tuple[str, ...], ...]] = {
    "SessionStart": (("hooks", "bootstrap"),),
    "UserPromptSubmit": (("hooks", "prompt"),),
    "Stop": (("hooks", "stop"), ("wakes", "drain")),
    "Notification": (("hooks", "notify"),),
    "SessionEnd": (("hooks", "end"),),
}
BACKUP_SUFFIX = ".ackdeck-backup"
# The longest gated command installed; longer, the hook is installed without its gate. Linux
# takes at most 128 KiB as one argument (MAX_ARG_STRLEN, NUL included), and Claude Code passes
# the whole command to `/bin/sh -c` as one; the margin leaves room for a wrapper's words.
GATE_MAX_BYTES = 100_000


# ----- the commands ---------------------------------------------------------------------------
def hook_commands(
    ackdeck: Sequence[str],
    session: str,
    rooms: Sequence[str | os.PathLike[str]] = (),
    home: str | None = None,
) -> dict[str, str | None]:
    """The shell command for each event (None: no hook for that event).

    The session-start, prompt and Stop hooks are gated (`gate_command`, core/service/quiet.py)
    when every room is a file: a sh prelude decides without starting Python whether the hook
    may have something to say (a skipped turn marks its presence for `ackdeck agents`)."""
    check_name(session)
    if not ackdeck:
        raise InvalidInput("the ackdeck command must not be empty")
    base = ackdeck_prefix(ackdeck, home)
    # Absolute paths: hooks run in whatever directory the agent was started in. A redis URL is
    # written without its password (never into settings.json): the hook reads it from
    # ACKDECK_REDIS_PASSWORD in the agent's environment.
    shown = [hook_room(r) for r in rooms]
    room_args = [a for r in shown for a in ("--room", r)]
    import shlex  # installing hooks only: the per-turn hook commands never need it

    gate_home = _pinned_home(base)

    def presence(kind: str) -> str:
        argv = [*base, "hooks", kind, "--session", session]
        if gate_home is False:  # as for `turn`: a gate could not run or name it
            return shlex.join(argv)
        return presence_gate(kind, argv, gate_home if isinstance(gate_home, str) else None, session)

    def turn(door: str, *extra: str) -> str:
        argv = [*base, "hooks", door, "--session", session, *room_args, *extra]
        if not all(os.path.isabs(r) for r in shown) or gate_home is False:
            # A redis room: nothing a prelude can follow. A command that starts with a
            # variable assignment (`ACKDECK_HOME=… ackdeck`): `exec` cannot take it. A
            # relative home: only the hook's directory says which it is (_pinned_home).
            return shlex.join(argv)
        home_of_gate = gate_home if isinstance(gate_home, str) else None
        gated = gate_command(door, argv, home_of_gate, session, shown)
        # Many long room paths (the gate names each path eight times): a command past what
        # Linux takes as one argument could not even be started by `/bin/sh -c`.
        return (
            gated
            if len(gated.encode(errors="surrogateescape")) <= GATE_MAX_BYTES
            else (shlex.join(argv))
        )

    return {
        "SessionStart": turn("bootstrap"),
        # Without rooms there is nothing to list before each prompt.
        "UserPromptSubmit": turn("prompt") if room_args else None,
        "Stop": turn("stop"),
        # Presence only (`ackdeck agents`): the client waits for its owner, the session ended.
        # Not gated: an interactive session notifies many times, and a mark keeps only the
        # latest (the timeline would lose the others); `claude -p` never notifies.
        "Notification": shlex.join([*base, "hooks", "notify", "--session", session]),
        "SessionEnd": presence("end"),
    }


def gate_command(
    door: str,
    argv: Sequence[str],
    home: str | None,
    session: str,
    rooms: Sequence[str],
) -> str:
    """The gated hook: a POSIX sh program of builtins only (Claude Code runs a hook command
    with `/bin/sh -c`; dash or bash) that exits 0 when the stamp of `door`
    (core/service/quiet.py) proves nothing changed since the hook last had nothing to say,
    and `exec`s `argv --gate KEY` otherwise. Every comparison is conservative: a missing
    stamp, equal mtimes, a clock reading not newer than the stamp, an expired stamp, a
    missing room, a home it cannot name like ackdeck does: run ackdeck. `test -nt` compares
    nanoseconds in dash and bash (seconds in older shells: equal seconds are not newer)."""
    import shlex
    from pathlib import Path  # installing only

    from ackdeck.core.base import locations as loc
    from ackdeck.core.service import quiet

    q = shlex.quote
    key = quiet.key(rooms)
    where = _gate_home(home)
    h = Path("/H")  # the names under the home, as locations spells them

    def under(p: Path) -> str:
        return '"$h"' + q(str(p)[len("/H") :])

    def older(p: str) -> str:  # the stamp is newer than p, or p is not there at all
        return f'{{ [ "$s" -nt {p} ] || {{ ! [ -e {p} ] && ! [ -h {p} ]; }}; }}'

    def absent(p: str) -> str:
        return f"! [ -e {p} ] && ! [ -h {p} ]"

    test = [
        '[ -n "$h" ]',
        '[ -f "$s" ]',
        '[ -f "$s.until" ]',
        # The clock, read without a fork: a stamp from the future (a clock stepped back) or
        # past its expiry proves nothing.
        # Its own files are written neither through a FIFO (the open would wait for a
        # reader: the hook hung) nor through a symlink (it would truncate the target).
        '! [ -h "$d/.now" ]',
        '! [ -p "$d/.now" ]',
        'true 2>/dev/null >"$d/.now"',
        '[ "$d/.now" -nt "$s" ]',
        '[ "$s.until" -nt "$d/.now" ]',
    ]
    for r in rooms:
        room, parent, side, receipts = (q(p) for p in quiet.watched(r))
        test += [f"[ -f {room} ]", f'[ "$s" -nt {room} ]', f'[ "$s" -nt {parent} ]']
        test += [older(side), older(receipts)]
    if door == "stop":
        test += [
            older(under(loc.wake_session_dir(h, session))),
            absent(under(loc.wake_handed(h, session))),
            absent(under(loc.claims_dir(h, session))),
            # Any run: its supervisor may have died, which only the drain's reconcile turns
            # into a monitor-lost wake (no file changes when a process dies).
            f"set -- {under(loc.procs_dir(h))}/*",
            absent('"$1"'),
        ]
    elif door == "prompt":
        test.append(absent(under(loc.wake_handed(h, session))))
    else:  # bootstrap: the text the stamp serves was written by core/hooks.py (with the
        # instructions); an upgrade or an edit rewrites these files, and the stamp then proves
        # nothing (run ackdeck again)
        from ackdeck.core import hooks
        from ackdeck.core.service import instructions

        # and their folders: an installer may put a file in place with the mtime it came
        # with (dpkg's build time, a cache uv or conda hard-links from), but adding, renaming
        # or removing a file dates the folder it is in.
        for source in (os.path.abspath(hooks.__file__), os.path.abspath(instructions.__file__)):
            folder = os.path.dirname(source)
            test += [
                f"[ -f {q(source)} ]",
                f'[ "$s" -nt {q(source)} ]',
                f'[ "$s" -nt {q(folder)} ]',
            ]
    notices = under(loc.notices_dir(h, session))
    stamp = q(loc.quiet_stamp(h, session, door, key).name)
    # A skipped turn's presence (`ackdeck agents`): the mtime of a mark the gate truncates,
    # without a fork (core/presence/log.py `marks`); the hook behind the gate records its own
    # with the other events' clock. Neither an async hook nor a background process: Claude
    # Code (2.1.x) cancels the async hooks still running when `claude -p` ends its turn and
    # waits 1.2-1.4 s for a cancelled hook's process tree (the event lost too), and a Python
    # per turn in the background still takes a core from the agent. A mark's time is the
    # filesystem's (coarse) clock, but a skip means nothing was read or acked since the stamp.
    mark = under(loc.presence_mark(h, session, "start" if door == "bootstrap" else door))
    run = shlex.join([*argv, "--gate", key])
    if door == "bootstrap":
        return _bootstrap_gate(where, notices, stamp, test, mark, run)
    return (
        f'{where}; d={notices}; s="$d"/{stamp}; '
        f"if {' && '.join(test)}; then [ -h {mark} ] || [ -p {mark} ] || "
        f"true 2>/dev/null >{mark}; exit 0; fi; "
        # The hook writes a stamp only where this gate looks: a wrapper that sets another
        # home than the gate's then never gets one (core/service/quiet.py GATE_HOME).
        f'ACKDECK_GATE_HOME="$h"; export ACKDECK_GATE_HOME; '
        f"exec {run}"
    )


def _gate_home(home: str | None) -> str:
    """The sh that sets `h` to the home a gate looks in: the one its command pins, else as
    resolve_home finds it ($ACKDECK_HOME, else ~/.ackdeck); anything else leaves `h` empty
    (the gate then runs ackdeck, which names the home its own way)."""
    import shlex

    if home:
        return f"h={shlex.quote(os.path.abspath(home))}"
    return (
        "case ${ACKDECK_HOME:-} in /*) h=$ACKDECK_HOME;; ?*) h=;; "
        "*) case ${HOME:-} in /*) h=$HOME/.ackdeck;; *) h=;; esac;; esac"
    )


# The line a here-document of the session-start gate ends with (the hook's JSON before it).
_INPUT_END = "ackdeck_hook_input"
# The hook's JSON into `p`, with builtins: a first line that is a whole object (Claude
# Code's, 2.1.x: one compact line, newline-ended), else up to a line that is only `}` (how an
# indenting encoder ends the outer object) or EOF; each line keeps its newline (a JSON over
# several lines must reach the hook whole).
_TAKE = (
    "while IFS= read -r l; do case ${p:+more}$l in '{'*'}'|'more}') p=$p$l; l=; break;; "
    'esac; p="$p$l\n"; l=; done; p=$p$l'
)


def presence_gate(kind: str, argv: Sequence[str], home: str | None, session: str) -> str:
    """The Notification or SessionEnd hook (`kind`: notify, end) as a POSIX sh program of
    builtins that starts no Python: it writes the hook's stdin JSON into the session's mark
    (agents/.SESSION.KIND), which presence reads as the event `argv` (`hooks notify` /
    `hooks end`) would have recorded (core/presence/log.py `marks`): both jobs are presence
    only. ackdeck runs instead, the JSON handed on in a here-document, when the mark cannot
    be written as a plain file: no home the gate can name like ackdeck does, no presence
    folder yet (ackdeck creates it), or something else in the mark's place (a FIFO the
    write would wait on, a symlink it would truncate through, a directory). A terminal on
    stdin (a hook run by hand) is not read: the mark then reads as a hook given no input."""
    import shlex
    from pathlib import Path  # installing only

    from ackdeck.core.base import locations as loc

    h = Path("/H")

    def under(p: Path) -> str:
        return '"$h"' + shlex.quote(str(p)[len("/H") :])

    mark = under(loc.presence_mark(h, session, kind))
    plain = f"{{ [ -f {mark} ] || ! [ -e {mark} ]; }}"
    return (
        # umask: the mark holds the hook's JSON (paths of the project and its transcript),
        # private as the presence log is.
        f"{_gate_home(home)}; umask 077; p=; l=; if ! [ -t 0 ]; then {_TAKE}; fi; "
        f'if [ -n "$h" ] && [ -d {under(loc.agents_dir(h))} ] && ! [ -h {mark} ] && '
        f"! [ -p {mark} ] && {plain} && printf '%s\\n' \"$p\" 2>/dev/null >{mark}; "
        f"then exit 0; fi; "
        f"exec {shlex.join(argv)} <<{_INPUT_END}\n$p\n{_INPUT_END}\n"
    )


def _bootstrap_gate(
    where: str, notices: str, stamp: str, test: list[str], mark: str, run: str
) -> str:
    """The session-start gate. Its text depends on the hook's input (`source`: a reminder
    after compact, clear or resume), so when the stamp holds, the gate reads the JSON Claude
    Code writes (2.1.x: one line, newline-ended, compact: checked through the real client)
    and serves only a `startup`, printing the text the hook wrote beside the stamp
    (quiet_text) line by line with builtins; otherwise the hook runs, the JSON it read handed
    on in a here-document. Without a stamp that holds, the gate reads nothing: the input goes
    to ackdeck untouched (`read` waits for a newline or EOF; ackdeck waits a bounded time,
    read_hook_input). A skipped start marks the session's presence with Claude Code's
    session id (the mark's content, core/presence/log.py `marks`)."""
    starts = (  # compact JSON as Claude Code writes it; spaced as Python's json.dumps
        'case $p in *\'"source":"startup"\'*|*\'"source": "startup"\'*) true;; *) false;; esac'
    )
    id_of = (
        'case $p in *\'"session_id":"\'*) c=${p#*\'"session_id":"\'}; c=${c%%\'"\'*};; '
        '*\'"session_id": "\'*) c=${p#*\'"session_id": "\'}; c=${c%%\'"\'*};; '
        "*) c=;; esac"
    )
    show = 'while IFS= read -r l || [ -n "$l" ]; do printf \'%s\\n\' "$l"; done <"$s.txt"'
    take = _TAKE  # the JSON to its end
    # The hook writes a stamp only where this gate looks (core/service/quiet.py GATE_HOME).
    handed = 'ACKDECK_GATE_HOME="$h"; export ACKDECK_GATE_HOME; '
    return (
        f'{where}; d={notices}; s="$d"/{stamp}; '
        f'if {" && ".join(test)} && [ -f "$s.txt" ]; then '
        # A terminal (a hook run by hand) is not read: ackdeck looks at it as before.
        f"p=; l=; if ! [ -t 0 ]; then {take}; fi; "
        f"if {starts}; then {id_of}; "
        f"[ -h {mark} ] || [ -p {mark} ] || printf '%s\\n' \"$c\" 2>/dev/null >{mark}; "
        f"{show}; exit 0; fi; "
        f"{handed}exec {run} <<{_INPUT_END}\n$p\n{_INPUT_END}\n"
        f"fi; {handed}exec {run}"
    )


def _pinned_home(base: Sequence[str]) -> str | bool | None:
    """The home a hook command names (its last `--home`, as argparse takes it), None when it
    names none (the environment's then), False when the gate cannot run it (it starts with
    a variable assignment) or cannot know it (a relative or `~` home: ackdeck finds it from
    the directory and HOME the hook runs with, which a gate written now cannot know; the
    installer writes its own --home absolute)."""
    import re

    if base and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", base[0]):
        return False
    home: str | None = None
    for i, word in enumerate(base):
        if word == "--home" and i + 1 < len(base):
            home = base[i + 1]
        elif word.startswith("--home="):
            home = word[len("--home=") :]
    if home and not os.path.isabs(home):
        return False
    return os.path.normpath(home) if home else None


def ackdeck_prefix(ackdeck: Sequence[str], home: str | None) -> list[str]:
    """How every door of one set-up starts ackdeck: the hooks and the MCP server a set-up
    writes (`server_config.server_entry`) share it, so they share one home. A home in effect
    at install time (--home or $ACKDECK_HOME) is written out, absolute: the client may start
    its hooks and its servers with other environments (Codex passes its MCP servers only a few
    variables, a desktop launcher none of the shell's), and the Stop hook must drain the wakes
    the server's processes record."""
    return [*ackdeck, *(["--home", os.path.abspath(home)] if home else [])]


def hook_room(room: str | os.PathLike[str]) -> str:
    """A room as a hook or a set-up's server names it: absolute, a redis URL without its
    password."""
    from ackdeck.core.service.refs import parse_room

    return parse_room(room, env={}).display


def is_ackdeck_hook(event: str, command: object) -> bool:
    """Whether `command` is the hook ackdeck installs for `event` (any session, room or path)."""
    if not isinstance(command, str) or event not in _SIGNATURES:
        return False
    import shlex

    try:
        tokens = shlex.split(command)
    except ValueError:
        return False
    runs_ackdeck = any(os.path.basename(t) == "ackdeck" or t == "ackdeck.core.cli" for t in tokens)
    has_sig = any(
        tuple(tokens[i : i + len(sig)]) == sig
        for sig in _SIGNATURES[event]
        for i in range(len(tokens))
    )
    return runs_ackdeck and has_sig


def _commands(desired: str | Sequence[str]) -> list[str]:
    return [desired] if isinstance(desired, str) else list(desired)


def _presence_only(command: str) -> bool:
    words = command.split()
    return any(tuple(words[i : i + 2]) in _PRESENCE_ONLY for i in range(len(words)))


def _group(event: str, desired: str | Sequence[str]) -> dict[str, Any]:
    # No matcher: SessionStart then also fires after resume/clear/compact, when the agent has
    # lost the instructions; Notification and SessionEnd fire for every kind and reason (the
    # presence decision tells them apart); the other two events take no matcher.
    out = []
    for command in _commands(desired):
        hook: dict[str, Any] = {"type": "command", "command": command, "timeout": TIMEOUTS[event]}
        if _presence_only(command):
            hook["async"] = True
        out.append(hook)
    return {"hooks": out}


# ----- the pure merge ---------------------------------------------------------------------------
def merge_hooks(
    settings: Mapping[str, Any], commands: Mapping[str, str | Sequence[str] | None]
) -> dict[str, Any]:
    """`settings` with ackdeck's hooks set to `commands`; every other key and hook is kept.

    Idempotent: when the desired hook is already the only ackdeck hook of an event, that event
    is left exactly as it is (position included).
    """
    import copy  # installing hooks only (copy imports weakref): not the per-turn commands

    out = copy.deepcopy(dict(settings))
    hooks = out.get("hooks")
    if hooks is None:
        hooks = {}
    elif not isinstance(hooks, dict):
        raise InvalidInput(f'"hooks" must be a JSON object, found {type(hooks).__name__}')
    for event in EVENTS:
        desired = commands.get(event)
        groups = hooks.get(event)
        if groups is None:
            if desired:
                hooks[event] = [_group(event, desired)]
            continue
        if not isinstance(groups, list):
            raise InvalidInput(
                f'"hooks.{event}" must be a JSON array, found {type(groups).__name__}'
            )
        ours = [
            h
            for g in groups
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
            if isinstance(h, dict) and is_ackdeck_hook(event, h.get("command"))
        ]
        if desired and len(ours) == len(_commands(desired)) and _group(event, desired) in groups:
            continue
        if not ours and not desired:
            continue
        kept: list[Any] = []
        for g in groups:
            if not (isinstance(g, dict) and isinstance(g.get("hooks"), list)):
                kept.append(g)  # not a shape we understand: not ours to touch
                continue
            rest = [
                h
                for h in g["hooks"]
                if not (isinstance(h, dict) and is_ackdeck_hook(event, h.get("command")))
            ]
            if len(rest) == len(g["hooks"]):
                kept.append(g)
            elif rest:
                kept.append({**g, "hooks": rest})
            # else: the group held only ackdeck hooks; drop it
        if desired:
            kept.append(_group(event, desired))
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if hooks or "hooks" in out:
        out["hooks"] = hooks
    return out


# ----- the installer (I/O) ---------------------------------------------------------------------
class InstallResult(Struct):
    path: Path
    changed: bool
    created: bool
    backup: Path | None  # the backup written by this run, if any


def default_settings_path(project: str | os.PathLike[str] | None = None) -> Path:
    """The project's `.claude/settings.json` (the current directory's by default): hooks are
    per project, so two projects' agents on one machine never drain each other's wakes."""
    from pathlib import Path  # installing only

    return (
        Path(os.path.abspath(project or os.curdir))
        / claude_code.SETTINGS_DIR
        / claude_code.SETTINGS_FILE
    )


def user_settings_path() -> Path:
    from pathlib import Path  # installing only

    return Path.home() / claude_code.SETTINGS_DIR / claude_code.SETTINGS_FILE


def install(
    settings_path: str | os.PathLike[str], commands: Mapping[str, str | Sequence[str] | None]
) -> InstallResult:
    """Write ackdeck's hooks into `settings_path`. Never touches a file it cannot parse."""
    return update_json_file(settings_path, lambda current: merge_hooks(current, commands))


def update_json_file(
    settings_path: str | os.PathLike[str], change: Callable[[dict[str, Any]], dict[str, Any]]
) -> InstallResult:
    """Write `change(current)` into the JSON object file `settings_path` (a settings.json, an
    .mcp.json): created if missing, backed up once, replaced atomically, left untouched when
    it cannot be parsed or nothing changes."""
    from pathlib import Path  # installing only (and the MCP config): never a per-turn hook

    shown = Path(settings_path).expanduser()
    # A symlinked settings file (dotfile managers) is updated in place of its target, so the
    # link survives the atomic rename.
    path = Path(os.path.realpath(shown))
    raw, mode = _read_settings(path, shown)
    current = _parse_settings(raw, shown) if raw is not None else {}
    updated = change(current)
    if raw is not None and updated == current:
        return InstallResult(shown, False, False, None)
    import json  # installing only (indented): the per-turn hooks never write settings

    data = (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode()
    backup: Path | None = None
    try:
        if raw is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            candidate = path.with_name(path.name + BACKUP_SUFFIX)
            # Only the first change is backed up: later runs must not overwrite the pristine
            # pre-ackdeck copy with an already-modified one.
            if not candidate.exists():
                atomic.atomic_write(candidate, raw, mode=mode)
                backup = candidate
        tmp = atomic.write_temp(path, [data], mode=mode)
        # Agents rewrite their own settings too: if the file changed since we parsed it,
        # renaming over it would drop their change. Refuse instead; a re-run merges cleanly.
        if _current_bytes(path) != raw:
            atomic.unlink_quietly(tmp)
            raise InvalidInput(
                f"{shown} changed while ackdeck was updating it; run the command again"
            )
        atomic.replace(tmp, path)
    except OSError as exc:
        raise InvalidInput(
            f"cannot write {exc.filename or shown}: {exc.strerror or exc}; settings left unchanged"
        ) from None
    return InstallResult(shown, True, raw is None, backup)


def _read_settings(path: Path, shown: Path) -> tuple[bytes | None, int]:
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise InvalidInput(f"{shown} is a directory, not a settings file")
        with open(path, "rb") as f:
            return f.read(), stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        # New file: settings may hold tokens in "env", so keep it private.
        return None, 0o600
    except PermissionError:
        raise InvalidInput(f"cannot read {shown}: permission denied") from None


def _current_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _parse_settings(raw: bytes, shown: Path) -> dict[str, Any]:
    import json  # for its error's class; installing only, never a per-turn hook

    if not raw.strip():
        return {}  # an empty file holds no settings to lose
    try:
        value = parse_json(raw)
    except UnicodeDecodeError:
        raise InvalidInput(f"{shown} is not UTF-8 text; left untouched") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{shown} is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg}); "
            "left untouched"
        ) from None
    except ValueError as exc:  # NaN, a number out of range, nesting past jsonfields.DEPTH
        raise InvalidInput(
            f"{shown} is not JSON ackdeck can keep ({exc}); left untouched"
        ) from None
    if not isinstance(value, dict):
        raise InvalidInput(
            f"{shown} must hold a JSON object, found {type(value).__name__}; left untouched"
        )
    return value
