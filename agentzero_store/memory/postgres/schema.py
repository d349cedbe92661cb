"""The PostgreSQL schema of a memory store, its key table, opening a database, and
upgrading an older schema.

Tables (all prefixed ``az_``, so a store can share a database with other data):

- ``az_keys``: one row, the key header in the format of a data dir's keys.json (wrapped
  master key, salts, KDF parameters; no secret in the clear);
- ``az_meta``: store id, schema version, embedding model and dimension;
- ``az_memory``: one row per memory. Scope ids and times are in the clear (the server
  filters on them); everything else the entry holds is one AES-256-GCM blob
  (``rows.seal``); ``fingerprint`` is a keyed hash; ``embedding`` is a pgvector column
  typed ``vector(dim)`` once the first vector fixes the dimension, with an HNSW cosine
  index;
- ``az_terms``: the blinded keyword terms of each memory (keyed hashes of stemmed
  terms, ``sidecar.bm25_terms``) and their frequencies, with the memory's
  ``(org_id, agent_id, doc_len)`` (triggers hold them equal to the row's), indexed by
  scope and term, for BM25 computed in SQL;
- ``az_bm25_scope``: insert-only deltas of each (org, agent)'s row count and total
  length, written by triggers on ``az_memory`` and folded now and then (``bm25``).

Versions: 1, the tables above without the scope and length of a posting or the BM25
statistics; 2, with them (``bm25`` describes the design). A store of an older version is
upgraded when a client of this version opens it, after the credential was checked: each
step in one transaction under the schema lock, so two clients opening it at once upgrade
it once, and a failed step leaves the old version as it was. Upgrading changes tables,
so it needs their owner. A new store is created as version 1 and upgraded in the same
transaction: a new store and an upgraded one are the same schema.

Creating a store, upgrading it and fixing the vector dimension run under a
transaction-scoped advisory lock, so concurrent clients never race each other into two
key headers, two upgrades or two dimensions. Everything else relies on transactions,
constraints and the triggers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...base.errors import CorruptStoreError, SchemaVersionError
from . import bm25

SCHEMA_VERSION = 2

# pg_advisory_xact_lock key of schema changes (create, fix the dimension): "az-schema".
SCHEMA_LOCK = 0x617A_2D73_6368_656D

CREATE: tuple[str, ...] = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE az_keys (one int PRIMARY KEY CHECK (one = 1), header text NOT NULL)",
    "CREATE TABLE az_meta (key text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE az_memory (
        label           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id              text NOT NULL UNIQUE,
        org_id          text NOT NULL,
        agent_id        text NOT NULL,
        conversation_id text NOT NULL,
        created_at_us   bigint NOT NULL,
        expires_at_us   bigint,
        fingerprint     bytea NOT NULL,
        doc_len         integer NOT NULL CHECK (doc_len >= 0),
        sealed          bytea NOT NULL,
        embedding       vector
    )""",
    "CREATE INDEX az_memory_scope ON az_memory (org_id, agent_id, conversation_id, created_at_us)",
    "CREATE INDEX az_memory_expiry ON az_memory (expires_at_us) WHERE expires_at_us IS NOT NULL",
    """CREATE TABLE az_terms (
        term  text NOT NULL,
        label bigint NOT NULL REFERENCES az_memory (label) ON DELETE CASCADE,
        tf    integer NOT NULL CHECK (tf > 0),
        PRIMARY KEY (term, label)
    )""",
    "CREATE INDEX az_terms_label ON az_terms (label)",
)


def exists(conn: Any) -> bool:
    """Whether the database holds a memory store (its key table)."""
    row = conn.execute("SELECT to_regclass('az_keys') IS NOT NULL").fetchone()
    return bool(row[0])


def _to_v2(conn: Any) -> None:
    for stmt in bm25.V2:
        conn.execute(stmt)
    bm25.rebuild(conn)
    bm25.share_grants(conn)


# Version n -> the step from n - 1, inside the caller's transaction.
STEPS: dict[int, Callable[[Any], None]] = {2: _to_v2}


def create(conn: Any, header_json: str, store_id: str) -> None:
    """Create every table and store the key header, inside the caller's transaction
    (which holds the schema lock)."""
    for stmt in CREATE:
        conn.execute(stmt)
    conn.execute("INSERT INTO az_keys (one, header) VALUES (1, %s)", (header_json,))
    conn.execute(
        "INSERT INTO az_meta (key, value) VALUES ('store_id', %s), ('schema_version', '1')",
        (store_id,),
    )
    _steps_from(conn, 1)


