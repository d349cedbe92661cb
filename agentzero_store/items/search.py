"""Ranked search over one collection: the vector ranking (exact cosine, max over an
item's fields), its fusion with keywords for hybrid search, and the page of live,
matching items read from it.

LangGraph's stores are the reference: items ranked by their best field's cosine, then
the items that have no vector, unscored; ties in insertion order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import InvalidArgumentError
from ..base.ranking import fts5_query, rrf_fuse
from .filters import matches
from .records import ItemHit, Namespace
from .repository import ItemRepository, row_to_item
from .vector_cache import VectorCache, rank

KEYWORD_POOL = 1000  # keyword candidates fused with the vector ranking (hybrid)


@dataclass(frozen=True)
class Page:
    """Which hits a search wants: those matching ``flt``, ``off`` skipped, ``lim`` kept,
    live at ``now_us``."""

    flt: dict[str, Any] | None
    lim: int
    off: int
    now_us: int


def ranked_page(
    repo: ItemRepository,
    cache: VectorCache,
    ns: Namespace,
    query: np.ndarray,
    text: str | None,
    page: Page,
) -> list[ItemHit]:
    """The page of items under ``ns`` ranked by ``query`` (fused with ``text``'s
    keywords when given), each with its cosine score (None: no vector)."""
    dims = repo.dims()
    scores: dict[int, float] = {}
    ranked: list[int] = []
    if dims is not None:
        if dims != query.shape[0]:
            raise InvalidArgumentError(
                f"the query vector has {query.shape[0]} dimensions; the collection's have {dims}",
                hint="embed the query with the collection's embedding model",
            )
        vectors = cache.get(repo.version(), dims, repo.vectors)
        ranked, sims = rank(vectors, vectors.under(ns), query)
        scores = dict(zip(ranked, sims, strict=True))
    if text is not None:
        match = fts5_query(text)
        words = repo.keyword(match, ns, page.now_us, KEYWORD_POOL) if match else []
        fused = rrf_fuse({"vector": ranked, "keyword": words}, limit=len(ranked) + len(words))
        ranked = [f.key for f in fused]

    def unscored() -> Iterator[int]:
        # A generator: its query runs only when the ranked items do not fill the page
        # (LangGraph's stores fill it with the items that have no vector).
        have = set(ranked)
        yield from (i for i in repo.unvectored(ns, page.now_us) if i not in have)

    return read_page(repo, itertools.chain(ranked, unscored()), scores, page)


def read_page(
    repo: ItemRepository, ranked: Iterator[int], scores: dict[int, float], page: Page
) -> list[ItemHit]:
    """The hits ``off`` .. ``off + lim`` of ``ranked`` that are live and match the
    filter, read in chunks: an unfiltered page reads little more than its own rows."""
    out: list[ItemHit] = []
    seen = 0
    step = max(page.lim + page.off, 64 if page.flt else 16)
    while True:
        chunk = list(itertools.islice(ranked, step))
        if not chunk:
            return out
        rows = repo.by_ids(chunk, page.now_us)
        for item_id in chunk:
            row = rows.get(item_id)
            if row is None:  # expired (or deleted) since the ranking
                continue
            item = row_to_item(row)
            if page.flt and not matches(item.value, page.flt):
                continue
            seen += 1
            if seen > page.off:
                out.append(ItemHit(item, scores.get(item_id)))
                if len(out) >= page.lim:
                    return out


__all__ = ["KEYWORD_POOL", "Page", "ranked_page", "read_page"]
