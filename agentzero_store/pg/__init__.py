"""The public name of the PostgreSQL memory store (``from agentzero_store.pg import
PgMemoryStore``); the backend itself is ``agentzero_store.memory.postgres``."""

from ..memory.postgres.store import PgMemoryStore

__all__ = ["PgMemoryStore"]
