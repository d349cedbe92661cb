"""Re-embedding a data dir with another embedder, switching each store atomically.

Memory (``memory.db``): new vectors are staged beside the old ones in a table of the same
encrypted database (``reembed_staging``), one short transaction per batch, so readers and
writers keep working with the old embedder meanwhile and an interrupted run resumes where
it stopped. Then ONE transaction embeds any rows appended since, swaps every row's
vector (``memory_vec``) and ``embedding_model``, updates the store's meta (model,
dimension) and drops the staging table: before its commit the store is wholly old, after
it wholly new. The HNSW sidecar binds embedder id + dimension in its manifest, so it
rebuilds on the next open (``rebuild_memory_index`` does it at once, with progress).

Documents (``rag/index.jsonl``): chunk vectors live inside the sealed records, so each
live document whose vectors do not fit the new embedder gets a new version with new
vectors; ``DocumentStore.ingest_many`` writes them in one group commit and the chunk-HNSW
sidecar follows the log.

The engine never imports ``rag``: ``reembed_documents`` takes an open store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import InvalidArgumentError
from ..embed.vectors import Embedder, Vector, as_vector
from ..storage.lock import writer_lock

if TYPE_CHECKING:
    from rag.store import DocumentStore

    from ..memory.sqlite.store import SqliteMemoryStore
    from ..sidecar.types import OpenReport

Advance = Callable[[int], None]

STAGING = "reembed_staging"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {STAGING} (label INTEGER PRIMARY KEY, model TEXT NOT NULL,"
    " dim INTEGER NOT NULL, embedding BLOB NOT NULL)"
)
_UNSTAGED = (
    f"SELECT m.label, m.content FROM memory m LEFT JOIN {STAGING} s ON s.label = m.label "
    "WHERE s.label IS NULL ORDER BY m.label"
)


@dataclass(frozen=True)
class MemoryReembed:
    """What re-embedding the memory store did."""

    previous_model: str | None
    previous_dim: int | None
    model: str
    dim: int
    rows: int  # rows now carrying a vector from ``model``
    resumed: int  # rows whose new vector a previous, interrupted run had staged

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def _embed(embedder: Embedder, texts: Sequence[str]) -> list[bytes]:
    matrix = embedder.embed(list(texts))
    dim = embedder.dimension
    if matrix.shape != (len(texts), dim):
        raise InvalidArgumentError(
            f"{embedder.model_id} returned shape {matrix.shape} for {len(texts)} texts"
        )
    return [as_vector(row, dim).tobytes() for row in matrix]


def reembed_memory(
    store: SqliteMemoryStore,
    embedder: Embedder,
    *,
    batch: int = 256,
    advance: Advance | None = None,
) -> MemoryReembed:
    """Give every memory a vector from ``embedder``; switch the store over atomically.

    ``advance(n)`` is called as rows are embedded (the total is ``store.vector_count()``).
    Open ``store`` without an embedder and without its HNSW index (``hnsw=False``): the
    index is rebuilt afterwards for the new embedder (``rebuild_memory_index``).
    """
    if batch <= 0:
        raise InvalidArgumentError(f"batch must be positive, got {batch}")
    db = store.database
    model, dim = embedder.model_id, embedder.dimension
    previous_model, previous_dim = store.embedding_info()
    with db.tx() as c:
        c.execute(_CREATE)
        # Vectors staged by an interrupted run for ANOTHER embedder are useless now.
        c.execute(f"DELETE FROM {STAGING} WHERE model != ? OR dim != ?", (model, dim))
    resumed = int(db.query(f"SELECT count(*) FROM {STAGING}")[0][0])
    if advance is not None and resumed:
        advance(resumed)
    # Stage in batches: each batch is its own short transaction, so other writers wait
    # at most one batch, and a crash or ^C keeps what was staged (the next run resumes).
    while rows := db.query(f"{_UNSTAGED} LIMIT ?", (batch,)):
        blobs = _embed(embedder, [r[1] for r in rows])
        with db.tx() as c:
            c.executemany(
                f"INSERT OR REPLACE INTO {STAGING} VALUES (?, ?, ?, ?)",
                [(r[0], model, dim, b) for r, b in zip(rows, blobs, strict=True)],
            )
        if advance is not None:
            advance(len(rows))
    # The switch. BEGIN IMMEDIATE holds SQLite's write lock, so no row can slip in between
    # the last catch-up and the swap; rows appended by other processes while we staged (a
    # few at most) are embedded here, inside the transaction. The data dir's writer role
    # is held for the switch only: staging leaves other writers free.
    with writer_lock(store.data_dir, purpose="store reembed"), db.tx() as c:
        late = c.execute(_UNSTAGED).fetchall()
        if late:
            blobs = _embed(embedder, [r[1] for r in late])
            c.executemany(
                f"INSERT INTO {STAGING} VALUES (?, ?, ?, ?)",
                [(r[0], model, dim, b) for r, b in zip(late, blobs, strict=True)],
            )
            if advance is not None:
                advance(len(late))
        # Staged rows whose memory was deleted meanwhile get no vector row (the join).
        c.execute(
            "INSERT OR REPLACE INTO memory_vec (label, embedding) "
            f"SELECT s.label, s.embedding FROM {STAGING} s JOIN memory m ON m.label = s.label"
        )
        cur = c.execute(
            f"UPDATE memory SET embedding_model = ? WHERE label IN (SELECT label FROM {STAGING})",
            (model,),
        )
        swapped = cur.rowcount
        c.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (model,))
        c.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_dim', ?)", (str(dim),))
        # secure_delete is on: dropping the table overwrites the staged vectors' pages.
        c.execute(f"DROP TABLE {STAGING}")
    return MemoryReembed(previous_model, previous_dim, model, dim, swapped, resumed)


def rebuild_memory_index(
    store: SqliteMemoryStore, progress: Callable[[int, int], None] | None = None
) -> OpenReport | None:
    """Open the memory HNSW sidecar for the store's (new) embedder, rebuilding it.

    Its manifest names the old embedder, so opening rebuilds it; an index that still
    loads (same model id, e.g. a re-run) is rebuilt explicitly, so it never keeps old
    vectors. The new checkpoint replaces the old one atomically (the sidecar mechanism).
    """
    report = store.enable_hnsw_index(progress=progress)
    if report is not None and not report.rebuilt:
        store.rebuild_index("hnsw", progress)
    return report


class _ProgressEmbedder:
    """Wraps an embedder: embeds in batches and reports each batch (for a progress bar)."""

    def __init__(self, inner: Embedder, advance: Advance | None, batch: int) -> None:
        self._inner = inner
        self._advance = advance
        self._batch = batch

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed ``texts`` batch by batch, reporting progress after each."""
        parts = [np.zeros((0, self.dimension), dtype=np.float32)]
        for i in range(0, len(texts), self._batch):
            chunk = texts[i : i + self._batch]
            parts.append(self._inner.embed(chunk))
            if self._advance is not None:
                self._advance(len(chunk))
        return np.concatenate(parts).astype(np.float32, copy=False)


