"""What recognising a recurring fact by meaning costs consolidation (issue 29): the
grouping step of promotion over the episodes of ``_agentmem``'s corpus (10k and 100k
memories; quick: 10k), before (the rule alone, as it was: near-duplicate word sets,
MinHash-LSH then exact Jaccard, ``dedup.near_duplicate_groups``) and after (that rule, plus links by
the cosine of the memories' vectors under the guards of ``consolidation.guards``), in
this process, no store: the rest of ``consolidate()`` is unchanged (``agentmem``'s
``agentmem_consolidate`` times the whole run, this step included).

The corpus's vectors are clustered random vectors, not a model's: about 100 memories
share a cluster, at cosine ~0.89 from one another, so many pairs pass a cosine test and
the guards and blocking do the work; the figure is a cost, not a precision (that is
measured on labelled dev pairs: ``tests/agentmem/recurrence_labels.py``).

Also run alone: ``_recurrence.py [N ...]`` prints the figures.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GROUP = "recurrence"


def _time(fn: Callable[[], list[list[str]]], trials: int) -> tuple[float, list[list[str]]]:
    best, out = float("inf"), []
    for _ in range(trials):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def figures_at(n: int, trials: int) -> list[Any]:
    """The before/after figure at ``n`` memories (every other one an episode said by the
    user, as ``_agentmem`` writes them; all hold a vector)."""
    import _agentmem as am
    from _harness import Figure

    from agentzero_store.agentmem.consolidation.dedup import near_duplicate_groups
    from agentzero_store.agentmem.consolidation.meaning import recurring_groups
    from agentzero_store.base.config import StoreConfig

    cfg = StoreConfig()
    corpus = am.make_corpus(n)
    words = [(f"m{i:07d}", t) for i, t in enumerate(corpus.texts)]
    row = {ident: i for i, (ident, _) in enumerate(words)}

    def vectors(ids: Any) -> dict[str, bytes]:
        return {i: corpus.vectors[row[i]].tobytes() for i in ids}

    before_s, before = _time(
        lambda: near_duplicate_groups(words, threshold=cfg.near_duplicate_jaccard), trials
    )
    after_s, after = _time(
        lambda: recurring_groups(
            words,
            jaccard=cfg.near_duplicate_jaccard,
            cosine=cfg.recurrence_cosine,
            vectors=vectors,
        ),
        trials,
    )
    big = cfg.promote_min_duplicates

    def promotable(groups: list[list[str]]) -> int:
        return sum(len(g) >= big for g in groups)

    return [
        Figure(
            GROUP,
            "recurrence_groups",
            f"promotion's grouping over {n:,} memories: by meaning and words (vs words only)",
            after_s,
            "s",
            before_s,
            "today's rule alone (Jaccard >= 0.85, MinHash-LSH)",
            after_s / before_s if before_s else None,
            f"≤ {max(5.0, 10.0 * n / 100_000):.0f} s",
            after_s <= max(5.0, 10.0 * n / 100_000),
            trials,
            note=f"groups of {big}+ (promoted): {promotable(after):,} after, "
            f"{promotable(before):,} before; all groups {len(after):,} / {len(before):,}; "
            f"cosine {cfg.recurrence_cosine}, best of {trials}",
        )
    ]


def run(
    tmp: Path, *, quick: bool, progress: Callable[[str], None], n: int | None = None
) -> list[Any]:
    """Every figure of the group (``tmp`` unused: nothing is written)."""
    sizes = [n] if n else ([10_000] if quick else [10_000, 100_000])
    out: list[Any] = []
    for size in sizes:
        progress(f"recurrence: grouping {size:,} memories before/after")
        out += figures_at(size, trials=3 if size <= 10_000 else 1)
    return out


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parent)]
    for f in (
        run(Path("."), quick=False, progress=print, n=None)
        if len(sys.argv) < 2
        else [x for a in sys.argv[1:] for x in figures_at(int(a), trials=1)]
    ):
        print(f)
