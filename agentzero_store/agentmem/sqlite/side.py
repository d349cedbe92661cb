"""The agent memory's ``StoreSide`` on SQLite (see ``agentmem.backends``): a data dir's
``memory.db`` and ``memory.archive.db``."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ...base.config import Layout
from ...memory.records import Scope
from ...memory.sqlite.schema import purge_keyword_index
from .archive import Archive
from .repository import SqliteRepository

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ...memory.sqlite.store import SqliteMemoryStore


class SqliteSide:
    """The agent memory in a data dir's ``memory.db`` (and ``memory.archive.db``)."""

    def __init__(self, store: SqliteMemoryStore) -> None:
        self.store = store

    def repository(self, org_id: str, agent_id: str) -> SqliteRepository:
        return SqliteRepository(self.store, org_id, agent_id)

    def archive(self, org_id: str, agent_id: str) -> Archive:
        """The data dir's archive file (one for every scope)."""
        s = self.store
        return Archive(
            Layout(s.data_dir).memory_archive,
            s.keys.archive_key,
            s.store_id,
            s.config.busy_timeout_ms,
        )

    def nearest(
        self, qv: npt.NDArray[np.float32], pool: int, scope: Scope, now_us: int
    ) -> list[tuple[int, float]] | None:
        index = self.store.hnsw_index
        return None if index is None else index.recall(qv, pool, scope, now_us)

    def deferred_checkpoints(self) -> contextlib.AbstractContextManager[Any]:
        return self.store.deferred_index_checkpoints()

    def purge(self) -> None:
        purge_keyword_index(self.store.database)
        # The deletes reached the index through the change feed as hnswlib's deleted
        # marks, which keep the vectors: scrub them and write the checkpoint once.
        self.store.purge_index()

    def settle(self) -> bool:
        # False if a reader of an older snapshot kept the checkpoint from finishing within
        # the busy timeout (``PRAGMA wal_checkpoint`` reports that, it does not raise).
        busy, frames, _ = self.store.database.query("PRAGMA wal_checkpoint(TRUNCATE)")[0]
        return bool(busy == 0 and frames == 0)

    def change_seq(self) -> int:
        return self.store.source_seq()

    def refresh_statistics(self) -> None:
        """Nothing: SQLite's plans do not depend on statistics here."""


__all__ = ["SqliteSide"]
