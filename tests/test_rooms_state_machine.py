"""A hypothesis state machine over push / read / ack / foreign rewrites / partial writes.

The model mirrors the room as a list of (id, text) lines, so identical texts stay distinct
lines. After every step the file on disk must equal the model, and:
- every line ever written is in the file, or was removed by an ack of a session that had read
  that very line (or by ack --all, which returns it), or by the foreign tool;
- an ack removes only a prefix of the file, made of lines that session read;
- after a foreign rewrite ackdeck can tell apart from appends, older receipts are stale and
  remove nothing. An in-place rewrite is seen only by a look that records what it saw (a read,
  an ack): one undone before ackdeck looks again (the same head, the file no smaller than
  recorded) is indistinguishable from appends (docs/concepts/exact-acks.md, residual windows),
  and an ack then removes what its session read, which the first rule still checks;
- a partial last line is never returned and never removed.
"""

from __future__ import annotations

import os
import time
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ackdeck.core.errors import ColdAck
from ackdeck.core.rooms.file.ledger import HEAD_BYTES
from ackdeck.core.rooms.file.room import Room

SESSIONS = st.sampled_from(["s1", "s2", "s3"])
# Small alphabet on purpose: identical lines are where a content-matching ack goes wrong.
TEXTS = st.one_of(st.sampled_from(["x", "y", "x\r", "\xff"]), st.none())


def _split(data: bytes) -> tuple[list[bytes], bytes]:
    cut = data.rfind(b"\n") + 1
    complete = data[:cut]
    return (complete[:-1].split(b"\n") if complete else []), data[cut:]


