"""The acknowledgement ledger on its own: slots, versions, torn writes, forgery, sharing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.base.errors import CorruptStoreError
from agentzero_store.storage.ack_format import HEADER_BYTES, LEDGER_BYTES, SLOT_BYTES, SourceState
from agentzero_store.storage.acks import Ledger, SourceLossError, create_ledger

KEY, SID = os.urandom(32), "s" * 32


@pytest.fixture
def root(tmp_path: Path) -> Path:
    create_ledger(tmp_path, KEY, SID)
    return tmp_path


def test_fresh_ledger_knows_no_source(root: Path) -> None:
    with Ledger(root, KEY, SID, writable=False) as led:
        assert led.state("memory") == SourceState(version=1)
        assert led.state("documents").created is False
    assert (root / "sources.ledger").stat().st_size == LEDGER_BYTES
    assert (root / "sources.ledger").stat().st_mode & 0o777 == 0o600


def test_acknowledge_only_grows_and_alternates_slots(root: Path) -> None:
    with Ledger(root, KEY, SID, writable=True) as led:
        led.acknowledge("memory", 5)
        first = led.read("memory").slot
        led.acknowledge("memory", 3)  # an older seq never moves it back
        assert led.state("memory").seq == 5
        led.acknowledge("memory", 9)
        assert led.state("memory").seq == 9
        assert led.read("memory").slot != first
        assert led.state("documents").created is False  # regions are independent


def test_a_second_handle_sees_updates_of_the_first(root: Path) -> None:
    with (
        Ledger(root, KEY, SID, writable=True) as a,
        Ledger(root, KEY, SID, writable=True) as b,
    ):
        a.acknowledge("documents", 10, "g1")
        assert b.state("documents").seq == 10
        b.acknowledge("documents", 12, "g1")
        a.acknowledge("documents", 11, "g1")  # a's cached view is stale: it must re-read
        assert a.state("documents").seq == 12
        assert b.state("documents").seq == 12


@settings(max_examples=40, deadline=None)
@given(at=st.integers(0, SLOT_BYTES - 1), writes=st.integers(1, 6))
def test_a_torn_newest_slot_leaves_the_previous_state(
    tmp_path_factory: pytest.TempPathFactory, at: int, writes: int
) -> None:
    root = tmp_path_factory.mktemp("torn")
    create_ledger(root, KEY, SID)
    with Ledger(root, KEY, SID, writable=True) as led:
        for i in range(writes):
            led.acknowledge("memory", i + 1)
        newest = led.read("memory").slot
    assert newest is not None
    path = root / "sources.ledger"
    raw = bytearray(path.read_bytes())
    raw[HEADER_BYTES + newest * SLOT_BYTES + at] ^= 0x5A
    path.write_bytes(bytes(raw))
    with Ledger(root, KEY, SID, writable=False) as led:
        got = led.read("memory")
        assert got.damaged == (newest,)
        want = writes - 1  # the state before the torn update (0: the fresh "not created")
        assert got.state is not None and got.state.seq == want


def test_slots_cannot_be_moved_between_sources_or_stores(root: Path) -> None:
    with Ledger(root, KEY, SID, writable=True) as led:
        led.acknowledge("memory", 50)
        slot = led.read("memory").slot
    assert slot is not None
    path = root / "sources.ledger"
    raw = bytearray(path.read_bytes())
    mem = HEADER_BYTES + slot * SLOT_BYTES
    docs = HEADER_BYTES + 2 * SLOT_BYTES
    raw[docs : docs + 2 * SLOT_BYTES] = raw[mem : mem + SLOT_BYTES] * 2
    path.write_bytes(bytes(raw))
    with Ledger(root, KEY, SID, writable=False) as led, pytest.raises(CorruptStoreError):
        led.state("documents")
    with Ledger(root, KEY, "t" * 32, writable=False) as other, pytest.raises(CorruptStoreError):
        other.state("memory")


def test_missing_or_resized_ledger_is_an_error(root: Path) -> None:
    path = root / "sources.ledger"
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(CorruptStoreError, match="damaged"):
        Ledger(root, KEY, SID, writable=False)
    path.unlink()
    with pytest.raises(SourceLossError, match="missing"):
        Ledger(root, KEY, SID, writable=False)


def test_a_generation_change_needs_a_recorded_compaction(root: Path) -> None:
    with Ledger(root, KEY, SID, writable=True) as led:
        led.acknowledge("documents", 4, "g1")
        with pytest.raises(CorruptStoreError, match="without a recorded compaction"):
            led.acknowledge("documents", 5, "g2")


def test_losses_are_kept_newest_last_and_bounded(root: Path) -> None:
    state = SourceState(created=True, seq=3)
    for i in range(12):
        state = state.with_loss(f"seq {i + 10}", f"seq {i}")
    with Ledger(root, KEY, SID, writable=True) as led:
        led.update("memory", state, sync=True)
        got = led.state("memory").losses
    assert len(got) == 8 and got[-1]["expected"] == "seq 21"
