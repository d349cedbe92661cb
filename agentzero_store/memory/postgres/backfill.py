"""``memory.backfill`` on PostgreSQL: vectors for the memories stored without one.

The same contract as in a data dir (see ``memory.backfill``): a store opened with an
embedder of its own model embeds them in a daemon thread, a batch per write transaction,
oldest first. Here the thread works on a connection of its own (``PgMemoryStore.sibling``:
one psycopg connection runs one transaction at a time, and the handle's own calls must
never run inside a batch's), and each row's sealed blob is sealed again with the model it
now has (the model is inside the blob: ``rows``). A row changed meanwhile (its blob
or its vector no longer the one read) is left as it is (``PgWriteTx.add_vectors``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ...base.errors import InvalidArgumentError
from ...embed.vectors import Embedder
from ..backfill import fits
from .rows import COLUMNS, RowCodec
from .tx import PgWriteTx

_MISSING = "embedding IS NULL AND (expires_at_us IS NULL OR expires_at_us > %s)"


class Backfilled(Protocol):
    """What the backfill uses of a ``PgMemoryStore``."""

    embedder: Embedder | None
    _codec: RowCodec

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of one read statement."""
        ...

    def _now_us(self) -> int: ...

    def embedding_info(self) -> tuple[str | None, int | None]:
        """(model, dimension) of the stored vectors."""
        ...

    def transaction(self) -> AbstractContextManager[PgWriteTx]:
        """One write transaction."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


def without_vector(store: Backfilled) -> int:
    """How many live memories of ``store`` have no vector (archived ones included:
    whether a memory is archived is sealed, so the count cannot tell)."""
    rows = store.query(f"SELECT count(*) FROM az_memory WHERE {_MISSING}", (store._now_us(),))
    return int(rows[0][0])


class PgBackfill:
    """One batch at a time (``step``, in the backfill's thread), on the store
    ``connect()`` gives (called by the first step), from the label the last batch
    reached: rows skipped (archived: their text is not in the row) are not read again."""

    def __init__(self, connect: Callable[[], Backfilled]) -> None:
        self._connect = connect
        self._store: Backfilled | None = None
        self._after = 0

    def close(self) -> None:
        """Close the connection the steps used (the end of the thread)."""
        if self._store is not None:
            self._store.close()

    def step(self, batch: int) -> int:
        """Embed up to ``batch`` memories without a vector; how many rows were read."""
        if self._store is None:
            self._store = self._connect()
        store = self._store
        embedder = store.embedder
        if embedder is None:
            return 0
        rows = store.query(
            f"SELECT {COLUMNS} FROM az_memory WHERE {_MISSING} AND label > %s"
            " ORDER BY label LIMIT %s",
            (store._now_us(), self._after, batch),
        )
        # Rows first: asking the embedder its dimension may load it or call out.
        if not rows or not fits(embedder, *store.embedding_info()):
            return 0
        self._after = int(rows[-1][0])
        todo = [(r, e) for r in rows if (e := store._codec.open(r)).kind != "archived"]
        if todo:
            vecs = embedder.embed([e.content for _, e in todo])  # outside the transaction
            if vecs.shape != (len(todo), embedder.dimension):
                raise InvalidArgumentError(
                    f"{embedder.model_id} returned shape {vecs.shape} for {len(todo)} texts"
                )
            with store.transaction() as tx:
                tx.add_vectors(todo, vecs, embedder.model_id)
        return len(rows)


__all__ = ["Backfilled", "PgBackfill", "without_vector"]
