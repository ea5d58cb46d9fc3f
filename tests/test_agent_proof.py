"""Delivered is proven by the client's own record, not estimated (issue 41).

Real Claude Code (`claude -p`) runs offline against the scripted model stand-in with ackdeck as
its MCP server, as in tests/test_agent_loops.py. Each test makes Claude Code show its model
less than ackdeck handed over, the ways a user's settings do: MAX_MCP_OUTPUT_TOKENS below the
reply (Claude Code refuses it: the model gets an error text), a project PostToolUse hook that
replaces ackdeck's output with a one-line summary (`updatedMCPToolOutput`), a large reply
persisted behind a 2 KB preview. The ack must then remove exactly the lines the transcript
shows the model received whole, as a prefix, and keep the rest unread; the line a producer
appends between the read and the ack survives every time. When the transcript is deleted or
garbled between the read and the ack, the ack is an estimate, says so and why, and loses
nothing the model was not shown (it removes what was handed over, as before).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import agent_clients as clients
from tests.helpers.model_stub import Call, ModelStub, Say, Step, Together
from tests.helpers.wait import eventually

PROMPT = "Handle the notifications waiting in your ackdeck inbox, then stop."
LATE = "[ops] deploy-bot: arrived between the read and the ack"
NAMES = "mcp__ackdeck__room_list_new,mcp__ackdeck__room_ack"


@dataclass
class ProofSetup(clients.Setup):
    """A Claude Code session whose ackdeck server gets `server_args` (e.g. --reply-chars, a
    budget an owner raised) and whose project may carry its own hooks."""

    server_args: list[str] = field(default_factory=list)

    def server(self) -> dict[str, object]:
        entry = super().server()
        return entry | {"args": [*entry["args"], *self.server_args]}  # type: ignore[misc]

    def transcripts(self) -> list[Path]:
        return sorted((self.user_home / ".claude" / "projects").glob("*/*.jsonl"))


@dataclass
class Outcome:
    lines: list[str]
    read_view: str  # what the model received for the read
    ack: dict[str, object]  # room_ack's structured result, as the model received it
    left: list[str]
    errors: list[str]
    setup: ProofSetup

    @property
    def removed(self) -> list[str]:
        return [line for line in self.lines if line not in self.left]


def run(
    root: Path,
    n: int,
    *,
    server_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    hook: str | None = None,
    between: str | None = None,
    args: tuple[str, ...] = (),
    chars_per_token: float = 4.0,
) -> Outcome:
    """read -> (a producer appends LATE; `between` damages the transcript) -> ack -> stop.
    `chars_per_token`: how densely the stand-in model tokenises (its count_tokens)."""
    s = ProofSetup(root, server_args=list(server_args)).make()
    lines = [f"[ops] bot: event {i:05d} ok" for i in range(n)]
    s.room.write_text("".join(f"{line}\n" for line in lines))
    if hook is not None:  # a project PostToolUse hook replacing the read's output
        script = s.root / "summary_hook.py"
        out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": hook}}
        script.write_text(f"import sys, json\nsys.stdin.read()\nprint(json.dumps({out!r}))\n")
        settings = {
            "hooks": {
                "PostToolUse": [
                    {
                        "matcher": "mcp__ackdeck__room_list_new",
                        "hooks": [{"type": "command", "command": f"{sys.executable} {script}"}],
                    }
                ]
            }
        }
        (s.workdir / ".claude").mkdir(exist_ok=True)
        (s.workdir / ".claude" / "settings.json").write_text(json.dumps(settings))

    def producer() -> None:
        with open(s.room, "a") as f:
            f.write(LATE + "\n")
        if between is not None:
            # Claude Code queues its transcript writes: the read's result may reach the file
            # after the model was asked for the ack. Damage the record once it is there; a
            # record written after the damage is the client's true word, not this test's case.
            # The read's result is the one tool result holding a room line (ToolSearch's,
            # before it, names read_id too: it lists room_ack's schema).
            (transcript,) = eventually(s.transcripts, what="the session's transcript")
            eventually(
                lambda: any(
                    b'"tool_result"' in record and lines[0].encode() in record
                    for record in transcript.read_bytes().splitlines()
                ),
                what="the read's result in the transcript",
            )
            if between == "deleted":
                transcript.unlink()
            else:  # garbled: every record replaced by bytes that are no JSON
                transcript.write_bytes(b"\x00garbled\n" * (transcript.stat().st_size // 9 + 1))

    read = Call("mcp__ackdeck__room_list_new", {})
    ack = Call("mcp__ackdeck__room_ack", {}, before=producer)
    search = Call("ToolSearch", {"query": f"select:{NAMES}", "max_results": 5})
    with ModelStub([search, read, ack, Say("done")], chars_per_token=chars_per_token) as stub:
        done = clients.claude(
            s, stub.url, PROMPT, hooks=False, extra_env=env, extra_args=list(args)
        )
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        read_view, ack_view = stub.result_of(read), stub.result_of(ack)
    return Outcome(
        lines, read_view, json.loads(ack_view), s.room.read_text().splitlines(), stub.errors, s
    )


def summary_hook(s: ProofSetup, keep: str) -> None:
    """A project PostToolUse hook replacing room_list_new's output with a summary: the read's
    id (taken from the output it is given) and `keep` on a line of its own."""
    script = s.root / "summary_hook.py"
    script.write_text(
        "import json, re, sys\n"
        "raw = sys.stdin.read()\n"
        "rid = re.search(r'read_id[^0-9a-f]+([0-9a-f]{16})', raw).group(1)\n"
        f"text = 'read_id ' + rid + '; the first line:\\n' + {keep!r}\n"
        "out = {'hookEventName': 'PostToolUse', 'updatedMCPToolOutput': text}\n"
        "print(json.dumps({'hookSpecificOutput': out}))\n"
    )
    command = f"{sys.executable} {script}"
    hook = {
        "matcher": "mcp__ackdeck__room_list_new",
        "hooks": [{"type": "command", "command": command}],
    }
    (s.workdir / ".claude").mkdir(exist_ok=True)
    (s.workdir / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PostToolUse": [hook]}})
    )


def whole_prefix(view: str, lines: list[str]) -> list[str]:
    """The lines, from the first, that appear whole in what the model received (as JSON
    strings, or as text ending a line), independently of ackdeck's own matching."""
    seen = []
    for line in lines:
        if json.dumps(line) in view or f"\n{line}\n" in f"\n{view}\n":
            seen.append(line)
        else:
            break
    return seen


