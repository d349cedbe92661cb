"""``AgentZeroVectorStore`` beyond LangChain's suite, and ``AgentZeroRetriever``'s
documents: scores, filters (dict and callable), MMR, dimensions per collection,
persistence, from_texts, typed errors, no plaintext on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from agentzero_store import AgentMemory, DimensionMismatchError, InvalidArgumentError
from agentzero_store.integrations import _shared
from agentzero_store.integrations.langchain import (
    AgentZeroRetriever,
    AgentZeroVectorStore,
    HandleClosedError,
)

from ..conftest import FAST, PASSPHRASE
from .adapter_support import canary, plaintext_hits


class AxisEmbeddings(Embeddings):
    """A fake embedding whose geometry the tests choose: a text names its vector."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text]


def open_store(data_dir: Path, emb: Embeddings, **kw: Any) -> AgentZeroVectorStore:
    return AgentZeroVectorStore(emb, data_dir=data_dir, passphrase=PASSPHRASE, config=FAST, **kw)


GEOMETRY = {
    "north": [1.0, 0.0, 0.0],
    "north-ish": [0.9, 0.1, 0.0],
    "north-too": [0.95, 0.05, 0.0],
    "east": [0.0, 1.0, 0.0],
    "up": [0.0, 0.0, 1.0],
}


@pytest.fixture
def store(data_dir: Path) -> Any:
    s = open_store(data_dir, AxisEmbeddings(GEOMETRY))
    s.add_texts(
        ["north-ish", "north-too", "east", "up"],
        metadatas=[
            {"kind": "a", "page": 1},
            {"kind": "b", "page": 2},
            {"kind": "a", "page": 3},
            {"kind": "b", "page": 4, "a.dotted": True},
        ],
        ids=["n1", "n2", "e", "u"],
    )
    yield s
    s.close()


def test_scores_are_cosine_and_relevance_in_unit_range(store: AgentZeroVectorStore) -> None:
    got = store.similarity_search_with_score("north", k=4)
    assert [d.id for d, _ in got] == ["n2", "n1", "e", "u"]
    want = [
        np.dot(GEOMETRY[t], GEOMETRY["north"]) / np.linalg.norm(GEOMETRY[t])
        for t in ("north-too", "north-ish", "east", "up")
    ]
    assert [s for _, s in got] == pytest.approx(want, abs=1e-6)
    rel = store.similarity_search_with_relevance_scores("north", k=4)
    assert all(0.0 <= s <= 1.0 for _, s in rel)
    by_vec = store.similarity_search_by_vector(GEOMETRY["east"], k=1)
    assert by_vec == [Document(id="e", page_content="east", metadata={"kind": "a", "page": 3})]


def test_dict_and_callable_filters(store: AgentZeroVectorStore) -> None:
    assert [d.id for d in store.similarity_search("north", k=4, filter={"kind": "a"})] == [
        "n1",
        "e",
    ]
    ge3 = store.similarity_search("north", k=4, filter={"page": {"$gte": 3}})
    assert [d.id for d in ge3] == ["e", "u"]
    assert [d.id for d in store.similarity_search("up", k=4, filter={"a.dotted": True})] == ["u"]
    odd = store.similarity_search("north", k=4, filter=lambda d: d.metadata["page"] % 2 == 1)
    assert [d.id for d in odd] == ["n1", "e"]
    with pytest.raises(InvalidArgumentError):
        store.similarity_search("north", k=2, filter={"page": {"$regex": "x"}})
    with pytest.raises(InvalidArgumentError):
        store.similarity_search("north", k=2, filter=42)


