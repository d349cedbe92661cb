"""Choosing a memory store backend from where it lives (``memory.choose``, re-exported for
the surfaces that import it from here)."""

from __future__ import annotations

from ..memory.choose import PG_SCHEMES, is_postgres_url, open_memory_store

__all__ = ["PG_SCHEMES", "is_postgres_url", "open_memory_store"]