def test_a_reply_refused_under_max_mcp_output_tokens_acks_nothing(tmp_path: Path) -> None:
    # ackdeck keeps a reply under MAX_MCP_OUTPUT_TOKENS at 3 characters a token, but this
    # model tokenises more densely (its count_tokens says 1.5): Claude Code refuses (does not
    # cut) the result, so the model got an error text and none of the lines. The estimate was
    # wrong; the transcript says so, and nothing is acked.
    out = run(
        tmp_path,
        200,
        server_args=("--reply-chars", "40000"),
        env={"MAX_MCP_OUTPUT_TOKENS": "1000"},
        chars_per_token=1.5,
    )
    assert out.errors == []
    assert "[ops] bot: event 00000 ok" not in out.read_view, out.read_view[:300]
    assert out.removed == [], f"acked {len(out.removed)} lines the model never saw"
    assert out.left == [*out.lines, LATE]
    # Every line the read handed over (a page under the budget, not all 200) is kept unshown.
    assert out.ack["proof"] == "transcript" and 0 < out.ack["unshown"] <= 200, out.ack
    assert out.ack["acked"] == 0 and "room_list_new" in str(out.ack["next"])


def test_a_hook_replacing_the_read_with_a_summary_acks_only_the_lines_in_it(
    tmp_path: Path,
) -> None:
    summary = "50 new ops lines; the first:\n[ops] bot: event 00000 ok"
    out = run(tmp_path, 50, hook=summary)
    assert out.errors == []
    assert out.read_view == summary  # what the model was shown instead of ackdeck's reply
    assert out.removed == ["[ops] bot: event 00000 ok"], (len(out.removed), out.ack)
    assert out.left == [*out.lines[1:], LATE]
    assert out.ack["proof"] == "transcript" and out.ack["unshown"] == 49, out.ack


def test_a_read_persisted_behind_a_preview_acks_only_the_lines_whole_in_the_preview(
    tmp_path: Path,
) -> None:
    # About 70 KB of structured JSON: Claude Code saves it to a file and shows a 2 KB preview.
    out = run(tmp_path, 2000, server_args=("--reply-chars", "200000"))
    assert out.errors == []
    assert "<persisted-output>" in out.read_view, out.read_view[:300]
    seen = whole_prefix(out.read_view, out.lines)
    assert 0 < len(seen) < 100, len(seen)
    assert out.removed == seen, (len(out.removed), len(seen))
    assert out.left == [*out.lines[len(seen) :], LATE]
    assert out.ack["proof"] == "transcript" and out.ack["unshown"] == 2000 - len(seen)


def check_estimate(out: Outcome, why: str) -> None:
    assert out.errors == []
    # The model was shown the whole small read: the estimate removes it, the late line stays.
    assert whole_prefix(out.read_view, out.lines) == out.lines
    assert out.left == [LATE], out.ack
    assert out.ack["proof"] == "estimate", out.ack
    note = str(out.ack["proof_note"])
    assert why in note and "\n" not in note, note


def test_a_transcript_deleted_between_read_and_ack_makes_the_ack_an_estimate(
    tmp_path: Path,
) -> None:
    check_estimate(run(tmp_path, 3, between="deleted"), "transcript")


def test_a_transcript_garbled_between_read_and_ack_makes_the_ack_an_estimate(
    tmp_path: Path,
) -> None:
    check_estimate(run(tmp_path, 3, between="garbled"), "transcript")


def test_a_session_claude_code_does_not_save_is_an_estimate_from_the_read_on(
    tmp_path: Path,
) -> None:
    out = run(tmp_path, 3, args=("--no-session-persistence",))
    check_estimate(out, "transcript")
    assert '"proof":"estimate"' in out.read_view.replace(" ", ""), out.read_view


def test_an_ordinary_read_and_ack_is_proven_by_the_transcript(tmp_path: Path) -> None:
    out = run(tmp_path, 3)
    assert out.errors == [] and out.left == [LATE]
    assert '"proof":"transcript"' in out.read_view.replace(" ", ""), out.read_view
    assert out.ack["proof"] == "transcript" and out.ack["proof_note"] is None
    # `room trace` of the first line says which transcript showed it to the model.
    from tests.helpers.cli import ackdeck, clean_env

    s = out.setup
    (transcript,) = s.transcripts()
    args = ("--home", str(s.home), "room", "trace", str(s.room), "0")
    trace = ackdeck(clean_env(), *args, "--json")
    (journey,) = json.loads(trace.stdout)["lines"]
    assert journey["proof"] == f"Claude Code transcript {transcript.name}", journey
    text = ackdeck(clean_env(), *args).stdout
    assert f"shown to its model per its Claude Code transcript {transcript.name}" in text, text


