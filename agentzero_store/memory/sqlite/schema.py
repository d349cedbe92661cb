"""The schema of ``memory.db`` and its migrations, one transaction per version (a crash
leaves one whole version, never a half-moved store), on a ``storage.sqlcipher`` connection.
"""

from __future__ import annotations

from ...base.errors import CorruptStoreError, SchemaVersionError
from ...storage.sqlcipher import Database
from .fts_scope import SQL_FUNCTION, scope_tokens

SCHEMA_VERSION = 4

# Every migration moves the schema from version i to i+1; never edit a shipped one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE memory (
        label          INTEGER PRIMARY KEY AUTOINCREMENT,  -- vector-index label, never reused
        id             TEXT NOT NULL UNIQUE,
        role           TEXT NOT NULL,
        content        TEXT NOT NULL,
        created_at_us  INTEGER NOT NULL,
        conversation_id TEXT NOT NULL,
        org_id         TEXT NOT NULL,
        agent_id       TEXT NOT NULL,
        expires_at_us  INTEGER,
        kind           TEXT NOT NULL,
        source         TEXT NOT NULL,
        metadata       TEXT NOT NULL,
        fingerprint    TEXT NOT NULL,
        embedding      BLOB,
        embedding_model TEXT
    );
    CREATE INDEX memory_scope ON memory (org_id, agent_id, conversation_id, created_at_us);
    CREATE INDEX memory_expiry ON memory (expires_at_us) WHERE expires_at_us IS NOT NULL;
    -- BM25 keyword index. It lives inside the encrypted database, so it is encrypted too.
    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        content, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    -- The change feed that sidecars replay: every insert and delete gets its own seq.
    CREATE TABLE changes (
        seq   INTEGER PRIMARY KEY AUTOINCREMENT,
        op    TEXT NOT NULL CHECK (op IN ('insert', 'delete')),
        label INTEGER NOT NULL
    );
    """,
    # v2: embeddings move to their own table. Inline, the 1.5 KiB vector left ~2 rows per
    # 4 KiB page, so reading k hits (recall's final re-check, recent(), keyword recall)
    # touched k fat pages; without it a page holds ~15 rows. embedding_model stays on the
    # row: it is small and read with the entry. One transaction (see Database.migrate): a
    # crash leaves v1 or v2, never a half-moved store. DROP COLUMN rewrites every row,
    # and secure_delete zeroes the bytes the vectors leave behind.
    """
    CREATE TABLE memory_vec (
        label     INTEGER PRIMARY KEY REFERENCES memory (label),
        embedding BLOB NOT NULL
    );
    INSERT INTO memory_vec (label, embedding)
        SELECT label, embedding FROM memory WHERE embedding IS NOT NULL ORDER BY label;
    ALTER TABLE memory DROP COLUMN embedding;
    """,
    # v3: each FTS5 row also carries its scope as tokens (see ``fts_scope``), so keyword
    # recall ANDs the scope into the MATCH and scores only the scope's rows instead of
    # joining every match to its memory row. The index is rebuilt from ``memory`` in the
    # migration's one transaction; secure_delete zeroes the old one's pages.
    """
    DROP TABLE memory_fts;
    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        content, scope, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO memory_fts (rowid, content, scope)
        SELECT label, content, az_scope_tokens(org_id, agent_id, conversation_id)
        FROM memory ORDER BY label;
    """,
    # v4: the keyword index becomes contentless. Before, FTS5 kept a second copy of every
    # memory's text; now it keeps only its tokens (the ``memory`` row is the one place
    # text lives, and the file shrinks by that copy). ``contentless_delete`` lets rows be
    # deleted, and FTS5's own ``secure-delete`` removes a deleted row's entries from the
    # index instead of leaving delete markers beside them until a merge: forgotten and
    # erased memories leave no tokens behind (erase also runs 'optimize', see
    # ``purge_keyword_index``). An archived memory keeps its tokens here while its text
    # moves to the archive, so keyword recall still finds it.
    """
    DROP TABLE memory_fts;
    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        content, scope, content = '', contentless_delete = 1,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO memory_fts (memory_fts, rank) VALUES ('secure-delete', 1);
    INSERT INTO memory_fts (rowid, content, scope)
        SELECT label, content, az_scope_tokens(org_id, agent_id, conversation_id)
        FROM memory ORDER BY label;
    """,
)


def migrate(db: Database, store_id: str) -> None:
    """Create or upgrade the schema to SCHEMA_VERSION, one transaction per step."""
    # Migrations build FTS5 scope tokens in SQL with the same function the writers use.
    db.create_function(SQL_FUNCTION, 3, scope_tokens)
    version = int(db.query("PRAGMA user_version")[0][0])
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{db.path} has schema {version}; this version supports up to {SCHEMA_VERSION}"
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        with db.tx() as c:
            # Read again under the write lock: another process opening this old store
            # at the same time may have run this step meanwhile.
            if int(c.execute("PRAGMA user_version").fetchone()[0]) >= target:
                continue
            for stmt in MIGRATIONS[target - 1].split(";\n"):
                if stmt.strip():
                    c.execute(stmt)
            if target == 1:
                c.execute("INSERT INTO meta VALUES ('store_id', ?)", (store_id,))
            c.execute(f"PRAGMA user_version = {target}")
    (stored,) = db.query("SELECT value FROM meta WHERE key = 'store_id'")[0]
    if stored != store_id:
        raise CorruptStoreError("memory.db belongs to another store", path=db.path)


def purge_keyword_index(db: Database) -> None:
    """Merge the keyword index into one segment, dropping every deleted row's entries.

    ``secure-delete`` already removes a deleted row's postings, but a term no row uses any
    more can stay in a segment's term list until the segment is rewritten (measured with
    SQLite 3.53): 'optimize' rewrites them all. Run after an erase.
    """
    with db.tx() as c:
        c.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")


def get_meta(db: Database, key: str) -> str | None:
    """A value from the ``meta`` table (store id, embedding model and dimension)."""
    rows = db.query("SELECT value FROM meta WHERE key = ?", (key,))
    return str(rows[0][0]) if rows else None


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "get_meta", "migrate", "purge_keyword_index"]
