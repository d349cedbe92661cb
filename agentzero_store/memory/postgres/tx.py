"""One write transaction on a PostgreSQL memory store, shared with a layer above it.

The PostgreSQL side of ``sqlite.tx.WriteTx``: memory rows go in and out through it
(sealed, with their vectors and blinded terms, exactly as the store's own writes), and
the layer's own statements (``%s`` parameters) run on the same connection inside the
same transaction, so a turn and its layer rows commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...sidecar.bm25_terms import BlindTerms
from ..records import MemoryEntry
from . import schema, write
from .rows import RowCodec


class PgWriteTx:
    """The open transaction: inserts, deletes, keyword replacement and the caller's own
    statements."""

    def __init__(
        self, conn: Any, codec: RowCodec, terms: BlindTerms, *, vector_index: bool = True
    ) -> None:
        self._c = conn
        self._codec = codec
        self._terms = terms
        self._vector_index = vector_index

    def insert(self, batch: write.Batch) -> list[tuple[str, int]]:
        """Insert prepared entries (``PgMemoryStore.prepare``); the (id, label) of the
        rows written (an identical re-send of a stored memory is not)."""
        return write.insert_rows(
            self._c, batch, self._codec, self._terms, vector_index=self._vector_index
        )

    def delete_labels(self, labels: Sequence[int]) -> None:
        """Delete memory rows (and their terms) by label."""
        if labels:
            self._c.execute("DELETE FROM az_memory WHERE label = ANY(%s)", (list(labels),))

    def replace_keywords(self, label: int, text: str, scope: tuple[str, str, str]) -> None:
        """Index ``text`` as the keywords of row ``label`` (``scope``: unused here, the
        terms table is keyed by label)."""
        write.replace_terms(self._c, label, text, self._terms)

    def add_vectors(
        self, rows: Sequence[tuple[Sequence[Any], MemoryEntry]], vecs: Any, model: str
    ) -> None:
        """Give rows stored without a vector (``rows.COLUMNS`` as read, and the entry
        they open to) the vectors ``vecs`` of ``model``, each blob sealed again with the
        model; a row no longer as read (another vector or blob) is left as it is."""
        if not rows:
            return
        dim = schema.fix_dimension(self._c, len(vecs[0]), model, index=self._vector_index)
        for (r, e), v in zip(rows, vecs, strict=True):
            sealed = self._codec.seal(e, str(r[1]), int(r[5]), r[6], model)
            self._c.execute(
                "UPDATE az_memory SET embedding = %s::vector, sealed = %s"
                " WHERE label = %s AND embedding IS NULL AND sealed = %s",
                (write.vector_text(v, dim), sealed, int(r[0]), r[7]),
            )

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; returns the cursor."""
        return self._c.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        """Run one statement over many parameter rows."""
        rows = list(rows)
        if not rows:
            return None
        with self._c.cursor() as cur:
            cur.executemany(sql, rows)
        return None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """A read inside the transaction (sees its own writes)."""
        rows: list[Any] = self._c.execute(sql, params).fetchall()
        return rows


__all__ = ["PgWriteTx"]