# ----- the decision and the transcript reader, on real files ----------------------------------
def test_a_repeated_line_counts_only_as_often_as_the_model_was_shown_it() -> None:
    from ackdeck.core.clients.claude_code.transcript import shown_prefix

    cut = '{"lines":["same","same","oth'  # a preview cut inside the third line
    assert shown_prefix(["same", "same", "same", "other"], cut) == 2
    assert shown_prefix(["x ok", "ok"], "x ok\nnot ok") == 1  # "ok" is not a whole line
    assert shown_prefix(["a"], None) == 0


def _record(tool_use_id: str, text: str, original: str = "") -> str:
    msg = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}],
    }
    return json.dumps({"type": "user", "message": msg, "toolUseResult": original}) + "\n"


def _call(tool_use_id: str, message_id: str) -> str:
    """One block of a model response as Claude Code records it: each block a record of its
    own, every block of one response with the response's id."""
    block = {"type": "tool_use", "id": tool_use_id, "name": "mcp__ackdeck__x", "input": {}}
    msg = {"id": message_id, "role": "assistant", "content": [block]}
    return json.dumps({"type": "assistant", "message": msg}) + "\n"


def test_an_ack_in_the_same_response_as_its_read_recorded_after_the_result_saw_nothing(
    tmp_path: Path,
) -> None:
    # Claude Code records a response's blocks one by one and may run the read (and record
    # its result) before the ack's block is written: the ack's call then follows the result
    # in the transcript although the model made it in the same response, unseen.
    from ackdeck.core.clients.claude_code.transcript import find_seen

    t = tmp_path / "s.jsonl"
    same = _call("read", "msg_1") + _record("read", "line 0\n") + _call("ack", "msg_1")
    t.write_text(same)
    assert find_seen(t, tool_use_id="read", since=0, asked_by="ack", wait=0).text is None
    # The ack in a later response (another id) was made having seen the result.
    t.write_text(_call("read", "msg_1") + _record("read", "line 0\n") + _call("ack", "msg_2"))
    assert find_seen(t, tool_use_id="read", since=0, asked_by="ack", wait=0).text == "line 0\n"


def test_a_later_content_replacement_is_what_the_model_was_shown(tmp_path: Path) -> None:
    from ackdeck.core.clients.claude_code.transcript import find_seen

    t = tmp_path / "s.jsonl"
    t.write_text(json.dumps({"type": "assistant"}) + "\n")
    since = t.stat().st_size
    rep = {"kind": "tool-result", "toolUseId": "toolu_1", "replacement": '{"lines":["a"'}
    with open(t, "a") as f:
        f.write(_record("toolu_1", '{"lines":["a","b"]}'))
        f.write(json.dumps({"type": "content-replacement", "replacements": [rep]}) + "\n")
    assert find_seen(t, tool_use_id="toolu_1", since=since).text == '{"lines":["a"'


def test_an_ack_without_a_kept_offset_finds_its_read_from_the_transcripts_end(
    tmp_path: Path,
) -> None:
    from ackdeck.core.clients.claude_code import transcript as tr

    t = tmp_path / "s.jsonl"
    filler = json.dumps({"type": "assistant", "pad": "x" * 1000}) + "\n"
    original = '{"lines":["a"],"read_id":"0123456789abcdef"}'
    t.write_text(filler * 300 + _record("toolu_9", "summary", original) + filler * 300)
    seen = tr.find_seen(t, tool_use_id=None, read_id="0123456789abcdef")
    assert (seen.tool_use_id, seen.text) == ("toolu_9", "summary")  # never the original


def test_a_result_that_never_reached_the_transcript_was_not_shown(tmp_path: Path) -> None:
    from ackdeck.core.clients.claude_code.transcript import find_seen

    t = tmp_path / "s.jsonl"
    t.write_text(_record("toolu_other", '{"lines":["a"]}'))
    assert find_seen(t, tool_use_id="toolu_1", since=0, wait=0.05).text is None


def test_a_proven_ack_after_another_session_acked_part_of_the_read(tmp_path: Path) -> None:
    # A reads 4 lines; B reads and acks the first 2; A's model was shown 3: the ack removes
    # only the third (the first two are gone already), the fourth stays unread for A.
    from ackdeck.core.rooms.file.room import Room
    from ackdeck.core.rooms.results import Shown

    path = tmp_path / "inbox.txt"
    path.write_text("l1\nl2\nl3\nl4\n")
    room = Room(path)
    assert len(room.read("a").lines) == 4
    assert len(room.read("b", max_bytes=6).lines) == 2
    assert room.ack("b").acked == 2
    shown = Shown(lambda lines: 3 - (4 - len(lines)), "test record")
    res = room.ack("a", shown=shown)
    assert (res.acked, res.unshown) == (1, 1), res
    assert path.read_text() == "l4\n"
    assert [line.decode() for line in room.read("a").lines] == ["l4"]


def test_a_cli_read_and_ack_from_the_agents_shell_say_why_they_are_estimates(
    tmp_path: Path,
) -> None:
    # Inside Claude Code (its Bash tool), the CLI cannot find its own call in the transcript:
    # it must say so rather than pass for proven, and still work as before.
    from tests.helpers.cli import ackdeck, clean_env

    room = tmp_path / "inbox.txt"
    room.write_text("a\nb\n")
    env = clean_env() | {"CLAUDE_CODE_SESSION_ID": "0b9c7d1e-session"}
    home = ("--home", str(tmp_path / "home"))
    read = ackdeck(env, *home, "room", "read", str(room), "--session", "s", "--json")
    ack = ackdeck(env, *home, "room", "ack", str(room), "--session", "s", "--json")
    for out in (read, ack):
        doc = json.loads(out.stdout)
        assert doc["proof"] == "estimate" and "Bash tool" in doc["proof_note"], doc
    assert json.loads(ack.stdout)["acked"] == 2 and room.read_text() == ""
    # The line's journey (room trace, the dashboard's journey view) marks the ack an estimate.
    trace = ackdeck(env, *home, "room", "trace", str(room), "0").stdout
    assert "an estimate (no client record proved it shown)" in trace, trace


