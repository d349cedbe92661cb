"""Checking a migrated agent memory against its source (``migrate_layer.copy_layer``):
``migrate_check``'s checks of the memory rows, extended to the layer above them.

Four checks, each raising ``MigrationMismatchError`` naming what differs (scopes, kinds,
fields and ids; never a memory's text):

1. **Counts**: every (org, agent) scope holds as many memories with layer state.
2. **Every memory's state**, read out of both sides in the plain form
   (``agentmem.transfer``): its layer columns, speaker, entities, access log and, if
   archived, its text (read back from the target's archive and checked against the
   digest the target recorded).
3. **Every other row**, scope by scope: facts (current and history, as plain tuples),
   procedures, edges, the belief history with its sequence numbers, tombstones, pins,
   core marks, warm summaries, sessions; and every namespace and grant.
4. **Reads through ``AgentMemory``** on both sides: a sample of memories spread over the
   store (archived ones among them) must ``get`` the same, and for a rare word of each,
   keyword ``recall`` (archived memories included) must find the same memories holding
   that word (not their order: SQLite ranks with FTS5's porter stemmer, PostgreSQL with
   blinded Snowball terms); ``facts()`` and ``facts(history=True)`` of every scope with
   facts must be equal.

Nothing here writes: ``AgentMemory`` handles are made over the open stores without
adoption, and recall runs with ``log=False``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..agentmem.memory import AgentMemory
from ..agentmem.transfer.plain import (
    PAGE,
    MemoryState,
    ScopeRows,
    differing,
)
from ..agentmem.transfer.side import (
    LayerTransfer,
)
from ..base.errors import MigrationMismatchError
from ..memory.choose import as_backend
from ..memory.seam import MemoryStore
from .migrate_check import KEYWORD_K, query_words

Store = MemoryStore


def check_layer(
    src: Store,
    dst: Store,
    src_layer: LayerTransfer,
    dst_layer: LayerTransfer,
    *,
    now_us: int,
    sample: int,
) -> dict[str, int]:
    """Run the four checks; how much was compared."""
    _check_counts(src_layer, dst_layer, now_us)
    compared, picked = _check_states(src_layer, dst_layer, now_us, sample)
    rows, fact_scopes = _check_scope_rows(src_layer, dst_layer, now_us)
    if src_layer.namespaces() != dst_layer.namespaces():
        raise MigrationMismatchError("the agent memory's namespaces or grants differ")
    queries = 0
    common: set[tuple[str, str, str]] = set()
    with _handles(src) as mine, _handles(dst) as theirs:
        for s in picked:
            scope = (s.org_id, s.agent_id)
            queries += _check_reads(mine(scope), theirs(scope), s, common)
        for scope in fact_scopes:
            a, b = mine(scope), theirs(scope)
            for history in (False, True):
                if a.facts(history=history) != b.facts(history=history):
                    raise MigrationMismatchError(
                        f"facts({'history=True' if history else ''}) of {_scope(scope)} "
                        "answer differently on the two sides"
                    )
    return {
        "agent_memories": compared,
        "agent_memory_rows": rows,
        "agent_memory_reads": len(picked),
        "agent_memory_queries": queries,
    }


def _scope(scope: tuple[str, str]) -> str:
    return f"org {scope[0]!r} agent {scope[1].replace(chr(0x1E), '/')!r}"


def _ids(ids: Sequence[str]) -> str:
    return f"{', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''}"


def _check_counts(src: LayerTransfer, dst: LayerTransfer, now_us: int) -> None:
    a, b = src.layer_counts(now_us), dst.layer_counts(now_us)
    wrong = [
        (s, a.get(s, 0), b.get(s, 0)) for s in sorted(a.keys() | b.keys()) if a.get(s) != b.get(s)
    ]
    if wrong:
        shown = "; ".join(f"{_scope(s)}: {x} vs {y}" for s, x, y in wrong[:5])
        raise MigrationMismatchError(
            f"{len(wrong)} scope(s) hold different numbers of agent memories (source vs "
            f"target): {shown}"
        )


def _check_states(
    src: LayerTransfer, dst: LayerTransfer, now_us: int, sample: int
) -> tuple[int, list[MemoryState]]:
    """Compare every memory's state; how many, and ``sample`` of them spread over the
    store (every archived one seen first, up to a third of the sample)."""
    total = sum(src.layer_counts(now_us).values())
    step = max(1, total // sample) if sample else 0
    picked: list[MemoryState] = []
    archived: list[MemoryState] = []
    wrong: dict[str, list[str]] = {}
    compared = after = 0
    while rows := src.memories_after(after, PAGE, now_us):
        after = rows[-1][0]
        theirs = dst.memory_states([s.id for _, s in rows], now_us)
        for _, s in rows:
            t = theirs.get(s.id)
            for name in ["missing from the target"] if t is None else differing(s, t):
                wrong.setdefault(name, []).append(s.id)
            if step and compared % step == 0 and len(picked) < sample:
                picked.append(s)
            elif s.archived is not None and len(archived) < max(1, sample // 3):
                archived.append(s)
            compared += 1
    if wrong:
        raise MigrationMismatchError(
            "the agent memory's state of memories differs: "
            + "; ".join(
                f"{len(ids)} {what} (ids {_ids(ids)})" for what, ids in sorted(wrong.items())
            )
        )
    chosen = (archived + picked)[:sample] if sample else []
    return compared, chosen


def _check_scope_rows(
    src: LayerTransfer, dst: LayerTransfer, now_us: int
) -> tuple[int, list[tuple[str, str]]]:
    """Compare every scope's rows; how many rows, and the scopes holding facts."""
    problems: list[str] = []
    rows = 0
    with_facts = []
    for scope in sorted(set(src.scopes()) | set(dst.scopes())):
        a, b = src.scope_rows(*scope, now_us), dst.scope_rows(*scope, now_us)
        rows += sum(a.counts().values())
        if a.facts:
            with_facts.append(scope)
        for kind in ScopeRows.KINDS:
            x, y = getattr(a, kind), getattr(b, kind)
            if x != y:
                ids = sorted({_key(r) for r in set(x) ^ set(y)})
                problems.append(f"{_scope(scope)}: {kind} {len(x)} vs {len(y)} ({_ids(ids)})")
    if problems:
        raise MigrationMismatchError(
            f"the agent memory's rows differ (source vs target): {'; '.join(problems[:5])}"
            f"{'; ...' if len(problems) > 5 else ''}"
        )
    return rows, with_facts


