"""The pure rules that decide what an ack may remove (core/rooms/file/ledger.py), tested without
I/O."""

from __future__ import annotations

import itertools

import pytest

from ackdeck.core.base.byteio import split_lines
from ackdeck.core.base.digest import line_digests
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file import receipts as R


def _st(size: int, *, ino: int = 7, mtime: int = 1_000, dev: int = 1) -> L.FileStat:
    return L.FileStat(dev, ino, size, mtime)


def _receipt(data: bytes, *, start: int = 0, epoch: int = 0, acked: bool = False):
    return R.ReceiptHeader(
        session="s",
        epoch=epoch,
        start=start,
        end=start + len(data),
        lines=data.count(b"\n"),
        sha256=L.sha256(data),
        read_at=0.0,
        acked=acked,
    )


def _digests(data: bytes) -> bytes:
    """What a receipt keeps of the lines it read: their digests, in order."""
    return line_digests(split_lines(data))


# ----- plan_ack ---------------------------------------------------------------------------
def test_prefix_drop_keeps_late_line() -> None:
    read = b"a\nb\n"
    head = b"a\nb\n"  # the file is now a\nb\nlate\n; head = first end-base bytes
    plan = L.plan_ack(_receipt(read), _digests(read), epoch=0, base=0, head=head)
    assert (plan.mode, plan.drop) == ("prefix", 4)


def test_empty_read_acks_nothing() -> None:
    plan = L.plan_ack(_receipt(b""), _digests(b""), epoch=0, base=0, head=b"")
    assert (plan.mode, plan.drop) == ("noop", 0)
    assert "no lines" in plan.reason


def test_already_acked_by_other_session_is_noop() -> None:
    read = b"a\n"
    plan = L.plan_ack(_receipt(read), _digests(read), epoch=0, base=2, head=b"")
    assert (plan.mode, plan.drop) == ("noop", 0)


def test_overlapping_reads_drop_only_the_unacked_tail() -> None:
    # Session 1 read a,b and acked them (base=4); session 2 had read a,b,c.
    read2 = b"a\nb\nc\n"
    plan = L.plan_ack(_receipt(read2), _digests(read2), epoch=0, base=4, head=b"c\n")
    assert (plan.mode, plan.drop) == ("prefix", 2)


def test_other_epoch_is_stale() -> None:
    read = b"a\n"
    plan = L.plan_ack(_receipt(read, epoch=0), _digests(read), epoch=1, base=0, head=b"a\n")
    assert (plan.mode, plan.drop) == ("stale", 0)


def test_changed_head_is_stale_even_in_same_epoch() -> None:
    read = b"a\nb\n"
    plan = L.plan_ack(_receipt(read), _digests(read), epoch=0, base=0, head=b"a\nX\n")
    assert (plan.mode, plan.drop) == ("stale", 0)


def test_short_file_is_stale() -> None:
    read = b"a\nb\n"
    plan = L.plan_ack(_receipt(read), _digests(read), epoch=0, base=0, head=b"a\n")
    assert (plan.mode, plan.drop) == ("stale", 0)


def test_acked_receipt_is_refused() -> None:
    read = b"a\n"
    plan = L.plan_ack(_receipt(read, acked=True), _digests(read), epoch=0, base=0, head=read)
    assert (plan.mode, plan.drop) == ("refused", 0)


def test_base_behind_receipt_start_is_stale() -> None:
    read = b"a\n"
    head = b"xxxxxxa\n"
    plan = L.plan_ack(_receipt(read, start=10), _digests(read), epoch=0, base=4, head=head)
    assert (plan.mode, plan.drop) == ("stale", 0)


def test_the_read_lines_in_another_order_at_the_head_are_stale() -> None:
    # The same lines as the unacked rest, as a multiset, but not in the order they were read:
    # a match by content alone (the seed's fallback) would remove them.
    read = b"a\nb\nc\n"
    plan = L.plan_ack(_receipt(read), _digests(read), epoch=0, base=2, head=b"c\nb\n")
    assert (plan.mode, plan.drop) == ("stale", 0)


