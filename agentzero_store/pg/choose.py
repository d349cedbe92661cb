"""Choosing a memory store backend from where it lives: a data dir or a PostgreSQL URL.

In ``pg/`` because it composes both stores (the SQLite store never imports this one),
so every layer above (the agent memory, ops, the CLI) chooses the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..memory.store import SqliteMemoryStore
from .store import PgMemoryStore

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


__all__ = ["PG_SCHEMES", "is_postgres_url", "open_memory_store"]
