"""Choosing a memory store backend from where it lives: a data dir or a PostgreSQL URL.

The one module of the memory store above both backends (``sqlite/``, ``postgres/``;
neither imports the other, nor does the shared part), so every layer above (the agent
memory, ops, the CLI) chooses the same way. It is also where mypy checks each backend
against the memory store's seam (``seam.py``): every Protocol of ``MemoryStore``, and
each capability the backend declares.

Code above holds a ``seam.MemoryStore``. The two functions here still return the
backend's own class, for one reader: the agent memory (``AgentMemory``, its transfer
sides) is typed by the backends' classes until its own seam takes a ``MemoryStore``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import UnsupportedByBackendError
from .postgres.store import PgMemoryStore
from .sqlite.store import SqliteMemoryStore

if TYPE_CHECKING:
    from .seam import BulkLoadStore, DataDirStore, MemoryStore, SidecarStore

PG_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: Path | str) -> bool:
    """True if ``target`` is a PostgreSQL URL (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and target.lower().startswith(PG_SCHEMES)


def open_memory_store(target: Path | str, **kw: Any) -> SqliteMemoryStore | PgMemoryStore:
    """Open the memory store at ``target``: a ``PgMemoryStore`` for a PostgreSQL URL, a
    ``SqliteMemoryStore`` for a data dir. ``kw`` goes to that store's ``open`` (the same
    names for both: passphrase, key, key_file, embedder, create, config, clock, ...)."""
    if is_postgres_url(target):
        assert isinstance(target, str)
        return PgMemoryStore.open(target, **kw)
    return SqliteMemoryStore.open(target, **kw)


def as_backend(store: MemoryStore) -> SqliteMemoryStore | PgMemoryStore:
    """``store`` as the backend class it is, for the agent memory (see the module);
    ``UnsupportedByBackendError`` for a store of neither."""
    if isinstance(store, SqliteMemoryStore | PgMemoryStore):
        return store
    raise UnsupportedByBackendError(
        f"the agent memory does not run on a {type(store).__name__}",
        hint="open the store with agentzero_store.open_memory_store (a data dir or a "
        "PostgreSQL URL)",
    )


if TYPE_CHECKING:
    # Each backend against the seam, checked by mypy on every `make lint`: a method
    # missing or a signature drifting fails here, not in a caller.
    def _seam(sqlite: SqliteMemoryStore, pg: PgMemoryStore) -> None:
        both: list[MemoryStore] = [sqlite, pg]
        data_dir: DataDirStore = sqlite
        sidecars: SidecarStore = sqlite
        bulk: BulkLoadStore = pg
        del both, data_dir, sidecars, bulk


__all__ = ["PG_SCHEMES", "as_backend", "is_postgres_url", "open_memory_store"]
