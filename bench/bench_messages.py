"""`python -m bench messages`: `ackdeck messages` over 50 Claude Code sessions with 10 MB
transcripts, reading from kept offsets vs reading each transcript's tail, in the same run
(issue 44, item 8).

Each session is a lead transcript (10 MB of ordinary records with a SendMessage every MB)
and its teammate's (the requests that carried them, each answered). Measured, medians of
REPS runs:

- kept offsets, nothing new: `list_messages` with its cache (what a dashboard or a metrics
  scrape pays while the agents are idle);
- kept offsets, one message more in 5 sessions: only the appended bytes are read;
- tails alone (the baseline): each transcript's last TAIL bytes read and parsed from scratch
  on every look, as a tool without kept offsets does (and which misses older messages);
- the first look (no cache): every byte once.

Bytes read are counted by the service itself (`read_bytes`) for the kept-offset looks.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ackdeck.core.clients.claude_code import messages as cm
from ackdeck.core.service.claude_messages import list_messages

SESSIONS = 50
SIZE = 10 << 20
TAIL = 8 << 20  # what `ackdeck tasks` reads of a transcript (claude_tasks.TRANSCRIPT_TAIL)
REPS = 5


def _line(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _filler(n: int) -> bytes:
    rec = {"type": "assistant", "timestamp": "2026-12-07T05:00:00.000Z",
           "message": {"id": "msg_f", "role": "assistant",
                       "content": [{"type": "text", "text": "working on it " * 120}]}}  # fmt: skip
    user = {"type": "user", "timestamp": "2026-12-07T05:00:00.000Z", "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "x",
                                     "content": "file contents " * 400}]}}  # fmt: skip
    block = _line(rec) + _line(user)
    return block * max(1, n // len(block))


def _send(i: int, at: str) -> bytes:
    call = {"type": "tool_use", "id": f"t{i}", "name": "SendMessage",
            "input": {"to": "worker", "summary": f"m{i}", "message": f"MSG-{i}"}}  # fmt: skip
    res = {"success": True, "msg_id": f"id-{i}"}
    return _line(
        {
            "type": "assistant",
            "timestamp": at,
            "message": {"id": f"msg_s{i}", "role": "assistant", "content": [call]},
        }  # fmt: skip
    ) + _line(
        {
            "type": "user",
            "timestamp": at,
            "message": {
                "role": "user",
                "content": [
                    {"tool_use_id": f"t{i}", "type": "tool_result", "content": json.dumps(res)}
                ],
            },
        }  # fmt: skip
    )


def _carry(i: int, at: str) -> bytes:
    body = (
        f'<teammate-message teammate_id="team-lead" summary="m{i}">\nMSG-{i}\n</teammate-message>'
    )
    return _line(
        {"type": "user", "timestamp": at, "message": {"role": "user", "content": body}}
    ) + _line(
        {
            "type": "assistant",
            "timestamp": at,
            "message": {
                "id": f"msg_a{i}",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
            },
        }  # fmt: skip
    )


def _make(claude: Path, sessions: int, size: int) -> list[tuple[Path, Path]]:
    out = []
    filler = _filler(1 << 20)
    project = claude / "projects" / "-w-proj"
    for s in range(sessions):
        sid = f"{s:08x}-0000-4000-8000-000000000000"
        sub = project / sid / "subagents"
        sub.mkdir(parents=True)
        lead, mate = project / f"{sid}.jsonl", sub / "agent-aworker-0f.jsonl"
        (sub / "agent-aworker-0f.meta.json").write_text(json.dumps({"name": "worker"}))
        with open(lead, "wb") as f, open(mate, "wb") as g:
            for mb in range(max(1, size >> 20)):
                at = f"2026-12-07T05:{mb // 60:02d}:{mb % 60:02d}.000Z"
                f.write(filler + _send(mb, at))
                g.write(_carry(mb, at))
        out.append((lead, mate))
    return out


def _tails(paths: list[Path]) -> tuple[int, int]:
    """The baseline: each transcript's last TAIL bytes, parsed from scratch (no state)."""
    read = found = 0
    for p in paths:
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = max(0, size - TAIL)
            data = os.pread(f.fileno(), size - start, start)
        read += len(data)
        if start:
            cut = data.find(b"\n") + 1  # from the first whole record
            data, start = data[cut:], start + cut
        s = cm.feed(cm.Scanned.empty(0), data, start)
        found += len(s.sent) + len(s.carried)
    return read, found


def _timed(fn):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def main(argv: list[str] | None = None) -> None:
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    sessions, size, reps = (10, 2 << 20, 3) if quick else (SESSIONS, SIZE, REPS)
    with tempfile.TemporaryDirectory(prefix="bench-messages-") as tmp:
        root = Path(tmp)
        claude, home = root / "claude", root / "home"
        env = {"CLAUDE_CONFIG_DIR": str(claude), "HOME": str(root)}
        pairs = _make(claude, sessions, size)
        paths = [p for pair in pairs for p in pair]
        total = sum(p.stat().st_size for p in paths)
        first_t, first = _timed(lambda: list_messages(env, home))
        rows: dict[str, list[float]] = {"idle": [], "grown": [], "tails": []}
        idle_read = grown_read = tail_read = 0
        n = len(first.messages)
        for r in range(reps):
            t, got = _timed(lambda: list_messages(env, home))
            rows["idle"].append(t)
            idle_read = got.read_bytes
            for lead, mate in pairs[:5]:
                at = f"2026-12-07T06:00:{r:02d}.000Z"
                with open(lead, "ab") as f:
                    f.write(_send(10_000 + r, at))
                with open(mate, "ab") as g:
                    g.write(_carry(10_000 + r, at))
            t, got = _timed(lambda: list_messages(env, home))
            rows["grown"].append(t)
            grown_read = got.read_bytes
            n = len(got.messages)
            t, (tail_read, _) = _timed(lambda: _tails(paths))
            rows["tails"].append(t)
        med = {k: statistics.median(v) for k, v in rows.items()}
        print(f"{sessions} sessions, {total / (1 << 20):.0f} MB of transcripts, {n} messages")
        print(f"{'look':<38} {'median s':>9} {'MB read':>9} {'vs tails':>9}")
        print(f"{'first look (no kept offsets)':<38} {first_t:>9.3f} "
              f"{first.read_bytes / (1 << 20):>9.1f} {first_t / med['tails']:>8.2f}x")  # fmt: skip
        for key, label, read in (
            ("idle", "kept offsets, nothing new", idle_read),
            ("grown", "kept offsets, 5 sessions grew", grown_read),
            ("tails", f"tails alone ({TAIL >> 20} MB each, baseline)", tail_read),
        ):
            print(
                f"{label:<38} {med[key]:>9.3f} {read / (1 << 20):>9.3f} "
                f"{med[key] / med['tails']:>8.2f}x"
            )


if __name__ == "__main__":
    main()