def test_mmr_trades_similarity_for_diversity(store: AgentZeroVectorStore) -> None:
    plain = store.similarity_search("north", k=2)
    assert [d.id for d in plain] == ["n2", "n1"]
    diverse = store.max_marginal_relevance_search("north", k=2, fetch_k=4, lambda_mult=0.1)
    assert [d.id for d in diverse][0] == "n2"
    assert diverse[1].id in ("e", "u")  # not the near-duplicate n1
    only_a = store.max_marginal_relevance_search("north", k=2, fetch_k=4, filter={"kind": "a"})
    assert {d.id for d in only_a} == {"n1", "e"}


async def test_async_paths(store: AgentZeroVectorStore) -> None:
    assert [d.id for d in await store.asimilarity_search("east", k=1)] == ["e"]
    assert [d.id for d in await store.amax_marginal_relevance_search("north", k=1)] == ["n2"]
    await store.adelete(["e"])
    assert await store.aget_by_ids(["e", "u"]) == [
        Document(id="u", page_content="up", metadata={"kind": "b", "page": 4, "a.dotted": True})
    ]


def test_dimension_is_fixed_per_collection(data_dir: Path) -> None:
    six, nine = DeterministicFakeEmbedding(size=6), DeterministicFakeEmbedding(size=9)
    with (
        open_store(data_dir, six, collection="six") as a,
        open_store(data_dir, nine, collection="nine") as b,
    ):
        a.add_texts(["one"])
        b.add_texts(["two"])  # another collection, another dimension
        with open_store(data_dir, nine, collection="six") as wrong:
            with pytest.raises(DimensionMismatchError):
                wrong.add_texts(["three"])
            with pytest.raises(InvalidArgumentError):
                wrong.similarity_search("three")
        assert [d.page_content for d in a.similarity_search("one", k=5)] == ["one"]


def test_persists_and_from_texts(data_dir: Path) -> None:
    emb = DeterministicFakeEmbedding(size=6)
    s = AgentZeroVectorStore.from_texts(
        ["alpha", "beta"],
        emb,
        metadatas=[{"n": 1}, {"n": 2}],
        ids=["a", "b"],
        data_dir=data_dir,
        passphrase=PASSPHRASE,
        config=FAST,
    )
    s.add_texts(["alpha v2"], metadatas=[{"n": 3}], ids=["a"])  # overwrites
    s.close()
    assert _shared.open_count() == 0
    with open_store(data_dir, emb) as again:
        assert again.get_by_ids(["a", "b", "missing"]) == [
            Document(id="a", page_content="alpha v2", metadata={"n": 3}),
            Document(id="b", page_content="beta", metadata={"n": 2}),
        ]
        again.delete()  # None: every document of the collection
        assert again.similarity_search("alpha", k=3) == []


async def test_afrom_texts(data_dir: Path) -> None:
    s = await AgentZeroVectorStore.afrom_texts(
        ["x"],
        DeterministicFakeEmbedding(size=6),
        data_dir=data_dir,
        passphrase=PASSPHRASE,
        config=FAST,
    )
    try:
        assert [d.page_content for d in await s.asimilarity_search("x", k=1)] == ["x"]
    finally:
        s.close()


@pytest.mark.parametrize(
    ("texts", "kw"),
    [
        ("one string", {}),
        (["a", 1], {}),
        (["a", "b"], {"metadatas": [{}]}),
        (["a", "b"], {"ids": ["x"]}),
        (["a", "b"], {"ids": ["x", "x"]}),
        (["a"], {"metadatas": [{"when": object()}]}),
        (["a"], {"metadatas": [{"n": float("nan")}]}),
    ],
    ids=["str", "non-str", "metas", "ids", "dup-ids", "object", "nan"],
)
def test_bad_input_is_typed_and_writes_nothing(
    data_dir: Path, texts: Any, kw: dict[str, Any]
) -> None:
    with open_store(data_dir, DeterministicFakeEmbedding(size=6)) as s:
        s.add_texts(["kept"], ids=["k"])
        with pytest.raises(InvalidArgumentError) as err:
            s.add_texts(texts, **kw)
        assert err.value.hint or "texts" in str(err.value) or "id" in str(err.value)
        assert [d.id for d in s.similarity_search("kept", k=5)] == ["k"]