class RoomMachine(RuleBasedStateMachine):
    base_dir: Path
    _runs = count()

    @initialize()
    def setup(self) -> None:
        d = self.base_dir / f"run{next(self._runs)}"
        d.mkdir()
        self.path = d / "inbox.txt"
        self.path.write_bytes(b"")
        self.room = Room(self.path)
        self.ids = count()
        self.lines: list[tuple[int, bytes]] = []  # the model of the file's complete lines
        self.partial = b""
        self.read_ids: dict[str, set[int] | None] = {}  # live (unacked) receipts
        self.stale: set[str] = set()  # receipts older than a foreign rewrite ackdeck saw
        # Receipts older than an in-place rewrite no look has seen yet, and the room as the
        # last look that recorded it left it (its size and head: what the ledger compares).
        self.suspect: set[str] = set()
        self.seen: tuple[int, bytes] | None = None
        # A `>>` writer that opened the path and writes later, maybe after acks replaced the
        # inode: its line must reach the room at the next exclusive operation.
        self.held: int | None = None
        self.held_acks = 0
        self.held_orphaned = False
        self.unswept: list[bytes] = []

    # ----- producers -----------------------------------------------------------------------
    def _text(self, pick: str | None) -> bytes:
        return f"L{next(self.ids)}".encode() if pick is None else pick.encode("latin-1")

    @precondition(lambda self: not self.partial)
    @rule(pick=TEXTS)
    def push(self, pick: str | None) -> None:
        text = self._text(pick)
        self.room.push(text)
        self.lines.append((next(self.ids), text))

    @precondition(lambda self: not self.partial)
    @rule(pick=TEXTS)
    def unlocked_append(self, pick: str | None) -> None:
        text = self._text(pick)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, text + b"\n")
        finally:
            os.close(fd)
        self.lines.append((next(self.ids), text))

    @precondition(lambda self: not self.partial)
    @rule(pick=TEXTS)
    def start_partial_line(self, pick: str | None) -> None:
        self.partial = self._text(pick)
        with open(self.path, "ab") as f:
            f.write(self.partial)

    @precondition(lambda self: bool(self.partial))
    @rule()
    def finish_partial_line(self) -> None:
        with open(self.path, "ab") as f:
            f.write(b"\n")
        self.lines.append((next(self.ids), self.partial))
        self.partial = b""

    @precondition(lambda self: self.held is None)
    @rule()
    def slow_writer_opens(self) -> None:
        self.held = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self.held_acks = 0
        self.held_orphaned = False

    @precondition(lambda self: self.held is not None)
    @rule(pick=TEXTS)
    def slow_writer_writes(self, pick: str | None) -> None:
        assert self.held is not None
        text = self._text(pick)
        # Outside the protocol: a foreign rename orphans the inode, and after 8 acks (or the
        # grace period) ackdeck stops watching it. Only writes ackdeck promises to keep count.
        if not self.held_orphaned and self.held_acks < 8:
            same = os.fstat(self.held).st_ino == self.path.stat().st_ino
            os.write(self.held, text + b"\n")
            if same:
                self._append_complete(text)
            else:
                self.unswept.append(text)  # in a replaced inode until the next sweep
        os.close(self.held)
        self.held = None

    def _append_complete(self, text: bytes) -> None:
        # Bytes appended at EOF: a pending partial line absorbs them.
        if self.partial:
            text, self.partial = self.partial + text, b""
        self.lines.append((next(self.ids), text))

    def _swept(self) -> None:
        """The model of an exclusive operation's first step: late lines are carried over."""
        for text in self.unswept:
            self._append_complete(text)
        self.unswept = []

    def _acked_something(self) -> None:
        self.held_acks += 1

    # ----- sessions --------------------------------------------------------------------------
    @rule(session=SESSIONS)
    def read(self, session: str) -> None:
        looked = self._look()
        self._swept()
        res = self.room.read(session)
        self._recorded(looked)
        assert res.lines == [t for _, t in self.lines]
        self.read_ids[session] = {i for i, _ in self.lines}
        self.stale.discard(session)

    @rule(session=SESSIONS)
    def ack(self, session: str) -> None:
        self._look()
        self._swept()
        read = self.read_ids.get(session)
        if read is None:
            with pytest.raises(ColdAck):
                self.room.ack(session)
            self.seen = None  # a refused ack may still record a rewrite it found
            return  # the invariants check that nothing but the sweep changed the file
        res = self.room.ack(session)
        self._acked(res.acked)
        if res.acked:
            self._acked_something()
        self.read_ids[session] = None
        k = res.acked
        removed = self.lines[:k]
        assert {i for i, _ in removed} <= read, "an ack removed a line its session never read"
        if session in self.stale and read:
            # Older than a foreign rewrite: remove nothing ("noop" when another session's ack
            # had already taken these bytes and the rewrite left no trace in the head).
            assert res.mode in ("stale", "noop") and k == 0, (res.mode, k)
        if res.mode in ("stale", "noop"):
            assert k == 0
        self.stale.discard(session)
        self.lines = self.lines[k:]

    @rule(session=SESSIONS)
    def ack_all(self, session: str) -> None:
        self._look()
        self._swept()
        res = self.room.ack(session, all=True)
        self._acked(res.acked)
        if res.acked:
            self._acked_something()
        assert res.lines == [t for _, t in self.lines]  # everything removed is returned
        self.lines = []
        self.read_ids[session] = self.read_ids.get(session)  # --all does not touch receipts

    # ----- what ackdeck has seen ---------------------------------------------------------------
    def _look(self) -> tuple[int, bytes]:
        """A read or an ack begins by comparing the room with what the ledger recorded
        (ledger.classify): an in-place rewrite is certainly seen if the room is now smaller,
        or its head differs from the recorded one. Then the older receipts are stale. If not,
        the rewrite looks like appends from here on: they may or may not be."""
        data = self.path.read_bytes()
        if self.suspect and self.seen is not None:
            size, head = self.seen
            if len(data) < size or data[: len(head)] != head:
                self.stale |= self.suspect
        self.suspect = set()
        return len(data), data[:HEAD_BYTES]

    def _recorded(self, looked: tuple[int, bytes]) -> None:
        # A read stores the room as it looked (a sweep's late lines after it are appends).
        self.seen = looked

    def _acked(self, acked: int) -> None:
        # An ack that removed lines stores the room it leaves; one that removed nothing may or
        # may not have stored anything: what it recorded is unknown until the next read.
        data = self.path.read_bytes()
        self.seen = (len(data), data[:HEAD_BYTES]) if acked else None

    # ----- a foreign tool --------------------------------------------------------------------
    def _all_receipts_stale(self) -> None:
        self.stale |= {s for s, r in self.read_ids.items() if r is not None}

    def _all_receipts_suspect(self) -> None:
        self.suspect |= {s for s, r in self.read_ids.items() if r is not None}

    @rule(k=st.integers(0, 3))
    def foreign_consume_by_rename(self, k: int) -> None:
        # Like the seed's old tool (or sed -i): write the rest to a temp file, rename it over.
        keep = self.lines[k:]
        tmp = self.path.with_name("foreign.tmp")
        tmp.write_bytes(b"".join(t + b"\n" for _, t in keep) + self.partial)
        os.replace(tmp, self.path)
        self.lines = keep
        self._all_receipts_stale()
        self.held_orphaned = True

    @rule(k=st.integers(0, 3))
    def foreign_rewrite_in_place_new_head(self, k: int) -> None:
        # Truncate and refill the same inode, dropping k lines and adding a header line: the
        # head changes, so ackdeck can tell if it looks before another rewrite restores it.
        header = (next(self.ids), f"FOREIGN{next(self.ids)}".encode())
        keep = [header, *self.lines[k:]]
        with open(self.path, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(t + b"\n" for _, t in keep) + self.partial)
        self.lines = keep
        self._all_receipts_suspect()

    @precondition(lambda self: len(self.lines) > 0)
    @rule(k=st.integers(1, 3))
    def foreign_truncate_in_place_then_ackdeck_looks(self, k: int) -> None:
        # Drop the first k lines in place (same inode, maybe the same head when lines repeat).
        # Detected when the file is now smaller than the size a look recorded, or its head
        # differs; that needs ackdeck to look before producers refill it, so it looks at once
        # (docs/concepts/exact-acks.md: residual windows). An earlier rewrite no look saw can
        # leave the file larger than recorded, with the recorded head: then it is not.
        keep = self.lines[k:]
        with open(self.path, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(t + b"\n" for _, t in keep) + self.partial)
        self.lines = keep
        self._all_receipts_suspect()
        self.read("observer")

    @rule()
    def foreign_rewrite_identical_in_place(self) -> None:
        # Same bytes, same inode: the lines are the same lines. Detected or not, nothing may be
        # lost (detection only makes acks stale).
        data = self.path.read_bytes()
        before = self.path.stat().st_mtime_ns
        for _ in range(50):
            with open(self.path, "r+b") as f:
                f.truncate(0)
                f.write(data)
            if self.path.stat().st_mtime_ns != before:
                break
            time.sleep(0.002)

    # ----- invariants ------------------------------------------------------------------------
    def teardown(self) -> None:
        if getattr(self, "held", None) is not None:
            os.close(self.held)

    @invariant()
    def file_matches_model(self) -> None:
        if not hasattr(self, "path"):
            return
        lines, partial = _split(self.path.read_bytes())
        assert lines == [t for _, t in self.lines]
        assert partial == self.partial

    @invariant()
    def status_agrees(self) -> None:
        if not hasattr(self, "path"):
            return
        st_ = self.room.status()
        assert st_.pending == len(self.lines)
        assert st_.partial_bytes == len(self.partial)


