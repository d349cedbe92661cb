"""Search with every recall mode, through the inspector's page, with the real local
embedder (all-MiniLM-L6-v2, offline): the right memory first, and ``explain``'s rank per
signal on the page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentzero_store import LocalEmbedder

from .conftest import NEEDLE, Served, seed, serving

# No word in common with the tea memory ("The user drinks ... tea every morning"): only
# the meaning leads to it.
PARAPHRASE = "hot beverage at breakfast"


@pytest.fixture
def semantic(data_dir: Path, local_embedder: LocalEmbedder) -> Iterator[Served]:
    """An inspector with the real embedder over a store seeded with it."""
    with serving(data_dir, seed(data_dir, local_embedder), embedder=local_embedder) as s:
        yield s


def _hits(client: httpx.Client, query: str, mode: str) -> list[tuple[str, dict[str, int]]]:
    """Each hit's id and its rank per signal, as the page shows them, best first."""
    r = client.get("/search", params={"q": query, "mode": mode})
    assert r.status_code == 200, r.text
    rows = re.findall(r'<tr class="hit" data-id="([0-9a-f]+)">(.*?)</tr>', r.text, re.S)
    return [
        (hid, {name: int(rank) for name, rank in re.findall(r"(\w+) #(\d+) <small>w ", body)})
        for hid, body in rows
    ]


def test_semantic_hybrid_and_auto_find_the_memory_with_ranks_per_signal(
    semantic: Served,
) -> None:
    tea = semantic.ids.tea
    c = semantic.client()
    try:
        # Semantic: the paraphrase finds it, ranked by the one signal it used.
        hits = _hits(c, PARAPHRASE, "semantic")
        assert hits[0] == (tea, {"semantic": 1})
        assert all(set(ranks) == {"semantic"} for _, ranks in hits)
        # Keyword alone cannot: no word of the paraphrase is in the memory.
        assert tea not in [h for h, _ in _hits(c, PARAPHRASE, "keyword")]
        # Hybrid fuses both: first by both signals when both match ...
        both = f"{NEEDLE} breakfast drink"
        assert _hits(c, both, "hybrid")[0] == (tea, {"semantic": 1, "keyword": 1})
        # ... and still first by meaning when the words do not match.
        first, ranks = _hits(c, PARAPHRASE, "hybrid")[0]
        assert first == tea and ranks["semantic"] == 1
        # Auto (and the default, which is auto with an embedder) fuse every signal.
        for mode in ("auto", ""):
            first, ranks = _hits(c, both, mode)[0]
            assert first == tea, mode
            assert ranks["semantic"] == 1 and ranks["keyword"] == 1, (mode, ranks)
            first, ranks = _hits(c, PARAPHRASE, mode)[0]
            assert first == tea and ranks["semantic"] == 1, (mode, ranks)
    finally:
        c.close()
