"""Issue 42, round 4's classes rerun on the transcript proof reader (issue 41): Claude Code's
transcript is a file ackdeck does not write, so it is hostile input. A record nested past the
decoder's limit, or of a shape Claude Code never writes, makes the proof unknown (NoProof: the
ack is an estimate and says why), never an exception out of `room_ack`; a record of tens of MB
(a large tool result) costs a scan linear in its size, forward and backwards.

Held already, kept here as guards: a FIFO (tests/test_agent_proof.py), NaN and Infinity in a
record (no text is taken from them), a record cut mid-write (not shown, waited for)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ackdeck.core.clients.claude_code import transcript as tr
from ackdeck.core.errors import NoProof


def result(tool_use_id: str, content: object) -> str:
    """A tool result record as Claude Code writes it (one line of the transcript)."""
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    return json.dumps({"type": "user", "message": {"role": "user", "content": [block]}})


def write(path: Path, *records: str) -> Path:
    path.write_text("".join(r + "\n" for r in records))
    return path


@pytest.mark.parametrize("since", [0, None], ids=["from-the-read", "from-the-end"])
def test_a_record_nested_past_the_decoders_limit_is_no_proof_not_a_recursion_error(
    tmp_path: Path, since: int | None
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    t = write(
        tmp_path / "t.jsonl",
        result("toolu_0", "before"),
        # It names the read's tool call, so the reader must parse it.
        '{"type": "user", "tool_use_id": "toolu_1", "x": ' + deep + "}",
    )
    with pytest.raises(NoProof, match="is damaged"):
        tr.find_seen(t, tool_use_id="toolu_1", read_id="toolu_1", since=since, wait=0)


@pytest.mark.parametrize("replacements", [5, 1.5, True, "toolu_1", {"toolu_1": "x"}])
def test_a_content_replacement_of_a_shape_claude_code_never_writes_replaces_nothing(
    tmp_path: Path, replacements: object
) -> None:
    t = write(
        tmp_path / "t.jsonl",
        result("toolu_1", '{"lines":["a"]}'),
        json.dumps({"type": "content-replacement", "replacements": replacements, "x": "toolu_1"}),
    )
    assert tr.find_seen(t, tool_use_id="toolu_1", since=0, wait=0).text == '{"lines":["a"]}'


def test_nan_infinity_and_a_record_cut_mid_write_show_nothing_and_never_raise(
    tmp_path: Path,
) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(
        result("toolu_0", "x")
        + "\n"
        + '{"type": "user", "message": {"content": [{"type": "tool_result", '
        '"tool_use_id": "toolu_1", "content": [NaN, {"type": "text", "text": Infinity}]}]}}\n'
        + result("toolu_2", "cut")[:-10]  # Claude Code killed while writing it
    )
    assert tr.find_seen(t, tool_use_id="toolu_1", since=0, wait=0).text == ""
    assert tr.find_seen(t, tool_use_id="toolu_2", since=0, wait=0.05).text is None


def _read_through(path: Path) -> float:
    """Seconds to read `path` once in the reader's chunks: what a linear scan costs here."""
    began = time.monotonic()
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while chunk := os.pread(fd, tr.CHUNK, pos):
            chunk.split(b"\n")
            pos += len(chunk)
    finally:
        os.close(fd)
    return time.monotonic() - began


def test_a_record_of_tens_of_mb_is_scanned_in_linear_time_forward_and_backwards(
    tmp_path: Path,
) -> None:
    # A large tool result is one record of one line. Splitting the growing line again at
    # every 64 KiB chunk cost 33 s forward over 50 MB and 2.7 s backwards over 20 MB.
    big = result("toolu_big", "x" * (30 << 20))
    t = write(tmp_path / "t.jsonl", big, result("toolu_1", "hello"))
    linear = _read_through(t)
    began = time.monotonic()
    assert tr.find_seen(t, tool_use_id="toolu_1", since=0, wait=0).text == "hello"
    forward = time.monotonic() - began
    began = time.monotonic()
    seen = tr.find_seen(t, tool_use_id="toolu_big", since=None, wait=0)
    backward = time.monotonic() - began
    assert seen.text is not None and len(seen.text) == 30 << 20
    # Parsing the record (backwards) and a busy machine cost some multiple of one read.
    bound = 20 * linear + 2.0
    assert forward < bound and backward < bound, (forward, backward, linear)


def call(tool_use_id: str, message_id: str) -> str:
    """The model's message making a call, as Claude Code records it."""
    block = {"type": "tool_use", "id": tool_use_id, "name": "mcp__ackdeck__x", "input": {}}
    return json.dumps(
        {
            "type": "assistant",
            "message": {"id": message_id, "role": "assistant", "content": [block]},
        }
    )