def test_room_state_machine(tmp_path: Path) -> None:
    RoomMachine.base_dir = tmp_path
    run_state_machine_as_test(
        RoomMachine,
        settings=settings(
            max_examples=120,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        ),
    )


def test_an_in_place_rewrite_undone_before_ackdeck_looks_loses_nothing(tmp_path: Path) -> None:
    """Found by CI (fresh clone, Python 3.13): `x` is read by s1; a foreign tool rewrites the
    room in place with a header first; a partial `x` starts; the tool truncates in place again,
    dropping the header. No look saw the header, and the room is now `x` and a partial `x`:
    larger than what s1's read recorded, with the same head, so to ackdeck it is the read line
    with bytes appended. s1's ack removes that line, the one it read, and nothing else."""
    RoomMachine.base_dir = tmp_path
    m = RoomMachine()
    steps = [
        m.setup,
        lambda: m.start_partial_line("x"),
        m.finish_partial_line,
        lambda: m.read("s1"),
        lambda: m.foreign_rewrite_in_place_new_head(0),
        lambda: m.start_partial_line("x"),
        lambda: m.foreign_truncate_in_place_then_ackdeck_looks(1),
        lambda: m.ack("s1"),
    ]
    try:
        for step in steps:
            step()
            m.file_matches_model()
            m.status_agrees()
    finally:
        m.teardown()
    assert m.path.read_bytes() == b"x"  # the read line went; the partial line stays
    assert "s1" not in m.stale  # seen as appends: the model no longer calls it stale


def test_an_in_place_rewrite_a_read_sees_makes_older_receipts_stale(tmp_path: Path) -> None:
    """The same rewrite with the header still there when ackdeck looks: the head differs from
    what s1's read recorded, so s1's ack removes nothing."""
    RoomMachine.base_dir = tmp_path
    m = RoomMachine()
    try:
        m.setup()
        m.push("x")
        m.read("s1")
        m.foreign_rewrite_in_place_new_head(0)
        m.push("y")
        m.read("s2")
        assert m.stale == {"s1"}
        m.ack("s1")  # asserts mode stale or noop, nothing removed
        m.file_matches_model()
    finally:
        m.teardown()
    assert m.path.read_bytes().endswith(b"x\ny\n")
