"""Recall of the agent memory: semantic and keyword candidates, filtered by type,
entity, time and archive state, fused with RRF (part 2 replaces the ranking behind the
same call).

Candidates come from the memory store's indexes (HNSW, FTS5) over the agent's scope; the
repository decides which qualify (the database is the authority on scope, expiry and
filters). When a filter leaves too few of the index's candidates, exact search over the
qualifying rows decides instead, so a narrow filter never starves the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import InvalidArgumentError
from ..base.limits import check_limit, check_text
from ..base.ranking import exact_top_k, rrf_fuse
from ..embed.vectors import as_vector
from ..memory.records import Scope, to_us
from . import signals as sig
from .records import Memory, RecallHit, entity_key
from .repository import Filter
from .signals import final_k

if TYPE_CHECKING:
    from .parts import Parts
    from .repository import Row

Hydrate = Callable[[Sequence["Row"]], list[Memory]]

MODES = ("auto", "semantic", "keyword", "hybrid")


class Recaller:
    """Recall for one agent memory; ``hydrate`` reads archived text back."""

    def __init__(self, parts: Parts, hydrate: Hydrate) -> None:
        self._mem = parts
        self._hydrate = hydrate

    def recall(
        self,
        query: str,
        k: int,
        *,
        mode: str | None,
        types: tuple[str, ...] | None,
        about: Sequence[str] | None,
        as_of: datetime | None,
        include_archived: bool,
        explain: bool = False,
    ) -> list[RecallHit]:
        """See ``AgentMemory.recall``."""
        mem = self._mem
        k = check_limit(k, "k")
        check_text("query", query)
        if mode is None:
            mode = "auto" if mem.store.embedder is not None else "keyword"
        if mode not in MODES:
            raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        f = Filter(
            now_us=mem.now_us(),
            types=types,
            about=tuple(entity_key(a) for a in about) if about is not None else None,
            as_of_us=to_us(as_of) if as_of is not None else None,
            include_archived=bool(include_archived),
        )
        cfg = mem.config
        pool = (
            max(k, cfg.recall_pool) if mode == "auto" else max(k * cfg.hybrid_candidates_factor, 20)
        )
        signals: dict[str, Sequence[int]] = {}
        if mode in ("semantic", "hybrid", "auto"):
            signals["semantic"] = self._semantic(query, k, pool, f)
        if mode in ("keyword", "hybrid", "auto"):
            signals["keyword"] = mem.repo.keyword(query, pool, f, need=k)
        weights = {"semantic": cfg.weight_semantic, "keyword": cfg.weight_keyword}
        rrf_k = cfg.recall_seed_k
        if mode == "auto":
            signals = self._signals(query, signals, f)
            weights = {name: float(getattr(cfg, f"weight_{name}")) for name in signals}
            rrf_k = final_k(cfg.recall_rrf_k, len({x for r in signals.values() for x in r}))
        elif mode != "hybrid":
            weights = {name: 1.0 for name in signals}
        labels = list(dict.fromkeys(lab for ranked in signals.values() for lab in ranked))
        fps = mem.repo.fingerprints(labels)
        fused = rrf_fuse(signals, k=rrf_k, limit=k, fingerprint=fps.__getitem__, weights=weights)
        rows = mem.repo.rows([x.key for x in fused], f)
        kept = [(rows[x.key], x) for x in fused if x.key in rows]
        memories = self._hydrate([r for r, _ in kept])
        return [
            RecallHit(
                m,
                x.score,
                dict(x.ranks),
                {
                    name: {"rank": r, "weight": weights[name], "score": weights[name] / (rrf_k + r)}
                    for name, r in x.ranks.items()
                }
                if explain
                else None,
            )
            for m, (_, x) in zip(memories, kept, strict=True)
        ]

    def _signals(
        self, query: str, first: dict[str, Sequence[int]], f: Filter
    ) -> dict[str, Sequence[int]]:
        """The multi-signal lists of mode ``auto`` (see ``signals``), flat ones left out."""
        mem, cfg = self._mem, self._mem.config
        repo = mem.repo
        seeds = sig.seed_scores(first.values(), cfg.recall_seed_k)
        top = sig.ordered(seeds)[: cfg.spread_seeds]
        act = sig.spread(
            seeds,
            repo.turn_neighbours(top, cfg.spread_window),
            top=cfg.spread_seeds,
            decay=cfg.spread_decay,
        )
        ok = repo.eligible(list(act), f)  # a neighbour may be filtered out, archived, gone
        act = {lab: a for lab, a in act.items() if lab in ok}
        out: dict[str, Sequence[int]] = {n: r for n, r in first.items() if r}
        if act:
            out["temporal"] = sig.ordered(act)
        combined = dict(seeds)
        for lab, a in act.items():
            combined[lab] = combined.get(lab, 0.0) + a
        order = sig.ordered(combined)
        named = repo.known_entities(sig.query_ngrams(query))
        if named:
            ent = sig.subset_in_order(order, repo.labels_about(order, sorted(named)))
            if ent:
                out["entity"] = ent
        kinds = repo.kinds(order)
        wanted = sig.intent(query)
        if wanted is not None:
            typed = sig.subset_in_order(order, {lab for lab in order if kinds[lab][0] == wanted})
            if typed:
                out["intent"] = typed
        conf = sig.by_value({lab: kinds[lab][1] for lab in order}, order)
        if conf:
            out["confidence"] = conf
        recent = sig.activation(repo.access_times(order), f.now_us, order)
        if recent:
            out["activation"] = recent
        return out

    def _semantic(self, query: str, k: int, pool: int, f: Filter) -> list[int]:
        store = self._mem.store
        dim = store.embedding_info()[1]
        q = store.embed_query(query)  # NoEmbedderError without an embedder: said, not empty
        if dim is None:
            return []  # no vector stored yet
        qv = as_vector(q, dim)
        hnsw = store.hnsw_index
        if hnsw is not None:
            scored = hnsw.recall(qv, pool, Scope(self._mem.org_id, self._mem.agent_id), f.now_us)
            if scored is not None:
                ok = self._mem.repo.eligible([lab for lab, _ in scored], f)
                kept = [lab for lab, _ in scored if lab in ok]
                if len(kept) >= min(k, pool) or len(scored) < pool:
                    return kept
        labels, blob = self._mem.repo.vectors(f)
        if not labels:
            return []
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(labels), -1)
        return [labels[i] for i, _ in exact_top_k(matrix, qv, pool)]


__all__ = ["MODES", "Recaller"]
