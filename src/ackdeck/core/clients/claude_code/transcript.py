"""Claude Code's transcript: its own record of what its model was shown (issue 41).

Delivered is proven, not estimated: an ack made through Claude Code removes only the lines of
a read that the transcript shows its model received whole. Facts, checked offline against
Claude Code 2.1.328 (tests/test_agent_proof.py keeps them):

- The `ackdeck mcp` process gets `CLAUDE_CODE_SESSION_ID` and `CLAUDE_PROJECT_DIR` in its
  environment; the transcript is `$CLAUDE_CONFIG_DIR` (else `~/.claude`)
  `/projects/<dir>/<session>.jsonl`, `<dir>` being the project directory with every character
  but A-Z a-z 0-9 replaced by '-' (cut at 200 characters plus a hash when longer: then the
  directory is found by its first 200 characters and the session's file in it).
- Each `tools/call` carries the model's tool_use id in `_meta["claudecode/toolUseId"]`.
- The tool result the model was shown is a `type:"user"` record whose `message.content[]`
  holds `{type:"tool_result", tool_use_id, content}`; `content` (a string, or text blocks) is
  byte for byte what the model API received: ackdeck's structured JSON, a `<persisted-output>`
  preview of a large one, the error text of one refused under MAX_MCP_OUTPUT_TOKENS, or what
  a PostToolUse hook's `updatedMCPToolOutput` replaced it with. The record's `toolUseResult`
  keeps the original, which the model did NOT see: it is never used.
- A later replacement is a `{type:"content-replacement", replacements:[{kind:"tool-result",
  toolUseId, replacement}]}` record: `replacement` is then what the model saw.
- The record is appended after the result is returned and before the model's next turn: an
  ack waits for it, bounded (RECORD_WAIT). The model's message making the ack is recorded as
  a `type:"assistant"` record holding that `tool_use` block: a read result not recorded before
  it (an ack in the same turn as its read) was not shown when the model acked.

Cost: the transcript of a long session grows to tens of MB. It is never read whole: from the
size it had when the read was made (kept by the server) to its end, or backwards from its end
in CHUNK pieces when no size was kept; lines that cannot hold the record are skipped without
parsing. Memory is one chunk plus the longest record read.

`shown_prefix` is the pure decision: how many of a read's lines, from the first, appear whole,
in order, in the text the model saw.
"""

from __future__ import annotations

import json
import os
import stat
import time

# Not typing: this module is imported on the per-turn path (a shell's `room ack`, the Stop
# hook after a hand-over), which must not load it (tests/test_layering.py).
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ackdeck.core.base import locations
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import display_lines
from ackdeck.core.errors import NoProof

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
PROJECT_ENV = "CLAUDE_PROJECT_DIR"
TOOL_USE_META = "claudecode/toolUseId"  # in a tools/call request's _meta
CHUNK = 1 << 16
# How long an ack waits for its read's result to reach the transcript. Claude Code queues its
# transcript writes: on a busy machine the result can land just after the model's next request
# (seen in CI), rarely later, so this bounds a write that is late or never comes.
RECORD_WAIT = 5.0
# How far before a read's result its own call is looked for (the same turn's records).
CALL_LOOKBACK = 4 << 20
# How far back from the end an ack by read id (with no size kept at its read) looks for the
# read's result: a read that far back is old, and a miss must not cost the whole transcript.
BACK_LIMIT = 32 << 20
POLL = 0.02
# The bytes before a read's mark that its ack checks are unchanged (see mark_of): the end of
# the record before it, with its uuids, which a rewritten file does not hold at that offset.
MARK_BYTES = 256


class Seen(Struct):
    """What the model was shown of one tool call: `text` (None: the result never reached the
    transcript, so the model was shown nothing of it) and where the scan stopped."""

    tool_use_id: str | None
    text: str | None
    scanned_to: int


