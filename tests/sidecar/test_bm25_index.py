"""The BM25 adapter: upserts, deletes, ranking and an exact dump/load round trip."""

from __future__ import annotations

import pytest

from agentzero_store.base.errors import SidecarCorruptError
from agentzero_store.sidecar.bm25 import SealedBm25Index


def test_bm25_ranking_upsert_delete_and_round_trip() -> None:
    b = SealedBm25Index()
    b.insert(
        [
            (1, "the boiler pressure is low"),
            (2, "sourdough starter needs feeding"),
            (3, "pressure cooker recipes"),
            (4, "boilers boilers and more boiler parts"),
        ]
    )
    assert [k for k, _ in b.search("Boiler PRESSURE", 5)][:2] == [1, 4]
    assert {k for k, _ in b.search("NOT boiler", 5)} == {1, 4}  # NOT is just a word
    assert b.search("( [ ^ : ~", 5) == []  # syntax in user text is not syntax
    b.insert([(1, "now about bread")])  # upsert replaces
    assert 1 not in [k for k, _ in b.search("pressure", 5)]
    b.delete([3, 3, 99])  # idempotent, unknown keys ignored
    assert [k for k, _ in b.search("pressure", 5)] == []
    assert b.count() == 3
    c = SealedBm25Index()
    c.load(b.dump())
    assert c.count() == 3
    for q in ("bread", "boiler", "sourdough feeding"):
        # Same keys in the same order; scores may differ slightly because Tantivy keeps
        # deleted documents in its term statistics until segments merge.
        assert [k for k, _ in c.search(q, 5)] == [k for k, _ in b.search(q, 5)]


def test_bm25_malformed_checkpoint_is_sidecar_corrupt() -> None:
    b = SealedBm25Index()
    with pytest.raises(SidecarCorruptError):
        b.load({"texts": b"\x01\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\x00abc"})
    with pytest.raises(SidecarCorruptError):
        b.load({})
