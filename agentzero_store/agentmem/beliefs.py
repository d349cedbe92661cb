"""What the memory believes: facts that supersede (bi-temporal, closed, never deleted),
their append-only history, procedures with a Beta reliability, and typed edges between
memories, decayed by age. Each change is one transaction, decided under the write lock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..base.errors import InvalidArgumentError, NotFoundError
from ..base.limits import check_limit, check_optional_time, check_text
from ..base.modes import Mode
from ..memory.records import from_us, to_us
from .decay import DAY_US
from .extract.runner import check_sources
from .parts import Parts
from .reads import Reads
from .recall.search import Recaller
from .records import EDGE_TYPES, Edge, Fact, HistoryEntry, Procedure, WriteResult, entity_key
from .writes import FACT_CONVERSATION, Writes, unit

if TYPE_CHECKING:
    from .seam import LayerTx, PreparedRows


def same_fact(current: Sequence[Fact], object_key: str, confidence: float) -> WriteResult | None:
    """The result of re-asserting a fact already believed: a duplicate, or an update of
    its confidence; None if ``object_key`` is not among ``current``."""
    for f in current:
        if entity_key(f.object) == object_key:
            status = "duplicate" if math.isclose(f.confidence, confidence) else "updated"
            return WriteResult(f.id, status)  # type: ignore[arg-type]
    return None


class Beliefs:
    """Facts, procedures, history and edges of one agent memory's scope."""

    def __init__(self, parts: Parts, writes: Writes, reads: Reads, recaller: Recaller) -> None:
        self._p = parts
        self._w = writes
        self._reads = reads
        self._recaller = recaller

    # ------------------------------------------------------------------ facts
    def assert_fact(
        self,
        subject: str,
        predicate: str,
        object_: str,
        *,
        confidence: float,
        single_valued: bool,
        valid_from: datetime | None,
        vector: Any,
        core: bool,
        sources: Sequence[str],
    ) -> WriteResult:
        """``AgentMemory.assert_fact``."""
        triple = (subject, predicate, object_)
        sources = check_sources(sources)
        result = self._assert(triple, confidence, single_valued, valid_from, vector, sources)
        if core:
            self._p.repo.set_core([result.id], self._p.now_us(), "asserted")
        return result

    def _assert(
        self,
        parts: tuple[str, str, str],
        confidence: float,
        single_valued: bool,
        valid_from: datetime | None,
        vector: Any,
        sources: Sequence[str],
    ) -> WriteResult:
        p = self._p
        subject, predicate, object_ = parts
        keys = (entity_key(subject), entity_key(predicate), entity_key(object_))
        confidence = unit("confidence", confidence)
        now_us = p.now_us()
        repo = p.repo
        same = same_fact(self._held(repo.current_facts(keys[0], keys[1])), keys[2], confidence)
        if same is not None and same.status == "duplicate":
            return same  # before embedding: the common re-assert costs two reads
        text = f"{subject} {predicate.replace('_', ' ')} {object_}"
        start = check_optional_time("valid_from", valid_from) or p.now()
        entry = self._w.entry(
            text, role="fact", conversation_id=FACT_CONVERSATION, created_at=start, vector=vector
        )
        meta = self._w.new("semantic", confidence=confidence, about=(subject, object_))
        prepared = p.store.prepare([entry], None if vector is None else [vector])
        fid = prepared.ids[0]
        with repo.transaction() as tx:
            # Decided under the write lock: another writer may have changed the facts.
            current = self._held(repo.current_facts(keys[0], keys[1], tx), tx)
            same = same_fact(current, keys[2], confidence)
            if same is not None:
                if same.status == "updated":
                    old = next(f for f in current if f.id == same.id)
                    repo.set_confidence(tx, old.id, confidence)
                    repo.append_history(
                        tx,
                        now_us,
                        [("confidence", old.id, {"from": old.confidence, "to": confidence})],
                    )
                return same
            closed = [f.id for f in current] if single_valued else []
            repo.insert(tx, prepared, [meta])
            repo.insert_fact(tx, fid, parts, keys, confidence, single_valued, to_us(start))
            if sources:
                repo.add_sources(tx, fid, sources)
            history: list[tuple[str, str, dict[str, Any]]] = [
                (
                    "assert",
                    fid,
                    {
                        "subject": subject,
                        "predicate": predicate,
                        "object": object_,
                        "confidence": confidence,
                        **({"sources": list(sources)} if sources else {}),
                    },
                )
            ]
            for old_id in closed:
                repo.close_fact(tx, old_id, to_us(start), fid)
                history.append(("supersede", old_id, {"by": fid}))
            repo.add_edges(tx, [(fid, o, "supersedes", 1.0) for o in closed], now_us)
            repo.append_history(tx, now_us, history)
        return WriteResult(fid, "created", tuple(closed))

    def retract(self, fact_id: str) -> Fact:
        """``AgentMemory.retract``."""
        repo = self._p.repo
        f = repo.fact(check_text("fact id", fact_id))
        if f is None:
            raise NotFoundError(f"no fact {fact_id!r} in this scope")
        if f.current:
            now_us = self._p.now_us()
            with repo.transaction() as tx:
                repo.close_fact(tx, f.id, now_us, None)
                repo.append_history(tx, now_us, [("retract", f.id, {})])
        out = repo.fact(f.id)
        assert out is not None
        return out

    def facts(
        self,
        subject: str | None,
        predicate: str | None,
        as_of: datetime | None,
        history: bool,
    ) -> list[Fact]:
        """``AgentMemory.facts``."""
        as_of = check_optional_time("as_of", as_of)
        return self._held(
            self._p.repo.facts(
                entity_key(subject) if subject is not None else None,
                entity_key(predicate) if predicate is not None else None,
                to_us(as_of) if as_of is not None else None,
                history,
            )
        )

    def _held(self, facts: list[Fact], tx: LayerTx | None = None) -> list[Fact]:
        """Those of ``facts`` whose memory still exists. A delete through the memory
        store (``agentzero memory delete``) takes the memory row and leaves the fact's
        rows until consolidation drops them: meanwhile no listing shows such a fact, and
        asserting it again stores it again instead of answering "duplicate" with the id
        of a memory that is gone."""
        if not facts:
            return facts
        live = {i for i, _ in self._p.repo.live_of([f.id for f in facts], tx)}
        return [f for f in facts if f.id in live]

    def history(self, target: str | None, limit: int) -> list[HistoryEntry]:
        """``AgentMemory.history``."""
        return self._p.repo.history(target, check_limit(limit))

    # ------------------------------------------------------------------ procedures
    def record_outcome(
        self, action: str, success: bool, context: str | None, vector: Any
    ) -> Procedure:
        """``AgentMemory.record_outcome``."""
        if not isinstance(success, bool):
            raise InvalidArgumentError("success must be True or False")
        keys = (entity_key(action), entity_key(context) if context else "")
        now_us = self._p.now_us()
        text = action if not context else f"{action} (context: {context})"

        def prepare() -> PreparedRows:
            entry = self._w.entry(
                text, role="procedure", conversation_id=FACT_CONVERSATION, vector=vector
            )
            return self._p.store.prepare([entry], None if vector is None else [vector])

        repo = self._p.repo
        # A new action's text is embedded before the write lock is taken.
        prepared = prepare() if repo.procedure_by_key(*keys) is None else None
        with repo.transaction() as tx:
            found = repo.procedure_by_key(*keys, tx)  # under the write lock
            if found is not None and not repo.live_of([found.id], tx):
                # Its memory was deleted through the memory store (``agentzero memory
                # delete``), which leaves the layer's rows until consolidation. Counting
                # on them would acknowledge an outcome under an id no read finds: they go
                # now, and the action is recorded anew.
                repo.drop(tx, [(found.id, -1)])
                found = None
            if found is not None:
                repo.count_outcome(tx, found.id, success, now_us)
            else:  # new, or forgotten since the first look (rare: embedded under the lock)
                prepared = prepared or prepare()
                repo.insert(tx, prepared, [self._w.new("procedural")])
                repo.insert_procedure(tx, prepared.ids[0], action, context, keys, success, now_us)
        out = repo.procedure_by_key(*keys)
        assert out is not None
        return out

    def best_procedures(self, query: str, k: int, mode: Mode | None) -> list[Procedure]:
        """``AgentMemory.best_procedures``: relevance times reliability."""
        k = check_limit(k, "k")
        hits = self._recaller.recall(
            query,
            max(4 * k, 20),
            mode=mode,
            types=("procedural",),
            about=None,
            as_of=None,
            include_archived=False,
            explain=False,
            weights=None,
        )
        procs = self._p.repo.procedures([h.id for h in hits])
        top = hits[0].score if hits else 1.0
        scored = [
            (h.score / top * procs[h.id].reliability, i, procs[h.id])
            for i, h in enumerate(hits)
            if h.id in procs
        ]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [p for _, _, p in scored[:k]]

    # ------------------------------------------------------------------ edges
    def link(self, src: str, dst: str, type_: str, confidence: float) -> None:
        """``AgentMemory.link``."""
        if type_ not in EDGE_TYPES:
            raise InvalidArgumentError(f"edge type must be one of {', '.join(EDGE_TYPES)}")
        a, b = self._reads.require(src), self._reads.require(dst)
        repo = self._p.repo
        with repo.transaction() as tx:
            repo.add_edges(
                tx, [(a.id, b.id, type_, unit("confidence", confidence))], self._p.now_us()
            )

    def edges(self, memory_id: str, at: datetime | None) -> list[Edge]:
        """``AgentMemory.edges``: stored, entity and temporal edges, decayed to ``at``."""
        m = self._reads.require(memory_id)
        at = check_optional_time("at", at) or self._p.now()
        repo = self._p.repo
        out = [self._edge(s, d, t, c, created, at) for s, d, t, c, created in repo.edges(m.id)]
        out += [
            self._edge(m.id, f"entity:{e}", "entity", 1.0, to_us(m.created_at), at) for e in m.about
        ]
        out += [
            self._edge(m.id, other, "temporal", 1.0, max(to_us(m.created_at), t), at)
            for other, t in repo.neighbours_in_conversation(m.id)
        ]
        return out

    def _edge(self, s: str, d: str, t: str, c: float, created_us: int, at: datetime) -> Edge:
        half_life = float(getattr(self._p.config, f"half_life_{t}_days"))
        age = max(0.0, (to_us(at) - created_us) / DAY_US)
        decayed = c * 0.5 ** (age / half_life) if half_life > 0 else c
        return Edge(s, d, t, decayed, from_us(created_us))  # type: ignore[arg-type]
