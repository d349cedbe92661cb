"""The two stores the agent memory runs on, and what differs between them.

``AgentMemory`` runs on a ``SqliteMemoryStore`` (a data dir) or a ``PgMemoryStore`` (a
PostgreSQL URL): the same facade, recall, lifecycle and consolidation over the seam's
``AgentRepository`` (``seam``; ``sqlite.repository.SqliteRepository``,
``postgres.repository.PgRepository``). What is left to differ is a ``StoreSide``
(``seam.StoreSide``):

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

``side_of`` (and ``transfer_side_of``, for ``store migrate``) is the one place that
picks a backend's side, by the store's capability (a data dir), not by its class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .seam import LayerStore, StoreSide, in_data_dir

if TYPE_CHECKING:
    from .transfer.side import LayerTransfer


def side_of(store: LayerStore) -> StoreSide:
    """The ``StoreSide`` of an open memory store."""
    if in_data_dir(store):
        from .sqlite.side import side

        return side(store)
    from .postgres.side import side as pg_side

    return pg_side(store)


def transfer_side_of(store: LayerStore) -> LayerTransfer:
    """The agent memory's transfer side of an open memory store (``store migrate``)."""
    if in_data_dir(store):
        from .sqlite.transfer import layer

        return layer(store)
    from .postgres.transfer import layer as pg_layer

    return pg_layer(store)


__all__ = ["StoreSide", "side_of", "transfer_side_of"]
