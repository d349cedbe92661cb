"""The two stores the agent memory runs on, and what differs between them.

``AgentMemory`` runs on a ``SqliteMemoryStore`` (a data dir) or a ``PgMemoryStore`` (a
PostgreSQL URL): the same facade, recall, lifecycle and consolidation over a repository
with the same methods (``repository.SqliteRepository``, ``postgres.repository.
PgRepository``). What is left to differ is this small interface, a ``StoreSide``:

- ``repository`` / ``archive``: where the layer's rows and archived texts live;
- ``nearest``: semantic candidates from the store's vector index (the HNSW sidecar on
  SQLite, pgvector's index on PostgreSQL), None where there is none;
- ``deferred_checkpoints``: a bulk write's index checkpoints held back (SQLite only);
- ``purge`` / ``settle``: what an erase must still remove after its commit: on SQLite
  the keyword index's old segments, the HNSW checkpoint's vectors and the WAL's old
  frames; on PostgreSQL nothing (the rows and their terms went with the commit, and no
  page the server keeps holds plaintext);
- ``refresh_statistics``: after a consolidation, the planner's statistics (PostgreSQL:
  a young table's estimates can make it scan a whole scope instead of using pgvector's
  index until autovacuum analyses it);
- ``change_seq``: a value that moves with every committed write, for the hot tier's
  cache (SQLite's change feed; PostgreSQL has many writers and no feed, so never the same
  value twice: the cache is never trusted and hot turns are read each time).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

from ..memory.records import Scope
from ..memory.sqlite.store import SqliteMemoryStore
from .sqlite.archive import Archive
from .sqlite.repository import SqliteRepository

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..memory.postgres.store import PgMemoryStore
    from .postgres.archive import PgArchive
    from .postgres.repository import PgRepository


class StoreSide(Protocol):
    """What differs between the stores below the layer (see the module)."""

    def repository(self, org_id: str, agent_id: str) -> SqliteRepository | PgRepository: ...
    def archive(self, org_id: str, agent_id: str) -> Archive | PgArchive: ...
    def nearest(
        self, qv: npt.NDArray[np.float32], pool: int, scope: Scope, now_us: int
    ) -> list[tuple[int, float]] | None: ...
    def deferred_checkpoints(self) -> contextlib.AbstractContextManager[Any]: ...
    def purge(self) -> None: ...
    def settle(self) -> bool: ...
    def change_seq(self) -> int: ...
    def refresh_statistics(self) -> None: ...


def side_of(store: SqliteMemoryStore | PgMemoryStore) -> StoreSide:
    """The ``StoreSide`` of an open memory store."""
    if isinstance(store, SqliteMemoryStore):
        from .sqlite.side import SqliteSide

        return SqliteSide(store)
    from .postgres.side import PgSide

    return PgSide(store)


__all__ = ["StoreSide", "side_of"]