# A transcript garbled, or deleted and written anew, between a read and its ack (seen in CI:
# Claude Code queues its writes, so the read's result can land after the damage). Each used to
# be taken for proof that the model was NOT shown the read, and the ack removed nothing while
# saying the transcript showed it; the proof is unknown: an estimate that says why.
def test_an_ack_finding_the_reads_result_but_not_its_call_has_no_proof(tmp_path: Path) -> None:
    # The read's call lost to the garbling; its result and the ack's call written after it.
    t = tmp_path / "t.jsonl"
    garbled = "\x00garbled\n" * 50
    t.write_text(garbled + result("read", "line 0\n") + "\n" + call("ack", "m2") + "\n")
    for since, why in ((None, "not its call"), (0, "not JSON")):
        with pytest.raises(NoProof, match=why):
            tr.find_seen(t, tool_use_id="read", read_id="r1", since=since, asked_by="ack", wait=0)
    # Damage between the result and the end, passed by the search from the end: said so.
    t.write_text(call("read", "m1") + "\n" + result("read", "line 0\n") + "\n" + garbled)
    with pytest.raises(NoProof, match="not JSON"):
        tr.find_seen(t, tool_use_id="read", read_id="r1", since=None, asked_by="ack", wait=0)
    # Missing without a trace of damage (records cut away): unknown too, not unseen.
    write(t, result("read", "line 0\n"), call("ack", "m2"))
    with pytest.raises(NoProof, match="not its call"):
        tr.find_seen(t, tool_use_id="read", read_id="r1", since=None, asked_by="ack", wait=0)


def test_a_transcript_written_anew_since_the_read_has_no_proof(tmp_path: Path) -> None:
    t = write(tmp_path / "t.jsonl", json.dumps({"type": "system", "uuid": "a" * 36}))
    mark = tr.mark_of(t)
    assert mark is not None
    since, before = mark
    # Deleted; Claude Code's next writes make a new file, as long, without the old records.
    t.unlink()
    write(
        t,
        json.dumps({"type": "system", "uuid": "b" * 36}),
        call("read", "m1"),
        result("read", "line 0\n"),
        call("ack", "m2"),
    )
    with pytest.raises(NoProof, match="rewritten since the read"):
        tr.find_seen(t, tool_use_id="read", since=since, before=before, asked_by="ack", wait=0)
    # The same file grown by appends keeps the bytes before the mark: proven.
    t.unlink()
    write(t, json.dumps({"type": "system", "uuid": "a" * 36}))
    with open(t, "a") as f:
        f.write(
            call("read", "m1") + "\n" + result("read", "line 0\n") + "\n" + call("ack", "m2") + "\n"
        )
    seen = tr.find_seen(t, tool_use_id="read", since=since, before=before, asked_by="ack", wait=0)
    assert seen.text == "line 0\n"
    assert tr.mark_of(tmp_path / "none.jsonl") is None


# ----- a batch of records caught half written --------------------------------------------------
# Claude Code writes a batch of records in one write, which the kernel copies page by page: a
# hook or a read that looks at the transcript then can see it end inside a record. Seen under
# load: a prompt hook kept the size of such a file, its Stop hook's check started inside the
# SessionStart hook's record, read its tail as damage, and handed the wake over again.
START = json.dumps(
    {
        "type": "attachment",
        "attachment": {"type": "hook_success", "hookEvent": "SessionStart", "content": "x" * 300},
    }
)


def test_a_hand_over_made_while_a_batch_is_half_written_is_proven_by_the_answer(
    tmp_path: Path,
) -> None:
    from ackdeck.core.clients.claude_code import handed

    home, t = tmp_path / "home", tmp_path / "s.jsonl"
    text = "ackdeck: handed over again\nackdeck: 1 process wake"
    half = START.index("hook_success") - 5  # its tail holds what the check looks for
    t.write_text(START[:half])  # the batch so far: the SessionStart hook's record, cut
    handed.hand_over(home, "agent", str(t), text, None, at_stop=False)
    prompt_hook = {
        "type": "attachment",
        "attachment": {"type": "hook_success", "hookEvent": "UserPromptSubmit", "content": text},
    }
    answer = {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": []}}
    with open(t, "a") as f:  # the rest of the batch, the hook's record, the model's answer
        f.write(START[half:] + "\n" + json.dumps(prompt_hook) + "\n" + json.dumps(answer) + "\n")
    assert handed.unproven(home, "agent") is None  # answered: proven, forgotten
    assert not (home / "wakes" / "agent" / ".handed.json").exists()


def test_a_read_made_while_a_batch_is_half_written_keeps_a_mark_at_a_record_end(
    tmp_path: Path,
) -> None:
    t = tmp_path / "t.jsonl"
    first = json.dumps({"type": "system", "uuid": "a" * 36})
    t.write_text(first + "\n" + START[:100])
    assert tr.records_end(t) == len(first) + 1
    mark = tr.mark_of(t)
    assert mark is not None and mark[0] == len(first) + 1
    since, before = mark
    with open(t, "a") as f:
        f.write(START[100:] + "\n")
        f.write(
            "".join(
                r + "\n" for r in (call("read", "m1"), result("read", "l0\n"), call("ack", "m2"))
            )
        )
    seen = tr.find_seen(t, tool_use_id="read", since=since, before=before, asked_by="ack", wait=0)
    assert seen.text == "l0\n"
    t.write_text(START[:50])  # no whole record yet: everything follows from the start
    assert tr.records_end(t) == 0 and tr.mark_of(t) == (0, b"")
    assert tr.records_end(tmp_path) is None and tr.records_end(tmp_path / "none") is None
