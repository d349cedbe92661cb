"""Auto recall's fusion: the RRF k adapts to the candidate pool, and a signal that tells
nothing apart on a query (every candidate scored the same) is left out — semantic and
keyword lists included (real SQLCipher, the real embedder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agentzero_store import LocalEmbedder, Turn
from agentzero_store.agentmem.recall import signals as sig
from agentzero_store.base.config import DEFAULT_DIM

from .conftest import Clock, open_memory


def test_final_k_scales_with_the_pool_within_bounds() -> None:
    assert sig.final_k(10, 200) == 10  # the base k at 200 candidates
    assert sig.final_k(10, 60) == 3
    assert sig.final_k(10, 400) == 20
    assert sig.final_k(10, 3) == 1  # never below 1 (0 would make rank 1 infinitely strong)
    assert sig.final_k(10, 0) == 1
    assert sig.final_k(10, 5_000) == 60  # never above 60: the top ranks stay apart
    assert sig.final_k(60, 200) == 60


def test_is_flat() -> None:
    assert sig.is_flat([])
    assert sig.is_flat([0.5])
    assert sig.is_flat([0.5, 0.5, 0.5])
    assert sig.is_flat([-3.2, -3.2 + 1e-9])  # rounding is no distinction
    assert not sig.is_flat([0.5, 0.4])
    assert not sig.is_flat([-3.2, -3.1])
    assert sig.is_flat([0.0, 0.0])
    assert not sig.is_flat([-0.94e-6, -1.07e-6])  # BM25 of a common term: tiny, still ranks


def _rrf_k(score: float, weight: float, rank: int) -> float:
    return weight / score - rank


def test_auto_fuses_with_the_k_of_its_pool(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        mem.add_turns(
            "s1", [Turn("user", f"note {i} on the {w}") for i, w in enumerate(["tea"] * 3)]
        )
        small = mem.recall("tea", k=3, explain=True, log=False)
        pool = 3  # every memory is a candidate
        for h in small:
            assert h.explain is not None
            for e in h.explain.values():
                k = _rrf_k(e["score"], e["weight"], int(e["rank"]))
                assert round(k) == sig.final_k(mem.config.recall_rrf_k, pool) == 1
        mem.add_turns("s2", [Turn("user", f"a line {i} about trains") for i in range(57)])
        big = mem.recall("tea", k=3, explain=True, log=False)
        for h in big:
            assert h.explain is not None
            for e in h.explain.values():
                k = _rrf_k(e["score"], e["weight"], int(e["rank"]))
                assert round(k) == sig.final_k(mem.config.recall_rrf_k, 60) == 4  # 15 x 60 / 200


def test_a_flat_keyword_list_is_left_out(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    """Every memory matches "tea" once in three words: BM25 cannot tell them apart, and
    FTS5's tie break (rowid) would give the oldest a bonus. Dense scores differ."""
    with open_memory(where, clock, embedder=local_embedder) as mem:
        mem.add_turns(
            "s1",
            [Turn("user", t) for t in ("tea at dawn", "tea with lemon", "tea after football")],
        )
        for mode in ("auto", "hybrid"):
            hits = mem.recall("tea", k=3, mode=mode, explain=True, log=False)
            assert len(hits) == 3
            assert all(set(h.ranks) == {"semantic"} for h in hits if mode == "hybrid")
            assert all("keyword" not in h.ranks for h in hits), mode
            assert any("semantic" in h.ranks for h in hits)
        # keyword alone keeps its list: there is nothing else to rank by
        alone = mem.recall("tea", k=3, mode="keyword", log=False)
        assert len(alone) == 3 and all(set(h.ranks) == {"keyword"} for h in alone)
        # one memory that does not match: matching is a distinction again
        mem.add_turn("s1", "user", "coffee at dawn")
        hits = mem.recall("tea", k=4, explain=True, log=False)
        assert sum("keyword" in h.ranks for h in hits) == 3


def test_a_flat_semantic_list_is_left_out(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    """Every memory has the same vector (given by the caller), so every cosine is equal:
    the semantic list is an accident of the index's order and drops out. BM25 differs
    (the shorter text scores higher) and decides."""
    same = np.ones(DEFAULT_DIM, dtype=np.float32) / np.sqrt(DEFAULT_DIM)
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = [
            mem.add_turn("s1", "user", text, vector=same)
            for text in (
                "the tea was cold and the room was loud and long",
                "green tea",
                "we drank tea on the terrace at noon",
            )
        ]
        for mode in ("auto", "hybrid"):
            hits = mem.recall("tea", k=3, mode=mode, explain=True, log=False)
            assert all("semantic" not in h.ranks for h in hits), mode
            assert [h.id for h in hits] == [ids[1], ids[2], ids[0]], mode
        alone = mem.recall("tea", k=3, mode="semantic", log=False)
        assert len(alone) == 3 and all(set(h.ranks) == {"semantic"} for h in alone)


def test_when_every_list_is_flat_recall_still_answers(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    """Nothing tells the candidates apart: they are all returned, not none."""
    same = np.ones(DEFAULT_DIM, dtype=np.float32) / np.sqrt(DEFAULT_DIM)
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = {mem.add_turn("s1", "user", t, vector=same) for t in ("tea one", "tea two")}
        assert {h.id for h in mem.recall("tea", k=5, log=False)} == ids
        assert {h.id for h in mem.recall("tea", k=5, mode="hybrid", log=False)} == ids


def test_a_lone_candidate_no_keyword_matches_is_still_returned(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    """One candidate: its semantic list is flat (one score) and the keyword list empty;
    found by the scope property test, where auto then answered nothing."""
    with open_memory(where, clock, embedder=local_embedder) as mem:
        only = mem.add_turn("s1", "user", "river reminder")
        for mode in ("auto", "hybrid"):
            assert [h.id for h in mem.recall("apple", k=5, mode=mode, log=False)] == [only]
