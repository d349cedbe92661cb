"""SQL helpers shared by the SQLite backend's write, recall and feed paths.

One place builds scope conditions (``?`` placeholders) and names the columns a row is
read with, so every path applies scope and expiry the same way (the database is the
authority on both).
"""

from __future__ import annotations

from typing import Any

from ..records import Scope
from ..rows import scope_condition

COLUMNS = (
    "label, id, role, content, created_at_us, conversation_id, org_id, agent_id, "
    "expires_at_us, kind, source, metadata, embedding_model"
)
"""The columns ``rows.row_to_entry`` reads, in its order (label first)."""


def scope_where(scope: Scope, now_us: int | None, alias: str = "") -> tuple[str, list[Any]]:
    """SQL condition for scope (exact match on each given field) and, with ``now_us``, expiry."""
    return scope_condition(scope, now_us, alias=alias, mark="?", always="1")


def rows_after(db: Any, label: int, limit: int, now_us: int) -> list[Any]:
    """Up to ``limit`` live rows with a label above ``label``, by label: the columns of
    ``COLUMNS`` and then the vector's float32 bytes (or None). ``db`` is a ``Database``."""
    cols = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
    rows: list[Any] = db.query(
        f"SELECT {cols}, v.embedding FROM memory m LEFT JOIN memory_vec v ON v.label = m.label"
        " WHERE m.label > ? AND (m.expires_at_us IS NULL OR m.expires_at_us > ?)"
        " ORDER BY m.label LIMIT ?",
        (label, now_us, limit),
    )
    return rows


def placeholders(n: int) -> str:
    """``?,?,...`` for an ``IN (...)`` list of ``n`` values."""
    return ",".join("?" * n)


__all__ = ["COLUMNS", "placeholders", "rows_after", "scope_where"]
