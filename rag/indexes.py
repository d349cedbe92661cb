"""The document store's derived indexes: BM25 always, HNSW with an embedder.

Both are ``Sidecar``s (sealed checkpoints, replay, rebuild: see
``agentzero_store.sidecar.mechanism``) fed by a ``ChunkFeed`` over the document log. The BM25
sidecar (Tantivy) indexes title + text of every chunk. The HNSW sidecar indexes the chunk
vectors sealed inside the log records, so a lost index is rebuilt without re-embedding;
a record embedded with another model, dimension or chunking has no vectors for it.

An index lost or broken while the store is open (its directory deleted, a native error,
a full disk) is rebuilt at the next ingest or query (``Sidecar.heal``/``read``): it
never fails an acknowledged write, and a query answers from the rebuilt index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentzero_store.base.config import Layout, StoreConfig
from agentzero_store.base.errors import InvalidArgumentError, SidecarCorruptError
from agentzero_store.embed.vectors import Embedder
from agentzero_store.sidecar.bm25 import SealedBm25Index, TantivyBm25
from agentzero_store.sidecar.bm25_blinded import BlindedBm25Index
from agentzero_store.sidecar.hnsw import HnswIndex
from agentzero_store.sidecar.mechanism import Sidecar
from agentzero_store.sidecar.types import EmbedderInfo, Progress, SidecarStatus
from agentzero_store.storage.fileio import FileIO
from agentzero_store.storage.keys import StoreKeys

from .chunking import Chunk, ChunkParams
from .feed import ChunkCache, ChunkFeed
from .log import DocumentLog
from .records import DocumentRecord

# A BM25 checkpoint costs more than its changes: a sealed one is every indexed text
# (~150 bytes per short chunk), a blinded one a Tantivy commit (fsyncs, a new segment
# that later merges). Up to 10,000 chunks both are cheap and written every
# checkpoint_every changes; beyond, a checkpoint also waits until a quarter of the chunks
# past that size have changed, so its cost per chunk stays flat. A crash replays at most
# that much of the fsynced log.
BM25_CHECKPOINT_GROWTH = 0.25
BM25_CHECKPOINT_GROWTH_ABOVE = 10_000
BM25_TERMS = ("blinded", "sealed")


def bm25_text(record: DocumentRecord, chunks: list[Chunk]) -> list[str | None]:
    """What BM25 indexes for each chunk of ``record``."""
    # BM25 over title + text: the title is indexed with every chunk of its document.
    prefix = f"{record.title}\n" if record.title else ""
    return [prefix + c.text for c in chunks]


def bm25_index(
    layout: Layout, keys: StoreKeys, config: StoreConfig
) -> BlindedBm25Index | SealedBm25Index:
    """The BM25 adapter ``config.bm25_terms`` asks for."""
    if config.bm25_terms == "blinded":
        return BlindedBm25Index(layout.rag_tantivy, keys.term_key)
    if config.bm25_terms == "sealed":
        return SealedBm25Index()
    raise InvalidArgumentError(
        f"bm25_terms must be one of {', '.join(BM25_TERMS)}; got {config.bm25_terms!r}",
        hint="set StoreConfig.bm25_terms or env AGENTZERO_BM25_TERMS to blinded or sealed",
    )


def vectors_fit(record: DocumentRecord, embedder: Embedder | None, chunking: ChunkParams) -> bool:
    """True if ``record`` carries vectors from ``embedder`` over chunks cut by ``chunking``."""
    v, e = record.vectors, embedder
    return (
        v is not None
        and e is not None
        and v.model == e.model_id
        and v.dim == e.dimension
        and v.chunking == chunking.id
    )


class DocumentIndexes:
    """Builds, opens and maintains the sidecars of one document store."""

    def __init__(
        self,
        layout: Layout,
        keys: StoreKeys,
        doclog: DocumentLog,
        *,
        embedder: Embedder | None,
        config: StoreConfig,
        chunking: ChunkParams,
        io: FileIO,
        progress: Progress | None,
    ) -> None:
        self.embedder = embedder
        self.chunking = chunking
        self.chunks = ChunkCache(doclog, chunking)  # shared: each version is chunked once
        self.text_feed: ChunkFeed[str] = ChunkFeed(doclog, chunking, bm25_text, self.chunks)
        self.bm25: Sidecar[str] = Sidecar(
            layout.rag_tantivy,
            bm25_index(layout, keys, config),
            self.text_feed,
            key=keys.sidecar_key,
            checkpoint_every=config.checkpoint_every,
            io=io,
            checkpoint_growth=BM25_CHECKPOINT_GROWTH,
            checkpoint_growth_above=BM25_CHECKPOINT_GROWTH_ABOVE,
        )
        self.bm25.open(progress)
        self.hnsw: Sidecar[bytes] | None = None
        if embedder is not None:
            vec_feed: ChunkFeed[bytes] = ChunkFeed(
                doclog, chunking, self._vector_payload, self.chunks
            )
            self.hnsw = Sidecar(
                layout.rag_hnsw,
                HnswIndex(
                    embedder.dimension,
                    m=config.hnsw_m,
                    ef_construction=config.hnsw_ef_construction,
                    ef_search_min=config.hnsw_ef_search_min,
                ),
                vec_feed,
                key=keys.sidecar_key,
                embedder=EmbedderInfo(embedder.model_id, embedder.dimension),
                checkpoint_every=config.checkpoint_every,
                io=io,
            )
            self.hnsw.open(progress)

    def sidecars(self) -> list[Sidecar[Any]]:
        """The open sidecars: BM25, then HNSW if there is an embedder."""
        return [s for s in (self.bm25, self.hnsw) if s is not None]

    def close(self) -> None:
        """Release the indexes' working files (their checkpoints stay)."""
        for sidecar in self.sidecars():
            sidecar.close()

    def catch_up(self) -> None:
        """Replay the log's new changes into every sidecar; rebuild one that is lost."""
        try:
            for sidecar in self.sidecars():
                try:
                    sidecar.catch_up()
                except SidecarCorruptError as exc:
                    sidecar.heal(exc.message)
        finally:
            # Past this point a sidecar that still needs a record re-reads it from disk.
            self.chunks.forget_records()

    def bm25_search(self, text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (chunk key, score) for ``text`` by BM25; an index that fails
        is rebuilt and asked again (``Sidecar.read``), never a raw Tantivy error."""

        def search(index: object) -> list[tuple[int, float]]:
            assert isinstance(index, TantivyBm25)
            return index.search(text, k)

        return self.bm25.read(search)

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks with vectors from this embedder, chunks in the BM25 index)."""
        return (self.hnsw.index.count() if self.hnsw else 0, self.bm25.index.count())

    def status(self) -> list[SidecarStatus]:
        """Status of each index."""
        return [s.status() for s in self.sidecars()]

    def rebuild(
        self, name: str | None = None, progress: Callable[[int, int], None] | None = None
    ) -> list[str]:
        """Rebuild one index (``bm25`` or ``hnsw``) or all; returns the names rebuilt."""
        done = []
        for sidecar in self.sidecars():
            if name in (None, sidecar.index.kind):
                sidecar.rebuild(progress)
                done.append(sidecar.index.kind)
        if name is not None and not done:
            raise InvalidArgumentError(f"no index named {name!r} in the document store")
        return done

    def _vector_payload(self, record: DocumentRecord, chunks: list[Chunk]) -> list[bytes | None]:
        if not vectors_fit(record, self.embedder, self.chunking) or record.vectors is None:
            return [None] * len(chunks)  # embedded with another model: see vector_coverage
        if record.vectors.rows != len(chunks):
            return [None] * len(chunks)
        row = 4 * record.vectors.dim
        data = record.vectors.data
        return [data[i * row : (i + 1) * row] for i in range(len(chunks))]


__all__ = ["DocumentIndexes", "bm25_index", "bm25_text", "vectors_fit"]
