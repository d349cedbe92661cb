"""The memory store: conversation memory in SQLCipher, and its HNSW sidecar.

- ``store``: ``SqliteMemoryStore``, the facade;
- ``records``: ``MemoryEntry``, ``MemoryHit``, ``Scope`` (frozen, explicitly serialised);
- ``source`` / ``schema``: memory.db opened against the ledger; its schema and migrations;
- ``write`` / ``recall``: appends and deletes; semantic, keyword and hybrid recall;
- ``rows``: the row ⇄ entry mapping and scope filters in SQL;
- ``fts_scope``: scope tokens in the FTS5 index;
- ``feed``: the change feed and its adapters to the sidecar mechanism;
- ``hnsw`` / ``index``: the HNSW sidecar and its index (graph plus scope map);
- ``scope_map`` / ``scope_format``: the in-memory scope map, and its bytes in a checkpoint.
"""
