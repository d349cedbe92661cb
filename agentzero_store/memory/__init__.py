"""The memory store: conversation memory, on SQLCipher in a data dir or on PostgreSQL.

Shared by both backends (importing neither):

- ``seam``: the declared seam (``MemoryStore``, small Protocols by concern, capabilities);
- ``records``: ``MemoryEntry``, ``MemoryHit``, ``Scope``, ``Change`` (frozen, explicitly
  serialised); ``rows``: a row into a ``MemoryEntry``;
- ``front``: ``StoreFront``, the calls every backend writes the same way;
- ``batch``: a batch's checks and new ids; ``backfill``: the background embedding thread
  and its rule.

The backends side by side, under the same file names where they do the same job:
``sqlite/`` (``SqliteMemoryStore`` and its HNSW sidecar) and ``postgres/``
(``PgMemoryStore``). Neither imports the other. ``choose`` sits above both: it opens
the one a target names and is where mypy checks each against the seam.
"""