def test_an_ack_by_read_id_in_a_resumed_session_is_proven_by_the_transcript(
    tmp_path: Path,
) -> None:
    # Run 1 reads (a hook shows the model the read id and the first line only) and stops.
    # Run 2 is `claude -p --resume` of that session: a new ackdeck server, which kept nothing,
    # acks by the read id; the transcript (appended to by both runs) proves one line shown.
    s = ProofSetup(tmp_path).make()
    lines = [f"[ops] bot: event {i:05d} ok" for i in range(20)]
    s.room.write_text("".join(f"{line}\n" for line in lines))
    summary_hook(s, lines[0])
    search = Call("ToolSearch", {"query": f"select:{NAMES}", "max_results": 5})
    read = Call("mcp__ackdeck__room_list_new", {})
    with ModelStub([search, read, Say("later")]) as stub:
        first = clients.claude(s, stub.url, PROMPT, hooks=False)
        assert first.returncode == 0, first.stderr[-2000:]
        view = stub.result_of(read)
    assert lines[0] in view and lines[1] not in view, view
    read_id = view.split()[1].rstrip(";")
    session = json.loads(first.stdout)["session_id"]

    def producer() -> None:
        with open(s.room, "a") as f:
            f.write(LATE + "\n")

    ack = Call("mcp__ackdeck__room_ack", {"read_id": read_id}, before=producer)
    with ModelStub([search, ack, Say("done")], ids="resumed") as stub:
        second = clients.claude(
            s, stub.url, "Ack what you read.", hooks=False, extra_args=["--resume", session]
        )
        assert second.returncode == 0, second.stderr[-2000:]
        acked = json.loads(stub.result_of(ack))
        assert stub.errors == []
    assert acked["proof"] == "transcript" and acked["acked"] == 1, acked
    assert s.room.read_text().splitlines() == [*lines[1:], LATE]


def test_an_ack_made_in_the_same_turn_as_its_read_acks_nothing(tmp_path: Path) -> None:
    # The model calls room_list_new and room_ack in one message: it acked before it saw a
    # single line (the read's result is recorded after the message making the ack).
    s = ProofSetup(tmp_path).make()
    lines = [f"line {i}" for i in range(5)]
    s.room.write_text("".join(f"{line}\n" for line in lines))
    search = Call("ToolSearch", {"query": f"select:{NAMES}", "max_results": 5})
    read, ack = Call("mcp__ackdeck__room_list_new", {}), Call("mcp__ackdeck__room_ack", {})
    with ModelStub([search, Together([read, ack]), Say("done")]) as stub:
        done = clients.claude(s, stub.url, PROMPT, hooks=False)
        assert done.returncode == 0, done.stderr[-2000:]
        assert all(line in stub.result_of(read) for line in lines)  # it was handed over
        acked = json.loads(stub.result_of(ack))
    assert s.room.read_text().splitlines() == lines
    assert (acked["acked"], acked["unshown"], acked["proof"]) == (0, 5, "transcript"), acked


def test_a_fifo_where_the_transcript_should_be_is_no_proof_and_never_blocks(
    tmp_path: Path,
) -> None:
    import os

    import pytest

    from ackdeck.core.clients.claude_code.transcript import find_seen
    from ackdeck.core.errors import NoProof

    t = tmp_path / "s.jsonl"
    os.mkfifo(t)
    with pytest.raises(NoProof, match="not a regular file"):
        find_seen(t, tool_use_id="toolu_1", since=0)


def test_a_project_path_longer_than_claude_codes_directory_names_is_still_proven(
    tmp_path: Path,
) -> None:
    # Claude Code cuts a project's directory name at 200 characters and adds a hash: the
    # server finds the session's transcript by the name's first 200 characters.
    deep = tmp_path / ("a-long-project-folder-" * 10) / "and-deeper"
    out = run(deep, 3)
    (transcript,) = out.setup.transcripts()
    assert len(transcript.parent.name) > 200, transcript.parent.name
    assert out.left == [LATE] and out.ack["proof"] == "transcript", out.ack


