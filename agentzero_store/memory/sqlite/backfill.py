"""The SQLite backend's backfill step: its memories without a vector, embedded a batch
at a time in one write transaction each (the thread and the rules: ``memory.backfill``)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from ...base.errors import InvalidArgumentError
from ...embed.vectors import Embedder
from ...storage.sqlcipher import Database
from ..backfill import fits
from .rows import placeholders
from .tx import WriteTx
from .write import embedding_info

MISSING = (
    "m.kind != 'archived' AND (m.expires_at_us IS NULL OR m.expires_at_us > ?)"
    " AND NOT EXISTS (SELECT 1 FROM memory_vec v WHERE v.label = m.label)"
)
"""Rows of ``memory m`` without a vector (bound: the clock's µs)."""


class Backfilled(Protocol):
    """What the backfill uses of a ``SqliteMemoryStore``."""

    embedder: Embedder | None

    @property
    def database(self) -> Database:
        """The open ``memory.db``."""
        ...

    def _now_us(self) -> int: ...

    def transaction(self) -> AbstractContextManager[WriteTx]:
        """One write transaction (acknowledged; the indexes follow the feed)."""
        ...


def without_vector(store: Backfilled) -> int:
    """How many live memories of ``store`` have no vector."""
    rows = store.database.query(
        f"SELECT count(*) FROM memory m WHERE {MISSING}", (store._now_us(),)
    )
    return int(rows[0][0])


def embed_batch(store: Backfilled, batch: int) -> int:
    """Embed up to ``batch`` of ``store``'s memories without a vector (one transaction);
    how many were looked at (0: none is missing, or the embedder does not fit)."""
    embedder = store.embedder
    db = store.database
    if embedder is None:
        return 0
    rows = [
        (int(r[0]), str(r[1]))
        for r in db.query(
            f"SELECT m.label, m.content FROM memory m WHERE {MISSING} ORDER BY m.label LIMIT ?",
            (store._now_us(), batch),
        )
    ]
    # Rows first: an embedder that is asked for its dimension may have to load or call
    # out (the API embedder probes), and a store with nothing missing must not cost that.
    if not rows or not fits(embedder, *embedding_info(db)):
        return 0
    vecs = embedder.embed([text for _, text in rows])  # outside the write lock
    if vecs.shape != (len(rows), embedder.dimension):
        raise InvalidArgumentError(
            f"{embedder.model_id} returned shape {vecs.shape} for {len(rows)} texts"
        )
    with store.transaction() as tx:
        # Under the write lock: only rows still without a vector and still holding the
        # text embedded (an archive, a forget or another process may have come between).
        now = tx.query(
            f"SELECT m.label, m.content FROM memory m WHERE m.label IN"
            f" ({placeholders(len(rows))}) AND {MISSING}",
            (*(label for label, _ in rows), store._now_us()),
        )
        current = {(int(r[0]), str(r[1])) for r in now}
        keep = [i for i, row in enumerate(rows) if row in current]
        if keep and fits(embedder, *embedding_info(db)):
            tx.add_vectors([rows[i][0] for i in keep], vecs[keep], embedder.model_id)
    return len(rows)


__all__ = ["MISSING", "Backfilled", "embed_batch", "without_vector"]
