"""The agent memory's migration chains (``agentmem.schema.migrate_chain``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentzero_store import SchemaVersionError
from agentzero_store.agentmem.sqlite.schema import (
    MIGRATIONS,
    SCHEMA_KEY,
    SCHEMA_VERSION,
    migrate_chain,
)

from .conftest import Clock, open_memory


class StaleVersionRead:
    """Fault injection: the database as a process sees it that read the schema version
    before another process migrated (its first read of ``meta`` says version 0)."""

    def __init__(self, db: Any) -> None:
        self._db = db
        self.stale_reads = 0

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        if "FROM meta" in sql and not self.stale_reads:
            self.stale_reads += 1
            return []
        rows: list[Any] = self._db.query(sql, params)
        return rows


class StoreSeenLate:
    def __init__(self, store: Any) -> None:
        self.database = StaleVersionRead(store.database)
        self.transaction = store.transaction


def test_a_step_another_process_ran_meanwhile_is_not_run_again(
    data_dir: Path, clock: Clock
) -> None:
    with open_memory(data_dir, clock) as mem:  # migrated to the latest version
        late = StoreSeenLate(mem.store)
        # Without the second read under the write lock, step 1 would CREATE TABLE
        # am_memory again and fail.
        migrate_chain(late, SCHEMA_KEY, MIGRATIONS, "agent-memory")  # type: ignore[arg-type]
        assert late.database.stale_reads == 1
        rows = mem.store.database.query("SELECT value FROM meta WHERE key = ?", (SCHEMA_KEY,))
        assert rows == [(str(SCHEMA_VERSION),)]
        mem.add_turn("c1", "user", "still works")


def test_a_newer_schema_is_refused_and_left_alone(data_dir: Path, clock: Clock) -> None:
    with open_memory(data_dir, clock) as mem, mem.store.transaction() as tx:
        tx.execute("UPDATE meta SET value = ? WHERE key = ?", (str(SCHEMA_VERSION + 1), SCHEMA_KEY))
    with pytest.raises(SchemaVersionError, match="agent-memory schema"):
        open_memory(data_dir, clock)
