"""Ranking helpers shared by every recall path: exact top-k, FTS5 queries, RRF fusion."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

K = TypeVar("K", bound=Hashable)

_WORD = re.compile(r"\w+", re.UNICODE)


def exact_top_k(
    matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32], k: int
) -> list[tuple[int, float]]:
    """Rows of ``matrix`` most similar to ``query``: (row index, cosine), best first."""
    if k <= 0 or matrix.shape[0] == 0:
        return []
    scores = matrix @ query
    k = min(k, scores.shape[0])
    idx = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    idx = idx[np.lexsort((idx, -scores[idx]))]  # by score desc, ties by position: deterministic
    return [(int(i), float(scores[i])) for i in idx]


def fts5_query(text: str) -> str | None:
    """An FTS5 MATCH expression that ORs the words of ``text`` (each quoted, so no syntax
    in user text can break or widen the query). None if there are no words."""
    words = _WORD.findall(text)
    if not words:
        return None
    seen: dict[str, None] = {}
    for w in words:
        seen.setdefault(w.lower(), None)
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in seen)


@dataclass
class Fused(Generic[K]):
    """One fused result: the key, its RRF score, and its 1-based rank in each signal."""

    key: K
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


def rrf_fuse(
    signals: dict[str, Sequence[K]],
    *,
    k: int = 60,
    limit: int,
    fingerprint: Callable[[K], Hashable] | None = None,
    weights: Mapping[str, float] | None = None,
) -> list[Fused[K]]:
    """Weighted Reciprocal Rank Fusion: score(d) = sum over signals r of
    w_r / (k + rank_r(d)) (every weight 1 without ``weights``).

    Ties break on the best single rank, then on first appearance, so the order is
    deterministic. With ``fingerprint``, only the best-scoring item of each fingerprint is
    kept (near-identical memories do not crowd out the rest).
    """
    fused: dict[K, Fused[K]] = {}
    order: dict[K, int] = {}
    for name, ranked in signals.items():
        w = 1.0 if weights is None else weights[name]
        for rank, key in enumerate(ranked, start=1):
            if key in fused and name in fused[key].ranks:
                continue  # a signal lists each key once; ignore repeats
            f = fused.setdefault(key, Fused(key))
            order.setdefault(key, len(order))
            f.score += w / (k + rank)
            f.ranks[name] = rank
    ranked_all = sorted(
        fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), order[f.key])
    )
    out: list[Fused[K]] = []
    seen: set[Hashable] = set()
    for f in ranked_all:
        if fingerprint is not None:
            fp = fingerprint(f.key)
            if fp in seen:
                continue
            seen.add(fp)
        out.append(f)
        if len(out) >= limit:
            break
    return out
