"""The item store's tables in ``memory.db``, with their own migration chain (meta key
``items_schema``), apart from the memory, agent-memory and skill tables.

- ``az_item``: one row per (collection, namespace, key): the value's JSON, the caller's
  bytes, times in µs since the epoch, the expiry and the time to live a read refreshes;
- ``az_item_vector``: the vectors of an item's indexed fields (float32), one per field;
- ``az_item_text``: FTS5 over an item's indexed text (rowid = the item's id), for
  keyword and hybrid search;
- ``az_item_collection``: each collection's vector dimension, fixed by its first vector,
  and a version every write bumps (searches keep the vectors in RAM until it moves).

All of it sits inside ``memory.db``, so SQLCipher encrypts every page (FTS5's shadow
tables too), key rotation, backup and verify cover it, and writes take the data dir's
writer role.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memory.sqlite.chains import Step, migrate_chain

if TYPE_CHECKING:
    from ..memory.seam import DataDirOps
    from ..memory.sqlite.store import SqliteMemoryStore

SCHEMA_KEY = "items_schema"
MIGRATIONS: tuple[Step, ...] = (
    """
    CREATE TABLE az_item (
        id            INTEGER PRIMARY KEY,
        collection    TEXT NOT NULL,
        ns            TEXT NOT NULL,    -- records.ns_text: each segment + '\x1f'
        key           TEXT NOT NULL,
        value         TEXT NOT NULL,    -- a JSON object
        data          BLOB,             -- the caller's bytes, or NULL
        created_at_us INTEGER NOT NULL,
        updated_at_us INTEGER NOT NULL,
        expires_at_us INTEGER,          -- NULL: never expires
        ttl_s         REAL              -- what a read refreshes the expiry to, or NULL
    );
    CREATE UNIQUE INDEX az_item_key ON az_item (collection, ns, key);
    CREATE INDEX az_item_expiry ON az_item (expires_at_us) WHERE expires_at_us IS NOT NULL;
    CREATE TABLE az_item_vector (
        item_id INTEGER NOT NULL,       -- az_item.id
        field   TEXT NOT NULL,
        vector  BLOB NOT NULL,          -- float32, native byte order
        PRIMARY KEY (item_id, field)
    ) WITHOUT ROWID;
    CREATE VIRTUAL TABLE az_item_text USING fts5 (text, tokenize = 'unicode61');
    CREATE TABLE az_item_collection (
        name    TEXT PRIMARY KEY,
        dims    INTEGER,                -- NULL until the first vector
        version INTEGER NOT NULL DEFAULT 0  -- bumped by every write (vector_cache)
    ) WITHOUT ROWID;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(store: SqliteMemoryStore) -> None:
    """Create or upgrade the item tables."""
    migrate_chain(store, SCHEMA_KEY, MIGRATIONS, "item store")


def stored_items(store: DataDirOps) -> int:
    """How many items the data dir holds in every collection (0 before any item store
    opened it): what ``store migrate`` must refuse to leave behind."""
    has = store.database.query(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'az_item'"
    )
    if not has:
        return 0
    return int(store.database.query("SELECT count(*) FROM az_item")[0][0])


__all__ = ["SCHEMA_KEY", "SCHEMA_VERSION", "migrate", "stored_items"]
