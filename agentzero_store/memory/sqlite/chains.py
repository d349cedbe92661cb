"""Migration chains of the layers that keep their own tables in ``memory.db``.

The agent memory, skills and the item store each have a chain of their own (a meta key
holding its version), so each can change without renumbering the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ...base.errors import SchemaVersionError
from .tx import WriteTx

if TYPE_CHECKING:
    from .store import SqliteMemoryStore

Step = str | Callable[[WriteTx], None]


def migrate_chain(
    store: SqliteMemoryStore, key: str, migrations: Sequence[Step], what: str
) -> None:
    """Bring the chain of ``migrations`` recorded under meta ``key`` up to date: version
    N is ``migrations[N - 1]``, each step in one transaction that also records it. The
    version is read again under the write lock before each step, so two processes that
    open an old store at once never run a step twice. A newer store is refused."""

    def version(rows: Sequence[Sequence[object]]) -> int:
        return int(str(rows[0][0])) if rows else 0

    latest = len(migrations)
    sql = "SELECT value FROM meta WHERE key = ?"
    found = version(store.database.query(sql, (key,)))
    if found > latest:
        raise SchemaVersionError(
            f"memory.db has {what} schema {found}; this version supports up to {latest}"
        )
    for target in range(found + 1, latest + 1):
        with store.transaction() as tx:
            if version(tx.query(sql, (key,))) >= target:
                continue  # another process ran this step meanwhile
            step = migrations[target - 1]
            if callable(step):
                step(tx)
            else:
                for stmt in step.split(";\n"):
                    if stmt.strip():
                        tx.execute(stmt)
            tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(target)))


__all__ = ["Step", "migrate_chain"]
