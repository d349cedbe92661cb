"""``AgentZeroStore`` against the documented ``BaseStore`` contract, as thoroughly as
LangGraph tests its own SQLite store: every op through ``batch`` and ``abatch``,
namespaces, filters, semantic search scored exactly as ``InMemoryStore`` scores it,
pagination, TTL, limits, bad input, closed handles, reopening, and concurrency."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (  # noqa: E402
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore  # noqa: E402

from agentzero_store import (  # noqa: E402
    AgentZeroStoreError,
    InvalidArgumentError,
    StoreClosedError,
    WrongKeyError,
)
from agentzero_store.integrations.langgraph import (  # noqa: E402
    AgentZeroStore,
    InvalidNamespace,
    UnsupportedOperation,
)

from ..conftest import FAST  # noqa: E402
from .langgraph_support import DIMS, KEY, fake_embed  # noqa: E402

INDEX: dict[str, Any] = {"dims": DIMS, "embed": fake_embed, "fields": ["text"]}


@pytest.fixture
def store(data_dir: Path) -> Iterator[AgentZeroStore]:
    s = AgentZeroStore(data_dir, key=KEY, config=FAST)
    yield s
    s.close()


@pytest.fixture
def indexed(data_dir: Path) -> Iterator[AgentZeroStore]:
    s = AgentZeroStore(data_dir, key=KEY, config=FAST, index=INDEX)
    yield s
    s.close()


# ---------------------------------------------------------------------- ops
def test_put_get_update_delete(store: AgentZeroStore) -> None:
    store.put(("users", "alice"), "prefs", {"theme": "dark", "n": [1, 2]})
    got = store.get(("users", "alice"), "prefs")
    assert got is not None and got.value == {"theme": "dark", "n": [1, 2]}
    assert got.namespace == ("users", "alice") and got.key == "prefs"
    created = got.created_at
    time.sleep(0.002)
    store.put(("users", "alice"), "prefs", {"theme": "light"})
    again = store.get(("users", "alice"), "prefs")
    assert again is not None and again.value == {"theme": "light"}
    assert again.created_at == created and again.updated_at > created
    store.delete(("users", "alice"), "prefs")
    assert store.get(("users", "alice"), "prefs") is None
    store.delete(("users", "alice"), "prefs")  # deleting nothing is fine
    assert store.get(("nobody",), "x") is None


def test_results_are_copies(store: AgentZeroStore) -> None:
    store.put(("a",), "k", {"list": [1]})
    got = store.get(("a",), "k")
    assert got is not None
    got.value["list"].append(2)
    assert store.get(("a",), "k").value == {"list": [1]}  # type: ignore[union-attr]


def test_batch_reads_see_the_store_before_its_writes(store: AgentZeroStore) -> None:
    store.put(("b",), "old", {"v": 0})
    results = store.batch(
        [
            PutOp(("b",), "new", {"v": 1}),
            GetOp(("b",), "new"),
            GetOp(("b",), "old"),
            PutOp(("b",), "new", {"v": 2}),  # the last write of an item wins
            PutOp(("b",), "old", None),
            SearchOp(("b",)),
            ListNamespacesOp(match_conditions=None),
        ]
    )
    assert results[0] is None and results[1] is None
    assert results[2] is not None and results[2].value == {"v": 0}
    assert [i.key for i in results[5]] == ["old"]  # type: ignore[union-attr]
    assert results[6] == [("b",)]
    assert store.get(("b",), "new").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(("b",), "old") is None


def test_unknown_op_is_typed_and_runs_nothing(store: AgentZeroStore) -> None:
    with pytest.raises(UnsupportedOperation) as e:
        store.batch([PutOp(("u",), "k", {"v": 1}), ("get", "x")])  # type: ignore[list-item]
    assert isinstance(e.value, AgentZeroStoreError) and isinstance(e.value, ValueError)
    assert e.value.hint and store.get(("u",), "k") is None


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put((), "k", {}),
        lambda s: s.put(("langgraph", "x"), "k", {}),
        lambda s: s.put(("a.b",), "k", {}),
        lambda s: s.put(("a", ""), "k", {}),
        lambda s: s.put(("a", 3), "k", {}),
        lambda s: s.get(("a.b",), "k"),
        lambda s: s.search(
            ("a", ""),
        ),
        lambda s: s.list_namespaces(prefix=("a.b",)),
        lambda s: s.batch([PutOp(("a.b",), "k", {"v": 1})]),
        lambda s: s.batch([PutOp((), "k", {"v": 1})]),
    ],
)
def test_invalid_namespaces_are_typed(store: AgentZeroStore, call: Any) -> None:
    store.put(("keep",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError) as e:  # LangGraph's type, and ours
        call(store)
    assert isinstance(e.value, InvalidNamespace | InvalidNamespaceError)
    assert store.get(("keep",), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert store.list_namespaces() == [("keep",)]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (["not", "a", "dict"], "JSON object"),
        ({"when": object()}, "not JSON"),
        ({"x": float("nan")}, "NaN"),
        ({1: "int key"}, "keys must be strings"),
        ({"b": b"bytes"}, "not JSON"),
    ],
)
def test_non_json_values_are_typed_and_lose_nothing(
    store: AgentZeroStore, value: Any, says: str
) -> None:
    store.put(("v",), "k", {"before": True})
    with pytest.raises(InvalidArgumentError, match=says) as e:
        store.batch([PutOp(("v",), "other", {"ok": 1}), PutOp(("v",), "k", value)])
    assert e.value.hint
    assert store.get(("v",), "k").value == {"before": True}  # type: ignore[union-attr]
    assert store.get(("v",), "other") is None  # the batch wrote nothing


def test_huge_values_round_trip(store: AgentZeroStore) -> None:
    big = {"text": "x" * (16 * 1024 * 1024), "list": list(range(100_000))}
    store.put(("big",), "k", big)
    assert store.get(("big",), "k").value == big  # type: ignore[union-attr]


def test_reopen_keeps_everything_and_wrong_key_is_refused(data_dir: Path) -> None:
    with AgentZeroStore(data_dir, key=KEY, config=FAST, index=INDEX) as s:
        s.put(("m",), "1", {"text": "tea with lemon"})
    with AgentZeroStore(data_dir, key=KEY, config=FAST, index=INDEX) as s:
        assert s.get(("m",), "1").value == {"text": "tea with lemon"}  # type: ignore[union-attr]
        assert s.search(("m",), query="tea with lemon")[0].score == pytest.approx(1.0)
    with pytest.raises(WrongKeyError):
        AgentZeroStore(data_dir, key=bytes(32), config=FAST)


def test_closed_store_raises_typed(data_dir: Path) -> None:
    s = AgentZeroStore(data_dir, key=KEY, config=FAST)
    s.put(("a",), "k", {})
    s.close()
    s.close()
    for call in (
        lambda: s.get(("a",), "k"),
        lambda: s.put(("a",), "k", {}),
        lambda: s.search(("a",)),
        lambda: s.list_namespaces(),
        lambda: s.delete(("a",), "k"),
    ):
        with pytest.raises(StoreClosedError):
            call()
    with pytest.raises(StoreClosedError):
        asyncio.run(s.aget(("a",), "k"))


# ---------------------------------------------------------------------- search
def test_prefix_matches_whole_segments_literally(store: AgentZeroStore) -> None:
    for ns in [("docs",), ("docs", "a"), ("docsx",), ("do",), ("*",), ("*", "x")]:
        store.put(ns, "k", {"ns": list(ns)})
    assert sorted(tuple(i.namespace) for i in store.search(("docs",))) == [("docs",), ("docs", "a")]
    assert sorted(tuple(i.namespace) for i in store.search(("*",))) == [("*",), ("*", "x")]
    assert len(store.search((), limit=100)) == 6


def test_search_without_query_newest_first_and_pages(store: AgentZeroStore) -> None:
    for i in range(12):
        store.put(("p",), f"k{i:02}", {"i": i})
    keys = [i.key for i in store.search(("p",), limit=100)]
    assert keys == [f"k{i:02}" for i in reversed(range(12))]
    assert [i.key for i in store.search(("p",), limit=5, offset=10)] == ["k01", "k00"]
    assert store.search(("p",), limit=0) == []
    assert [i.score for i in store.search(("p",), limit=2)] == [None, None]
    assert len(store.search(("p",))) == 10  # LangGraph's default limit


@pytest.mark.parametrize(
    ("flt", "keys"),
    [
        ({"kind": "fact"}, {"a", "c"}),
        ({"kind": {"$eq": "fact"}}, {"a", "c"}),
        ({"kind": {"$ne": "fact"}}, {"b", "d"}),
        ({"n": {"$gt": 2}}, {"c"}),
        ({"n": {"$gte": 2}}, {"b", "c"}),
        ({"n": {"$lt": 2}}, {"a"}),
        ({"n": {"$lte": 2}}, {"a", "b"}),
        ({"n": {"$gt": 1, "$lt": 3}}, {"b"}),
        ({"kind": "fact", "n": {"$gte": 3}}, {"c"}),
        ({"meta": {"lang": "en"}}, {"a"}),
        ({"tags": ["x", "y"]}, {"c"}),
        ({"done": True}, {"b"}),
    ],
)
def test_filters_match_inmemorystore(
    store: AgentZeroStore, flt: dict[str, Any], keys: set[str]
) -> None:
    rows = {
        "a": {"kind": "fact", "n": 1, "meta": {"lang": "en"}},
        "b": {"kind": "note", "n": 2, "done": True},
        "c": {"kind": "fact", "n": 3, "tags": ["x", "y"]},
        "d": {"other": "z"},
    }
    reference = InMemoryStore()
    for k, v in rows.items():
        store.put(("f",), k, v)
        reference.put(("f",), k, v)
    assert {i.key for i in store.search(("f",), filter=flt)} == keys
    ordering = {"$gt", "$gte", "$lt", "$lte"}
    if not any(isinstance(c, dict) and ordering & set(c) for c in flt.values()):
        # InMemoryStore raises TypeError on a missing field under an ordering operator
        # (float(None)); where it answers, it answers the same.
        assert {i.key for i in reference.search(("f",), filter=flt)} == keys


def test_unknown_filter_operator_is_typed(store: AgentZeroStore) -> None:
    with pytest.raises(InvalidArgumentError, match=r"\$in"):
        store.search(("f",), filter={"a": {"$in": [1]}})


DOCS = {
    "tea": {"text": "green tea with lemon", "kind": "drink"},
    "coffee": {"text": "black coffee no sugar", "kind": "drink"},
    "cake": {"text": "lemon cake with sugar", "kind": "food"},
    "multi": {"text": ["tea time", "cake time"], "kind": "food"},
    "nested": {"text": "zebra", "kind": "animal"},
}


def _both(indexed: AgentZeroStore, fields: list[str] | None = None) -> InMemoryStore:
    reference = InMemoryStore(index={**INDEX, **({"fields": fields} if fields else {})})
    for key, value in DOCS.items():
        indexed.put(("docs", key[0]), key, value)
        reference.put(("docs", key[0]), key, value)
    return reference


@pytest.mark.parametrize("query", ["lemon tea", "sugar", "cake time", "zebra crossing", "nothing"])
def test_semantic_search_ranks_and_scores_like_inmemorystore(
    indexed: AgentZeroStore, query: str
) -> None:
    reference = _both(indexed)
    ours = indexed.search(("docs",), query=query, limit=10)
    theirs = reference.search(("docs",), query=query, limit=10)
    assert [(i.key, round(i.score or 0, 5)) for i in ours] == [
        (i.key, round(i.score or 0, 5)) for i in theirs
    ]
    for offset in (1, 3):
        page = indexed.search(("docs",), query=query, limit=2, offset=offset)
        assert [i.key for i in page] == [i.key for i in theirs[offset : offset + 2]]
    flt = {"kind": "food"}
    assert [i.key for i in indexed.search(("docs",), query=query, filter=flt)] == [
        i.key for i in reference.search(("docs",), query=query, filter=flt)
    ]


def test_index_override_and_opt_out(indexed: AgentZeroStore) -> None:
    indexed.put(("o",), "title", {"text": "ignored", "title": "lemon tea"}, index=["title"])
    indexed.put(("o",), "off", {"text": "lemon tea"}, index=False)
    indexed.put(("o",), "default", {"text": "black coffee"})
    hits = indexed.search(("o",), query="lemon tea")
    assert [h.key for h in hits] == ["title", "default", "off"]
    assert hits[0].score == pytest.approx(1.0) and hits[-1].score is None


def test_query_without_index_is_recency_order(store: AgentZeroStore) -> None:
    store.put(("q",), "1", {"text": "lemon"})
    store.put(("q",), "2", {"text": "coffee"})
    assert [i.key for i in store.search(("q",), query="lemon")] == ["2", "1"]


def test_hybrid_ranking_is_opt_in(data_dir: Path) -> None:
    with AgentZeroStore(data_dir, key=KEY, config=FAST, index=INDEX, ranking="hybrid") as s:
        s.put(("h",), "a", {"text": "the quick brown fox"})
        s.put(("h",), "b", {"text": "a lazy dog sleeps"})
        hits = s.search(("h",), query="lazy dog")
        assert hits[0].key == "b"
        cosine = fake_embed(["lazy dog"])[0], fake_embed(["a lazy dog sleeps"])[0]
        assert hits[0].score == pytest.approx(sum(a * b for a, b in zip(*cosine, strict=True)))
    with pytest.raises(InvalidArgumentError, match="ranking"):
        AgentZeroStore(data_dir, key=KEY, config=FAST, ranking="magic")  # type: ignore[arg-type]


def test_embedder_of_the_wrong_size_is_typed(data_dir: Path) -> None:
    with AgentZeroStore(data_dir, key=KEY, config=FAST, index={**INDEX, "dims": 3}) as s:
        with pytest.raises(InvalidArgumentError, match="dims"):
            s.put(("e",), "k", {"text": "hello"})
        assert s.get(("e",), "k") is None


# ---------------------------------------------------------------------- namespaces
def test_list_namespaces(store: AgentZeroStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
    ]:
        store.put(ns, "k", {})
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",), ("users",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(limit=0) == []
    op = ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),), limit=10)
    assert store.batch([op])[0] == [("users", "123"), ("users", "456", "settings")]


# ---------------------------------------------------------------------- TTL
TTL_MIN = 0.5 / 60  # half a second, in LangGraph's minutes


def test_ttl_expires_and_is_never_returned(data_dir: Path) -> None:
    with AgentZeroStore(data_dir, key=KEY, config=FAST, ttl={"default_ttl": TTL_MIN}) as s:
        s.put(("t",), "default", {"v": 1})
        s.put(("t",), "forever", {"v": 2}, ttl=None)
        assert s.get(("t",), "default") is not None
        time.sleep(0.7)
        assert s.get(("t",), "default") is None
        assert [i.key for i in s.search(("t",))] == ["forever"]
        s.put(("gone",), "k", {}, ttl=TTL_MIN)
        time.sleep(0.7)
        assert s.list_namespaces() == [("t",)]
        assert s.sweep_ttl() == 2 and s.sweep_ttl() == 0


def test_ttl_refreshes_on_read_unless_told_not_to(data_dir: Path) -> None:
    with AgentZeroStore(data_dir, key=KEY, config=FAST, ttl={"refresh_on_read": True}) as s:
        for k in ("get", "search", "cold"):
            s.put(("r",), k, {"k": k}, ttl=TTL_MIN)
        for _ in range(4):  # 4 x 0.25 s: twice the TTL, kept alive by reads
            time.sleep(0.25)
            assert s.get(("r",), "get") is not None
            assert [i.key for i in s.search(("r",), filter={"k": "search"})] == ["search"]
            s.get(("r",), "cold", refresh_ttl=False)
        keys = {i.key for i in s.search(("r",), refresh_ttl=False)}
        assert "get" in keys and "search" in keys and "cold" not in keys
    with AgentZeroStore(data_dir, key=KEY, config=FAST, ttl={"refresh_on_read": False}) as s:
        s.put(("n",), "k", {}, ttl=TTL_MIN)
        time.sleep(0.3)
        assert s.get(("n",), "k") is not None  # a read that does not refresh
        time.sleep(0.3)
        assert s.get(("n",), "k") is None


def test_ttl_sweeper_thread(data_dir: Path) -> None:
    with AgentZeroStore(data_dir, key=KEY, config=FAST, ttl={"default_ttl": TTL_MIN}) as s:
        s.put(("sw",), "k", {"v": 1})
        s.start_ttl_sweeper(sweep_interval_minutes=0.2 / 60)
        s.start_ttl_sweeper()  # already running: nothing more
        time.sleep(1.5)  # expired after 0.5 s; swept every 0.2 s
        assert s.sweep_ttl() == 0  # the sweeper deleted it already
        assert s.stop_ttl_sweeper(timeout=5)
    assert s.stop_ttl_sweeper(timeout=1)  # close stopped it; stopping again is fine


def test_bad_ttl_is_typed(store: AgentZeroStore) -> None:
    with pytest.raises(InvalidArgumentError, match="minutes"):
        store.put(("t",), "k", {}, ttl=-5)
    assert store.get(("t",), "k") is None


# ---------------------------------------------------------------------- async
async def test_async_forms(indexed: AgentZeroStore) -> None:
    await indexed.aput(("as",), "1", {"text": "lemon tea"})
    await indexed.aput(("as", "sub"), "2", {"text": "coffee"})
    got = await indexed.aget(("as",), "1")
    assert got is not None and got.value == {"text": "lemon tea"}
    hits = await indexed.asearch(("as",), query="lemon tea")
    assert [h.key for h in hits] == ["1", "2"]
    assert await indexed.alist_namespaces(prefix=("as",)) == [("as",), ("as", "sub")]
    await indexed.adelete(("as",), "1")
    assert await indexed.aget(("as",), "1") is None


async def test_async_embedder_is_awaited(data_dir: Path) -> None:
    async def aembed(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return fake_embed(texts)

    with AgentZeroStore(data_dir, key=KEY, config=FAST, index={**INDEX, "embed": aembed}) as s:
        await s.aput(("ae",), "1", {"text": "lemon tea"})
        hits = await s.asearch(("ae",), query="lemon tea")
        assert hits[0].score == pytest.approx(1.0)


async def test_fifty_concurrent_calls_on_one_loop(indexed: AgentZeroStore) -> None:
    async def one(i: int) -> tuple[int, Any]:
        await indexed.aput(("c", str(i % 5)), f"k{i}", {"text": f"item {i}", "i": i})
        got = await indexed.aget(("c", str(i % 5)), f"k{i}")
        return i, got

    results = await asyncio.gather(*(one(i) for i in range(50)))
    for i, got in results:  # each call saw its own item, whole
        assert got is not None and got.value == {"text": f"item {i}", "i": i}
    assert len(await indexed.asearch(("c",), limit=100)) == 50
    assert await indexed.alist_namespaces() == [("c", str(n)) for n in range(5)]


async def test_async_calls_never_block_the_loop(data_dir: Path) -> None:
    """While a write waits 1 s for the data dir's writer role (held by another thread,
    as another process would), the event loop keeps running."""
    import threading

    with AgentZeroStore(data_dir, key=KEY, config=FAST) as s:
        holding = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with s.items.batch() as b:
                b.put(("hold",), "k", {"v": 1})
                holding.set()
                release.wait(5)

        holder = threading.Thread(target=hold)
        holder.start()
        holding.wait(5)
        ticks: list[float] = []

        async def ticker() -> None:
            while len(ticks) < 1000:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        tick = asyncio.create_task(ticker())
        put = asyncio.create_task(s.aput(("hold",), "waiting", {"v": 2}))
        await asyncio.sleep(0.5)
        assert not put.done()  # still waiting for the holder
        release.set()
        await put
        tick.cancel()
        holder.join()
        gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
        assert len(ticks) > 20 and max(gaps) < 0.25
        assert s.get(("hold",), "waiting") is not None
