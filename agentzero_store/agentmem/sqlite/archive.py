"""The archive: where an archived memory's text goes, ``memory.archive.db``.

A second SQLCipher file (its own subkey), so ``memory.db`` sheds the text of faded
memories while their rows, vectors and keyword entries stay (recall still finds them).
``memory.db`` stays the authority: an archived row there records the SHA-256 of the text
the archive must hold, so a missing, replaced, rolled-back or damaged archive is reported
precisely (file, memory id, what was expected), never read as empty.

Ordering makes the two files safe without a shared transaction:
- archive: the text is committed here first, then ``memory.db`` drops it from the row;
  a crash between leaves a spare copy here (removed by ``orphans``/``delete``), never a
  memory without its text;
- restore: the text goes back into ``memory.db`` first, then it is deleted here;
- erase: ``memory.db`` first (with a pending-purge record), then here, then the WAL is
  truncated, so the text is gone from every page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ...base.errors import CorruptStoreError
from ...storage.sqlcipher import Database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS archived (
    id             TEXT PRIMARY KEY,
    content        TEXT NOT NULL,
    metadata       TEXT NOT NULL,
    archived_at_us INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def text_digest(content: str, metadata: str) -> str:
    """What ``memory.db`` records of an archived text (SHA-256, hex)."""
    h = hashlib.sha256(content.encode("utf-8"))
    h.update(b"\0")
    h.update(metadata.encode("utf-8"))
    return h.hexdigest()


def required_texts(memory_db: Database) -> dict[str, str]:
    """Every id whose text ``memory.db`` says the archive holds, with the digest it
    recorded: archived memories, and forgotten ones that were archived when forgotten
    (an undo reads their text back). Empty for a store that never used ``AgentMemory``
    (no agent-memory tables)."""
    tables = {
        str(r[0])
        for r in memory_db.query(
            # am_memory is a view of the memory rows since the layer's schema v4
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
            " AND name IN ('am_memory', 'am_forgotten')"
        )
    }
    out: dict[str, str] = {}
    if "am_memory" in tables:
        out.update(
            memory_db.query(
                "SELECT id, archive_digest FROM am_memory WHERE archived_at_us IS NOT NULL"
            )
        )
    if "am_forgotten" in tables:
        # The payload keeps the am_memory row as a list: [18] archived_at_us, [19] digest.
        out.update(
            memory_db.query(
                "SELECT memory_id, json_extract(payload, '$.am_memory[19]') FROM am_forgotten"
                " WHERE json_extract(payload, '$.am_memory[18]') IS NOT NULL"
            )
        )
    return out


def audit(
    archive_db: Database, store_id: str, required: Mapping[str, str]
) -> list[tuple[str | None, str]]:
    """What is wrong with an opened archive file, given what ``memory.db`` requires of it
    (``required_texts``): (memory id or None, problem) pairs; empty when it is sound.

    Reads only: used by ``store verify`` and by backup to check the pair of copies.
    """
    tables = {
        str(r[0]) for r in archive_db.query("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    if not {"archived", "meta"} <= tables:
        problem = "the file has no archive tables (not an archive, or its schema was lost)"
        return [
            (None, problem + (f"; {len(required):,} archived texts expected" if required else ""))
        ]
    out: list[tuple[str | None, str]] = []
    owner = archive_db.query("SELECT value FROM meta WHERE key = 'store_id'")
    if not owner or owner[0][0] != store_id:
        found = repr(str(owner[0][0])) if owner else "none"
        out.append((None, f"the archive belongs to another store (store id {found})"))
    ids = sorted(required)
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        rows = archive_db.query(
            f"SELECT id, content, metadata FROM archived WHERE id IN ({','.join('?' * len(part))})",
            part,
        )
        found_digests = {str(r[0]): text_digest(r[1], r[2]) for r in rows}
        for i in part:
            want = required[i]
            if i not in found_digests:
                out.append(
                    (
                        i,
                        f"no text for memory {i}: memory.db marks it archived (sha256 "
                        f"{want[:16]}…); the archive was rolled back, replaced or damaged",
                    )
                )
            elif found_digests[i] != want:
                out.append(
                    (
                        i,
                        f"the text of memory {i} is not the one memory.db recorded (expected "
                        f"sha256 {want[:16]}…, found {found_digests[i][:16]}…)",
                    )
                )
    return out


class Archive:
    """The archive file of one data dir; opened on first use."""

    def __init__(self, path: Path, key: bytes, store_id: str, busy_timeout_ms: int) -> None:
        self.path = path
        self._key = key
        self._store_id = store_id
        self._busy = busy_timeout_ms
        self._db: Database | None = None

    @staticmethod
    def digest(content: str, metadata: str) -> str:
        """What ``memory.db`` records of an archived text (``text_digest``)."""
        return text_digest(content, metadata)

    def exists(self) -> bool:
        """True if the archive file exists (and is not empty)."""
        return self.path.exists() and self.path.stat().st_size > 0

    def _open(self, create: bool) -> Database:
        if self._db is None:
            if not create and not self.exists():
                raise CorruptStoreError(
                    "the archive is missing: memory.db has archived memories whose text "
                    "lives in it",
                    path=self.path,
                    hint="restore the data dir from a backup (agentzero store restore)",
                )
            db = Database(self.path, self._key, busy_timeout_ms=self._busy)
            try:
                with db.tx() as c:
                    for stmt in _SCHEMA.split(";\n"):
                        if stmt.strip():
                            c.execute(stmt)
                    c.execute(
                        "INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", (self._store_id,)
                    )
                stored = db.query("SELECT value FROM meta WHERE key = 'store_id'")[0][0]
                if stored != self._store_id:
                    raise CorruptStoreError("the archive belongs to another store", path=self.path)
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def put(self, rows: Sequence[tuple[str, str, str]], now_us: int) -> None:
        """Durably store (id, content, metadata JSON) rows (replacing earlier copies)."""
        if rows:
            with self._open(create=True).tx() as c:
                c.executemany(
                    "INSERT OR REPLACE INTO archived VALUES (?, ?, ?, ?)",
                    [(i, text, meta, now_us) for i, text, meta in rows],
                )

    def get(self, digests: dict[str, str]) -> dict[str, tuple[str, str]]:
        """(content, metadata) of each id, checked against the digest ``memory.db``
        recorded; anything missing or different is a ``CorruptStoreError`` naming it."""
        if not digests:
            return {}
        db = self._open(create=False)
        ids = list(digests)
        out: dict[str, tuple[str, str]] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = db.query(
                "SELECT id, content, metadata FROM archived WHERE id IN"
                f" ({','.join('?' * len(part))})",
                part,
            )
            out.update({r[0]: (r[1], r[2]) for r in rows})
        for i in ids:
            if i not in out:
                raise CorruptStoreError(
                    f"the archive holds no text for memory {i} (expected one: memory.db "
                    "marks it archived); the archive was rolled back or replaced",
                    path=self.path,
                    hint="restore the data dir from a backup (agentzero store restore)",
                )
            if text_digest(*out[i]) != digests[i]:
                raise CorruptStoreError(
                    f"the archived text of memory {i} is not the one memory.db recorded "
                    f"(sha256 {digests[i][:16]}…)",
                    path=self.path,
                    hint="restore the data dir from a backup (agentzero store restore)",
                )
        return out

    def delete(self, ids: Iterable[str]) -> int:
        """Delete these ids' text (secure_delete zeroes it) and truncate the WAL, so no
        page of the archive keeps it. No-op when there is no archive."""
        ids = list(ids)
        if not ids or (self._db is None and not self.exists()):
            return 0
        db = self._open(create=False)
        n = 0
        with db.tx() as c:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                n += c.execute(
                    f"DELETE FROM archived WHERE id IN ({','.join('?' * len(part))})", part
                ).rowcount
        self.truncate_wal()
        return n

    def truncate_wal(self) -> bool:
        """Copy the WAL into the file and empty it (old frames hold deleted texts); False
        if a reader of an older snapshot kept it from finishing within the busy timeout.
        True when there is no archive."""
        if self._db is None and not self.exists():
            return True
        busy, frames, _ = self._open(create=False).query("PRAGMA wal_checkpoint(TRUNCATE)")[0]
        return bool(busy == 0 and frames == 0)

    def ids(self) -> set[str]:
        """Every id the archive holds text for (to find spare copies)."""
        if self._db is None and not self.exists():
            return set()
        return {r[0] for r in self._open(create=False).query("SELECT id FROM archived")}

    def close(self) -> None:
        """Close the file (if opened)."""
        if self._db is not None:
            self._db.close()
            self._db = None


__all__ = ["Archive", "audit", "required_texts", "text_digest"]