def test_bad_constructor_arguments_are_typed(data_dir: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        open_store(data_dir, "not an embedding")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        AgentZeroVectorStore(DeterministicFakeEmbedding(size=6), data_dir=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        open_store(data_dir, DeterministicFakeEmbedding(size=6), collection="a\x1fb")
    assert _shared.open_count() == 0


def test_closed_store_raises(data_dir: Path) -> None:
    s = open_store(data_dir, DeterministicFakeEmbedding(size=6))
    s.close()
    with pytest.raises(HandleClosedError):
        s.add_texts(["x"])
    with pytest.raises(HandleClosedError):
        s.similarity_search("x")


def test_no_plaintext_and_deleted_documents_leave_no_trace(data_dir: Path) -> None:
    kept, deleted = canary("kept"), canary("deleted")
    with open_store(data_dir, DeterministicFakeEmbedding(size=6)) as s:
        s.add_texts(
            [f"doc {kept}", f"doc {deleted}"], [{"k": kept}, {"k": deleted}], ids=["1", "2"]
        )
        s.delete(["2"])
        assert [d.id for d in s.get_by_ids(["1", "2"])] == ["1"]
    assert plaintext_hits(data_dir, [kept, deleted]) == []


async def test_fifty_concurrent_adds_on_one_loop(data_dir: Path) -> None:
    with open_store(data_dir, DeterministicFakeEmbedding(size=6)) as s:
        await asyncio.gather(*(s.aadd_texts([f"t{i}"], ids=[f"id{i}"]) for i in range(50)))
        got = s.get_by_ids([f"id{i}" for i in range(50)])
    assert [d.page_content for d in got] == [f"t{i}" for i in range(50)]


# ---------------------------------------------------------------------- the retriever
def test_retriever_documents_carry_the_memory(data_dir: Path) -> None:
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        tid = mem.add_turn("trip", "user", "I booked the train to Lyon")
        fid = mem.remember("The user prefers trains over planes").id
        mem.add_turn("trip", "user", "the weather is nice")
        r = AgentZeroRetriever(memory=mem, k=2)
        docs = r.invoke("train")
        assert {d.id for d in docs} == {tid, fid}
        turn = next(d for d in docs if d.id == tid)
        assert turn.page_content == "I booked the train to Lyon"
        meta = turn.metadata
        assert (meta["id"], meta["type"], meta["role"], meta["conversation"]) == (
            tid,
            "episodic",
            "user",
            "trip",
        )
        assert meta["score"] > 0 and meta["created_at"].endswith("+00:00")
        only_notes = r.invoke("train", types=["semantic"])
        assert [d.id for d in only_notes] == [fid]
        mem.forget(id=tid)
        assert [d.id for d in r.invoke("train")] == [fid]  # forgotten: never returned
        with pytest.raises(InvalidArgumentError):
            r.invoke("train", top_k=3)
        with pytest.raises(InvalidArgumentError):
            r.invoke("train", k=0)
        with pytest.raises(InvalidArgumentError):
            AgentZeroRetriever(memory=mem, k=10**9)
        with pytest.raises(InvalidArgumentError):
            AgentZeroRetriever(memory=mem, mode="fuzzy")
        with pytest.raises(InvalidArgumentError) as err:
            AgentZeroRetriever(memory="not a memory")
        assert err.value.hint


async def test_retriever_async_runs_off_the_loop(data_dir: Path) -> None:
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        for i in range(20):
            mem.add_turn("c", "user", f"fact number {i} about apples")
        r = AgentZeroRetriever(memory=mem, k=3)
        results = await asyncio.gather(*(r.ainvoke("apples") for _ in range(50)))
        assert all(len(docs) == 3 for docs in results)
        assert all([d.id for d in docs] == [d.id for d in results[0]] for docs in results)
