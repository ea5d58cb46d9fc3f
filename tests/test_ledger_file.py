"""The ledger file: two checksummed slots written in place; a torn store falls back."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackdeck.core.errors import CorruptState
from ackdeck.core.rooms.file import ledger as L


def test_roundtrip_and_alternating_slots(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    assert L.load_ledger(path) is None
    for base in (10, 20, 30):
        L.store_ledger(path, L.Ledger(base=base))
        assert L.load_ledger(path) == L.Ledger(base=base)
    raw = path.read_bytes()
    assert len(raw) == 2 * L.LEDGER_SLOT
    # Both slots hold a state: the latest (30) and the one before (20).
    assert b'"base":30' in raw and b'"base":20' in raw


def test_torn_latest_slot_falls_back_to_the_previous_state(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    L.store_ledger(path, L.Ledger(base=1))
    L.store_ledger(path, L.Ledger(base=2))  # seq 2 -> slot 0
    raw = bytearray(path.read_bytes())
    raw[100:200] = b"\0" * 100  # a store cut short (power cut mid-write)
    path.write_bytes(bytes(raw))
    assert L.load_ledger(path) == L.Ledger(base=1)
    L.store_ledger(path, L.Ledger(base=3))  # overwrites the torn slot, keeps base=1 intact
    assert L.load_ledger(path) == L.Ledger(base=3)


def test_garbage_is_a_clear_error_and_empty_is_new(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    path.write_bytes(b"{not a ledger")
    with pytest.raises(CorruptState, match="corrupt state file .*no valid slot.*left in place"):
        L.load_ledger(path)
    assert path.read_bytes() == b"{not a ledger"
    path.write_bytes(b"")
    assert L.load_ledger(path) is None


def test_load_base_matches_the_full_model(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    assert L.load_base(path) == 0
    led = L.Ledger(base=12345, epoch=3, acked_total=9)
    L.store_ledger(path, led)
    assert L.load_base(path) == 12345 == L.load_ledger(path).base
    path.write_bytes(b"garbage")
    with pytest.raises(CorruptState):
        L.load_base(path)


def test_load_base_cache_follows_every_store(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    cache: dict[tuple[int, int], int] = {}
    for base in range(5):
        L.store_ledger(path, L.Ledger(base=base))
        assert L.load_base(path, cache=cache) == base
        assert L.load_base(path, cache=cache) == base  # served from the cache
    path.unlink()  # a new ledger restarts its sequence numbers: the inode keys them apart
    L.store_ledger(path, L.Ledger(base=99))
    assert L.load_base(path, cache=cache) == 99
