"""Which first-stage lists of recall (semantic, keyword) tell nothing apart on a query.

A list is flat when it holds every candidate and gives them all the same score: its
order is then an accident (HNSW's visit order, FTS5's rowid tie break), and fused with
RRF it would hand the oldest rows a bonus no evidence supports. A list that holds only
some candidates is never flat: matching versus not matching is a distinction.

Semantic scores come with the list (cosines); BM25 scores are read only for a keyword
list that holds every candidate (rare beyond small stores), by one query over those
labels (``keyword_scores``: the layer's SQL stays in its repository).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..parts import Parts
from .signals import is_flat


def flat_lists(
    mem: Parts,
    query: str,
    lists: Mapping[str, Sequence[int]],
    pool: Collection[int],
    semantic: Mapping[int, float],
) -> set[str]:
    """The names of ``lists`` that are flat over the candidate ``pool`` (see the
    module); ``semantic``: the semantic list's scores."""
    out: set[str] = set()
    for name, ranked in lists.items():
        if len(set(ranked)) < len(pool):
            continue  # some candidates are not in it: it tells those apart
        if name == "semantic":
            scores = {lab: semantic[lab] for lab in ranked if lab in semantic}
        elif name == "keyword":
            scores = mem.repo.keyword_scores(query, ranked)
        else:
            continue
        if len(scores) == len(ranked) and is_flat(scores.values()):
            out.add(name)
    return out


__all__ = ["flat_lists"]
