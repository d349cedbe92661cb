"""Choosing a memory store backend from where it lives: a data dir or a PostgreSQL URL.

In ``pg/`` because it composes both stores (the SQLite store never imports this one),
so every layer above (the agent memory, ops, the CLI) chooses the same way. It is also
where mypy checks each backend against the memory store's seam (``memory/seam.py``):
every Protocol of ``MemoryStore``, and each capability the backend declares.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..memory.store import SqliteMemoryStore
from .store import PgMemoryStore

if TYPE_CHECKING:
    from ..memory.seam import BulkLoadStore, DataDirStore, MemoryStore, SidecarStore

PG_SCHEMES = ("postgresql://", "postgres://")

# The concrete backends, for the code that must hand a store to a layer still typed by
# them (the agent memory's ``AgentMemory`` and transfer sides). Everything else holds a
# ``memory.seam.MemoryStore``.
Backend = SqliteMemoryStore | PgMemoryStore


def is_postgres_url(target: Path | str) -> bool:
    """True if ``target`` is a PostgreSQL URL (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and target.lower().startswith(PG_SCHEMES)


def open_memory_store(target: Path | str, **kw: Any) -> Backend:
    """Open the memory store at ``target``: a ``PgMemoryStore`` for a PostgreSQL URL, a
    ``SqliteMemoryStore`` for a data dir. ``kw`` goes to that store's ``open`` (the same
    names for both: passphrase, key, key_file, embedder, create, config, clock, ...)."""
    if is_postgres_url(target):
        assert isinstance(target, str)
        return PgMemoryStore.open(target, **kw)
    return SqliteMemoryStore.open(target, **kw)


if TYPE_CHECKING:
    # Each backend against the seam, checked by mypy on every `make lint`: a method
    # missing or a signature drifting fails here, not in a caller.
    def _seam(sqlite: SqliteMemoryStore, pg: PgMemoryStore) -> None:
        both: list[MemoryStore] = [sqlite, pg]
        data_dir: DataDirStore = sqlite
        sidecars: SidecarStore = sqlite
        bulk: BulkLoadStore = pg
        del both, data_dir, sidecars, bulk


__all__ = ["PG_SCHEMES", "Backend", "is_postgres_url", "open_memory_store"]