def progress_embedder(embedder: Embedder, advance: Advance | None, batch: int = 64) -> Embedder:
    """``embedder``, reporting every ``batch`` texts embedded through ``advance``."""
    return _ProgressEmbedder(embedder, advance, batch)


def reembed_documents(store: DocumentStore) -> int:
    """Give every live document vectors from ``store.embedder``; returns how many changed.

    Open ``store`` with the new embedder (wrapped by ``progress_embedder`` for a progress
    bar; ``chunks_to_embed`` gives the total). Documents whose vectors already fit are
    skipped, so an interrupted run resumes. All new versions are one group commit.
    """
    from rag.documents import DocInput  # lazily: the engine does not depend on rag

    if store.embedder is None:
        raise InvalidArgumentError("re-embedding documents needs an embedder")
    docs = [DocInput(r.id, r.text, r.title, r.source_path, r.metadata) for r in store.documents()]
    # ingest_many skips a document whose content is unchanged AND whose vectors fit the
    # embedder (model, dimension, chunking), so only stale vectors are rebuilt.
    results = store.ingest_many(docs)
    return sum(1 for r in results if r.changed)


def chunks_to_embed(store: DocumentStore) -> int:
    """Chunks without a vector from the store's embedder (the documents' progress total)."""
    with_vectors, chunks = store.vector_coverage()
    return max(0, chunks - with_vectors)


__all__ = [
    "STAGING",
    "MemoryReembed",
    "chunks_to_embed",
    "progress_embedder",
    "rebuild_memory_index",
    "reembed_documents",
    "reembed_memory",
]
