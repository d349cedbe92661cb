"""Reading a whole PostgreSQL memory store, page by page: its live rows with their
vectors in the order they were stored, and its scopes with their counts (for moving a
store between backends and checking the copy, ``ops.migrate``)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from .rows import COLUMNS

LIVE = "(expires_at_us IS NULL OR expires_at_us > %s)"


def rows_after(c: Any, label: int, limit: int, now_us: int) -> list[Any]:
    """Up to ``limit`` live rows with a label above ``label``, by label: the columns of
    ``rows.COLUMNS`` and then the vector in pgvector's text form (or None)."""
    rows: list[Any] = c.execute(
        f"SELECT {COLUMNS}, embedding::text FROM az_memory"
        f" WHERE label > %s AND {LIVE} ORDER BY label LIMIT %s",
        (label, now_us, limit),
    ).fetchall()
    return rows


def vector(text: str | None) -> npt.NDArray[np.float32] | None:
    """A vector from pgvector's text form (``[x,y,...]``, valid JSON), as float32."""
    return None if text is None else np.asarray(json.loads(text), dtype=np.float32)


def scopes(c: Any, now_us: int) -> list[tuple[str, str, int]]:
    """Every (org_id, agent_id) holding live rows, with how many, in order."""
    rows = c.execute(
        f"SELECT org_id, agent_id, count(*) FROM az_memory WHERE {LIVE}"
        ' GROUP BY org_id, agent_id ORDER BY org_id COLLATE "C", agent_id COLLATE "C"',
        (now_us,),
    ).fetchall()
    return [(str(o), str(a), int(n)) for o, a, n in rows]


__all__ = ["rows_after", "scopes", "vector"]
