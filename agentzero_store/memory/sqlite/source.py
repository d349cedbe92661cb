"""``memory.db`` as a source: opened only after it is checked against the ledger.

A ``memory.db`` that is missing, emptied or rolled back (a lost WAL, an older copy)
while the acknowledgement ledger says it held more is refused (``SourceLossError``),
before SQLite creates or migrates anything; ``agentzero store verify`` reads the same
``memory_seq``. ``open_source`` is the memory store's open after the key header:
ledger, check, migration.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ...base.config import Layout, StoreConfig
from ...storage.fileio import translate_os_errors
from ...storage.keys import StoreKeys
from ...storage.lock import acquire_writer
from ...storage.sources import SourceGuard, judge_memory, loss_error, open_ledger
from ...storage.sqlcipher import Database
from ..records import to_us
from .schema import migrate

LAYER_WRITES = "layer_writes"
"""``meta`` key: how many committed writes of a layer above changed no memory row."""


def feed_seq(db: Database) -> int:
    """The newest seq of ``memory.db``'s change feed (0 before the schema exists): what a
    sidecar covers."""
    if not db.query("SELECT 1 FROM sqlite_master WHERE name = 'changes'"):
        return 0
    return int(db.query("SELECT coalesce(max(seq), 0) FROM changes")[0][0])


def memory_seq(db: Database) -> int:
    """What the ledger acknowledges for ``memory.db``: the feed seq plus the writes that
    changed no memory row (the agent layer's feedback, outcome counts, fact confidence).

    Both parts only grow, so any lost commit (a dropped WAL, an older copy) makes the sum
    smaller than the ledger's and is detected, whichever table it wrote.
    """
    seq = feed_seq(db)
    rows = db.query("SELECT value FROM meta WHERE key = ?", (LAYER_WRITES,)) if seq else []
    return seq + (int(rows[0][0]) if rows else 0)


# What ``records.from_us`` can turn back into a datetime: years 1 to 9999.
_READABLE_US = (to_us(datetime.min.replace(tzinfo=UTC)), to_us(datetime.max.replace(tzinfo=UTC)))
_TIME_COLUMNS = (
    ("memory", "created_at_us"),
    ("memory", "expires_at_us"),
    ("am_memory", "last_review_us"),
)


def unreadable_times(db: Database, limit: int) -> list[tuple[str, str, int]]:
    """Up to ``limit`` (memory id, column, value) of stored times no read can turn into a
    datetime (written before every entry checked the range of times): each read of such
    a memory fails, so ``store verify`` names them."""
    tables = {str(r[0]) for r in db.query("SELECT name FROM sqlite_master")}
    out: list[tuple[str, str, int]] = []
    for table, column in _TIME_COLUMNS:
        if table in tables and len(out) < limit:
            rows = db.query(
                f"SELECT id, {column} FROM {table} WHERE {column} < ? OR {column} > ?"
                " ORDER BY id LIMIT ?",
                (*_READABLE_US, limit - len(out)),
            )
            out += [(str(r[0]), column, int(r[1])) for r in rows]
    return out


def memory_present(path: Path) -> bool:
    """True if ``memory.db`` exists and is not empty (SQLite takes an empty file for a
    new database, so an emptied one must count as missing)."""
    with translate_os_errors("reading", path):
        return path.exists() and path.stat().st_size > 0


def open_source(
    layout: Layout, keys: StoreKeys, config: StoreConfig
) -> tuple[Database, SourceGuard]:
    """``memory.db`` of an unlocked data dir, checked against the ledger, then migrated.

    A missing or empty file is created only if the ledger says nothing was ever
    acknowledged in it; otherwise ``SourceLossError``, before SQLite creates or writes
    anything. The guard holds the open ledger (``guard.ledger``); when this raises,
    nothing is left open.
    """
    path = layout.memory_db
    ledger = open_ledger(layout, keys, writable=True, flush_every=config.checkpoint_every)
    db: Database | None = None
    try:
        guard = SourceGuard(
            ledger,
            "memory",
            path,
            writer=lambda: acquire_writer(
                layout.root, timeout=config.writer_lock_timeout_s, purpose="memory open"
            ),
        )
        state = guard.state()
        present = memory_present(path)
        if not present and (problem := judge_memory(state, present=False, seq=0)):
            raise loss_error(problem, path)
        if not present:
            guard.will_create()  # before SQLite creates the file
        db = Database(
            path,
            keys.sqlcipher_key,
            busy_timeout_ms=config.busy_timeout_ms,
            cache_mib=config.cache_mib,
        )
        if present:
            seq = memory_seq(db)
            if (problem := judge_memory(state, present=True, seq=seq)) is not None:
                raise loss_error(problem, path)
            if not state.created:
                guard.adopt(seq)  # a store from before the ledger: it holds what it holds
        migrate(db, keys.store_id)
    except BaseException:
        if db is not None:
            db.close()
        ledger.close()
        raise
    return db, guard


__all__ = [
    "LAYER_WRITES",
    "feed_seq",
    "memory_present",
    "memory_seq",
    "open_source",
    "unreadable_times",
]
