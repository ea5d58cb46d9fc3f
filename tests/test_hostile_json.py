"""Issue 42, class 3: every reader of ackdeck's own JSON files survives any JSON. A file nested
thousands deep made the standard decoder raise RecursionError, which every reader's
`except ValueError` let through as a traceback; NaN and Infinity (which json.loads takes) were
read as numbers and then crashed the arithmetic or were printed as invalid JSON. Both are now
refused where every file is parsed (core/base/jsonfields.py `parse`), so each file is a
damaged file: named in one line, never a traceback, and the rest keeps working.

Real files written where ackdeck keeps them, real `ackdeck` processes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from tests.helpers.cli import ackdeck
from tests.helpers.runs import wait_status

DEEP = 5000  # far past the decoder's recursion limit


def _strict(text: str) -> object:
    """`text` as JSON that every other JSON reader accepts (no NaN, no Infinity)."""

    def refuse(name: str) -> object:
        raise AssertionError(f"{name} printed as JSON")

    return json.loads(text, parse_constant=refuse)


def _deep(doc: dict, depth: int = DEEP) -> str:
    """`doc` with one more key, nested `depth` levels: valid JSON, unknown to every reader."""
    return json.dumps(doc)[:-1] + ', "zz": ' + "[" * depth + "]" * depth + "}"


def _number(doc: dict) -> str:
    """The key of `doc`'s first float (a time: the readers took NaN there), else its first int."""
    numbers = [k for k, v in doc.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    return next((k for k in numbers if isinstance(doc[k], float)), numbers[0])


def _nan(doc: dict) -> str:
    """`doc` with a number written as NaN (json.dumps writes it; json.loads took it)."""
    return json.dumps({**doc, _number(doc): float("nan")})


def _infinity(doc: dict) -> str:
    return json.dumps({**doc, _number(doc): float("inf")})


def _huge(doc: dict) -> str:
    """`doc` with a time no clock can show (finite: json.loads never refused it)."""
    return json.dumps({**doc, _number(doc): 1e300})


def _torn(doc: dict) -> str:
    """`doc` cut before its closing brace (a write that stopped short): the C scanner refuses
    it itself, "Expecting ',' delimiter", not by its StopIteration."""
    return json.dumps(doc)[:-1]


def _raw_control(doc: dict) -> str:
    """`doc` with a raw control character inside its first string (a writer that escapes
    nothing): "Invalid control character", found by the scanner itself too."""
    text = json.dumps(doc)
    at = text.index('"') + 1
    return text[:at] + "\x01" + text[at:]


HOSTILE: dict[str, Callable[[dict], str]] = {
    "deep": _deep,
    "nan": _nan,
    "infinity": _infinity,
    "huge": _huge,
    "torn": _torn,
    "raw-control": _raw_control,
}


def _rewrite(path: Path, how: str) -> None:
    """Replace the JSON object on the first line of `path` (what follows it is kept)."""
    raw = path.read_bytes()
    head, nl, rest = raw.partition(b"\n")
    path.write_bytes(HOSTILE[how](json.loads(head)).encode() + nl + rest)


def _rewrite_ledger(path: Path, how: str) -> None:
    """Write the ledger's newest slot again, its JSON made hostile and its checksum right (as
    anyone who can write the file can): a slot holds 8 KiB, so `deep` nests 3,500 levels."""
    from ackdeck.core.rooms.file import ledger

    raw = path.read_bytes()
    slots = [ledger.slot_header(raw[i * ledger.LEDGER_SLOT :]) for i in (0, 1)]
    seq, at, length, offset = max(
        (h[0], i, h[1], h[3]) for i, h in enumerate(slots) if h is not None
    )
    body_at = at * ledger.LEDGER_SLOT + offset
    doc = json.loads(raw[body_at : body_at + length])
    body = (_deep(doc, 3500) if how == "deep" else HOSTILE[how](doc)).encode()
    slot = ledger._SLOT_MAGIC + f"{seq + 1} {len(body)} {ledger.sha256(body)} ".encode() + body
    assert len(slot) < ledger.LEDGER_SLOT
    slot = slot.ljust(ledger.LEDGER_SLOT - 1) + b"\n"
    at = (seq + 1) % 2
    path.write_bytes(raw[: at * ledger.LEDGER_SLOT] + slot + raw[(at + 1) * ledger.LEDGER_SLOT :])


def _one_line_naming(out, path: Path) -> None:
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "RecursionError" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and path.name in out.stderr, out.stderr


def test_parse_refuses_what_no_json_writer_writes_and_keeps_the_rest() -> None:
    from ackdeck.core.base.jsonfields import DEPTH, parse

    for text in ("NaN", "[Infinity]", '{"t": -Infinity}', "1e999", "[-1e400]", "1" * 25):
        with pytest.raises(ValueError):
            parse(text)
    for text in ("[" * DEEP + "]" * DEEP, "[" * (DEPTH + 1) + "]" * (DEPTH + 1)):
        with pytest.raises(ValueError, match="nested deeper"):
            parse(text)
    assert parse("[" * DEPTH + "]" * DEPTH) is not None
    # Brackets inside strings count for nothing; numbers at the bounds are kept.
    assert parse('{"a": "[[[[[[", "n": 9223372036854775807, "f": 1e308}') == {
        "a": "[[[[[[",
        "n": 9223372036854775807,
        "f": 1e308,
    }
    assert parse(b' {"t": 1.5e3} \n') == {"t": 1500.0}


@pytest.fixture
def room(tmp_path: Path, cli_env: dict[str, str]) -> Path:
    """A room with a line read by s1 (a receipt) and an earlier ack (a ledger)."""
    r = tmp_path / "r.txt"
    for args in (
        ("room", "push", str(r), "one"),
        ("room", "read", str(r), "--session", "s1"),
        ("room", "ack", str(r), "--session", "s1"),
        ("room", "push", str(r), "two"),
        ("room", "read", str(r), "--session", "s1"),
    ):
        out = ackdeck(cli_env, *args)
        assert out.returncode == 0, out.stderr
    return r


@pytest.mark.parametrize("how", HOSTILE)
def test_a_hostile_receipt_is_named_in_one_line_not_a_traceback(
    room: Path, cli_env: dict[str, str], how: str
) -> None:
    receipt = locations.receipt(locations.sidecar(room), "s1")
    _rewrite(receipt, how)
    out = ackdeck(cli_env, "room", "ack", str(room), "--session", "s1")
    assert out.returncode != 0
    _one_line_naming(out, receipt)
    # The room still works: the line is there, and another session reads it.
    out = ackdeck(cli_env, "room", "read", str(room), "--session", "s2")
    assert out.returncode == 0 and out.stdout.splitlines() == ["two"], out.stderr


@pytest.mark.parametrize("how", HOSTILE)
def test_a_hostile_ledger_is_named_in_one_line_not_a_traceback(
    room: Path, cli_env: dict[str, str], how: str
) -> None:
    ledger = locations.ledger(locations.sidecar(room))
    _rewrite_ledger(ledger, how)
    out = ackdeck(cli_env, "room", "status", str(room), "--json")
    assert out.returncode != 0
    _one_line_naming(out, ledger)


@pytest.mark.parametrize("how", HOSTILE)
def test_a_hostile_run_meta_is_skipped_by_ps_and_named(
    phome: Path, cli_env: dict[str, str], how: str
) -> None:
    for name in ("p", "q"):
        out = ackdeck(
            cli_env, "run", name, "--session", "s", "--monitor", "ERR", "--", "echo", "ERR"
        )
        assert out.returncode == 0, out.stderr
        wait_status(phome, name)
    meta = next((phome / "procs" / "p").glob("*/meta.json"))
    _rewrite(meta, how)
    for args in (("ps",), ("ps", "--json")):
        out = ackdeck(cli_env, *args)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr and str(meta.parent) in out.stderr, out.stderr
        if "--json" in args:
            rows = _strict(out.stdout)
            assert [r["name"] for r in rows["processes"]] == ["q"]  # type: ignore[index]
        else:
            assert "q " in out.stdout


@pytest.mark.parametrize("how", HOSTILE)
def test_a_hostile_wake_record_is_skipped_and_the_others_delivered(
    phome: Path, cli_env: dict[str, str], how: str
) -> None:
    for name, line in (("p", "ERR one"), ("q", "ERR two")):
        out = ackdeck(
            cli_env, "run", name, "--session", "s", "--monitor", "ERR", "--", "echo", line
        )
        assert out.returncode == 0, out.stderr
        wait_status(phome, name)
    record = locations.wake_record(phome, "s", "p")
    _rewrite(record, how)
    out = ackdeck(cli_env, "wakes", "list", "--session", "s", "--json")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    _strict(out.stdout)
    out = ackdeck(cli_env, "wakes", "drain", "--session", "s", "--json")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    got = _strict(out.stdout)
    assert [d["lines"] for d in got["delivered"]] == [["ERR two"]]  # type: ignore[index]


@pytest.mark.parametrize("how", HOSTILE)
def test_a_hostile_handover_journal_is_named_in_one_line_not_a_traceback(
    room: Path, phome: Path, tmp_path: Path, cli_env: dict[str, str], how: str
) -> None:
    journal = locations.handover_journal(phome, "s1")
    journal.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "id": "h1", "source": "s1", "target": "s2", "from_room": str(room),
        "to_room": str(tmp_path / "t.txt"), "state": "chosen", "at": 1.5, "epoch": 0,
        "start": 0, "end": 4, "lines": 1, "in_flight": 1, "sha256": "00", "block": "",
        "to_epoch": 0, "to_since": 0,
    }  # fmt: skip
    journal.write_text(HOSTILE[how](doc))
    out = ackdeck(
        cli_env, "handover", "--from", "s1", "--to", "s2", "--to-room", str(tmp_path / "t.txt")
    )
    assert out.returncode != 0
    _one_line_naming(out, journal)