def _key(row: Any) -> str:
    """What names a row in a message (its id, memory, sequence number or name)."""
    for name in ("id", "memory_id", "seq", "src", "name"):
        if hasattr(row, name):
            return str(getattr(row, name))
    return "?"


@contextlib.contextmanager
def _handles(store: Store) -> Iterator[Any]:
    """A maker of ``AgentMemory`` handles over ``store`` by scope (no adoption, no
    writes), closed at the end (the store stays open)."""
    made: dict[tuple[str, str], AgentMemory] = {}

    def handle(scope: tuple[str, str]) -> AgentMemory:
        if scope not in made:
            made[scope] = AgentMemory(as_backend(store), *scope, own_store=False)
        return made[scope]

    try:
        yield handle
    finally:
        for m in made.values():
            m.close()


def _check_reads(
    a: AgentMemory, b: AgentMemory, s: MemoryState, common: set[tuple[str, str, str]]
) -> int:
    """``get`` of ``s`` on both sides, and the keyword query of a rare word of it (1),
    or none if it has none (0). ``common``: (org, agent, word) found too common."""
    x, y = a.get(s.id), b.get(s.id)
    if x is None or y is None or x != y:
        what = "missing" if x is None or y is None else ", ".join(differing(x, y))
        raise MigrationMismatchError(
            f"memory {s.id!r} ({_scope((s.org_id, s.agent_id))}) reads differently through "
            f"AgentMemory.get on the two sides: {what}"
        )
    for word, exact in query_words(x.content):
        if (s.org_id, s.agent_id, word.casefold()) in common:
            continue
        kw: dict[str, Any] = {"mode": "keyword", "include_archived": True, "log": False}
        ha, hb = a.recall(word, KEYWORD_K, **kw), b.recall(word, KEYWORD_K, **kw)
        if len(ha) >= KEYWORD_K or len(hb) >= KEYWORD_K:
            common.add((s.org_id, s.agent_id, word.casefold()))
            continue  # too common to see every hit: try a rarer word
        found_a = {h.id for h in ha if exact.search(h.memory.content)}
        found_b = {h.id for h in hb if exact.search(h.memory.content)}
        if found_a != found_b:
            raise MigrationMismatchError(
                f"AgentMemory.recall (keyword) for a word of memory {s.id!r} "
                f"({_scope((s.org_id, s.agent_id))}) finds different memories holding it: "
                f"source {sorted(found_a)}, target {sorted(found_b)}"
            )
        return 1
    return 0


__all__ = ["check_layer"]
