"""`python -m bench proof`: an ack proven by a 50 MB Claude Code transcript vs the same ack
without proof, in the same run (issue 41).

Each rep reads a 100-line room (the read's receipt), appends the read's tool result to the
transcript as Claude Code does, then times the ack alone:

- without proof: `Room.ack` (what every ack did before);
- with proof, from the kept offset: the MCP server kept the transcript's size at the read,
  so it reads only what follows (`find_seen(since=...)`), then `Room.ack(shown=...)`;
- with proof, from the end: an ack by read id from a process that kept no offset (a backward
  search for the read's record);
- with proof, from the agent's shell: `ackdeck room ack` in Claude Code's Bash tool (the same
  backward search, then the calls still running after the read's result: the Bash call's).

Target: proven / unproven <= 1.2. Memory: the Python heap's peak (tracemalloc) while finding
what was shown, on a 5 MB and a 50 MB transcript: it must not grow with the transcript.
Medians of REPS runs; the machine is shared and noisy.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from ackdeck.core.clients.claude_code import transcript
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.results import Shown

LINE = "[2026-12-07T04:00:00Z] [ops] bot: event {:05d} deployed, p99 41ms ok"
LINES = [LINE.format(i) for i in range(100)]
REPS = 51
SIZE = 50 << 20
SMALL = 5 << 20


def _filler(size: int) -> bytes:
    """Transcript records of the usual sizes (assistant turns, attachments), `size` bytes."""
    rec = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "working on it " * 120}]}, "uuid": "u" * 36}  # fmt: skip
    line = (json.dumps(rec) + "\n").encode()
    return line * max(1, size // len(line))


def _result(tool_use_id: str, lines: list[str], read_id: str) -> bytes:
    shown = json.dumps({"lines": lines, "count": len(lines), "read_id": read_id})
    msg = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool_use_id, "content": shown}]}  # fmt: skip
    return (json.dumps({"type": "user", "message": msg, "toolUseResult": shown}) + "\n").encode()


def _bash_call(tool_use_id: str) -> bytes:
    """The model's Bash call running the ack, in a later response than the read's."""
    block = {"type": "tool_use", "id": tool_use_id, "name": "Bash", "input": {"command": "ack"}}
    msg = {"id": f"msg_{tool_use_id}", "role": "assistant", "content": [block]}
    return (json.dumps({"type": "assistant", "message": msg}) + "\n").encode()


def _make_transcript(path: Path, size: int) -> None:
    block = _filler(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())  # written back before anything is timed


# The time of finding what was shown alone, per mode (the proof's own cost, without the
# ack's fsyncs, whose noise on a shared machine dwarfs it).
found: dict[str, list[float]] = {"kept": [], "end": [], "shell": []}


def _one(tmp: Path, t: Path, i: int, mode: str) -> float:
    """One read, its record appended to `t`, then the timed ack (`mode`: plain, kept, end)."""
    room_path = tmp / f"room-{mode}-{i}.txt"
    room_path.write_text("".join(f"{line}\n" for line in LINES))
    room = Room(room_path)
    got = room.read("agent")
    assert len(got.lines) == len(LINES)
    since = t.stat().st_size
    tid, read_id = f"toolu_{mode}_{i:04d}", f"{i:016x}"
    with open(t, "ab") as f:
        if mode == "shell":  # the read's own call, in its response (the shell's ack checks it)
            f.write(_bash_call(tid).replace(b'"Bash"', b'"mcp__ackdeck__room_list_new"'))
        f.write(_result(tid, LINES, read_id))
        f.write(_filler(4096))  # a turn or two after it
        if mode == "shell":
            f.write(_bash_call(f"toolu_bash_{i:04d}"))
        f.flush()
        # The ack's fsyncs would otherwise also write these dirty pages back (ext4 orders data
        # before its journal commit), in whichever mode's turn: noise, not the proof's cost.
        os.fsync(f.fileno())
    t0 = time.perf_counter()
    if mode == "plain":
        res = room.ack("agent")
    else:
        seen = transcript.find_seen(
            t,
            tool_use_id=tid if mode == "kept" else None,
            read_id=read_id,
            since=since if mode == "kept" else None,
            from_shell=mode == "shell",
        )
        found[mode].append(time.perf_counter() - t0)
        res = room.ack("agent", shown=Shown(transcript.shown_lines(seen.text), t.name))
    dt = time.perf_counter() - t0
    assert res.acked == len(LINES), res
    room.close()
    return dt


def _peak(find: Callable[[], object]) -> int:
    tracemalloc.start()
    find()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _memory(tmp: Path, size: int) -> tuple[int, int]:
    """Peak heap finding a read from the kept offset and from the end, on `size` bytes."""
    t = tmp / f"mem-{size}.jsonl"
    _make_transcript(t, size)
    since = t.stat().st_size
    with open(t, "ab") as f:
        f.write(_result("toolu_mem", LINES, "feedfacefeedface"))
    kept = _peak(lambda: transcript.find_seen(t, tool_use_id="toolu_mem", since=since))
    end = _peak(lambda: transcript.find_seen(t, tool_use_id=None, read_id="feedfacefeedface"))
    t.unlink()
    return kept, end


def main(argv: list[str] | None = None) -> None:
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    reps = 5 if quick else REPS
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-proof-") as d:
        tmp = Path(d)
        t = tmp / "session.jsonl"
        _make_transcript(t, SIZE)
        size_mb = t.stat().st_size / (1 << 20)
        times = {m: [] for m in ("plain", "kept", "end", "shell")}  # type: dict[str, list[float]]
        modes = list(times)
        for i in range(reps):
            # Interleaved, each first in turn: the machine's noise (other fsyncs, page cache
            # writeback of the transcript just appended) falls on the modes alike.
            k = i % len(modes)
            for mode in modes[k:] + modes[:k]:
                times[mode].append(_one(tmp, t, i, mode))
        med = {m: statistics.median(v) for m, v in times.items()}
        mem_small, mem_big = _memory(tmp, SMALL), _memory(tmp, SIZE)
    print(f"a proven ack of a 100-line read, transcript {size_mb:.0f} MB, median of {reps}")
    print(f"{'ack':<38} {'median ms':>10} {'best ms':>9} {'ratio':>7}")
    base = med["plain"]
    rows = [
        ("without proof (baseline)", "plain"),
        ("proven, from the offset kept at read", "kept"),
        ("proven, searched from the end", "end"),
        ("proven, from the agent's shell", "shell"),
    ]
    for label, m in rows:
        print(
            f"{label:<38} {med[m] * 1e3:>10.2f} {min(times[m]) * 1e3:>9.2f} {med[m] / base:>6.2f}x"
        )
    for label, m in (
        ("  of which finding what was shown", "kept"),
        ("  of which searching back", "end"),
        ("  of which searching back, shell call", "shell"),
    ):
        f = found[m]
        print(f"{label:<38} {statistics.median(f) * 1e3:>10.2f} {min(f) * 1e3:>9.2f} {'':>7}")
    ratio = med["kept"] / base
    own = statistics.median(found["kept"]) / base
    print(f"the proof's own cost (finding what was shown): {own:.1%} of the unproven ack")
    print(f"target: proven/unproven <= 1.2x: {'met' if ratio <= 1.2 else 'NOT met'} ({ratio:.2f}x)")
    print("peak heap finding what was shown (tracemalloc), kept offset / from the end:")
    for size, (kept, end) in ((SMALL, mem_small), (SIZE, mem_big)):
        print(f"  {size >> 20:>3} MB transcript: {kept / 1024:8.0f} KiB / {end / 1024:8.0f} KiB")


if __name__ == "__main__":
    main()
