"""The chunk cache that ingest writes through to the sidecars' feed."""

from __future__ import annotations

from pathlib import Path

from agentzero_store.storage.keys import StoreKeys
from rag.chunking import DEFAULT_PARAMS, chunk_text
from rag.feed import ChunkCache
from rag.log import DocumentLog
from rag.records import DocumentRecord


def test_put_many_is_put_one_by_one(log_path: Path, keys: StoreKeys) -> None:
    with DocumentLog.open(log_path, keys) as log:
        changes = [log.upsert(f"d{i}", f"text number {i}") for i in range(6)]
        records = [ch.record for ch in changes]
        items = [(ch.seq, chunk_text(f"x{ch.seq}"), ch.record) for ch in changes]
        items.append(items[1])  # a repeat moves to the end, as put does
        one, many = ChunkCache(log, DEFAULT_PARAMS, size=4), ChunkCache(log, DEFAULT_PARAMS, size=4)
        for seq, chunks, record in items:
            one.put(seq, chunks, record)
        many.put_many(items)
        assert list(many._items.items()) == list(one._items.items())
        assert list(many._items) == [(log.generation, s) for s in (4, 5, 6, 2)]
        assert many._records == one._records and len(many._records) == 6
        known = many.records_of(log.generation)
        assert [known(ch.seq) for ch in changes] == records
        assert isinstance(records[0], DocumentRecord) and many.record(1) is records[0]
        assert many.records_of("another generation")(1) is None
        many.forget_records()
        assert known(1) is None and many.get(1) == chunk_text("text number 0")
