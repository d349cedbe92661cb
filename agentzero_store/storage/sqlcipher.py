"""Opening SQLCipher databases safely (what is in them is the stores' business).

Traps handled here (measured with sqlcipher3 0.6.4): ``PRAGMA key`` always answers ok,
so we probe right after keying; the key is passed raw (``x'..'``) so SQLCipher's own KDF
never runs; ``journal_mode=WAL`` can silently stay ``delete`` so we check what it
returns; SQLCipher's "hmac check failed" chatter is silenced.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sqlcipher3

from ..base.errors import CorruptStoreError, StoreIOError

DatabaseError = sqlcipher3.DatabaseError


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

    def __init__(
        self,
        path: Path,
        raw_key: bytes,
        *,
        busy_timeout_ms: int,
        readonly: bool = False,
        cache_mib: int | None = None,
    ):
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
            if cache_mib is not None:  # None: SQLite's default (2 MiB)
                conn.execute(f"PRAGMA cache_size = {-1024 * int(cache_mib)}")  # KiB
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

    def create_function(self, name: str, nargs: int, fn: Callable[..., Any]) -> None:
        """Register a deterministic SQL function on this connection."""
        with self._lock:
            self.conn.create_function(name, nargs, fn, deterministic=True)

    def close(self) -> None:
        """Close the connection (checkpoints the WAL when it is the last one)."""
        with self._lock, contextlib.suppress(sqlcipher3.Error):
            self.conn.close()
