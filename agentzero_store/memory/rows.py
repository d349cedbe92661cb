"""Rows into records, for both backends: the one place a memory row (the columns of a
backend's ``COLUMNS``, label first) becomes a ``MemoryEntry``; the scope condition in
SQL; the check of a result count.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from ..base.limits import check_limit
from .records import MemoryEntry, Scope, from_us

SCOPE_FIELDS = ("org_id", "agent_id", "conversation_id")


_ENTRY_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryEntry))


def row_to_entry(row: Sequence[Any]) -> MemoryEntry:
    """A ``MemoryEntry`` from a row of ``sqlite.rows.COLUMNS`` (PostgreSQL opens its sealed
    row into the same order).

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


def scope_condition(
    scope: Scope, now_us: int | None, *, alias: str, mark: str, always: str
) -> tuple[str, list[Any]]:
    """SQL condition for ``scope`` (exact match on each given field) and, with ``now_us``,
    expiry, with its parameters: every backend's one scope filter. ``mark`` is the
    driver's placeholder (``?``, ``%s``), ``always`` its true (for an empty scope)."""
    clauses, params = [], []
    for name in SCOPE_FIELDS:
        value = getattr(scope, name)
        if value is not None:
            clauses.append(f"{alias}{name} = {mark}")
            params.append(value)
    if now_us is not None:
        clauses.append(f"({alias}expires_at_us IS NULL OR {alias}expires_at_us > {mark})")
        params.append(now_us)
    return (" AND ".join(clauses) or always), params


__all__ = ["SCOPE_FIELDS", "positive", "row_to_entry", "scope_condition"]