# ----- where the transcript is ---------------------------------------------------------------
def locate(env: Mapping[str, str]) -> Path | None:
    """The session's transcript from the environment Claude Code gives its MCP servers and
    their children; None outside Claude Code. The file may not exist (yet)."""
    session = env.get(SESSION_ENV)
    project = env.get(PROJECT_ENV)
    if not session or "/" in session or session.startswith("."):
        return None
    if not project:
        # Claude Code's Bash tool gets the session id but not the project directory (checked
        # on 2.1.328): the session's file is found by its id among the projects' directories.
        return _by_session(env, session)
    exact = locations.claude_transcript(locations.claude_project_dir(env, project), session)
    if len(exact.parent.name) <= locations.CLAUDE_PROJECT_NAME_MAX:
        return exact
    # A long project path: the directory ends with a hash of it; find it by its prefix.
    prefix = exact.parent.name[: locations.CLAUDE_PROJECT_NAME_MAX] + "-"
    try:
        for d in exact.parent.parent.iterdir():
            if d.name.startswith(prefix) and exists(d / exact.name):
                return d / exact.name
    except OSError:
        pass
    return exact


def _by_session(env: Mapping[str, str], session: str) -> Path | None:
    """`<projects>/*/<session>.jsonl`: a session id is unique, so one project has it. A
    listing of the projects' directory and a stat in each (no file is read)."""
    try:
        dirs = list(os.scandir(locations.claude_projects_dir(env)))
    except OSError:
        return None
    for d in dirs:
        if exists(found := locations.claude_transcript(Path(d.path), session)):
            return found
    return None


def exists(path: Path) -> bool:
    """Path.exists() that never raises (a name too long for the filesystem is not there)."""
    try:
        os.stat(path)
    except OSError:
        return False
    return True


def unusable(path: Path) -> str | None:
    """Why the transcript at `path` cannot prove a read, as the ack would find it (find_seen),
    or None: it is a file that can. A read says this beside its `estimate`, so it never
    promises `transcript` for a directory or a FIFO in the transcript's place."""
    try:
        st = os.stat(path)
    except OSError:
        # Or not yet: Claude Code queues its writes (the ack looks again).
        return f"the transcript {path} does not exist (yet)"
    if not stat.S_ISREG(st.st_mode):
        return f"the transcript {path} is not a regular file"
    return None


def mark_of(path: Path | str | None) -> tuple[int, bytes] | None:
    """What a read keeps of the transcript, to scan only what follows at its ack: where its
    last whole record ends now (`records_end`) and the MARK_BYTES bytes before that (the ack
    checks they are still there: a transcript deleted and written anew, or overwritten, since
    the read does not hold the read's records where they were). None: no transcript (yet;
    Claude Code queues its writes, so a session's first records may reach the file after its
    first read), or not a regular file."""
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        end = _records_end(fd, st.st_size)
        start = max(0, end - MARK_BYTES)
        return end, os.pread(fd, end - start, start)
    except OSError:
        return None
    finally:
        os.close(fd)


def records_end(path: Path | str) -> int | None:
    """Where the transcript's last whole record ends now: every record a client writes
    from here on starts at or after it. Not its size: Claude Code writes a batch of records
    in one write, which a reader can catch half done (the kernel copies it page by page), and
    a scan starting inside a record reads its tail as a damaged one. None: no transcript, or
    not a regular file."""
    mark = mark_of(path)
    return None if mark is None else mark[0]


def _records_end(fd: int, size: int) -> int:
    """The offset just past the last newline at or before `size` (0 when there is none)."""
    pos = size
    while pos > 0:
        n = min(CHUNK, pos)
        at = os.pread(fd, n, pos - n).rfind(b"\n")
        if at >= 0:
            return pos - n + at + 1
        pos -= n
    return 0


