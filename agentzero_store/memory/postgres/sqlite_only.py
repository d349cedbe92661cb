"""What ``SqliteMemoryStore`` offers beyond the memory store's public API (its sidecars,
change feed, its data dir), as the PostgreSQL store answers
it: ``UnsupportedByBackendError`` with a hint, never a silent no-op or an empty result."""

from __future__ import annotations

from typing import Any, NoReturn

from ...base.errors import UnsupportedByBackendError


class SqliteOnlyParts:
    """The SQLite store's extra calls, each raising ``UnsupportedByBackendError``."""

    @staticmethod
    def _unsupported(what: str) -> NoReturn:
        raise UnsupportedByBackendError(
            f"the PostgreSQL backend does not support {what} yet",
        )

    @property
    def data_dir(self) -> NoReturn:
        """A PostgreSQL store has no data dir (see ``url``)."""
        self._unsupported("data_dir (it has a database URL: .url)")

    @property
    def database(self) -> NoReturn:
        """SQLite only: the ``memory.db`` connection."""
        self._unsupported("database (a memory.db connection)")

    @property
    def feed(self) -> NoReturn:
        """SQLite only: the change feed of the sidecars."""
        self._unsupported("the change feed")

    @property
    def hnsw_index(self) -> NoReturn:
        """SQLite only: the HNSW sidecar (PostgreSQL uses pgvector's own index)."""
        self._unsupported("the HNSW sidecar (pgvector's index serves semantic recall)")

    def enable_hnsw_index(self, *args: Any, **kw: Any) -> NoReturn:
        """SQLite only (pgvector's HNSW index is always on)."""
        self._unsupported("enable_hnsw_index (pgvector's HNSW index is always on)")

    def index_status(self) -> NoReturn:
        """SQLite only: status of the sidecars."""
        self._unsupported("index_status (there are no sidecars)")

    def rebuild_index(self, *args: Any, **kw: Any) -> NoReturn:
        """SQLite only: rebuild a sidecar."""
        self._unsupported("rebuild_index (there are no sidecars; REINDEX in PostgreSQL)")

    def purge_index(self) -> NoReturn:
        """SQLite only: drop deleted rows from the HNSW sidecar."""
        self._unsupported("purge_index (there are no sidecars)")

    def deferred_index_checkpoints(self) -> NoReturn:
        """SQLite only: defer sidecar checkpoints."""
        self._unsupported("deferred_index_checkpoints (there are no sidecars)")

    def source_seq(self) -> NoReturn:
        """SQLite only: the change feed's newest seq."""
        self._unsupported("source_seq (the change feed)")

    def changes_since(self, *args: Any, **kw: Any) -> NoReturn:
        """SQLite only: the change feed."""
        self._unsupported("changes_since (the change feed)")

    def vector_count(self) -> NoReturn:
        """SQLite only: rows for the HNSW sidecar."""
        self._unsupported("vector_count (the change feed)")

    def vectors_after(self, *args: Any, **kw: Any) -> NoReturn:
        """SQLite only: vectors for the HNSW sidecar."""
        self._unsupported("vectors_after (the change feed)")

    def iter_vectors(self, *args: Any, **kw: Any) -> NoReturn:
        """SQLite only: vectors for the HNSW sidecar."""
        self._unsupported("iter_vectors (the change feed)")


__all__ = ["SqliteOnlyParts"]
