"""``memory.db`` as a source: opened only after it is checked against the ledger.

A ``memory.db`` that is missing, emptied or rolled back (a lost WAL, an older copy)
while the acknowledgement ledger says it held more is refused (``SourceLossError``),
before SQLite creates or migrates anything; ``agentzero store verify`` reads the same
``memory_seq``. ``open_source`` is the memory store's open after the key header:
ledger, check, migration.
"""

from __future__ import annotations

from ..base.config import Layout, StoreConfig
from ..storage.acks import Ledger
from ..storage.fileio import translate_os_errors
from ..storage.keys import StoreKeys
from ..storage.lock import acquire_writer
from ..storage.sources import SourceGuard, Writer, judge_memory, loss_error, open_ledger
from ..storage.sqlcipher import Database
from .schema import migrate


def memory_seq(db: Database) -> int:
    """The newest seq of ``memory.db``'s change feed (0 before the schema exists)."""
    if not db.query("SELECT 1 FROM sqlite_master WHERE name = 'changes'"):
        return 0
    return int(db.query("SELECT coalesce(max(seq), 0) FROM changes")[0][0])


def open_memory_db(
    layout: Layout, keys: StoreKeys, config: StoreConfig, ledger: Ledger, writer: Writer
) -> tuple[Database, SourceGuard]:
    """Open ``memory.db`` after checking it against the ledger; the caller migrates it.

    A missing or empty file is created only if the ledger says nothing was ever
    acknowledged in it; otherwise ``SourceLossError`` and no file is created or written.
    """
    path = layout.memory_db
    guard = SourceGuard(ledger, "memory", path, writer=writer)
    state = guard.state()
    with translate_os_errors("reading", path):
        present = path.exists() and path.stat().st_size > 0
    if not present:
        if (problem := judge_memory(state, present=False, seq=0)) is not None:
            raise loss_error(problem, path)
        guard.will_create()  # before SQLite creates the file
        db = Database(path, keys.sqlcipher_key, busy_timeout_ms=config.busy_timeout_ms)
        return db, guard
    db = Database(path, keys.sqlcipher_key, busy_timeout_ms=config.busy_timeout_ms)
    try:
        seq = memory_seq(db)
        if (problem := judge_memory(state, present=True, seq=seq)) is not None:
            raise loss_error(problem, path)
        if not state.created:
            guard.adopt(seq)  # a store from before the ledger: it holds what it holds
    except BaseException:
        db.close()
        raise
    return db, guard



def open_source(
    layout: Layout, keys: StoreKeys, config: StoreConfig
) -> tuple[Database, SourceGuard]:
    """``memory.db`` of an unlocked data dir, checked against the ledger and migrated.

    The guard holds the open ledger (``guard.ledger``); when this raises, nothing is
    left open.
    """
    # The ledger says what memory.db must hold: a missing, emptied or rolled-back file
    # is refused here, before SQLite creates or migrates anything.
    ledger = open_ledger(layout, keys, writable=True, flush_every=config.checkpoint_every)
    try:
        db, guard = open_memory_db(
            layout,
            keys,
            config,
            ledger,
            lambda: acquire_writer(
                layout.root, timeout=config.writer_lock_timeout_s, purpose="memory open"
            ),
        )
    except BaseException:
        ledger.close()
        raise
    try:
        migrate(db, keys.store_id)
    except BaseException:
        db.close()
        ledger.close()
        raise
    return db, guard


__all__ = ["memory_seq", "open_memory_db", "open_source"]