def version(conn: Any) -> int:
    """The schema version in ``az_meta`` (0 if none)."""
    row = conn.execute("SELECT value FROM az_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row is not None else 0


def _steps_from(conn: Any, current: int) -> None:
    for v in range(current + 1, SCHEMA_VERSION + 1):
        STEPS[v](conn)
    conn.execute(
        "UPDATE az_meta SET value = %s WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
    )


def upgrade(conn: Any) -> bool:
    """Bring an older schema up to ``SCHEMA_VERSION`` in one transaction under the
    schema lock (``conn`` in autocommit, the schema ``check``ed); True if this call
    upgraded it, False if it was current (or another client upgraded it first).
    ``SchemaVersionError`` if this role may not change the tables."""
    import psycopg

    current = version(conn)
    if current >= SCHEMA_VERSION:
        return False
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            current = version(conn)  # another client may have upgraded it meanwhile
            if current >= SCHEMA_VERSION:
                return False
            _steps_from(conn, current)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise SchemaVersionError(
            f"the database has memory schema {current}; this version needs "
            f"{SCHEMA_VERSION} and upgrades it on open, which this role may not do: "
            f"{str(exc).strip().splitlines()[0]}",
            hint="open the store once as the role that owns its tables (that upgrades "
            "it, and gives this role what it needs), then again as this one",
        ) from exc
    return True


def read_header(conn: Any, *, for_update: bool = False) -> bytes:
    """The key header's JSON bytes (checked by ``key_header.parse_header``).

    ``for_update``: also lock the row until the caller's transaction ends, so another
    client replacing the header waits here and then reads the replaced one.
    """
    lock = " FOR UPDATE" if for_update else ""
    row = conn.execute(f"SELECT header FROM az_keys WHERE one = 1{lock}").fetchone()
    if row is None:
        raise CorruptStoreError("the az_keys table holds no key header", path="az_keys")
    return str(row[0]).encode("utf-8")


def replace_header(conn: Any, header_json: str) -> None:
    """Store a new key header, inside the caller's transaction (which read the old one
    with ``for_update``)."""
    cur = conn.execute("UPDATE az_keys SET header = %s WHERE one = 1", (header_json,))
    if cur.rowcount != 1:
        raise CorruptStoreError("the az_keys table holds no key header", path="az_keys")


def check(conn: Any, store_id: str) -> None:
    """Refuse a schema from a newer version, or data of another store (an older version
    is ``upgrade``d after this)."""
    meta = get_meta(conn)
    v = int(meta.get("schema_version", "0"))
    if v > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has memory schema {v}; this version supports up to {SCHEMA_VERSION}"
        )
    if v < 1:
        raise CorruptStoreError("az_meta holds no schema version", path="az_meta")
    if meta.get("store_id") != store_id:
        raise CorruptStoreError("az_memory belongs to another store", path="az_meta")


def get_meta(conn: Any) -> dict[str, str]:
    """Every ``az_meta`` entry."""
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM az_meta")}


VECTOR_INDEX = "az_memory_embedding"
# Memory for building the HNSW index after a bulk load: pgvector builds far faster while
# the graph fits in maintenance_work_mem (~200 MB at 100k 384-d vectors); set for that
# one statement only.
BUILD_MEMORY = "512MB"


def has_vector_index(conn: Any) -> bool:
    """Whether the HNSW index over the vectors exists."""
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (VECTOR_INDEX,)).fetchone()
    return bool(row[0])


def create_vector_index(conn: Any) -> None:
    """Build the HNSW cosine index over the vectors (if missing), inside the caller's
    transaction: after a bulk load, far faster than updating it row by row."""
    conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {VECTOR_INDEX} ON az_memory"
        " USING hnsw (embedding vector_cosine_ops)"
    )


def fix_dimension(conn: Any, dim: int, model: str | None, *, index: bool = True) -> int:
    """The store's vector dimension: ``dim`` if none is set yet (the column is typed
    ``vector(dim)`` and, with ``index``, its HNSW cosine index built), else the one
    already set.

    Inside the caller's write transaction, under the schema lock: two clients storing
    their first vectors at once agree on one dimension (the second sees the first's).
    """
    sql = "SELECT value FROM az_meta WHERE key = 'embedding_dim'"
    row = conn.execute(sql).fetchone()
    if row is None:  # only the first vectors ever take the lock: writers never queue on it
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        row = conn.execute(sql).fetchone()  # a client that held the lock may have set it
    if row is not None:
        return int(row[0])
    conn.execute(f"ALTER TABLE az_memory ALTER COLUMN embedding TYPE vector({int(dim)})")
    if index:
        create_vector_index(conn)
    conn.execute("INSERT INTO az_meta (key, value) VALUES ('embedding_dim', %s)", (str(dim),))
    if model:
        conn.execute(
            "INSERT INTO az_meta (key, value) VALUES ('embedding_model', %s)"
            " ON CONFLICT (key) DO NOTHING",
            (model,),
        )
    return dim


__all__ = [
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "STEPS",
    "VECTOR_INDEX",
    "check",
    "create",
    "create_vector_index",
    "exists",
    "fix_dimension",
    "get_meta",
    "has_vector_index",
    "read_header",
    "replace_header",
    "upgrade",
    "version",
]
