"""The memory store on PostgreSQL + pgvector (``PgMemoryStore``): the public API of
``SqliteMemoryStore``, with text and metadata sealed on the client, keyword search over
blinded terms and vectors in pgvector. See ``store`` for what the server sees.

- ``store``: ``PgMemoryStore``, the facade; ``sqlite_only``: the SQLite store's extra
  calls, each a typed refusal;
- ``schema``: the ``az_*`` tables, the key header in ``az_keys``, upgrades on open;
- ``write`` / ``recall`` / ``tx``: as in ``sqlite/``; ``rows``: sealing rows on the client;
- ``backfill``: its memories without a vector, on a connection of its own;
- ``bm25``: the BM25 statistics the write path keeps;
- ``export``: the whole store page by page;
- ``keys`` / ``keyguard`` / ``rotation`` / ``rekey``: the key header, keeping clients with a
  rotated key out, a rotation's one transaction, re-sealing the rows.
"""
