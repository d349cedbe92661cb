"""SQL helpers shared by the memory store's write, recall and feed paths.

One place builds scope conditions and turns rows into records, so every path applies
scope and expiry the same way (the database is the authority on both).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from ..base.limits import check_limit
from .records import MemoryEntry, Scope, from_us

COLUMNS = (
    "label, id, role, content, created_at_us, conversation_id, org_id, agent_id, "
    "expires_at_us, kind, source, metadata, embedding_model"
)
"""The columns ``row_to_entry`` reads, in its order (label first)."""

SCOPE_FIELDS = ("org_id", "agent_id", "conversation_id")


_ENTRY_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryEntry))


def row_to_entry(row: Sequence[Any]) -> MemoryEntry:
    """A ``MemoryEntry`` from a row of ``COLUMNS``.

    Every row was validated by ``MemoryEntry.__post_init__`` when it was appended, so
    the read path does not validate it again (it cost ~10 µs a row: a tenth of a 1 ms
    recall at k=10). The field set is checked, so a new field cannot be left unset.
    """
    values = {
        "id": row[1],
        "role": row[2],
        "content": row[3],
        "created_at": from_us(row[4], row[1]),
        "conversation_id": row[5],
        "org_id": row[6],
        "agent_id": row[7],
        "expires_at": from_us(row[8], row[1]) if row[8] is not None else None,
        "kind": row[9],
        "source": row[10],
        "embedding_model": row[12],
        # Most rows carry no metadata: skip the JSON parser for the common "{}".
        "metadata": {} if row[11] == "{}" else json.loads(row[11]),
    }
    entry = object.__new__(MemoryEntry)
    for name, value in values.items():
        object.__setattr__(entry, name, value)  # frozen dataclass: the only way in
    return entry


if (
    set(
        _ROW_FIELDS := (
            "id",
            "role",
            "content",
            "created_at",
            "conversation_id",
            "org_id",
            "agent_id",
            "expires_at",
            "kind",
            "source",
            "embedding_model",
            "metadata",
        )
    )
    != _ENTRY_FIELDS
):  # pragma: no cover - caught by any test
    raise ImportError("rows.row_to_entry does not set every MemoryEntry field")


def positive(n: int) -> int:
    """``n`` if it is an int in 1..``MAX_RESULTS`` (not a bool), else ``InvalidArgumentError``.

    Capped because the limit sizes allocations (numpy, hnswlib) and SQLite binds it as a
    64-bit integer: an uncapped one ended in an OverflowError or an abort.
    """
    return check_limit(n, "limit / k")


def scope_where(scope: Scope, now_us: int | None, alias: str = "") -> tuple[str, list[Any]]:
    """SQL condition for scope (exact match on each given field) and, with ``now_us``, expiry."""
    clauses, params = [], []
    for name in SCOPE_FIELDS:
        value = getattr(scope, name)
        if value is not None:
            clauses.append(f"{alias}{name} = ?")
            params.append(value)
    if now_us is not None:
        clauses.append(f"({alias}expires_at_us IS NULL OR {alias}expires_at_us > ?)")
        params.append(now_us)
    return (" AND ".join(clauses) or "1"), params


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


__all__ = [
    "COLUMNS",
    "SCOPE_FIELDS",
    "placeholders",
    "positive",
    "row_to_entry",
    "rows_after",
    "scope_where",
]
