"""The memory store on SQLCipher in a data dir (``SqliteMemoryStore``), and its HNSW sidecar.

- ``store``: ``SqliteMemoryStore``, the facade;
- ``source`` / ``schema``: memory.db opened against the ledger; its schema and migrations;
  ``chains``: the migration chain runner of the layers whose tables live in memory.db;
- ``write`` / ``recall`` / ``tx``: appends and deletes; semantic, keyword and hybrid
  recall; a layer's statements and memory rows in one transaction;
- ``rows``: the columns a row is read with, scope filters in SQL;
- ``backfill``: its memories without a vector, a batch at a time;
- ``fts_scope``: scope tokens in the FTS5 index;
- ``feed``: the change feed and its adapters to the sidecar mechanism;
- ``hnsw`` / ``index``: the HNSW sidecar and its index (graph plus scope map);
- ``scope_map`` / ``scope_format``: the in-memory scope map, and its bytes in a checkpoint.
"""