def test_after_a_refused_reply_the_next_reads_shrink_until_the_model_is_shown_lines(
    tmp_path: Path,
) -> None:
    # A reply Claude Code refuses would be refused again at the same size: the server sizes
    # the next reads by what the transcript proved (a quarter each time nothing was shown),
    # so the agent gets on: each ack removes exactly the lines whole in what it was shown.
    s = ProofSetup(tmp_path, server_args=["--reply-chars", "40000"]).make()
    lines = [f"[ops] bot: event {i:05d} ok" for i in range(200)]
    s.room.write_text("".join(f"{line}\n" for line in lines))
    search = Call("ToolSearch", {"query": f"select:{NAMES}", "max_results": 5})
    reads = [Call("mcp__ackdeck__room_list_new", {}) for _ in range(4)]
    acks = [Call("mcp__ackdeck__room_ack", {}) for _ in range(4)]
    steps: list[Step] = [search]
    for r, a in zip(reads, acks, strict=True):
        steps += [r, a]
    env = {"MAX_MCP_OUTPUT_TOKENS": "1000"}
    # A model that tokenises densely (count_tokens: 1.5 characters a token): the first reply,
    # sized at ackdeck's 3 characters a token, is refused.
    with ModelStub([*steps, Say("done")], chars_per_token=1.5) as stub:
        done = clients.claude(s, stub.url, PROMPT, hooks=False, extra_env=env, max_turns=20)
        assert done.returncode == 0, done.stderr[-2000:]
        views = [stub.result_of(r) for r in reads]
        results = [json.loads(stub.result_of(a)) for a in acks]
    first = results[0]
    assert first["acked"] == 0 and first["unshown"] > 0, (first, views[0][:300])  # refused
    removed, rest = [], list(lines)
    for view, res in zip(views, results, strict=True):
        seen = whole_prefix(view, rest)
        assert res["proof"] == "transcript" and res["acked"] == len(seen), (res, view[:200])
        removed += seen
        rest = rest[len(seen) :]
    assert removed, [r["unshown"] for r in results]  # the agent got on
    assert s.room.read_text().splitlines() == rest


def test_an_ack_by_read_id_looks_back_a_bounded_distance_and_then_estimates(
    tmp_path: Path,
) -> None:
    import pytest

    from ackdeck.core.clients.claude_code.transcript import find_seen
    from ackdeck.core.errors import NoProof

    t = tmp_path / "s.jsonl"
    filler = json.dumps({"type": "assistant", "pad": "x" * 1000}) + "\n"
    t.write_text(_record("toolu_9", '{"read_id":"0123456789abcdef"}') + filler * 2000)
    with pytest.raises(NoProof, match="in its last 1 MB"):
        find_seen(t, tool_use_id=None, read_id="0123456789abcdef", back_limit=1 << 20)
    seen = find_seen(t, tool_use_id=None, read_id="0123456789abcdef", back_limit=4 << 20)
    assert seen.tool_use_id == "toolu_9"


def test_two_large_reads_in_one_turn_each_ack_only_what_its_own_result_showed(
    tmp_path: Path,
) -> None:
    # The model reads two rooms in one response; both replies are large, and Claude Code
    # treats them apart: the first (87 KB, over its 50,000-character threshold) is persisted
    # behind a 2 KB preview, the second (46 KB) is shown whole. Each ack (made later, in one
    # response) must be judged by its own read's result: the preview's few lines for the
    # first, every line for the second. The estimate would remove all the first read handed
    # over. (Claude Code 2.1.328's per-message budget, which would replace one of several
    # results together over 200,000 characters by a `content-replacement`, is behind a
    # server-side flag that is off offline; its record is read as
    # test_a_later_content_replacement_is_what_the_model_was_shown checks.)
    second = tmp_path / "rooms" / "second.txt"
    s = ProofSetup(tmp_path, server_args=["--reply-chars", "90000", "--room", str(second)]).make()
    big = [f"[ops] big-bot: event {i:05d} ok, padded to be read in pages" for i in range(6000)]
    wide = [f"[ci] wide-bot: job {i:04d} passed, padded to forty-odd chars" for i in range(700)]
    s.room.write_text("".join(f"{line}\n" for line in big))
    second.write_text("".join(f"{line}\n" for line in wide))

    def producer() -> None:
        for room in (s.room, second):
            with open(room, "a") as f:
                f.write(LATE + "\n")

    search = Call("ToolSearch", {"query": f"select:{NAMES}", "max_results": 5})
    reads = [Call("mcp__ackdeck__room_list_new", {"room": str(r)}) for r in (s.room, second)]
    acks = [Call("mcp__ackdeck__room_ack", {"room": str(r)}) for r in (s.room, second)]
    steps: list[Step] = [search, Together(reads), Together(acks, before=producer), Say("done")]
    with ModelStub(steps) as stub:
        done = clients.claude(s, stub.url, PROMPT, hooks=False)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        assert stub.errors == []
        views = [stub.result_of(r) for r in reads]
        results = [json.loads(stub.result_of(a)) for a in acks]
    assert "<persisted-output>" in views[0], views[0][:300]
    assert "<persisted-output>" not in views[1] and len(views[1]) > 40_000, views[1][:300]
    # What the first read handed over: the persisted original (the model saw its preview).
    (persisted,) = s.user_home.glob(".claude/projects/*/*/tool-results/*")
    handed = json.loads(persisted.read_text())["count"]
    shown = whole_prefix(views[0], big)
    assert 0 < len(shown) < 100 < handed, (len(shown), handed)  # the estimate: all handed
    assert whole_prefix(views[1], wide) == wide
    assert results[0]["acked"] == len(shown), results[0]
    assert results[0]["unshown"] == handed - len(shown), results[0]
    assert (results[1]["acked"], results[1]["unshown"]) == (len(wide), 0), results[1]
    assert all(r["proof"] == "transcript" for r in results), results
    assert s.room.read_text().splitlines() == [*big[len(shown) :], LATE]
    assert second.read_text().splitlines() == [LATE]


