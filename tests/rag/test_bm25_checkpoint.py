"""The BM25 sidecar's checkpoint blob: kept up to date per change, compacted, replayed."""

from __future__ import annotations

import struct

import pytest

from agentzero_store.base.errors import SidecarCorruptError
from agentzero_store.sidecar.bm25 import DELETED, SealedBm25Index

REC = struct.Struct("<QI")


def _keys(b: SealedBm25Index, q: str) -> list[int]:
    return [k for k, _ in b.search(q, 50)]


def test_dump_replays_inserts_replacements_and_deletes() -> None:
    b = SealedBm25Index()
    b.insert([(1, "alpha one"), (2, "beta two"), (3, "gamma three")])
    b.insert([(2, "delta replaced")])
    b.delete([3, 99])
    c = SealedBm25Index()
    c.load(b.dump())
    assert c.count() == b.count() == 2
    for q in ("alpha", "beta", "delta", "gamma"):
        assert _keys(c, q) == _keys(b, q)
    c.insert([(4, "epsilon")])  # a loaded index keeps appending to the same blob
    c.delete([1])
    d = SealedBm25Index()
    d.load(c.dump())
    assert d.count() == 2 and _keys(d, "epsilon") == [4] and _keys(d, "alpha") == []


def test_dead_records_are_compacted_away() -> None:
    b = SealedBm25Index()
    for round_ in range(20):
        b.insert([(k, f"round{round_} text {k}") for k in range(50)])
        b.delete(list(range(25)))
    one_live_copy = sum(REC.size + len(f"round19 text {k}") for k in range(25, 50))
    assert len(b.dump()["texts"]) <= 4 * one_live_copy
    c = SealedBm25Index()
    c.load(b.dump())
    assert c.count() == 25 and _keys(c, "round19") == _keys(b, "round19")


def test_a_plain_text_list_still_loads() -> None:
    # A blob with no tombstone is the format written before deltas: still valid.
    blob = REC.pack(7, 5) + b"hello" + REC.pack(8, 5) + b"world"
    b = SealedBm25Index()
    b.load({"texts": blob})
    assert b.count() == 2 and _keys(b, "world") == [8]


@pytest.mark.parametrize(
    "blob",
    [
        REC.pack(7, DELETED),  # deletes a key it never held
        REC.pack(7, 5) + b"hello" + REC.pack(7, DELETED) + REC.pack(7, DELETED),
        REC.pack(7, 5) + b"hel",  # truncated
        REC.pack(7, 2) + b"\xff\xfe",  # not UTF-8
        b"\x01\x02\x03",  # not even a record header
    ],
)
def test_malformed_blobs_are_sidecar_corrupt(blob: bytes) -> None:
    with pytest.raises(SidecarCorruptError):
        SealedBm25Index().load({"texts": blob})
