"""Stop words are no keyword evidence: a match on "I" or "the" alone never ranks a memory,
a chunk or a document, on any keyword path (issue 30, item 10)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agentzero_store.base.ranking import fts5_query, keyword_words
from agentzero_store.embed.local import LocalEmbedder
from rag import DocInput, DocumentStore

from ..conftest import FAST
from .conftest import Clock, open_memory

NOTES = [
    "I like tea",
    "I'm allergic to peanuts",
    "the train leaves at noon",
    "my sister lives in Lisbon",
    "the garden needs water on Sundays",
]


def test_keyword_words_leave_stop_words_out() -> None:
    assert keyword_words("What can't I eat?") == ["eat"]
    assert keyword_words("The THE the") == [] and fts5_query("the") is None
    assert fts5_query('peanut "butter" and jam') == '"peanut" OR "butter" OR "jam"'


def test_a_stop_word_match_takes_no_part_in_hybrid_or_keyword_recall(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        for note in NOTES:
            mem.remember(note)
        hits = mem.recall("what can't I eat?", k=3, mode="hybrid")
        assert hits[0].memory.content == "I'm allergic to peanuts"
        assert all("keyword" not in h.ranks for h in hits)
        assert mem.recall("what can't I eat?", mode="keyword") == []
        assert mem.recall("the", mode="keyword") == []
        assert [h.memory.content for h in mem.recall("who likes tea?", mode="keyword")] == [
            "I like tea"
        ]


def test_the_memory_store_keyword_paths_skip_stop_words(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        for note in NOTES:
            mem.remember(note)
        store = mem.store
        scope = {"org_id": "acme", "agent_id": "a1"}
        assert store.keyword_recall("what is the time?", 5, **scope) == []
        got = store.keyword_recall("when is the train?", 5, **scope)
        assert [h.entry.content for h in got] == ["the train leaves at noon"]


@pytest.mark.parametrize("terms", ["blinded", "sealed"])
def test_document_bm25_never_matches_on_stop_words_alone(tmp_path: Path, terms: str) -> None:
    cfg = replace(FAST, bm25_terms=terms)
    with DocumentStore.open(tmp_path / "d", key=bytes(range(32)), config=cfg) as docs:
        docs.ingest_many([DocInput(f"n{i}", note) for i, note in enumerate(NOTES)])
        assert docs.query("what is the answer to the question?", 10, mode="bm25") == []
        assert [h.id for h in docs.query("the garden", 10, mode="bm25")] == ["n4"]
