"""Moving the agent memory with the memory store (``migrate.migrate_store``).

The memory rows are copied first, with their ids (``migrate._copy``); then the agent
memory goes through its plain form (``agentmem.transfer``): the source's side reads it
out, the target's side writes it in as its own writes would (sealed and blinded on
PostgreSQL), mapping by memory id (labels differ between stores):

1. every live memory's layer state, page by page in the source's order (its columns,
   entities, access log, and an archived memory's text with its keywords);
2. each scope's facts, procedures, edges, belief history, tombstones, pins, core marks,
   warm summaries and sessions, one transaction a scope;
3. namespaces and grants; then the target's sequences.

Each step is idempotent, so a move interrupted anywhere (kill -9) and run again
finishes with nothing doubled. Rows pointing at a memory that did not move (it expired
before the copy) do not move either.

Refused before anything is written (``refuse``): a store with forgets in its undo area
(``PendingForgetsError``: their payloads are shaped for their own backend's undo) and a
data dir holding skills (they have no PostgreSQL tables, and are not copied).
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from ..agentmem.postgres.transfer import PgLayer
from ..agentmem.sqlite.transfer import SqliteLayer
from ..agentmem.transfer.plain import (
    PAGE,
)
from ..agentmem.transfer.side import (
    LayerTransfer,
)
from ..base.errors import PendingForgetsError, UnsupportedByBackendError
from ..memory.postgres.store import PgMemoryStore
from ..memory.seam import MemoryStore
from ..memory.sqlite.store import SqliteMemoryStore

Advance = Callable[[int], None]


def layer_of(store: MemoryStore) -> LayerTransfer:
    """The agent memory's transfer side of an open store (the backend's own class: the
    one place ``store migrate`` picks by backend, as ``agentmem.backends.side_of`` does);
    ``UnsupportedByBackendError`` for a store of neither backend."""
    if isinstance(store, SqliteMemoryStore):
        return SqliteLayer(store)
    if isinstance(store, PgMemoryStore):
        return PgLayer(store)
    raise UnsupportedByBackendError(f"store migrate does not move a {type(store).__name__}")


def refuse(src: LayerTransfer) -> None:
    """Raise if the source's agent memory holds what cannot move (see the module)."""
    pending = src.pending_forgets()
    if pending:
        n = sum(pending.values())
        where = "; ".join(
            f"org {o!r} agent {_agent(a)}: {c:,}" for (o, a), c in sorted(pending.items())[:5]
        )
        raise PendingForgetsError(
            f"{n:,} forgotten memories are in the undo area ({where}"
            f"{'; ...' if len(pending) > 5 else ''}): a forget keeps what an undo puts "
            "back in its own backend's shape, so the store is not moved while any is pending"
        )
    skills = src.skills()
    if skills:
        raise UnsupportedByBackendError(
            f"this data dir holds {skills:,} skills: skills run on a data dir only and "
            "store migrate does not copy them",
            hint="export them first (agentzero skill export), delete them (agentzero skill "
            "delete), migrate, and import them into a data dir where you need them",
        )


def _agent(agent_id: str) -> str:
    """An agent id for a message: a namespace's or a session's scope id by its name."""
    return repr(agent_id.replace("\x1e", "/"))


def copy_layer(
    src: LayerTransfer,
    dst: LayerTransfer,
    *,
    now_us: int,
    page: int = PAGE,
    advance: Advance | None = None,
) -> dict[str, int]:
    """Copy the agent memory of ``src`` into ``dst`` (whose memory rows were copied
    already); what was written, by kind. ``advance(n)`` after each page of memories."""
    moved: collections.Counter[str] = collections.Counter()
    after = 0
    while rows := src.memories_after(after, page, now_us):
        after = rows[-1][0]
        states = [s for _, s in rows]
        moved["memories"] += dst.put_memories(states)
        moved["archived_texts"] += sum(s.archived is not None for s in states)
        moved["accesses"] += sum(len(s.accesses) for s in states)
        if advance is not None:
            advance(len(rows))
    for org, agent in src.scopes():
        rows_of = src.scope_rows(org, agent, now_us)
        dst.put_scope_rows(rows_of)
        moved.update(rows_of.counts())
    ns = src.namespaces()
    dst.put_namespaces(ns)
    dst.finish()
    moved["namespaces"] += len(ns.namespaces)
    moved["grants"] += len(ns.grants)
    return {k: v for k, v in moved.items() if v}


__all__ = ["copy_layer", "layer_of", "refuse"]