# ----- what the model saw --------------------------------------------------------------------
def _text(content: object) -> str | None:
    """A tool_result's content as the model read it: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None


def result_in(
    record: dict[str, object], tool_use_id: str | None, read_id: str | None
) -> tuple[str, str] | None:
    """(tool_use_id, text shown) if `record` is the tool result for `tool_use_id` (or, that
    id unknown, the one whose shown text or original names `read_id`)."""
    if record.get("type") != "user":
        return None
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return None
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        tid = block.get("tool_use_id")
        text = _text(block.get("content"))
        if not isinstance(tid, str) or text is None:
            continue
        if tool_use_id is not None and tid == tool_use_id:
            return tid, text
        if tool_use_id is None and read_id is not None:
            if read_id in text or read_id in json.dumps(record.get("toolUseResult")):
                return tid, text
    return None


def calls(record: dict[str, object], tool_use_id: str | None) -> bool:
    """Is `record` the model's message making the call `tool_use_id`?"""
    if record.get("type") != "assistant":
        return False
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == tool_use_id
        for b in content
    )


def replacement_in(record: dict[str, object], tool_use_id: str) -> str | None:
    """The text a content-replacement record put in place of `tool_use_id`'s result."""
    if record.get("type") != "content-replacement":
        return None
    found = None
    listed = record.get("replacements")
    for r in listed if isinstance(listed, list) else []:  # any other type replaces nothing
        if (
            isinstance(r, dict)
            and r.get("kind") == "tool-result"
            and r.get("toolUseId") == tool_use_id
            and isinstance(r.get("replacement"), str)
        ):
            found = r["replacement"]
    return found


def _not_json(where: Path) -> NoProof:
    """A record that is not JSON: the file is not what Claude Code wrote, so no absence of a
    record in it is proof of anything."""
    return NoProof(f"the transcript {where} is damaged (a record is not JSON)")


def _call_missing(where: Path) -> NoProof:
    """The read's result is there and its own call is not (Claude Code records the call just
    before or just after the result): which response made the ack cannot be told."""
    return NoProof(
        f"the transcript {where} holds the read's result but not its call (records are missing)"
    )


def _parse(line: bytes, where: Path) -> dict[str, object]:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # nested past the decoder's limit: damaged too
        raise _not_json(where) from None
    if not isinstance(record, dict):
        raise NoProof(f"the transcript {where} is damaged (a record is not an object)")
    return record


def _forward(fd: int, start: int) -> Iterator[tuple[int, bytes]]:
    """(offset after the line, line) for each complete line from `start` to the end.

    Linear in the bytes read: each chunk is split alone and a line longer than a chunk is
    kept in pieces, joined once (re-splitting the growing line at every chunk took 33 s over
    one 50 MB record, a large tool result)."""
    pos, at = start, start
    pieces: list[bytes] = []  # the line in progress, when it began in an earlier chunk
    while True:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            return
        pos += len(chunk)
        *lines, rest = chunk.split(b"\n")
        for line in lines:
            if pieces:
                line = b"".join((*pieces, line))
                pieces = []
            at += len(line) + 1
            yield at, line
        if rest:
            pieces.append(rest)