@pytest.mark.parametrize(
    "text",
    ["[" * DEEP + "]" * DEEP, '{"overdue_after": NaN}', "[1e999]"],
    ids=["deep", "nan", "out-of-range"],
)
def test_a_hostile_policy_or_team_mailbox_is_refused_as_damaged_not_raised(text: str) -> None:
    from ackdeck.core.clients.claude_code import mailbox as claude_mailbox
    from ackdeck.core.errors import BadMailbox, CorruptState
    from ackdeck.core.rooms import policy

    with pytest.raises(CorruptState, match="corrupt room policy"):
        policy.decode(text.encode(), "/r/policy")
    with pytest.raises(BadMailbox, match="/t/inboxes/a.json"):
        claude_mailbox.load(text.encode(), "/t/inboxes/a.json")


# JSON texts `_json`'s C scanner refuses itself (a write cut short, a raw control character, a
# missing colon): it raises json.decoder's error, which CPython 3.11 finds only once json is
# imported, so in a fresh `ackdeck` process (jsontext never imports json) each was a
# SystemError traceback past every `except ValueError`, where json.loads gave a ValueError.
_REFUSED_BY_THE_SCANNER = [
    '{"session_id": "cc-1", "reason": "exit"',
    '{"session_id": "cc\x01", "reason": "exit"}',
    '{"session_id" "cc-1"}',
]


