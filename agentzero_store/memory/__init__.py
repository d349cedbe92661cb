"""The memory store: conversation memory in SQLCipher, and its HNSW sidecar.

- ``store``: ``SqliteMemoryStore``, the facade;
- ``records``: ``MemoryEntry``, ``MemoryHit``, ``Scope`` (frozen, explicitly serialised);
- ``write`` / ``recall``: appends and deletes; semantic, keyword and hybrid recall;
- ``rows``: the row ⇄ entry mapping and scope filters in SQL;
- ``fts_scope``: scope tokens in the FTS5 index;
- ``feed``: the change feed and its adapters to the sidecar mechanism;
- ``hnsw`` / ``index`` / ``scope_map``: the HNSW sidecar, its index, its in-memory scope map.
"""
