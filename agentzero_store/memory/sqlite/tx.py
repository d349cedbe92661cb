"""One write transaction on ``memory.db`` for a layer above the memory store.

The agent-memory layer keeps its own tables beside ``memory``: a turn, its type and its
entity links must commit together or not at all. ``SqliteMemoryStore.transaction()``
hands out a ``WriteTx``: memory rows go in and out through it (with their vectors, their
keyword entries and their change-feed entries, exactly as the store's own writes), and the
layer's own SQL runs on the same connection, inside the same ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import write
from .source import LAYER_WRITES


class WriteTx:
    """The open write transaction: inserts, deletes and the caller's own statements."""

    def __init__(self, conn: Any) -> None:
        self._c = conn
        self.rows_changed = False  # a memory row was inserted or deleted (the feed moved)
        self.wrote = False  # any statement ran

    def insert(
        self, prepared: write.Prepared, extra: write.ExtraColumns | None = None
    ) -> list[tuple[str, int]]:
        """Insert prepared entries (``SqliteMemoryStore.prepare``); their (id, label).
        ``extra``: the values of a layer's own columns of the same rows."""
        if not prepared.entries:
            return []
        written = write.insert(self._c, prepared, extra)
        self.rows_changed = self.rows_changed or bool(written)
        self.wrote = True
        return written

    def delete_labels(self, labels: Sequence[int]) -> None:
        """Delete memory rows (and their vectors and keyword entries) by label."""
        if labels:
            write.delete_labels(self._c, labels)
            self.rows_changed = self.wrote = True

    def add_vectors(self, labels: Sequence[int], vecs: Any, model: str) -> None:
        """Give rows stored without a vector these vectors (``write.add_vectors``)."""
        if labels:
            write.add_vectors(self._c, labels, vecs, model)
            self.rows_changed = self.wrote = True

    def replace_keywords(self, label: int, text: str, scope: tuple[str, str, str]) -> None:
        """Index ``text`` as the keywords of row ``label`` (whose stored content is not
        that text: an archived memory put back by an undo keeps its words searchable)."""
        write.replace_keywords(self._c, label, text, scope)
        self.wrote = True

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement of the caller's own tables; returns the cursor."""
        self.wrote = True
        return self._c.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        """Run one statement over many parameter rows."""
        self.wrote = True
        return self._c.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """A read inside the transaction (sees its own writes)."""
        rows: list[Any] = self._c.execute(sql, params).fetchall()
        return rows

    def finish(self) -> None:
        """Before COMMIT: a transaction that changed no memory row still counts once in
        the acknowledged seq (``source.memory_seq``), so losing it later is detected."""
        if self.wrote and not self.rows_changed:
            self._c.execute(
                "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) "
                "DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                (LAYER_WRITES,),
            )


__all__ = ["WriteTx"]
