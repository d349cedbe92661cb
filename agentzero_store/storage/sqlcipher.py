"""Opening SQLCipher databases safely, and the memory schema with its migrations.

Traps handled here (see DEPENDENCIES.md): ``PRAGMA key`` always answers ok, so we probe
right after keying; the key is passed raw (``x'..'``) so SQLCipher's own KDF never runs;
``journal_mode=WAL`` can silently stay ``delete`` so we check what it returns; SQLCipher's
"hmac check failed" chatter is silenced.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlcipher3

from ..base.errors import CorruptStoreError, SchemaVersionError, StoreIOError
from ..memory.fts_scope import SQL_FUNCTION, scope_tokens

DatabaseError = sqlcipher3.DatabaseError
SCHEMA_VERSION = 3

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
    # v3: each FTS5 row also carries its scope as tokens (see fts_scope.py), so keyword
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
)


def _translate(path: Path, exc: Exception) -> Exception:
    msg = str(exc)
    if isinstance(exc, sqlcipher3.OperationalError) and (
        "disk" in msg or "I/O" in msg or "readonly" in msg or "full" in msg
    ):
        return StoreIOError(f"{path}: {msg}")
    return CorruptStoreError(
        f"the database cannot be read ({msg}); the key header opened, so the file is damaged "
        "or belongs to another store",
        path=path,
    )


def _make_private(path: Path) -> None:
    """Make the database file 0600 before SQLite opens it, creating it if needed.

    SQLite creates a database with the umask's mode (0644 under the usual 022) and gives
    its -wal and -shm the database's mode, so an empty 0600 file (a valid empty database)
    made first keeps all three private. A database that is group- or world-readable (made
    by an older version, or copied in) is tightened, once the key header has opened.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with contextlib.suppress(OSError):  # not ours to change (another owner): leave it
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o600)
        return
    except OSError as exc:
        raise StoreIOError(f"creating {path} failed: {exc.strerror or exc}") from exc
    os.close(fd)


class Database:
    """One SQLCipher connection, shared across threads behind a lock."""

    def __init__(self, path: Path, raw_key: bytes, *, busy_timeout_ms: int, readonly: bool = False):
        self.path = path
        self._lock = threading.RLock()
        if not readonly:
            _make_private(path)
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        try:
            conn = sqlcipher3.connect(
                uri,
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )
        except sqlcipher3.Error as exc:
            raise _translate(path, exc) from exc
        self.conn = conn
        try:
            conn.execute("PRAGMA cipher_log_level = NONE")
            # PRAGMA takes no bound parameters; the key is hex digits we produced ourselves.
            conn.execute(f"PRAGMA key = \"x'{raw_key.hex()}'\"")
            # PRAGMA key always says ok: the first real read tells whether the key fits.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            # Migrations build FTS5 scope tokens in SQL with the same function the writers use.
            conn.create_function(SQL_FUNCTION, 3, scope_tokens, deterministic=True)
            if not readonly:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise CorruptStoreError(
                        f"could not enable WAL (journal_mode={mode})", path=path
                    )
            # FULL: each commit fsyncs the WAL, so an acknowledged write survives power loss.
            conn.execute("PRAGMA synchronous = FULL")
            # Deleted memories are overwritten with zeros, not left in free pages.
            conn.execute("PRAGMA secure_delete = ON")
            # Sorts and temp tables stay in RAM: no plaintext temp files on disk.
            conn.execute("PRAGMA temp_store = MEMORY")
        except sqlcipher3.Error as exc:
            conn.close()
            raise _translate(path, exc) from exc
        except BaseException:
            conn.close()
            raise

    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        """A write transaction (BEGIN IMMEDIATE ... COMMIT); rolls back on error."""
        with self._lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlcipher3.Error as exc:
                raise _translate(self.path, exc) from exc
            try:
                yield self.conn
            except BaseException:
                with contextlib.suppress(sqlcipher3.Error):
                    self.conn.execute("ROLLBACK")
                raise
            try:
                # The commit is the durability point: once it returns, the write is acknowledged.
                self.conn.execute("COMMIT")
            except sqlcipher3.Error as exc:
                with contextlib.suppress(sqlcipher3.Error):
                    self.conn.execute("ROLLBACK")
                raise _translate(self.path, exc) from exc

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A read transaction: every query inside sees one consistent state."""
        with self._lock:
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                with contextlib.suppress(sqlcipher3.Error):
                    self.conn.execute("COMMIT")

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        """Run a read query and return all rows."""
        with self._lock:
            try:
                rows: list[Any] = self.conn.execute(sql, params).fetchall()
                return rows
            except sqlcipher3.OperationalError as exc:
                if "fts5" in str(exc) or "syntax" in str(exc):
                    raise
                raise _translate(self.path, exc) from exc
            except sqlcipher3.DatabaseError as exc:
                raise _translate(self.path, exc) from exc

    def migrate(self, store_id: str) -> None:
        """Create or upgrade the schema to SCHEMA_VERSION, one transaction per step."""
        version = int(self.query("PRAGMA user_version")[0][0])
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path} has schema {version}; this version supports up to {SCHEMA_VERSION}"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self.tx() as c:
                for stmt in MIGRATIONS[target - 1].split(";\n"):
                    if stmt.strip():
                        c.execute(stmt)
                if target == 1:
                    c.execute("INSERT INTO meta VALUES ('store_id', ?)", (store_id,))
                c.execute(f"PRAGMA user_version = {target}")
        (stored,) = self.query("SELECT value FROM meta WHERE key = 'store_id'")[0]
        if stored != store_id:
            raise CorruptStoreError("memory.db belongs to another store", path=self.path)

    def get_meta(self, key: str) -> str | None:
        """A value from the meta table."""
        rows = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def close(self) -> None:
        """Close the connection (checkpoints the WAL when it is the last one)."""
        with self._lock, contextlib.suppress(sqlcipher3.Error):
            self.conn.close()