def _backward(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset of the line's start, line) for each complete line from `end` backwards.
    Linear in the bytes read, as `_forward` (no re-prepending of a long line's tail)."""
    pos = end
    pieces: list[bytes] = []  # the earliest line so far, when it ends in a later chunk: last first
    # A last line without its newline is still being written: not a record yet.
    tail = os.pread(fd, 1, end - 1) if end else b"\n"
    skip_partial = tail != b"\n"
    while pos > 0:
        n = min(CHUNK, pos)
        pos -= n
        chunk = os.pread(fd, n, pos)
        first, *lines = chunk.split(b"\n")
        if not lines:
            pieces.append(chunk)
            continue
        if pieces:
            lines[-1] = b"".join((lines[-1], *reversed(pieces)))
        pieces = [first]
        at = pos + len(first) + 1
        offsets = []
        for line in lines:
            offsets.append((at, line))
            at += len(line) + 1
        if skip_partial and offsets:
            offsets.pop()
            skip_partial = False
        yield from reversed(offsets)
    rest = b"".join(reversed(pieces))
    if rest and not skip_partial:
        yield 0, rest


def _needles(tool_use_id: str | None, read_id: str | None) -> list[bytes]:
    return [n.encode() for n in (tool_use_id, read_id) if n]


def find_seen(
    path: Path,
    *,
    tool_use_id: str | None,
    read_id: str | None = None,
    since: int | None = None,
    before: bytes | None = None,
    asked_by: str | None = None,
    from_shell: bool = False,
    wait: float = RECORD_WAIT,
    back_limit: int = BACK_LIMIT,
    clock: Callable[[], float] = time.monotonic,
) -> Seen:
    """What the model was shown of the call `tool_use_id` (or, unknown, the read `read_id`),
    from the transcript at `path`: scanned forward from `since` (the size kept at the read),
    else backwards from the end. Waits up to `wait` for the record to be written. NoProof
    when the transcript is missing, was cut below `since` or rewritten before it (`before`:
    its bytes just before `since` at the read, mark_of), or a record is damaged.

    `asked_by`: the tool_use id of the call asking (the ack). The model made that call having
    seen only what comes before it in the transcript: a read whose result is not recorded
    before the message making the ack (an ack in the same turn as its read) was not shown,
    and the scan stops there without waiting.

    `from_shell`: the ack runs in the agent's shell (its Bash tool), whose call is not known
    by id: the read counts as shown only when a call still running (the ack's own: it has no
    result yet) was made after the read's result, in another response (`_shell_call_after`).
    Only with no `since` (an ack by read id)."""
    needles = _needles(tool_use_id, read_id)
    stop = None if asked_by is None else asked_by.encode()
    if not needles:
        raise NoProof("the read names no tool call to look for in the transcript")
    try:
        # Non-blocking: a FIFO put where the transcript should be must not hang the ack.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NoProof(f"the transcript {path} is missing") from None
    except OSError as exc:
        raise NoProof(f"the transcript {path} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NoProof(f"the transcript {path} is not a regular file")
        size = st.st_size
        if since is not None and size < since:
            raise NoProof(f"the transcript {path} was cut since the read")
        if (
            since is not None
            and before
            and os.pread(fd, len(before), since - len(before)) != before
        ):
            raise NoProof(f"the transcript {path} was rewritten since the read")
        if since is None:
            found = _search_back(fd, path, size, tool_use_id, read_id, needles, back_limit)
            if found is None:  # not written yet (Claude Code queues its writes): what follows
                found = _search_on(
                    fd, path, size, tool_use_id, read_id, needles, clock() + wait, clock
                )
            if found is None:
                raise NoProof(
                    f"the transcript {path} has no result naming read {read_id} in its last "
                    f"{back_limit >> 20} MB"
                )
            tid, text, after = found
            if from_shell:
                if not _shell_call_after(fd, path, after, tid, clock() + wait, clock):
                    return Seen(tid, None, after)
            elif not _asked_after(fd, path, after, asked_by, clock() + wait, clock, tid):
                return Seen(tid, None, after)
            return _replaced(fd, path, Seen(tid, text, after))
        deadline = clock() + wait
        pos = since
        while True:
            for after, line in _forward(fd, pos):
                pos = after
                if any(n in line for n in needles):
                    got = result_in(_parse(line, path), tool_use_id, read_id)
                    if got is not None:
                        if not _asked_after(fd, path, after, asked_by, deadline, clock, got[0]):
                            return Seen(got[0], None, after)
                        return _replaced(fd, path, Seen(got[0], got[1], after))
                if stop is not None and stop in line and calls(_parse(line, path), asked_by):
                    return Seen(tool_use_id, None, pos)
                elif not (line.startswith(b"{") and line.endswith(b"}")):
                    raise _not_json(path)
            if clock() >= deadline:
                return Seen(tool_use_id, None, pos)
            time.sleep(POLL)  # a poll of a file another program appends to, bounded above
            if os.fstat(fd).st_size < pos or not _same_file(fd, path):
                raise NoProof(f"the transcript {path} was replaced since the read")
    finally:
        os.close(fd)


def _asked_after(
    fd: int,
    path: Path,
    pos: int,
    asked_by: str | None,
    deadline: float,
    clock: Callable[[], float],
    read_call: str | None = None,
) -> bool:
    """Did the model make the asking call (`asked_by`, the ack) after the record ending at
    `pos` (the read's result)? Only then had it seen that result. Claude Code records the
    message holding a call before it runs the call, so the ack's own message is there by now,
    after the result when the model acked in a later turn; in the same turn as its read it
    comes before (a run of both calls may record the read's result before the ack runs, so
    finding the result is not enough). Waits, bounded, for a late write; not found: not seen
    (the lines stay and are read again). The ack's call found but not the read's: NoProof
    (records are missing). True when the asking call is not known (a CLI ack)."""
    if asked_by is None:
        return True
    result_end, needle = pos, asked_by.encode()
    while True:
        for after, line in _forward(fd, pos):
            pos = after
            if needle in line and calls(record := _parse(line, path), asked_by):
                # Claude Code records each block of a response apart and may run (and record)
                # the read before the ack's block is written: a call in the same response as
                # the read (the same message id) was made before its result was seen.
                made_in = _message_id(record)
                read_in = _read_message_id(fd, path, result_end, read_call)
                if read_call is not None and read_in is None:
                    # Claude Code records a call before its result, or just after it: with
                    # the ack's call there, the read's missing means records are: which
                    # response made the ack cannot be told, nor that the model did not see.
                    raise _call_missing(path)
                return made_in is None or made_in != read_in
        if clock() >= deadline:
            return False
        time.sleep(POLL)  # a poll of a file another program appends to, bounded above


def _shell_call_after(
    fd: int,
    path: Path,
    pos: int,
    read_call: str | None,
    deadline: float,
    clock: Callable[[], float],
) -> bool:
    """Was the call running now (the shell command acking, whose id no one tells it) made
    after the read's result ending at `pos`, in a later response than the read's? Claude
    Code records a call's message around the time it runs it (its writes are queued: seen
    on 2.1.328 to land after the command started, so this waits for it, bounded) and its
    result when it ends: the calls after `pos` still without a result include the one
    running the ack. A later response cannot exist while a call of the read's response is
    still running: any such call means the ack was made with the read, unseen. None
    running by the deadline: not shown (the lines stay and are read again). The read's own
    call not found: NoProof (records are missing)."""
    running: dict[str, str | None] = {}  # tool_use id -> its response's id
    result_end = pos
    while True:
        for after, line in _forward(fd, pos):
            pos = after
            if b'"tool_use"' not in line and b'"tool_result"' not in line:
                continue
            record = _parse(line, path)
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and record.get("type") == "assistant":
                    running[str(block.get("id"))] = _message_id(record)
                elif block.get("type") == "tool_result":
                    running.pop(str(block.get("tool_use_id")), None)
        if running:
            # The read's own call comes just before its result; not found, records are
            # missing and which response made the ack cannot be told (as _asked_after).
            read_in = _read_message_id(fd, path, result_end, read_call)
            if read_in is None:
                raise _call_missing(path)
            return read_in not in running.values()
        if clock() >= deadline:
            return False
        time.sleep(POLL)  # a poll of a file another program appends to, bounded above


def _message_id(record: dict[str, object]) -> str | None:
    """The model response an assistant record is a block of (None: not known)."""
    message = record.get("message")
    mid = message.get("id") if isinstance(message, dict) else None
    return mid if isinstance(mid, str) and mid else None


def _read_message_id(fd: int, path: Path, end: int, read_call: str | None) -> str | None:
    """The response holding the read's own call, found backwards from its result (it usually
    comes shortly before), else forwards from it: Claude Code queues its writes and records
    a response's blocks apart, so the call's record may land after its result. At most
    CALL_LOOKBACK bytes are read each way; None: not found."""
    if read_call is None:
        return None
    needle = read_call.encode()
    for start, line in _backward(fd, end):
        if end - start > CALL_LOOKBACK:
            break
        if needle in line and b'"tool_use"' in line:
            record = _parse(line, path)
            if calls(record, read_call):
                return _message_id(record)
    for after, line in _forward(fd, end):
        if after - end > CALL_LOOKBACK:
            break
        if needle in line and b'"tool_use"' in line:
            record = _parse(line, path)
            if calls(record, read_call):
                return _message_id(record)
    return None


def _search_back(
    fd: int,
    path: Path,
    size: int,
    tool_use_id: str | None,
    read_id: str | None,
    needles: list[bytes],
    limit: int,
) -> tuple[str, str, int] | None:
    for start, line in _backward(fd, size):
        if size - start > limit:
            return None
        if any(n in line for n in needles):
            got = result_in(_parse(line, path), tool_use_id, read_id)
            if got is not None:
                return got[0], got[1], start + len(line) + 1
        elif line and not (line.startswith(b"{") and line.endswith(b"}")):
            # As forward (b"" is past the last newline): a damaged record after the read's
            # result says the file is not what Claude Code wrote, so neither is the absence
            # of a later call in it.
            raise _not_json(path)
    return None


def _search_on(
    fd: int,
    path: Path,
    pos: int,
    tool_use_id: str | None,
    read_id: str | None,
    needles: list[bytes],
    deadline: float,
    clock: Callable[[], float],
) -> tuple[str, str, int] | None:
    """`_search_back`'s miss, waited for: the records appended from `pos` on, until
    `deadline` (each look reads only what was appended since the last)."""
    while clock() < deadline:
        time.sleep(POLL)  # a poll of a file another program appends to, bounded above
        for after, line in _forward(fd, pos):
            pos = after
            if any(n in line for n in needles):
                got = result_in(_parse(line, path), tool_use_id, read_id)
                if got is not None:
                    return got[0], got[1], after
    return None


def _replaced(fd: int, path: Path, seen: Seen) -> Seen:
    """`seen` with any later content-replacement of its tool result applied (the model was
    shown the replacement from then on; what a read proves is the least it was shown whole,
    and a replacement only ever shortens a result)."""
    tid = seen.tool_use_id
    if tid is None:
        return seen
    needle = tid.encode()
    text, pos = seen.text, seen.scanned_to
    for after, line in _forward(fd, pos):
        pos = after
        if needle in line and b"content-replacement" in line:
            replaced = replacement_in(_parse(line, path), tid)
            if replaced is not None:
                text = replaced
    return seen.replace(text=text, scanned_to=pos)


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# ----- a hook's text: recorded, then answered --------------------------------------------------
FEEDBACK = b"hook feedback"  # in the user record of a Stop hook's text ("Stop hook feedback:")
HOOK_CONTEXT = b'"hook_success"'  # the attachment record of a prompt hook's output


def feedback_answered(
    path: Path,
    since: int,
    text: str,
    *,
    wait: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Did the model answer a hook's `text` handed over when the transcript at `path` was
    `since` bytes long? Claude Code records a Stop hook's text as a `type:"user"` record ("Stop
    hook feedback:\n[COMMAND]: TEXT"), a UserPromptSubmit hook's as an `attachment` record
    `{type:"hook_success", content}`, *before* it asks the model, and may never ask (a turn
    limit reached): only the model's answer after that record (an `assistant` record) proves
    it was shown. False too when the transcript is missing, cut or damaged (the text is handed over
    again: a repeat, never a loss). Reads from `since` only, waiting up to `wait` for the
    records (Claude Code queues its writes: the answer that just ended a turn may land after
    the Stop hook started)."""
    want = text.strip()
    deadline = clock() + wait
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            break
        except FileNotFoundError:
            # Not there yet: a session's first records (the file with them) may land after
            # its first Stop hook started, as the answer may (a fast `claude -p` turn: the
            # hook, given up at once, handed the text over again).
            if clock() >= deadline:
                return False
            time.sleep(POLL)
        except OSError:
            return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size < since:
            return False
        recorded, pos = False, since
        while True:
            for after, line in _forward(fd, pos):
                pos = after
                if not recorded and (FEEDBACK in line or HOOK_CONTEXT in line):
                    try:
                        record = _parse(line, path)
                    except NoProof:
                        return False
                    recorded = want in (_hook_text(record) or "")
                elif recorded and b'"assistant"' in line:
                    try:
                        if _parse(line, path).get("type") == "assistant":
                            return True
                    except NoProof:
                        return False
            if clock() >= deadline:
                return False
            time.sleep(POLL)  # a poll of a file another program appends to, bounded above
    finally:
        os.close(fd)


def _hook_text(record: dict[str, object]) -> str | None:
    """What a hook's record gave the model: a Stop hook's feedback (a user message) or a
    prompt hook's context (a hook_success attachment)."""
    if record.get("type") == "user":
        message = record.get("message")
        return _text(message.get("content") if isinstance(message, dict) else None)
    attachment = record.get("attachment")
    if record.get("type") == "attachment" and isinstance(attachment, dict):
        if attachment.get("type") == "hook_success":
            content = attachment.get("content")
            return content if isinstance(content, str) else None
    return None


# ----- the decision --------------------------------------------------------------------------
def shown_prefix(lines: list[str], seen: str | None) -> int:
    """How many of `lines`, from the first, appear whole and in order in `seen`: each as a
    JSON string (ackdeck's structured content, also inside a persisted preview) or as a
    whole line of text (a text view, a hook's summary). The search for each line starts after the
    previous one's match, so a repeated line counts only as often as it was shown."""
    if not seen:
        return 0
    # The usual case first: the read's lines whole, in order, as the compact JSON array of
    # the structured content (one C-speed encoding and one search).
    if json.dumps(lines, ensure_ascii=False, separators=(",", ":"))[1:-1] in seen:
        return len(lines)
    pos = 0
    for i, line in enumerate(lines):
        found = [m for m in (_find(seen, form, pos, form is line) for form in _forms(line)) if m]
        if not found:
            return i
        pos = min(found)[1]
    return len(lines)


def _find(seen: str, form: str, pos: int, as_text: bool) -> tuple[int, int] | None:
    """(start, end) of the first whole `form` in `seen` from `pos`, or None."""
    at = seen.find(form, pos)
    while at >= 0 and as_text and not _text_bounded(seen, at, len(form)):
        at = seen.find(form, at + 1)
    return None if at < 0 else (at, at + len(form))


def _forms(line: str) -> list[str]:
    forms = [json.dumps(line, ensure_ascii=False)]
    if not line.isascii():
        forms.append(json.dumps(line))
    if line:
        forms.append(line)
    return forms


def _text_bounded(seen: str, at: int, n: int) -> bool:
    """A line as text is whole only when it is a whole line of the text: plain text has no
    other edge (a line "ok" is not shown by "not ok")."""
    end = at + n
    return (end == len(seen) or seen[end] in "\r\n") and (at == 0 or seen[at - 1] == "\n")


def shown_lines(seen: str | None) -> Callable[[list[bytes]], int]:
    """`shown_prefix` over a read's lines as the room holds them (bytes, invalid UTF-8 shown
    replaced, as every door shows them)."""

    def count(lines: list[bytes]) -> int:
        return shown_prefix(display_lines(lines)[0], seen)

    return count
