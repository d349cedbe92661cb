"""Ranking helpers shared by every recall path: exact top-k, keyword queries (their
words, FTS5's syntax), RRF fusion."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

_WORD = re.compile(r"\w+", re.UNICODE)

# English stop words: NLTK's list without the words that can carry a question's
# meaning (after, before, while, during, until, not, no, only, more, most, won, over,
# up, down, off, out, again, both, same, other, ...); contractions appear as the pieces
# the tokenizers cut them into ("can't" is "can" and "t"). A keyword query leaves them
# out: they are in nearly every text, so a match on them alone is no evidence, yet BM25
# still ranks it, and RRF counts rank, not score: "I like tea" was a keyword hit for
# "what can't I eat?".
_STOPWORD_LIST = """
    a about all am an and any are aren as at be been being but by can couldn d did didn
    do does doesn doing don each for from had hadn has hasn have haven having he her here
    hers herself him himself his how i if in into is isn it its itself just ll m ma me
    mightn mustn my myself needn now o of on or our ours ourselves re s shan she should
    shouldn so some such t than that the their theirs them themselves then there these
    they this those to ve was wasn we were weren what when where which who whom why will
    with wouldn y you your yours yourself yourselves"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())


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


def keyword_words(text: str) -> list[str]:
    """The words of ``text`` a keyword query searches for: lowercased, in order, repeats
    kept, stop words left out (``STOPWORDS``). Empty when the text holds none: a question
    made only of words like "the" matches nothing, rather than everything."""
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS]


def keyword_text(text: str) -> str:
    """``text`` reduced to its ``keyword_words``, space-separated (for an analyzer)."""
    return " ".join(keyword_words(text))


def fts5_query(text: str) -> str | None:
    """An FTS5 MATCH expression that ORs the ``keyword_words`` of ``text`` (each quoted,
    so no syntax in user text can break or widen the query). None if there are none."""
    words = keyword_words(text)
    if not words:
        return None
    seen = dict.fromkeys(words)
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


def fuse_and_read(
    signals: dict[str, Sequence[K]],
    read: Callable[[list[K]], Mapping[K, R]],
    *,
    k: int = 60,
    limit: int,
    fingerprint: Callable[[K], Hashable] | None = None,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[R, Fused[K]]]:
    """Hybrid fusion as every recall path does it (the memory store on both backends, the
    agent memory): ``rrf_fuse`` the signals (same arguments), then read the fused keys'
    rows with one call of ``read``, which re-checks them (scope, expiry, existence) and
    returns those that still qualify, by key. The result: (row, its ``Fused``), in fused
    order, without the keys ``read`` left out (fewer than ``limit`` then: a row deleted
    meanwhile is not replaced by one ranked lower).
    """
    fused = rrf_fuse(signals, k=k, limit=limit, fingerprint=fingerprint, weights=weights)
    rows = read([f.key for f in fused])
    return [(rows[f.key], f) for f in fused if f.key in rows]