# ----- `ackdeck room ack` from the agent's shell (its Bash tool) after an MCP read -----------
def shell_ack(
    s: ProofSetup, *, together: bool, keep: str | None
) -> tuple[str, str, dict[str, object]]:
    """The model reads through MCP (a hook showing it `keep` only, if given), then acks with
    `ackdeck room ack --json` in its Bash tool, in a later response or (`together`) in the
    same one as the read. Returns (what the read showed, Bash's output, the ack's JSON)."""
    if keep is not None:
        summary_hook(s, keep)
    cli = " ".join([*s.ackdeck(), "--home", str(s.home), "room", "ack", str(s.room)])
    search = Call("ToolSearch", {"query": f"select:{NAMES}", "max_results": 5})
    read = Call("mcp__ackdeck__room_list_new", {})
    bash = Call("Bash", {"command": f"{cli} --session {s.session} --json", "description": "ack"})
    steps: list[Step] = [search, Together([read, bash]) if together else read]
    if not together:
        steps.append(bash)
    with ModelStub([*steps, Say("done")]) as stub:
        bash_too = ["--allowedTools", "Bash"]
        done = clients.claude(s, stub.url, PROMPT, hooks=False, extra_args=bash_too)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        assert stub.errors == []
        view, out = stub.result_of(read), stub.result_of(bash)
    # Claude Code puts "Exit code N" before the output of a command that failed (a refusal).
    return view, out, json.JSONDecoder().raw_decode(out[out.index("{") :])[0]


def test_a_shell_ack_after_an_mcp_read_acks_only_what_the_transcript_shows(
    tmp_path: Path,
) -> None:
    # Claude Code gives its Bash tool CLAUDE_CODE_SESSION_ID (not CLAUDE_PROJECT_DIR): the
    # CLI finds the session's transcript by that id, and the read by the id its receipt is
    # bound to. A hook showed the model the first line only: the shell's ack removes it alone
    # (it used to be refused: the read went to the MCP server's reader).
    s = ProofSetup(tmp_path).make()
    lines = [f"[ops] bot: event {i:05d} ok" for i in range(20)]
    s.room.write_text("".join(f"{line}\n" for line in lines))
    view, out, acked = shell_ack(s, together=False, keep=lines[0])
    assert lines[0] in view and lines[1] not in view, view
    assert (acked["acked"], acked["unshown"], acked["proof"]) == (1, 19, "transcript"), out
    assert s.room.read_text().splitlines() == lines[1:]
    # The ack's audit names the transcript, as an MCP ack's does.
    (transcript,) = s.transcripts()
    from tests.helpers.cli import ackdeck, clean_env

    args = ("--home", str(s.home), "room", "trace", str(s.room), "0", "--json")
    trace = ackdeck(clean_env(), *args).stdout
    (journey,) = json.loads(trace)["lines"]
    assert journey["proof"] == f"Claude Code transcript {transcript.name}", journey


def test_a_shell_ack_in_the_same_response_as_its_mcp_read_acks_nothing(tmp_path: Path) -> None:
    # The model runs the read and the shell's ack in one response: it acked before it saw a
    # line, whatever order Claude Code records the two in. Nothing goes.
    s = ProofSetup(tmp_path).make()
    lines = [f"line {i}" for i in range(5)]
    s.room.write_text("".join(f"{line}\n" for line in lines))
    view, out, acked = shell_ack(s, together=True, keep=None)
    assert all(line in view for line in lines), view  # it was handed over
    # Nothing acked: proven unseen, or refused when the read's result was not recorded yet.
    assert acked["acked"] == 0, out
    assert s.room.read_text().splitlines() == lines


# ----- the hooks' deliveries: what Claude Code records of them (facts for their proof) ---------
def wake_run(
    s: ProofSetup, steps: list[Step], max_turns: int = 12, args: tuple[str, ...] = ()
) -> tuple[ModelStub, str]:
    """A session with ackdeck's hooks: before the model's first answer a monitored process
    prints an alert (a pending wake, which the Stop hook hands over). Returns the stub (what
    the model received) and the alert."""
    from tests.helpers.cli import ackdeck_ok, clean_env
    from tests.helpers.wait import eventually

    alert = "ALERT-disk-full-on-db1"
    home = ("--home", str(s.home))

    def wake() -> None:
        run = ("run", "alarm", "--session", s.session, "--monitor", "ALERT", "--cooldown-ms", "50")
        ackdeck_ok(clean_env(), *home, *run, "--", "sh", "-c", f"echo {alert}")

        def recorded() -> bool:
            # The alert AND the run's exit: both pending, so the first stop delivers both. An
            # exit recorded after that stop (a busy machine) is new news the next stop hands
            # over, a second request these tests would misread as the alert handed over again.
            listing = json.loads(ackdeck_ok(clean_env(), *home, "wakes", "list", "--json").stdout)
            return any(alert in w["lines"] and w["status"] == "exited" for w in listing["wakes"])

        eventually(recorded, what="the monitor's wake and its run's exit")

    steps[0].before = wake
    stub = ModelStub(steps)
    with stub:
        clients.claude(s, stub.url, PROMPT, hooks=True, max_turns=max_turns, extra_args=list(args))
        assert stub.errors == []
    return stub, alert


def transcript_records(s: ProofSetup) -> list[dict[str, object]]:
    (transcript,) = s.transcripts()
    return [json.loads(line) for line in transcript.read_text().splitlines()]


