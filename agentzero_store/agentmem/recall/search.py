"""Recall of the agent memory: semantic and keyword candidates, filtered by type,
entity, time and archive state, fused with RRF (part 2 replaces the ranking behind the
same call).

Candidates come from the memory store's indexes (HNSW, FTS5) over the agent's scope; the
repository decides which qualify (the database is the authority on scope, expiry and
filters). When a filter leaves too few of the index's candidates, exact search over the
qualifying rows decides instead, so a narrow filter never starves the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...base.errors import InvalidArgumentError
from ...base.limits import check_limit, check_text
from ...base.modes import search_mode
from ...base.ranking import fuse_and_read
from ...embed.vectors import as_vector
from ...memory.records import to_us
from ..records import Memory, RecallHit, entity_key
from ..rows import Candidate, Filter
from . import signals as sig
from . import when as when_
from .flat_lists import flat_lists
from .signals import final_k

if TYPE_CHECKING:
    from ..parts import Parts
    from ..rows import Row

Hydrate = Callable[[Sequence["Row"]], list[Memory]]

SIGNALS = (
    "semantic",
    "keyword",
    "temporal",
    "entity",
    "intent",
    "role",
    "confidence",
    "activation",
    "surprise",
    "when",
)
"""The signals of mode ``auto``; each one's weight is ``StoreConfig.weight_<name>``."""
ROLE_DEPTH = 5  # the role list covers the first ROLE_DEPTH x k candidates


