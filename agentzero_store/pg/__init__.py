"""The memory store on PostgreSQL + pgvector (``PgMemoryStore``): the public API of
``SqliteMemoryStore``, with text and metadata sealed on the client, keyword search over
blinded terms and vectors in pgvector. See ``store`` for what the server sees."""

from .store import PgMemoryStore

__all__ = ["PgMemoryStore"]
