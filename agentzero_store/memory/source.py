"""``memory.db`` as a source: opened only after it is checked against the ledger.

A ``memory.db`` that is missing, emptied or rolled back (a lost WAL, an older copy)
while the acknowledgement ledger says it held more is refused (``SourceLossError``),
before SQLite creates or migrates anything; ``agentzero store verify`` reads the same
``memory_seq``. ``open_source`` is the memory store's open after the key header:
ledger, check, migration.
"""

from __future__ import annotations

from pathlib import Path

from ..base.config import Layout, StoreConfig
from ..storage.fileio import translate_os_errors
from ..storage.keys import StoreKeys
from ..storage.lock import acquire_writer
from ..storage.sources import SourceGuard, judge_memory, loss_error, open_ledger
from ..storage.sqlcipher import Database
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


__all__ = ["LAYER_WRITES", "feed_seq", "memory_present", "memory_seq", "open_source"]
