"""A hypothesis state machine over push / read / ack / foreign rewrites / partial writes.

The model mirrors the room as a list of (id, text) lines, so identical texts stay distinct
lines. After every step the file on disk must equal the model, and:
- every line ever written is in the file, or was removed by an ack of a session that had read
  that very line (or by ack --all, which returns it), or by the foreign tool;
- an ack removes only a prefix of the file, made of lines that session read;
- after a foreign rewrite, older receipts are stale and remove nothing;
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
        self.stale: set[str] = set()  # receipts older than a foreign rewrite
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
        self._swept()
        res = self.room.read(session)
        assert res.lines == [t for _, t in self.lines]
        self.read_ids[session] = {i for i, _ in self.lines}
        self.stale.discard(session)

    @rule(session=SESSIONS)
    def ack(self, session: str) -> None:
        self._swept()
        read = self.read_ids.get(session)
        if read is None:
            with pytest.raises(ColdAck):
                self.room.ack(session)
            return  # the invariants check that nothing but the sweep changed the file
        res = self.room.ack(session)
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
        self._swept()
        res = self.room.ack(session, all=True)
        if res.acked:
            self._acked_something()
        assert res.lines == [t for _, t in self.lines]  # everything removed is returned
        self.lines = []
        self.read_ids[session] = self.read_ids.get(session)  # --all does not touch receipts

    # ----- a foreign tool --------------------------------------------------------------------
    def _all_receipts_stale(self) -> None:
        self.stale |= {s for s, r in self.read_ids.items() if r is not None}

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
        # head changes, so ackdeck can tell.
        header = (next(self.ids), f"FOREIGN{next(self.ids)}".encode())
        keep = [header, *self.lines[k:]]
        with open(self.path, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(t + b"\n" for _, t in keep) + self.partial)
        self.lines = keep
        self._all_receipts_stale()

    @precondition(lambda self: len(self.lines) > 0)
    @rule(k=st.integers(1, 3))
    def foreign_truncate_in_place_then_ackdeck_looks(self, k: int) -> None:
        # Drop the first k lines in place (same inode, maybe the same head when lines repeat).
        # Detected because the file is now smaller than the largest size a read recorded; that
        # needs ackdeck to look before producers refill it (docs/concepts/exact-acks.md:
        # residual windows).
        keep = self.lines[k:]
        with open(self.path, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(t + b"\n" for _, t in keep) + self.partial)
        self.lines = keep
        self._all_receipts_stale()
        self._swept()
        assert self.room.read("observer").lines == [t for _, t in self.lines]

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
