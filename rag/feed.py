"""The document log seen as a chunk-level source for the sidecar mechanism.

Sidecars index *chunks*, the log records *documents*. A chunk's key is
``seq << 16 | chunk_index``: the seq of the upsert that wrote that version, so keys are
never reused, and an upsert or delete removes the chunks of the version it replaced
(found with ``DocumentLog.previous_version``). The source's ``store_id`` includes the log
generation and the chunking parameters: after ``compact`` (seqs renumbered) or a change
of chunking, every sidecar checkpoint stops matching and is rebuilt.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from agentzero_store.base.errors import InvalidArgumentError
from agentzero_store.sidecar.types import Change

from .chunking import Chunk, ChunkParams, chunk_text
from .log import DocumentLog
from .records import DocumentRecord

P = TypeVar("P")

CHUNK_BITS = 16
MAX_CHUNKS = 1 << CHUNK_BITS

# Turns one document version and its chunks into one payload per chunk (None: skip it).
PayloadFn = Callable[[DocumentRecord, list[Chunk]], Sequence[P | None]]


def chunk_key(seq: int, index: int) -> int:
    """The sidecar key of chunk ``index`` of the version written at ``seq``."""
    return (seq << CHUNK_BITS) | index


def split_key(key: int) -> tuple[int, int]:
    """Inverse of ``chunk_key``: (seq, chunk index)."""
    return key >> CHUNK_BITS, key & (MAX_CHUNKS - 1)


def check_chunk_count(doc_id: str, chunks: list[Chunk]) -> None:
    """Refuse documents with more chunks than a key can number."""
    if len(chunks) >= MAX_CHUNKS:
        raise InvalidArgumentError(
            f"document {doc_id!r} has {len(chunks)} chunks; at most {MAX_CHUNKS - 1}",
            hint="split it into several documents",
        )


class ChunkCache:
    """Chunks of recent document versions, keyed by (log generation, seq).

    Shared by every feed of a store and primed by ingest, so a document is chunked once
    per write, not once more for each sidecar. Bounded: old versions fall out.

    Ingest also hands over the records it has just written (a write-through), so the
    sidecars' catch-up does not read back and decrypt what was sealed a moment ago. Those
    are held only until the sidecars have caught up (``forget_records``).
    """

    def __init__(self, log: DocumentLog, params: ChunkParams, size: int = 4096) -> None:
        self.log = log
        self.params = params
        self._size = size
        self._items: OrderedDict[tuple[str, int], list[Chunk]] = OrderedDict()
        self._records: dict[tuple[str, int], DocumentRecord] = {}

    def put(self, seq: int, chunks: list[Chunk], record: DocumentRecord | None = None) -> None:
        """Remember the chunks (and, until the next catch-up, the record) written at ``seq``."""
        self.put_many([(seq, chunks, record)])

    def put_many(self, items: Iterable[tuple[int, list[Chunk], DocumentRecord | None]]) -> None:
        """``put`` of each ``(seq, chunks, record)`` (one ingest batch)."""
        generation, cache, records = self.log.generation, self._items, self._records
        for seq, chunks, record in items:
            key = (generation, seq)
            if key in cache:
                cache.move_to_end(key)
            cache[key] = chunks
            if record is not None:
                records[key] = record
        while len(cache) > self._size:
            cache.popitem(last=False)

    def record(self, seq: int) -> DocumentRecord | None:
        """The record this process wrote at ``seq``, if it is still held (else None)."""
        return self._records.get((self.log.generation, seq))

    def records_of(self, generation: str) -> Callable[[int], DocumentRecord | None]:
        """``record`` for one pass over ``generation`` (looked up once, not per record)."""
        records = self._records
        return lambda seq: records.get((generation, seq))

    def forget_records(self) -> None:
        """Drop the written records: every sidecar has caught up past them."""
        self._records.clear()

    def get(
        self, seq: int, record: DocumentRecord | None = None, generation: str | None = None
    ) -> list[Chunk]:
        """The chunks of the version at ``seq`` (cut from ``record``, or re-read, if unknown).

        ``generation``: the log's current generation, if the caller has it at hand.
        """
        key = (generation or self.log.generation, seq)
        chunks = self._items.get(key)
        if chunks is None:
            if record is None:
                entry = self.log.read(seq)
                assert isinstance(entry, DocumentRecord)
                record = entry
            chunks = chunk_text(record.text, self.params)
            self.put(seq, chunks)
        return chunks


class ChunkFeed(Generic[P]):
    """A ``sidecar.Source[P]`` over the chunks of the live documents of a log."""

    def __init__(
        self, log: DocumentLog, params: ChunkParams, payload: PayloadFn[P], cache: ChunkCache
    ) -> None:
        self.log = log
        self.params = params
        self._payload = payload
        self._cache = cache

    @property
    def store_id(self) -> str:
        """Store id + log generation + chunking: a checkpoint of anything else is stale."""
        return f"{self.log.store_id}:{self.log.generation}:{self.params.id}"

    def source_seq(self) -> int:
        """The log's last seq."""
        return self.log.seq

    def item_count(self) -> int:
        """Live documents (a progress estimate; chunks are ~1-3 per document)."""
        return len(self.log)

    def chunks_of(self, seq: int) -> list[Chunk]:
        """The chunks of the version written at ``seq`` (cached; else the text is re-read)."""
        return self._cache.get(seq)

    def _inserts(
        self, seq: int, record: DocumentRecord, generation: str | None = None
    ) -> list[tuple[int, P]]:
        chunks = self._cache.get(seq, record, generation)
        payloads = self._payload(record, chunks)
        return [
            (chunk_key(seq, c.index), p)
            for c, p in zip(chunks, payloads, strict=True)
            if p is not None
        ]

    def changes_since(self, seq: int, limit: int) -> Sequence[Change[P]]:
        """Chunk changes after ``seq``; whole log records only (never half a record's)."""
        out: list[Change[P]] = []
        log, cache = self.log, self._cache
        # One generation for the whole pass: log.changes_since raises StaleFeedError
        # before it yields a change of another generation.
        generation = log.generation
        for ch in log.changes_since(seq, cache.records_of(generation)):
            at, record = ch.seq, ch.record
            before = len(out)
            prev = log.previous_version(at)
            if prev is not None:
                out += [
                    Change(at, "delete", chunk_key(prev, c.index), None)
                    for c in cache.get(prev, None, generation)
                ]
            if record is not None:
                out += [
                    Change(at, "insert", k, p) for k, p in self._inserts(at, record, generation)
                ]
            if len(out) == before:
                # A record with no chunk to change (an empty text) must still move the
                # sidecar past its seq: a delete of a key that never exists is a no-op.
                out.append(Change(at, "delete", chunk_key(at, MAX_CHUNKS - 1), None))
            if len(out) >= limit:
                break
        return out

    def snapshot(self, batch: int) -> Iterator[Sequence[tuple[int, P]]]:
        """Every chunk of every live document, in batches."""
        items: list[tuple[int, P]] = []
        generation = self.log.generation  # iter_live raises if it changes under us
        for seq, record in self.log.iter_live():
            items += self._inserts(seq, record, generation)
            if len(items) >= batch:
                yield items
                items = []
        if items:
            yield items
