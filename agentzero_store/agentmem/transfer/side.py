"""What each backend's side of a move of the agent memory implements, and what the two
sides share (``transfer`` is the plain form they exchange).

``LayerTransfer``: reading a store's agent memory out in the plain form and writing the
plain form in (``sqlite.transfer.SqliteLayer``, ``postgres.transfer.PgLayer``).
``CLEAR_KINDS``: the kinds of rows both backends store in the clear (ids, numbers,
times, names: nothing to seal or blind), so both read and write them from one
description; their tables are ``am_`` + name on SQLite and ``az_am_`` + name on
PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .plain import (
    CoreState,
    EdgeState,
    MemoryState,
    Namespaces,
    PinState,
    ScopeRows,
    SessionState,
    SourceState,
    TombstoneState,
)

# A table of rows to insert as they are: (its name without the backend's prefix, its
# columns, the rows). ``am_`` + name on SQLite, ``az_am_`` + name on PostgreSQL.
Table = tuple[str, tuple[str, ...], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class ClearKind:
    """A kind of ``ScopeRows`` both backends store in the clear (ids, numbers, times,
    names: nothing to seal or blind), so both read and write it the same way."""

    kind: str  # the ``ScopeRows`` field
    table: str  # without the backend's prefix
    columns: tuple[str, ...]  # as stored, beside the scope's org_id and agent_id
    live: tuple[str, ...]  # columns naming a memory: the row moves only if it did
    read: Callable[[Sequence[Any]], Any]  # stored values -> record
    write: Callable[[Any], tuple[Any, ...]]  # record -> stored values


CLEAR_KINDS = (
    ClearKind(
        "edges",
        "edge",
        ("src", "dst", "type", "confidence", "created_at_us"),
        ("src", "dst"),
        lambda r: EdgeState(str(r[0]), str(r[1]), str(r[2]), float(r[3]), int(r[4])),
        lambda e: (e.src, e.dst, e.type, e.confidence, e.created_at_us),
    ),
    ClearKind(
        # The sequence number is kept, as the history's (``HistoryState``).
        "tombstones",
        "tombstone",
        ("seq", "at_us", "selector", "count", "ids", "derived"),
        (),
        lambda r: TombstoneState(
            int(r[0]),
            int(r[1]),
            str(r[2]),
            int(r[3]),
            tuple(json.loads(r[4])),
            tuple(json.loads(r[5])),
        ),
        lambda t: (
            t.seq,
            t.at_us,
            t.selector,
            t.count,
            json.dumps(list(t.ids)),
            json.dumps(list(t.derived)),
        ),
    ),
    ClearKind(
        "pins",
        "pin",
        ("memory_id", "at_us"),
        ("memory_id",),
        lambda r: PinState(str(r[0]), int(r[1])),
        lambda p: (p.memory_id, p.at_us),
    ),
    ClearKind(
        "cores",
        "core",
        ("memory_id", "since_us", "reason"),
        ("memory_id",),
        lambda r: CoreState(str(r[0]), int(r[1]), str(r[2])),
        lambda c: (c.memory_id, c.since_us, c.reason),
    ),
    ClearKind(
        # Provenance (ids only): it moves when both memories did.
        "sources",
        "source",
        ("memory_id", "source_id"),
        ("memory_id", "source_id"),
        lambda r: SourceState(str(r[0]), str(r[1])),
        lambda x: (x.memory_id, x.source_id),
    ),
    ClearKind(
        "sessions",
        "session",
        ("name", "inherits", "created_at_us"),
        (),
        lambda r: SessionState(str(r[0]), tuple(json.loads(r[1])), int(r[2])),
        lambda x: (x.name, json.dumps(list(x.inherits)), x.created_at_us),
    ),
)


def clear_tables(r: ScopeRows) -> list[Table]:
    """The rows of ``r`` both backends store in the clear (``CLEAR_KINDS``, and the
    summaries' sources), ready to insert; a row already there is skipped."""
    s = (r.org_id, r.agent_id)
    out: list[Table] = [
        (
            k.table,
            ("org_id", "agent_id", *k.columns),
            [(*s, *k.write(x)) for x in getattr(r, k.kind)],
        )
        for k in CLEAR_KINDS
    ]
    out.append(
        (
            "summary_source",
            ("summary_id", "memory_id", "position"),
            [(x.id, mid, i) for x in r.summaries for i, mid in enumerate(x.sources)],
        )
    )
    return out


NAMESPACE_COLUMNS = ("org_id", "name", "owner", "created_at_us")
GRANT_COLUMNS = ("org_id", "namespace", "agent_id", "granted_by", "at_us")


def namespace_tables(ns: Namespaces) -> list[Table]:
    """Namespaces and grants, as ``clear_tables``."""
    return [
        (
            "namespace",
            NAMESPACE_COLUMNS,
            [tuple(getattr(n, c) for c in NAMESPACE_COLUMNS) for n in ns.namespaces],
        ),
        ("grant", GRANT_COLUMNS, [tuple(getattr(g, c) for c in GRANT_COLUMNS) for g in ns.grants]),
    ]


class LayerTransfer(Protocol):
    """One backend's side of a move: reading its agent memory out in the plain form,
    and writing the plain form in as that backend's own writes would. Every write is
    idempotent (a row already there is skipped or set to the same values), so a move
    interrupted at any point and run again finishes with nothing doubled."""

    def present(self) -> bool:
        """Whether this store holds the agent memory's tables at all."""
        ...

    def prepare(self) -> None:
        """Create or upgrade the layer's tables (its schema migrations)."""
        ...

    def pending_forgets(self) -> dict[tuple[str, str], int]:
        """Rows of the undo area, by scope (their payloads cannot move)."""
        ...

    def skills(self) -> int:
        """Skills stored (a data dir's only; they do not move)."""
        ...

    def layer_counts(self, now_us: int) -> dict[tuple[str, str], int]:
        """Live memories with layer state, by (org, agent)."""
        ...

    def memories_after(self, label: int, limit: int, now_us: int) -> list[tuple[int, MemoryState]]:
        """Up to ``limit`` (label, state) of live memories with layer state after
        ``label`` (this store's own labels), in label order."""
        ...

    def memory_states(self, ids: Sequence[str], now_us: int) -> dict[str, MemoryState]:
        """The states of those of ``ids`` that are live memories with layer state."""
        ...

    def scopes(self) -> list[tuple[str, str]]:
        """Every (org, agent) holding rows of ``ScopeRows``."""
        ...

    def scope_rows(self, org_id: str, agent_id: str, now_us: int) -> ScopeRows:
        """One scope's rows, those pointing at a memory that is not live left out."""
        ...

    def namespaces(self) -> Namespaces:
        """Every namespace and grant."""
        ...

    def put_memories(self, states: Sequence[MemoryState]) -> int:
        """Write the states of memories this store holds (the others are skipped: they
        did not move); how many were written. One transaction."""
        ...

    def put_scope_rows(self, rows: ScopeRows) -> int:
        """Write one scope's rows, those pointing at a memory this store does not hold
        left out; how many rows. One transaction."""
        ...

    def put_namespaces(self, ns: Namespaces) -> None:
        """Write namespaces and grants. One transaction."""
        ...

    def finish(self) -> None:
        """After every put: what the backend must do once (its sequences)."""
        ...

    def close(self) -> None:
        """Close what this side opened (a data dir's archive file); not the store."""
        ...


__all__ = [
    "CLEAR_KINDS",
    "GRANT_COLUMNS",
    "NAMESPACE_COLUMNS",
    "ClearKind",
    "LayerTransfer",
    "Table",
    "clear_tables",
    "namespace_tables",
]