def test_the_stop_hooks_wake_is_recorded_in_the_transcript_as_the_model_received_it(
    tmp_path: Path,
) -> None:
    # What a proof of the hooks' deliveries would read (Claude Code 2.1.328 and 2.1.332): the
    # Stop hook's text (exit 2) is a `type:"user"` record "Stop hook feedback:\n[COMMAND]: TEXT",
    # byte for byte in the message the model's next request carries, followed by the model's
    # answer; the
    # UserPromptSubmit hook's output is an `attachment` record of type `hook_success`.
    s = ProofSetup(tmp_path).make()
    s.room.write_text("an old line\n")
    stub, alert = wake_run(s, [Say("first"), Say("second")])
    feedback = [
        r
        for r in transcript_records(s)
        if r.get("type") == "user" and "Stop hook feedback:" in json.dumps(r)
    ]
    assert feedback, "no Stop hook feedback in the transcript"
    text = feedback[0]["message"]["content"]  # type: ignore[index]
    assert isinstance(text, str) and text.startswith("Stop hook feedback:\n[") and alert in text
    received = [
        block["text"]
        for body in stub.turns()[1:]
        for block in body["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    # 2.1.328 sends the record's text as it is; 2.1.332 sends it whole inside a
    # `<system-reminder>` that first says it is a hook's output (docs/concepts/proof.md). Either
    # way the record holds every byte of the hook's text the model received.
    wrapped = ("<system-reminder>\n", "\n</system-reminder>")
    assert any(
        r == text or (r.startswith(wrapped[0]) and r.endswith(wrapped[1]) and text in r)
        for r in received
    ), received
    records = transcript_records(s)
    after = records[records.index(feedback[0]) :]
    assert any(r.get("type") == "assistant" for r in after)  # the model answered it
    prompt_hooks = [
        r["attachment"]
        for r in records
        if r.get("type") == "attachment"
        and r["attachment"].get("type") == "hook_success"  # type: ignore[union-attr]
        and r["attachment"].get("hookEvent") == "UserPromptSubmit"  # type: ignore[union-attr]
    ]
    assert prompt_hooks and "an old line" in str(prompt_hooks[0]["content"]), prompt_hooks


def test_a_stop_hooks_wake_recorded_but_never_sent_to_the_model_is_handed_over_again(
    tmp_path: Path,
) -> None:
    # `claude -p --max-turns 1`: the model's one answer ends the turn, the Stop hook hands the
    # wake over (exit 2) and Claude Code records it in the transcript, then stops at the turn
    # limit without asking the model again. The wake was acked on handing over: it used to be
    # lost. The transcript has no answer after its record, so the session's next prompt hook
    # (another `claude -p` of the same agent) hands it over again; once the model answered
    # it, it is forgotten: its stop does not repeat it.
    from ackdeck.core.base import locations

    s = ProofSetup(tmp_path).make()
    stub, alert = wake_run(s, [Say("first"), Say("second")], max_turns=1)
    assert len(stub.turns()) == 1 and all(alert not in json.dumps(b) for b in stub.turns())
    records = transcript_records(s)
    (feedback,) = [r for r in records if r.get("type") == "user" and alert in json.dumps(r)]
    assert not any(r.get("type") == "assistant" for r in records[records.index(feedback) :])
    with ModelStub([Say("nothing to do"), Say("seen")]) as again:
        done = clients.claude(s, again.url, "Anything new?", hooks=True)
        assert done.returncode == 0, done.stderr[-2000:]
        bodies = [json.dumps(b) for b in again.turns()]
        # What the model was last asked with: says why a second request was made.
        last = json.dumps(again.turns()[-1]["messages"][-1])[-1500:]
    assert alert in bodies[0] and "never shown to you" in bodies[0], bodies[0][-800:]
    assert len(bodies) == 1, last  # answered: the stop did not hand it over again
    # The model answered it: proven, forgotten; the next session is not told it again.
    with ModelStub([Say("nothing to do"), Say("again?")]) as later:
        done = clients.claude(s, later.url, "Anything new?", hooks=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert all(alert not in json.dumps(b) for b in later.turns())
    assert not locations.wake_handed(s.home, s.session).exists()


def test_a_cancelled_read_shows_the_model_no_line_and_its_ack_removes_none(
    tmp_path: Path,
) -> None:
    # A call Claude Code cancels (the user interrupts it, or the turn ends to deliver a
    # message) is recorded with one of its fixed texts in place of the result (2.1.328's
    # strings), while ackdeck may already have handed the read over: the ack removes nothing
    # (the estimate would remove every line handed over).
    from ackdeck.core.clients.claude_code.transcript import find_seen, shown_lines
    from ackdeck.core.rooms.file.room import Room
    from ackdeck.core.rooms.results import Shown

    cancelled = (
        "[Request interrupted by user for tool use]",
        "[Tool call did not complete: the turn was ended to deliver the message that follows. "
        "Nothing refused it; re-run it if still needed.]",
    )
    for i, text in enumerate(cancelled):
        path = tmp_path / f"inbox{i}.txt"
        path.write_text("l1\nl2\n")
        room = Room(path)
        got = room.read("a")
        original = json.dumps({"lines": ["l1", "l2"], "read_id": "0123456789abcdef"})
        t = tmp_path / f"s{i}.jsonl"
        t.write_text(_call("read", "msg_1") + _record("read", text, original))
        seen = find_seen(t, tool_use_id="read", since=0, asked_by=None, wait=0)
        assert seen.text == text and len(got.lines) == 2
        res = room.ack("a", shown=Shown(shown_lines(seen.text), "test record"))
        assert (res.acked, res.unshown) == (0, 2), res
        assert path.read_text() == "l1\nl2\n"


def test_a_stop_hook_text_never_recorded_whole_is_not_repeated_at_every_stop(
    tmp_path: Path,
) -> None:
    # A client that records the hook's text cut (or never) would make every stop hand it over
    # again: it is handed over at most MAX_TRIES times. And the record alone is no proof: only
    # the model's answer after it.
    from ackdeck.core.clients.claude_code import handed

    home, t = tmp_path / "home", tmp_path / "s.jsonl"
    t.write_text("")
    text = "ackdeck: 1 process wake\n  ALERT-disk-full"
    feedback = {
        "type": "user",
        "message": {"role": "user", "content": f"Stop hook feedback:\n[x]: {text}\n"},
    }
    answer = {"type": "assistant", "message": {"id": "msg_9", "role": "assistant", "content": []}}
    handed.hand_over(home, "agent", str(t), text, None, at_stop=True)
    with open(t, "a") as f:
        f.write(json.dumps(feedback) + "\n")
    earlier = handed.unproven(home, "agent")
    assert earlier is not None and earlier.tries == 1  # recorded, never answered
    handed.hand_over(home, "agent", str(t), text, earlier, at_stop=True)  # again, at the next stop
    earlier = handed.unproven(home, "agent")
    assert earlier is not None and earlier.tries == 2
    handed.hand_over(home, "agent", str(t), text, earlier, at_stop=True)
    assert handed.MAX_TRIES == 3 and handed.unproven(home, "agent") is None  # not a 4th time
    # Answered: proven, forgotten.
    handed.hand_over(home, "agent", str(t), text, None, at_stop=True)
    with open(t, "a") as f:
        f.write(json.dumps(feedback) + "\n" + json.dumps(answer) + "\n")
    assert handed.unproven(home, "agent") is None
    assert not (home / "wakes" / "agent" / ".handed.json").exists()


def test_the_shells_environment_finds_the_transcript_by_the_session_id_alone(
    tmp_path: Path,
) -> None:
    # Claude Code gives a Bash command CLAUDE_CODE_SESSION_ID but not CLAUDE_PROJECT_DIR
    # (2.1.328): the session's file is found among the projects' directories by its id.
    from ackdeck.core.clients.claude_code.transcript import locate

    projects = tmp_path / "claude" / "projects"
    for name in ("-work-other", "-work-mine"):
        (projects / name).mkdir(parents=True)
    (projects / "-work-other" / "other-session.jsonl").write_text("")
    mine = projects / "-work-mine" / "6f1c-session.jsonl"
    mine.write_text("")
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CLAUDE_CODE_SESSION_ID": "6f1c-session"}
    assert locate(env) == mine
    assert locate(env | {"CLAUDE_CODE_SESSION_ID": "gone-session"}) is None
    assert locate(env | {"CLAUDE_CODE_SESSION_ID": "../escape"}) is None


def test_a_session_claude_code_does_not_save_is_told_a_wake_once(tmp_path: Path) -> None:
    # `claude -p --no-session-persistence` keeps no transcript: nothing could prove the Stop
    # hook's wake shown, and handing it over again at every prompt would not either. It is
    # handed over once, as before (an estimate), and the next session is not told it again.
    from ackdeck.core.base import locations

    s = ProofSetup(tmp_path).make()
    stub, alert = wake_run(s, [Say("first"), Say("second")], args=("--no-session-persistence",))
    assert sum(alert in json.dumps(b["messages"][-1]) for b in stub.turns()) == 1
    assert not locations.wake_handed(s.home, s.session).exists()
    with ModelStub([Say("nothing to do"), Say("again?")]) as later:
        done = clients.claude(s, later.url, "Anything new?", hooks=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert all(alert not in json.dumps(b) for b in later.turns())


def test_an_ack_in_the_same_response_as_its_read_whose_call_is_recorded_late_saw_nothing(
    tmp_path: Path,
) -> None:
    # Claude Code queues its writes and records a response's blocks apart: the read's own
    # call may land after its result. The ack in that same response then follows both, and
    # the read's call, looked for only before its result, was not found: the ack passed for
    # one made in a later response and removed lines its model never saw (now and then, under
    # load). The read's call is looked for after its result too.
    from ackdeck.core.clients.claude_code.transcript import find_seen

    t = tmp_path / "s.jsonl"
    t.write_text(_record("read", "line 0\n") + _call("read", "msg_1") + _call("ack", "msg_1"))
    assert find_seen(t, tool_use_id="read", since=0, asked_by="ack", wait=0).text is None
    # In a later response, the same order of records was made having seen the result.
    t.write_text(_record("read", "line 0\n") + _call("read", "msg_1") + _call("ack", "msg_2"))
    assert find_seen(t, tool_use_id="read", since=0, asked_by="ack", wait=0).text == "line 0\n"


def test_a_transcript_that_appears_while_the_stop_hook_waits_proves_the_answer(
    tmp_path: Path,
) -> None:
    # Claude Code queues its writes: in a fast `claude -p` turn the session's transcript (the
    # prompt hook's hand-over record and the model's answer) can reach the disk only after
    # the Stop hook started looking. The look used to give up at once on a missing file, so
    # the Stop hook handed the answered text over again (the test above, 2 of 5 runs). It now
    # waits for the file as for its records. The clock the look reads after its first try
    # writes the transcript: no sleep decides the order.
    from ackdeck.core.clients.claude_code import transcript

    path = tmp_path / "session.jsonl"
    text = "ackdeck: 1 process wake\n  ALERT-disk-full-on-db1"
    records = [
        {"type": "attachment", "attachment": {"type": "hook_success", "content": text}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "seen"}]}},
    ]
    looks: list[float] = []

    def clock() -> float:
        looks.append(0.0)
        if len(looks) == 2:  # the deadline taken, then the first try found no file
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return 0.0

    assert transcript.feedback_answered(path, 0, text, wait=5.0, clock=clock)
    assert len(looks) >= 2
    # No file within the wait: not proven (handed over again), as before.
    missing = tmp_path / "never.jsonl"
    assert not transcript.feedback_answered(missing, 0, text, wait=0.0)
