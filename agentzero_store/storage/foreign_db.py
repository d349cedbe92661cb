"""Reading another program's SQLite or SQLCipher database: AgentZero's ``memory.db``.

AgentZero keeps its conversation memory in a table ``memory`` (role, content, created_at,
conversation_id, org_id, agent_id, expires_at, and in some versions an ``embedding``
BLOB of float32), in a plain SQLite file or a SQLCipher one keyed with its own
passphrase (SQLCipher's own KDF, unlike our raw keys). This module opens such a file
read-only, tells the cases apart (plain, encrypted, wrong passphrase, not AgentZero's)
with typed errors, and yields its rows as plain values; what they become is the
importer's business (``ops.import_agentzero``). It never writes to the source.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import sqlcipher3

from ..base.errors import CorruptStoreError, InvalidArgumentError, StoreIOError, WrongKeyError

SQLITE_MAGIC = b"SQLite format 3\x00"
TABLE = "memory"
COLUMNS = (
    "role",
    "content",
    "created_at",
    "conversation_id",
    "org_id",
    "agent_id",
    "expires_at",
)
REQUIRED = ("content",)


def is_plain_sqlite(path: Path) -> bool:
    """True if ``path`` starts like an unencrypted SQLite database."""
    try:
        with path.open("rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


@dataclass(frozen=True)
class ForeignRow:
    """One row of the source table as stored (values unchecked; None where absent)."""

    rowid: int
    values: dict[str, Any]
    embedding: bytes | None


def _quote(passphrase: str) -> str:
    # PRAGMA takes no bound parameters: a passphrase is a string literal, quotes doubled.
    return "'" + passphrase.replace("'", "''") + "'"


class ForeignMemoryDb:
    """A source ``memory.db`` opened read-only. Use ``open``; close it (or ``with``)."""

    def __init__(self, path: Path, conn: Any, columns: list[str], encrypted: bool) -> None:
        self.path = path
        self._conn = conn
        self.columns = columns
        self.encrypted = encrypted

    @property
    def has_embeddings(self) -> bool:
        """True if the table has an ``embedding`` column."""
        return "embedding" in self.columns

    @classmethod
    def open(cls, path: Path | str, passphrase: str | None = None) -> ForeignMemoryDb:
        """Open ``path`` (plain SQLite, or SQLCipher with ``passphrase``) read-only.

        Raises ``WrongKeyError`` when the passphrase does not open it (or an encrypted
        file was given none), ``InvalidArgumentError`` when it has no ``memory`` table
        with a ``content`` column, ``StoreIOError`` when it cannot be read.
        """
        p = Path(path).expanduser()
        if not p.is_file():
            raise InvalidArgumentError(f"{p} is not a file", hint="give the path of memory.db")
        plain = is_plain_sqlite(p)
        if not plain and not passphrase:
            raise WrongKeyError(
                f"{p} is encrypted (SQLCipher) or not a database, and no source passphrase "
                "was given",
                hint="pass AgentZero's passphrase with --source-passphrase (or env "
                "AGENTZERO_SOURCE_PASSPHRASE); nothing was imported",
            )
        conn = cls._connect(p, None if plain else passphrase)
        try:
            columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({TABLE})")]
        except sqlcipher3.Error as exc:
            conn.close()
            raise CorruptStoreError(f"the source database cannot be read ({exc})", path=p) from exc
        missing = [c for c in REQUIRED if c not in columns]
        if missing:
            conn.close()
            found = (
                f"its table {TABLE!r} has no {', '.join(missing)}"
                if columns
                else f"it has no table {TABLE!r}"
            )
            raise InvalidArgumentError(
                f"{p} is not an AgentZero memory database: {found}",
                hint="give the memory.db of an AgentZero data dir",
            )
        return cls(p, conn, columns, not plain)

    @staticmethod
    def _connect(path: Path, passphrase: str | None) -> Any:
        try:
            # mode=ro: the source is read, never written (no journal, no WAL checkpoint).
            conn = sqlcipher3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        except sqlcipher3.Error as exc:
            raise StoreIOError(f"{path} cannot be opened ({exc})") from exc
        try:
            conn.execute("PRAGMA cipher_log_level = NONE")
            if passphrase is None:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            # SQLCipher 4's defaults first, then SQLCipher 3's (older AgentZero versions):
            # PRAGMA key always says ok, the first read tells whether it fits.
            for compatibility in (None, 3):
                conn.execute(f"PRAGMA key = {_quote(passphrase)}")
                if compatibility is not None:
                    conn.execute(f"PRAGMA cipher_compatibility = {compatibility}")
                try:
                    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                    return conn
                except sqlcipher3.DatabaseError:
                    conn.close()
                    conn = sqlcipher3.connect(
                        f"file:{path}?mode=ro", uri=True, isolation_level=None
                    )
                    conn.execute("PRAGMA cipher_log_level = NONE")
        except sqlcipher3.Error as exc:
            conn.close()
            raise CorruptStoreError(
                f"the source database cannot be read ({exc})", path=path
            ) from exc
        conn.close()
        raise WrongKeyError(
            f"the source passphrase does not open {path} (or it is not a database)",
            hint="check AgentZero's passphrase (--source-passphrase / "
            "AGENTZERO_SOURCE_PASSPHRASE); nothing was imported",
        )

    def count(self) -> int:
        """Rows in the source table."""
        return int(self._conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])

    def rows(self, batch: int = 512) -> Iterator[list[ForeignRow]]:
        """The table's rows in rowid order, ``batch`` at a time."""
        cols = [c for c in COLUMNS if c in self.columns]
        select = ", ".join(["rowid", *cols, "embedding" if self.has_embeddings else "NULL"])
        try:
            cur = self._conn.execute(f"SELECT {select} FROM {TABLE} ORDER BY rowid")
            while chunk := cur.fetchmany(batch):
                yield [
                    ForeignRow(
                        int(r[0]),
                        dict(zip(cols, r[1 : 1 + len(cols)], strict=True)),
                        bytes(r[-1]) if isinstance(r[-1], bytes | memoryview) else None,
                    )
                    for r in chunk
                ]
        except sqlcipher3.Error as exc:
            raise CorruptStoreError(
                f"the source database cannot be read ({exc})", path=self.path
            ) from exc

    def close(self) -> None:
        """Close the connection."""
        with contextlib.suppress(sqlcipher3.Error):
            self._conn.close()

    def __enter__(self) -> ForeignMemoryDb:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["ForeignMemoryDb", "ForeignRow", "is_plain_sqlite"]