def _weights(weights: Mapping[str, float] | None, mode: str) -> dict[str, float]:
    """A checked per-call override of the auto signals' weights."""
    if weights is None:
        return {}
    if mode != "auto":
        raise InvalidArgumentError("weights apply to mode='auto' only", hint="drop weights=")
    out: dict[str, float] = {}
    for name, w in weights.items():
        if name not in SIGNALS:
            raise InvalidArgumentError(
                f"unknown signal {name!r}; the signals are {', '.join(SIGNALS)}"
            )
        if isinstance(w, bool) or not isinstance(w, int | float) or not 0 <= w < float("inf"):
            raise InvalidArgumentError(f"the weight of {name} must be a finite number >= 0")
        out[name] = float(w)
    return out


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
        weights: Mapping[str, float] | None = None,
    ) -> list[RecallHit]:
        """See ``AgentMemory.recall``."""
        mem = self._mem
        k = check_limit(k, "k")
        check_text("query", query)
        mode = search_mode(mode)
        if mode == "auto" and mem.store.embedder is None:
            mode = "keyword"  # the one signal a store without an embedder has to fuse
        override = _weights(weights, mode)
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
        signals, info, cosines, qv = self._first_stage(query, k, pool, mode, f)
        if len(signals) > 1:  # a single-signal mode keeps its list, flat or not
            flat = flat_lists(mem, query, signals, info.keys(), cosines)
            # Only if another list ranks something: when every list is flat or empty, no
            # list is better than another, and dropping them all would answer nothing.
            if flat and not {n for n, r in signals.items() if r} <= flat:
                signals = {n: r for n, r in signals.items() if n not in flat}
        fusion = {"semantic": cfg.weight_semantic, "keyword": cfg.weight_keyword}
        if mode == "auto":
            chosen = {n: override.get(n, float(getattr(cfg, f"weight_{n}"))) for n in SIGNALS}
            wanted = {n for n, w in chosen.items() if w > 0}  # weight 0: not even computed
            signals = self._signals(query, k, signals, f, info, wanted, qv)
            signals = {n: r for n, r in signals.items() if n in wanted}
            used = {n: chosen[n] for n in signals}
            rrf_k = final_k(cfg.recall_rrf_k, len({x for r in signals.values() for x in r}))
        else:
            rrf_k = cfg.recall_seed_k
            used = fusion if mode == "hybrid" else {name: 1.0 for name in signals}
        kept = fuse_and_read(
            signals,
            lambda keys: mem.repo.rows(keys, f),
            k=rrf_k,
            limit=k,
            fingerprint=lambda lab: info[lab].fingerprint,
            weights=used,
        )
        memories = self._hydrate([r for r, _ in kept])
        return [
            RecallHit(
                m,
                x.score,
                dict(x.ranks),
                {
                    name: {"rank": r, "weight": used[name], "score": used[name] / (rrf_k + r)}
                    for name, r in x.ranks.items()
                }
                if explain
                else None,
            )
            for m, (_, x) in zip(memories, kept, strict=True)
        ]

    def _first_stage(
        self, query: str, k: int, pool: int, mode: str, f: Filter
    ) -> tuple[
        dict[str, Sequence[int]],
        dict[int, Candidate],
        dict[int, float],
        npt.NDArray[np.float32] | None,
    ]:
        """The semantic and keyword lists the mode asks for, each holding only memories
        that qualify, what the signals need of every one of them, the semantic list's
        cosines (to tell a flat list: ``flat_lists``) and the query vector.

        The indexes propose up to ``pool`` candidates each (HNSW filters scope and expiry
        itself, FTS5 scope); one query then checks the union against the filter. A list
        the filter leaves short falls back to a search with the filter applied inside
        (exact vectors, or BM25 joined to the rows), so a narrow filter never starves it.
        """
        repo = self._mem.repo
        proposed: dict[str, list[int]] = {}
        exact: set[str] = set()  # lists that come filtered already
        qv = None
        cosines: dict[int, float] = {}
        if mode in ("semantic", "hybrid", "auto"):
            qv = self._query_vector(query)
            scored = self._hnsw(qv, pool)
            if scored is None:
                scored, exact = self._exact(qv, pool, f), {"semantic"}
            cosines.update(scored)
            proposed["semantic"] = [lab for lab, _ in scored]
        if mode in ("keyword", "hybrid", "auto"):
            proposed["keyword"] = repo.keyword_ranked(query, pool, f)
        info = repo.candidates(list({x for r in proposed.values() for x in r}), f)
        out: dict[str, Sequence[int]] = {}
        for name, ranked in proposed.items():
            kept = [lab for lab in ranked if lab in info]
            if name not in exact and len(kept) < min(k, pool) and len(ranked) >= pool:
                if name == "semantic":
                    scored = self._exact(qv, pool, f)
                    cosines.update(scored)
                    kept = [lab for lab, _ in scored]
                else:
                    kept = repo.keyword_filtered(query, pool, f)
                info.update(repo.candidates([x for x in kept if x not in info], f))
                kept = [lab for lab in kept if lab in info]
            out[name] = kept
        return out, info, cosines, qv

    def _signals(
        self,
        query: str,
        k: int,
        first: dict[str, Sequence[int]],
        f: Filter,
        info: dict[int, Candidate],
        wanted: set[str],
        qv: npt.NDArray[np.float32] | None,
    ) -> dict[str, Sequence[int]]:
        """The multi-signal lists of mode ``auto`` (see ``signals``) among ``wanted``, flat
        ones left out; ``info`` (every candidate that qualifies) grows with the neighbours
        that do. Spreading always runs: its activation orders the candidates."""
        mem, cfg = self._mem, self._mem.config
        repo = mem.repo
        seeds = sig.seed_scores(first.values(), cfg.recall_seed_k)
        top = sig.ordered(seeds)[: cfg.spread_seeds]
        places = [
            (lab, info[lab].conversation_id, info[lab].created_at_us)
            for lab in top
            if info[lab].type == "episodic"
        ]
        act = sig.spread(
            seeds,
            repo.turn_neighbours(places, cfg.spread_window),
            top=cfg.spread_seeds,
            decay=cfg.spread_decay,
        )
        # A neighbour may be filtered out, archived, expired or gone: checked like the rest.
        info.update(repo.candidates([lab for lab in act if lab not in info], f))
        act = {lab: a for lab, a in act.items() if lab in info}
        out: dict[str, Sequence[int]] = {n: r for n, r in first.items() if r}
        if act:
            out["temporal"] = sig.ordered(act)
        combined = dict(seeds)
        for lab, a in act.items():
            combined[lab] = combined.get(lab, 0.0) + a
        order = sig.ordered(combined)
        named = repo.known_entities(sig.query_ngrams(query)) if "entity" in wanted else set()
        if named:
            ent = sig.subset_in_order(order, repo.labels_about(order, sorted(named)))
            if ent:
                out["entity"] = ent
        asked = sig.intent(query) if "intent" in wanted else None
        if asked is not None:
            typed = sig.subset_in_order(order, {lab for lab in order if info[lab].type == asked})
            if typed:
                out["intent"] = typed
        party = sig.asked_role(query) if "role" in wanted else None
        if party is not None:
            # The roles of the first candidates only: reading one on PostgreSQL opens
            # its sealed row, and below ROLE_DEPTH x k the list no longer moves the top
            # k (LongMemEval dev: the same 0.891 at 50 as over all ~250 candidates).
            head = order[: ROLE_DEPTH * k]
            roles = repo.roles_of(head)
            spoken = sig.by_role(party, roles, head)
            if spoken:
                out["role"] = spoken
                # Spreading lifts the turns next to a hit because an answer often sits
                # in the reply; on a question about one party the reply is the other
                # party's, which this list has just ruled out, and what spreading has
                # left (that party's own turns two away) crowds the top 10 with one
                # session (LongMemEval dev at k 10: 0.877 with them, 0.884 without).
                out.pop("temporal", None)
        conf = sig.by_value({lab: info[lab].confidence for lab in order}, order)
        if conf:
            out["confidence"] = conf
        if "activation" in wanted:
            accessed = [lab for lab in order if info[lab].access_count > 0]
            recent = sig.activation(repo.access_times(accessed), f.now_us, order)
            if recent:
                out["activation"] = recent
        if "surprise" in wanted and qv is not None:
            top = order[: cfg.recall_pool]
            labels, blobs = repo.vectors_of(top)
            dim = len(qv)
            vecs = {
                lab: np.frombuffer(b, dtype=np.float32)[:dim]
                for lab, b in zip(labels, blobs, strict=True)
            }
            rare = sig.surprise(qv, vecs, top)
            if rare:
                out["surprise"] = rare
        win = when_.window(query, f.now_us) if "when" in wanted else None
        if win is not None:
            timed = when_.by_time(win, {lab: info[lab].created_at_us for lab in order}, order)
            if timed:
                out["when"] = timed
        return out

    def _query_vector(self, query: str) -> npt.NDArray[np.float32] | None:
        """The query's vector, None while the store holds no vector. The embedder is asked
        first, so a store without one says so (NoEmbedderError), even an empty store."""
        store = self._mem.store
        q = store.embed_query(query)
        dim = store.embedding_info()[1]
        return None if dim is None else as_vector(q, dim)

    def _hnsw(
        self, qv: npt.NDArray[np.float32] | None, pool: int
    ) -> list[tuple[int, float]] | None:
        """Up to ``pool`` nearest (label, cosine) of the scope, unexpired, from the store's
        vector index (None without one, or while it cannot answer: ``_exact`` decides)."""
        if qv is None:
            return None
        scope = self._mem.gate.scope()  # the index holds the scope's vectors: checked too
        return self._mem.side.nearest(qv, pool, scope, self._mem.now_us())

    def _exact(
        self, qv: npt.NDArray[np.float32] | None, pool: int, f: Filter
    ) -> list[tuple[int, float]]:
        """Exact cosine search over every vector that passes ``f``: (label, cosine)."""
        if qv is None:
            return []  # no vector stored yet
        return self._mem.repo.nearest_exact(qv, pool, f)


__all__ = ["SIGNALS", "Recaller"]
