"""Descriptors a Room keeps open across pushes, so a push costs a few syscalls, not a dozen.

A push needs the sidecar lock (shared) and the ledger's `base`. Opening, checking and closing
both per line cost more than the append itself, so they stay open in the Room object:
- the flock goes on the cached lock descriptor (the same inode every ackdeck process locks);
- `base` is served from the cached ledger descriptor: one stat of the ledger path (is it still
  the inode we hold? a moved-aside ledger or a removed sidecar shows up as another inode or as
  missing, and the inode we hold open cannot be reused) and one pread of both slot headers (a
  store always writes a higher sequence number, so unchanged numbers mean an unchanged base).
Anything unexpected drops the descriptors and the caller takes the slow path, which validates
the sidecar and parses the ledger from scratch.

The descriptors belong to one process: a forked child must not share their open file
description (unlocking it would release the parent's flock), so a fork invalidates them and
the child opens its own.
"""

from __future__ import annotations

import os
import weakref

from core.inbox import ledger as L

# Covers slot 0 and the header (with the sequence number) of slot 1.
SLOTS_SPAN = L.LEDGER_SLOT + 128

_generation = [0]


def _forked() -> None:
    _generation[0] += 1


os.register_at_fork(after_in_child=_forked)


class PushHandles:
    """Open lock and ledger descriptors of one room, with the base seen at a slot sequence."""

    __slots__ = (
        "lock_fd",
        "ledger_fd",
        "ledger_ino",
        "slots",
        "base",
        "generation",
        "_closer",
        "__weakref__",
    )

    def __init__(self, lock_fd: int, ledger_fd: int, ledger_ino: int) -> None:
        self.lock_fd = lock_fd
        self.ledger_fd = ledger_fd
        self.ledger_ino = ledger_ino
        # The ledger bytes `base` was read from: slot 0 and the header of slot 1, read with the
        # shared lock held (stores happen under the exclusive one). Every store rewrites one
        # slot with a higher sequence number in its header, so the same bytes mean the same
        # ledger state.
        self.slots = b""
        self.base = 0
        self.generation = _generation[0]
        # Closes both when this object is collected (or at exit) if close() was not called.
        # In a forked child that closes only the child's copies: a flock lasts until every
        # descriptor of its open file description is closed, so the parent's lock stays.
        self._closer = weakref.finalize(self, _close_both, ledger_fd, lock_fd)

    def usable(self) -> bool:
        return self.generation == _generation[0]

    def close(self) -> None:
        self._closer()  # runs once; releases any flock still held through the lock descriptor


def _close_both(ledger_fd: int, lock_fd: int) -> None:
    os.close(ledger_fd)
    os.close(lock_fd)