@pytest.mark.parametrize(
    ("kind", "event"),
    [("notify", "notify"), ("end", "end"), ("prompt", "prompt"), ("stop", "stop"),
     ("bootstrap", "start")],
)  # fmt: skip
def test_hook_stdin_the_scanner_refuses_is_no_input_not_a_system_error(
    room: Path, home: Path, cli_env: dict[str, str], kind: str, event: str
) -> None:
    where = ["--room", str(room)] if kind in ("prompt", "stop") else []
    for text in _REFUSED_BY_THE_SCANNER:
        out = ackdeck(cli_env, "hooks", kind, "--session", "s1", *where, input=text)
        assert out.returncode == 0 and out.stderr == "", out.stderr[-2000:]
    # Each run recorded its event as a hook given no input does: no Claude session named.
    log = locations.presence_log(home, "s1").read_text().splitlines()
    events = [e for e in map(json.loads, log) if e["ev"] == event]
    assert len(events) == len(_REFUSED_BY_THE_SCANNER) and not any("cc" in e for e in events)


def test_a_torn_presence_line_is_skipped_not_a_system_error(
    home: Path, cli_env: dict[str, str]
) -> None:
    out = ackdeck(cli_env, "hooks", "notify", "--session", "s1", input='{"session_id": "cc-1"}')
    assert out.returncode == 0, out.stderr
    log = locations.presence_log(home, "s1")
    with log.open("a") as f:
        f.write('{"t":1.5,"ev":"no')  # an append cut short by a crash
    out = ackdeck(cli_env, "agents", "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr[-2000:]
    agents = _strict(out.stdout)["agents"]  # type: ignore[index]
    assert [(a["session"], a["claude_session"]) for a in agents] == [("s1", "cc-1")]


@pytest.mark.parametrize("text", _REFUSED_BY_THE_SCANNER, ids=["torn", "raw-control", "colon"])
def test_a_policy_the_scanner_refuses_is_named_in_one_line_not_a_system_error(
    room: Path, cli_env: dict[str, str], text: str
) -> None:
    policy = locations.policy(locations.sidecar(room))
    policy.write_text(text)
    out = ackdeck(cli_env, "room", "policy", str(room))
    assert out.returncode != 0
    _one_line_naming(out, policy)
    assert "corrupt room policy" in out.stderr
    # Status, read and ack never needed the policy: they work as they did before it broke.
    for args in (("room", "status", str(room)), ("room", "ack", str(room), "--session", "s1")):
        out = ackdeck(cli_env, *args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert room.read_text() == ""
