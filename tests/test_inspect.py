"""`ackdeck inspect`: the state on disk explained, on real rooms, sessions and runs made by the
`ackdeck` command itself. Damaged files are named with what is wrong and never end the
report; only a target with no state exits 1. Inspect is a query: it changes no byte."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ackdeck.core.base import locations
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.service.inspection import explain_slots
from tests.helpers.cli import ackdeck, ackdeck_json
from tests.helpers.wait import eventually


def _room(tmp_path: Path, env: dict[str, str]) -> Path:
    """A room where session a read and acked two lines and session b read a third."""
    room = tmp_path / "r.txt"
    for args in (
        ("room", "push", str(room), "one"),
        ("room", "push", str(room), "two"),
        ("room", "read", str(room), "--session", "a"),
        ("room", "ack", str(room), "--session", "a"),
        ("room", "push", str(room), "three"),
        ("room", "read", str(room), "--session", "b"),
        ("room", "policy", str(room), "--overdue", "10m", "--owner", "boss"),
    ):
        out = ackdeck(env, *args)
        assert out.returncode == 0, out.stderr
    return room


def _snapshot(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_inspect_room_says_which_ledger_slot_is_current_and_what_each_receipt_covers(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = _room(tmp_path, cli_env)
    doc = ackdeck_json(cli_env, "inspect", str(room))
    assert isinstance(doc, dict)
    led = doc["ledger"]
    seqs = {s["slot"]: s["seq"] for s in led["slots"]}
    assert all(s["valid"] for s in led["slots"])
    assert led["current"] == max(seqs, key=lambda k: seqs[k])
    assert f"slot {led['current']} is current" in led["why"]
    assert led["state"]["base"] == len("one\ntwo\n")
    receipts = {r["session"]: r for r in doc["receipts"]}
    assert receipts["a"]["acked"] is True and receipts["b"]["acked"] is False
    assert (receipts["b"]["start"], receipts["b"]["end"]) == (8, 14)
    assert "not acked yet" in receipts["b"]["words"]
    assert doc["policy"]["owner"] == "boss" and doc["policy"]["overdue"] == 600
    assert [a["session"] for a in doc["audit"]] == ["a"]
    assert doc["damaged"] == []
    # The ack replaced the room's inode; the old one is held and the reason given.
    assert [p["on_disk"] for p in doc["prev_inodes"]] in ([], [True])
    text = ackdeck(cli_env, "inspect", str(room))
    assert text.returncode == 0, text.stderr
    assert f"slot {led['current']} is current" in text.stdout
    assert "b: read bytes 8-14 (1 line) of epoch 0" in text.stdout


def test_a_torn_current_ledger_slot_falls_back_to_the_other_and_is_named(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = _room(tmp_path, cli_env)
    before = ackdeck_json(cli_env, "inspect", str(room))
    assert isinstance(before, dict)
    current = before["ledger"]["current"]
    ledger = locations.ledger(locations.sidecar(room))
    raw = bytearray(ledger.read_bytes())
    # A torn store: the tail of the current slot's body is lost.
    at = current * L.LEDGER_SLOT + 100  # past the slot's header, inside its JSON body
    raw[at : at + 10] = b"\0" * 10
    ledger.write_bytes(bytes(raw))
    receipt = locations.receipt(locations.sidecar(room), "b")
    receipt.write_bytes(b"{not json\n")
    side = locations.sidecar(room)
    kept = _snapshot(side)

    out = ackdeck(cli_env, "inspect", str(room), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["ledger"]["current"] == 1 - current
    assert "the only one that verifies" in doc["ledger"]["why"]
    problems = {(d["file"], d["problem"]) for d in doc["damaged"]}
    assert (str(ledger), f"slot {current}: checksum does not match (a torn or damaged write)") in (
        problems
    )
    assert any(f == str(receipt) and "not a receipt" in p for f, p in problems)
    assert [r["session"] for r in doc["receipts"]] == ["a"]  # the rest is still explained
    # What ackdeck itself does agrees: the room is read from the other slot.
    assert L.load_ledger(ledger) is not None
    assert _snapshot(side) == kept  # a query: nothing moved, repaired or rewritten

    text = ackdeck(cli_env, "inspect", str(room))
    assert text.returncode == 0, text.stderr
    assert f"{receipt}: not a receipt" in text.stdout
    assert "damaged (left in place):" in text.stdout


def test_a_ledger_with_no_valid_slot_is_named_and_the_rest_still_explained(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = _room(tmp_path, cli_env)
    side = locations.sidecar(room)
    locations.ledger(side).write_bytes(b"garbage" * 100)
    locations.policy(side).write_text('{"overdue": -1}')
    out = ackdeck(cli_env, "inspect", str(room), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["ledger"]["current"] is None and doc["ledger"]["state"] is None
    assert "no slot verifies" in doc["ledger"]["why"]
    files = [d["file"] for d in doc["damaged"]]
    assert str(locations.ledger(side)) in files and str(locations.policy(side)) in files
    assert {r["session"] for r in doc["receipts"]} == {"a", "b"}
    text = ackdeck(cli_env, "inspect", str(room)).stdout
    assert "policy: damaged" in text


def test_inspect_of_a_target_with_no_state_exits_1_naming_it(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    for args, says in (
        ((str(tmp_path / "nope.txt"),), "no room at"),
        (("--session", "nobody"), "no state for session 'nobody'"),
        (("--run", "nope"), "unknown run id 'nope'"),
        ((), "name one of ROOM"),
    ):
        out = ackdeck(cli_env, "inspect", *args)
        assert out.returncode == 1, (args, out.stdout)
        assert says in out.stderr and out.stderr.count("\n") == 1


def test_inspect_text_is_safe_for_a_terminal(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "evil\x1b]0;pwned\x07.txt"
    assert ackdeck(cli_env, "room", "push", str(room), "x").returncode == 0
    out = ackdeck(cli_env, "inspect", str(room))
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout
    assert "\\x1b]0;pwned\\x07" in out.stdout
    js = ackdeck(cli_env, "inspect", str(room), "--json")
    assert json.loads(js.stdout)["room"] == str(room)  # JSON carries the exact name


def _ended(rdir: Path) -> dict[str, object]:
    meta = eventually(
        lambda: (
            (m := json.loads(locations.run_meta(rdir).read_text()))["status"] != "running" and m
        ),
        timeout=120,
        what="the run to end",
    )
    assert isinstance(meta, dict)
    return meta


def test_inspect_run_and_session_show_meta_monitors_shown_and_wakes(
    phome: Path, cli_env: dict[str, str]
) -> None:
    started = ackdeck_json(
        cli_env,
        "run",
        "w1",
        "--session",
        "s",
        "--monitor",
        "ERROR",
        "--",
        "sh",
        "-c",
        "echo ERROR one; echo fine",
    )
    assert isinstance(started, dict)
    run_id = started["run_id"]
    rdir = locations.run_dir(phome, "w1", run_id)
    assert _ended(rdir)["status"] == "exited"
    assert ackdeck(cli_env, "output", "w1", "--session", "s").returncode == 0

    doc = ackdeck_json(cli_env, "inspect", "--run", run_id)
    assert isinstance(doc, dict)
    assert doc["meta"]["status"] == "exited" and doc["meta"]["exit_code"] == 0
    assert doc["output_bytes"] == len("ERROR one\nfine\n")
    assert [s["session"] for s in doc["shown"]] == ["s"]
    assert doc["shown"][0]["state"]["shown"] == [[0, doc["output_bytes"]]]
    assert doc["damaged"] == []
    text = ackdeck(cli_env, "inspect", "--run", run_id).stdout
    assert "ERROR: matches 1" in text and "s: shown bytes 0-15" in text

    # The monitor's wake waits for session s; a malformed record beside it is named.
    bad = locations.wake_record(phome, "s", "broken")
    bad.write_text("{")
    doc = ackdeck_json(cli_env, "inspect", "--session", "s")
    assert isinstance(doc, dict)
    assert [w["name"] for w in doc["wakes"]] == ["w1"]
    assert doc["wakes"][0]["lines"] == 1
    assert [d["file"] for d in doc["damaged"]] == [str(bad)]
    assert bad.read_text() == "{"  # named, not moved aside: a query

    # The batches imported from another host that a dismiss kept (fleet.md) are shown; a
    # damaged marks file and one set aside are named.
    from ackdeck.core.monitors import wakes

    wakes.keep_import_mark(phome, "s", "build@alpha", 1234)
    doc = ackdeck_json(cli_env, "inspect", "--session", "s")
    assert isinstance(doc, dict)
    assert doc["imported"] == [
        {"name": "build@alpha", "batch": 1234, "words": "batches up to 1234 taken in"}
    ]
    text = ackdeck(cli_env, "inspect", "--session", "s").stdout
    assert "imported from other hosts (kept after a dismiss):\n  build@alpha: batches up to" in text
    marks = locations.wake_import_marks(phome, "s")
    marks.write_text("[")
    aside = marks.with_name(marks.name + ".corrupt-1")
    aside.write_text("{")
    doc = ackdeck_json(cli_env, "inspect", "--session", "s")
    assert isinstance(doc, dict) and doc["imported"] == []
    assert sorted(d["file"] for d in doc["damaged"]) == sorted(map(str, (bad, marks, aside)))


def test_explain_slots_follows_what_load_ledger_decides() -> None:
    def slot(seq: int, body: bytes) -> bytes:
        head = b"ackdeck-ledger 1 %d %d %s " % (
            seq,
            len(body),
            hashlib.sha256(body).hexdigest().encode(),
        )
        return (head + body).ljust(L.LEDGER_SLOT, b"\0")

    a, b = slot(7, b'{"version":1,"base":3}'), slot(8, b'{"version":1,"base":5}')
    assert explain_slots(a + b)["current"] == 1
    assert explain_slots(b + a)["current"] == 0
    doc = explain_slots(a + b.replace(b'"base":5', b'"base":6'))
    assert doc["current"] == 0 and "checksum" in doc["slots"][1]["problem"]
    for raw in (a + b, b + a, a + b.replace(b'"base":5', b'"base":6'), a, b + b"x" * 50):
        doc = explain_slots(raw)
        latest = L._latest_slot(raw)  # what every command reads
        seqs = {s["slot"]: s["seq"] for s in doc["slots"]}
        assert (None if latest is None else latest[0]) == seqs.get(doc["current"])
    blank = explain_slots(b"\0" * (2 * L.LEDGER_SLOT))
    assert blank["current"] is None and "no slot was ever written" in blank["why"]
    assert explain_slots(a)["slots"][1]["problem"] == "never written"