def test_a_base_inside_a_read_line_proves_nothing() -> None:
    # Acks drop whole lines, so in one epoch base never falls inside a line; if it does,
    # the room is not what was read, whatever its bytes: nothing is removed.
    read = b"ab\ncd\n"
    plan = L.plan_ack(_receipt(read), _digests(read), epoch=0, base=1, head=b"b\ncd\n")
    assert (plan.mode, plan.drop) == ("stale", 0)


def test_digests_of_another_read_are_stale() -> None:
    read, other = b"x\nab\n", b"x\nAB\n"
    assert L.plan_ack(_receipt(read), _digests(read), epoch=0, base=2, head=b"ab\n").drop == 3
    plan = L.plan_ack(_receipt(read), _digests(other), epoch=0, base=2, head=b"ab\n")
    assert (plan.mode, plan.drop) == ("stale", 0)


@pytest.mark.parametrize("n_lines", range(0, 5))
def test_plan_never_drops_more_than_was_read_exhaustive(n_lines: int) -> None:
    # Every split of a read into (acked by someone else, still at head) and every head
    # content among a small alphabet: the drop is either 0 or exactly the unacked tail,
    # and a drop happens only if the head equals that tail.
    lines = [b"x\n", b"y\n"]
    for read_lines in itertools.product(lines, repeat=n_lines):
        read = b"".join(read_lines)
        for base in range(0, len(read) + 1, 2):
            tail = read[base:]
            for head_lines in itertools.product(lines, repeat=len(tail) // 2):
                head = b"".join(head_lines)
                plan = L.plan_ack(_receipt(read), _digests(read), epoch=0, base=base, head=head)
                assert plan.drop in (0, len(tail))
                if plan.drop:
                    assert head[: plan.drop] == tail and plan.mode == "prefix"


# ----- classify / settle --------------------------------------------------------------------
def _ledger_at(size: int, head: bytes, **kw) -> L.Ledger:
    return L.Ledger(identity=L.identity_of(_st(size, **kw), head))


def test_first_use_is_new() -> None:
    assert L.classify(L.Ledger(), _st(3), b"ab\n") == "new"


def test_append_is_grown_and_unchanged_is_same() -> None:
    led = _ledger_at(3, b"ab\n")
    assert L.classify(led, _st(3), b"ab\n") == "same"
    assert L.classify(led, _st(6, mtime=2_000), b"ab\ncd\n") == "grown"
    grown = L.settle(led, "grown", L.identity_of(_st(6, mtime=2_000), b"ab\ncd\n"))
    assert (grown.identity.size, grown.epoch, grown.base) == (6, 0, 0)


def test_other_inode_is_foreign() -> None:
    led = _ledger_at(3, b"ab\n")
    assert L.classify(led, _st(3, ino=8), b"ab\n") == "foreign"


def test_shrunk_is_foreign() -> None:
    led = _ledger_at(6, b"ab\ncd\n")
    assert L.classify(led, _st(3), b"ab\n") == "foreign"


def test_changed_head_is_foreign() -> None:
    led = _ledger_at(3, b"ab\n")
    assert L.classify(led, _st(6), b"zz\ncd\n") == "foreign"


def test_same_size_new_mtime_is_an_in_place_rewrite() -> None:
    # `printf 'ab\n' > room` truncates and refills the same inode to the same size: only the
    # mtime tells it apart from "nothing happened".
    led = _ledger_at(3, b"ab\n", mtime=1_000)
    assert L.classify(led, _st(3, mtime=1_000), b"ab\n") == "same"
    assert L.classify(led, _st(3, mtime=2_000), b"ab\n") == "foreign"


def test_rewritten_since() -> None:
    seen = L.identity_of(_st(6, mtime=5), b"ab\ncd\n")
    assert not L.rewritten_since(seen, _st(6, mtime=5))
    assert not L.rewritten_since(seen, _st(9, mtime=9))  # an append
    assert L.rewritten_since(seen, _st(3, mtime=9))  # shrank
    assert L.rewritten_since(seen, _st(6, mtime=9))  # refilled to the same size
    assert not L.rewritten_since(seen, _st(3, ino=99))  # another inode: the ledger decides


def test_foreign_settle_starts_new_epoch_and_base_keeps_growing() -> None:
    led = _ledger_at(10, b"0123456789").replace(base=100, epoch=2)
    cur = L.identity_of(_st(4, ino=9), b"new\n")
    out = L.settle(led, "foreign", cur)
    assert (out.epoch, out.base, out.identity) == (3, 110, cur)


def test_pending_rewrite_is_recovered_with_its_counters() -> None:
    new = L.identity_of(_st(2, ino=9, mtime=5), b"c\n")
    led = _ledger_at(6, b"a\nb\nc\n").replace(
        pending=L.PendingRewrite(identity=new, base=4, session="s", acked=2, at=42.0),
        acked_total=10,
    )
    st = _st(4, ino=9, mtime=6)  # grew by a sweep after the rename
    assert L.classify(led, st, b"c\nd\n") == "recovered"
    out = L.settle(led, "recovered", L.identity_of(st, b"c\nd\n"))
    assert (out.base, out.identity, out.pending) == (4, new, None)
    assert (out.acked_total, out.last_ack_at, out.last_ack_session) == (12, 42.0, "s")


def test_a_room_shorter_than_what_was_numbered_is_a_new_epoch_past_every_number() -> None:
    # Pushes do not store the ledger: its identity says 3 bytes, but pushes numbered (and
    # dated) up to offset 20 before `: > room`. The refilled room must not reuse 0..20.
    led = _ledger_at(3, b"ab\n").replace(base=100)
    assert L.classify(led, _st(8, mtime=2_000), b"ab\ncd\nx\n", numbered=120) == "foreign"
    assert L.classify(led, _st(20, mtime=2_000), b"ab\n" + b"x" * 17, numbered=120) == "grown"
    out = L.settle(led, "foreign", L.identity_of(_st(8), b"ab\ncd\nx\n"), numbered=120)
    assert (out.epoch, out.base) == (1, 120)
    # Never looked at (no identity yet), then emptied: the same.
    assert L.classify(L.Ledger(), _st(0), b"", numbered=20) == "foreign"
    assert L.settle(L.Ledger(), "foreign", L.identity_of(_st(0), b""), numbered=20).base == 20


def test_an_interrupted_dead_letter_move_is_recovered_as_dead_not_acked() -> None:
    new = L.identity_of(_st(2, ino=9, mtime=5), b"c\n")
    pending = L.PendingRewrite(identity=new, base=4, session="x", acked=2, at=42.0, dead="r.dead")
    led = _ledger_at(6, b"a\nb\nc\n").replace(pending=pending, acked_total=10, dead_total=1)
    out = L.settle(led, "recovered", L.identity_of(_st(2, ino=9, mtime=5), b"c\n"))
    assert (out.acked_total, out.dead_total, out.last_ack_at, out.base) == (10, 3, None, 4)


def test_a_splice_output_is_recovered_as_the_ack() -> None:
    # An ack renamed its temp, then put a late tail in place by a second rename (a splice,
    # core/rooms/file/carry_over.py): either file on disk is this ack's output.
    first = L.identity_of(_st(2, ino=9, mtime=5), b"c\n")
    spliced = L.identity_of(_st(5, ino=11, mtime=6), b"c\nL1\n")
    pending = L.PendingRewrite(identity=first, base=4, acked=2, spliced=spliced)
    led = _ledger_at(6, b"a\nb\nc\n").replace(pending=pending)
    for st, head, ident in (
        (_st(2, ino=9, mtime=5), b"c\n", first),
        (_st(7, ino=11), b"c\nL1\nd", spliced),
    ):
        assert L.classify(led, st, head) == "recovered"
        out = L.settle(led, "recovered", L.identity_of(st, head))
        assert (out.identity, out.base, out.acked_total) == (ident, 4, 2)
    assert L.classify(led, _st(5, ino=12), b"c\nL1\n") == "foreign"


def test_pending_without_rename_is_forgotten_with_its_link_entry() -> None:
    # The ack died after writing its intent but before the rename: the file is the old one.
    cur_st = _st(6)
    led = _ledger_at(6, b"a\nb\nc\n").replace(
        pending=L.PendingRewrite(identity=L.identity_of(_st(2, ino=9), b"c\n"), base=4, acked=2),
        prev=[L.PrevInode(name="prev-7-x", dev=1, ino=7, offset=6, since=0.0)],
    )
    assert L.classify(led, cur_st, b"a\nb\nc\n") == "same"
    out = L.settle(led, "same", L.identity_of(cur_st, b"a\nb\nc\n"))
    assert out.pending is None and out.prev == [] and out.base == 0 and out.acked_total == 0


@pytest.mark.parametrize("verdict", ["same", "new", "grown", "foreign", "recovered"])
def test_settle_counters_is_settle_without_the_new_identity(verdict: str) -> None:
    # What a status reports (settle_counters) is what a read or ack settles (settle): every
    # field but the identity of the file on disk, which the status does not hash.
    pending_id = L.identity_of(_st(2, ino=9, mtime=5), b"c\n")
    led = _ledger_at(6, b"a\nb\nc\n").replace(
        base=100,
        epoch=2,
        acked_total=7,
        pending=L.PendingRewrite(identity=pending_id, base=104, session="s", acked=2, at=42.0),
        prev=[
            L.PrevInode(name="prev-9-x", dev=1, ino=9, offset=6, since=0.0),
            L.PrevInode(name="prev-5-y", dev=1, ino=5, offset=3, since=0.0),
        ],
    )
    cur = L.identity_of(_st(4, ino=9, mtime=6), b"c\nd\n")
    full = L.settle(led, verdict, cur)  # type: ignore[arg-type]
    counters = L.settle_counters(led, verdict, (cur.dev, cur.ino))  # type: ignore[arg-type]
    assert counters.to_json() == {**full.to_json(), "identity": counters.to_json()["identity"]}
    want = {"new": cur, "grown": cur, "foreign": cur, "same": led.identity}
    assert full.identity == want.get(verdict, pending_id)
    assert counters.identity == (pending_id if verdict == "recovered" else led.identity)
    assert [p.ino for p in counters.prev] == [5]  # the live inode's link entry is forgotten


def test_receipt_roundtrip_and_corruption(tmp_path) -> None:
    data = b"a\xff\r\tb\n\n"
    r = R.sealed(_receipt(data), split_lines(data))
    raw = R.encode_receipt(r)
    assert data not in raw and len(raw.partition(b"\n")[2]) == 2 * 16
    assert R.decode_receipt(raw, tmp_path) == r
    bad = raw[:-1] + bytes([raw[-1] ^ 1])
    with pytest.raises(L.CorruptState, match="corrupt receipt"):
        R.decode_receipt(bad, tmp_path)
    with pytest.raises(L.CorruptState, match="corrupt receipt"):
        R.decode_receipt(raw[:-16], tmp_path)  # a line's digest missing


def test_receipt_of_the_previous_format_decodes_to_its_line_digests(tmp_path) -> None:
    # Written before line digests: the header without digests_sha256, then the bytes read.
    data = b"a\xff\r\tb\n\n"
    old = R.encode_receipt_header(_receipt(data)) + data
    assert b"digests_sha256" not in old
    assert R.decode_receipt(old, tmp_path) == R.Receipt(_receipt(data), _digests(data))
    with pytest.raises(L.CorruptState, match="corrupt receipt"):
        R.decode_receipt(old[:-1] + b"X", tmp_path)
