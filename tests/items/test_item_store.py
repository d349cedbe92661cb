"""ItemStore on a real SQLCipher memory.db: round trips, ordering, filters, namespaces,
vector and hybrid search, time to live, batches, and what bad input gets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentzero_store import (
    DimensionMismatchError,
    InvalidArgumentError,
    ItemStore,
    SqliteMemoryStore,
    StoreClosedError,
)
from agentzero_store.base.limits import MAX_METADATA_DEPTH

from ..agentmem.conftest import Clock
from ..conftest import FAST, PASSPHRASE


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def items(data_dir: Path, clock: Clock) -> Iterator[ItemStore]:
    s = ItemStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, clock=clock)
    yield s
    s.close()


# ---------------------------------------------------------------------- round trips
def test_put_get_round_trip_copies(items: ItemStore, clock: Clock) -> None:
    value = {"text": "héllo", "n": 3, "nested": {"a": [1, 2.5, None, True]}}
    assert items.put(("users", "alice"), "prefs", value, data=b"\x00\xffbytes")
    got = items.get(("users", "alice"), "prefs")
    assert got is not None
    assert got.value == value and got.data == b"\x00\xffbytes"
    assert got.namespace == ("users", "alice") and got.key == "prefs"
    assert got.created_at == got.updated_at == clock.now
    got.value["n"] = 99  # a copy: changing it changes nothing stored
    assert items.get(("users", "alice"), "prefs").value["n"] == 3  # type: ignore[union-attr]
    clock.advance(seconds=5)
    items.put(("users", "alice"), "prefs", {"n": 4})
    again = items.get(("users", "alice"), "prefs")
    assert again is not None and again.value == {"n": 4} and again.data is None
    assert again.created_at == got.created_at and again.updated_at == clock.now
    assert items.get(("users", "alice"), "other") is None
    assert items.get(("users",), "prefs") is None  # namespaces match exactly


def test_delete_and_delete_under(items: ItemStore) -> None:
    for ns in [("a",), ("a", "b"), ("a", "b", "c"), ("ab",)]:
        items.put(ns, "k", {"ns": list(ns)})
    assert items.delete(("a",), "k") and not items.delete(("a",), "k")
    assert items.delete_under(("a", "b")) == 2
    assert [i.namespace for i in items.scan()] == [("ab",)]  # whole segments only
    assert items.count() == 1


def test_collections_are_apart(items: ItemStore, clock: Clock) -> None:
    other = ItemStore(items.store, "other", clock=clock)
    items.put(("ns",), "k", {"mine": True})
    assert other.get(("ns",), "k") is None and other.count() == 0
    other.put(("ns",), "k", {"mine": False})
    assert items.get(("ns",), "k").value == {"mine": True}  # type: ignore[union-attr]
    assert other.namespaces() == [("ns",)]


def test_scan_orders_and_bounds(items: ItemStore, clock: Clock) -> None:
    for key in ["c", "a", "d", "b"]:
        clock.advance(seconds=1)
        items.put(("t", "1"), key, {"k": key})
    items.put(("t", "1", "sub"), "z", {"k": "z"})
    exact = items.scan(("t", "1"), exact=True, order="-key")
    assert [i.key for i in exact] == ["d", "c", "b", "a"]
    assert [i.key for i in items.scan(("t", "1"), order="-updated")] == ["z", "b", "d", "a", "c"]
    assert [
        i.key for i in items.scan(("t", "1"), exact=True, order="key", after="a", before="d")
    ] == ["b", "c"]
    assert [
        i.key for i in items.scan(("t", "1"), exact=True, order="-key", before="c", limit=1)
    ] == ["b"]
    assert [i.key for i in items.scan(("t",), order="key", limit=2, offset=1)] == ["b", "c"]
    assert [
        i.key for i in items.scan(("t",), filter={"k": {"$gte": "c"}}, order="key", offset=1)
    ] == ["d", "z"]


def test_batch_is_all_or_nothing(items: ItemStore) -> None:
    items.put(("b",), "keep", {"v": 1})
    with pytest.raises(RuntimeError), items.batch() as b:
        b.put(("b",), "new", {"v": 2})
        b.delete(("b",), "keep")
        assert b.get(("b",), "new") is not None and b.get(("b",), "keep") is None
        raise RuntimeError("boom")
    assert items.get(("b",), "new") is None and items.get(("b",), "keep") is not None
    with items.batch() as b:
        b.put(("b",), "new", {"v": 2})
        b.delete(("b",), "keep")
    assert [i.key for i in items.scan(("b",))] == ["new"]


def test_if_absent_keeps_the_live_item(items: ItemStore, clock: Clock) -> None:
    assert items.put(("w",), "k", {"v": 1}, if_absent=True)
    assert not items.put(("w",), "k", {"v": 2}, if_absent=True)
    assert items.get(("w",), "k").value == {"v": 1}  # type: ignore[union-attr]
    items.put(("w",), "t", {"v": 1}, ttl=1)
    clock.advance(seconds=2)
    assert items.put(("w",), "t", {"v": 2}, if_absent=True)  # an expired item is absent


# ---------------------------------------------------------------------- filters
@pytest.mark.parametrize(
    ("flt", "keys"),
    [
        ({"kind": "fact"}, ["1", "3"]),
        ({"kind": {"$eq": "fact"}}, ["1", "3"]),
        ({"kind": {"$ne": "fact"}}, ["2", "4"]),  # a missing field is not "fact"
        ({"score": {"$gt": 0.5}}, ["3"]),
        ({"score": {"$gte": 0.5}}, ["2", "3"]),
        ({"score": {"$lt": 0.5, "$gte": 0}}, ["1"]),
        ({"score": {"$lte": 0.5}}, ["1", "2"]),
        ({"kind": "fact", "score": {"$gt": 0.5}}, ["3"]),
        ({"meta": {"lang": "en"}}, ["1"]),  # nested objects match field by field
        ({"meta.lang": "de"}, ["2"]),  # a dotted path
        ({"tags": ["a", "b"]}, ["3"]),
        ({"flag": True}, ["2"]),
        ({"flag": 1}, []),  # JSON true is not 1
        ({"kind": None}, ["4"]),  # a missing field equals null
        ({"score": {"$gt": "x"}}, []),  # a string never orders against a number
    ],
)
def test_filters_follow_langgraph(
    items: ItemStore, flt: dict[str, object], keys: list[str]
) -> None:
    rows = {
        "1": {"kind": "fact", "score": 0.1, "meta": {"lang": "en", "x": 1}},
        "2": {"kind": "note", "score": 0.5, "meta": {"lang": "de"}, "flag": True},
        "3": {"kind": "fact", "score": 0.9, "tags": ["a", "b"]},
        "4": {"other": 1},
    }
    for k, v in rows.items():
        items.put(("f",), k, v)
    assert sorted(i.key for i in items.scan(("f",), filter=flt)) == keys


def test_unknown_filter_operator_is_typed(items: ItemStore) -> None:
    with pytest.raises(InvalidArgumentError, match=r"\$regex") as e:
        items.scan(filter={"a": {"$regex": "x"}})
    assert e.value.hint


# ---------------------------------------------------------------------- namespaces
def test_namespaces_match_depth_and_paging(items: ItemStore) -> None:
    for ns in [("a", "x", "1"), ("a", "y", "1"), ("a", "y", "2"), ("b", "x"), ("ab", "x")]:
        items.put(ns, "k", {})
    assert items.namespaces() == sorted(
        [("a", "x", "1"), ("a", "y", "1"), ("a", "y", "2"), ("b", "x"), ("ab", "x")]
    )
    assert items.namespaces(match=[("prefix", ("a",))]) == [
        ("a", "x", "1"),
        ("a", "y", "1"),
        ("a", "y", "2"),
    ]
    assert items.namespaces(match=[("suffix", ("x",))]) == [("ab", "x"), ("b", "x")]
    assert items.namespaces(match=[("prefix", ("a", "*", "1"))]) == [
        ("a", "x", "1"),
        ("a", "y", "1"),
    ]
    assert items.namespaces(match=[("prefix", ("a",)), ("suffix", ("2",))]) == [("a", "y", "2")]
    assert items.namespaces(max_depth=1) == [("a",), ("ab",), ("b",)]
    assert items.namespaces(max_depth=2, limit=2, offset=1) == [("a", "y"), ("ab", "x")]


# ---------------------------------------------------------------------- vectors
def test_vector_search_max_pools_fields_and_pages(items: ItemStore) -> None:
    items.put(("v",), "x", {"n": 1}, vectors={"a": [1, 0, 0], "b": [0, 1, 0]})
    items.put(("v",), "y", {"n": 2}, vectors={"a": [0.7, 0.7, 0]})
    items.put(("v",), "z", {"n": 3}, vectors={"a": [0, 0, 1]})
    items.put(("v",), "plain", {"n": 4})
    hits = items.search(("v",), vector=[0, 1, 0])
    assert [h.item.key for h in hits] == ["x", "y", "z", "plain"]
    assert hits[0].score == pytest.approx(1.0) and hits[-1].score is None
    assert hits[1].score == pytest.approx(0.7071, abs=1e-3)
    assert [h.item.key for h in items.search(("v",), vector=[0, 1, 0], limit=2, offset=1)] == [
        "y",
        "z",
    ]
    filtered = items.search(("v",), vector=[0, 1, 0], filter={"n": {"$gte": 2}}, limit=2, offset=1)
    assert [h.item.key for h in filtered] == ["z", "plain"]
    items.put(("v",), "x", {"n": 1})  # replacing the value drops the old vectors
    assert [h.item.key for h in items.search(("v",), vector=[0, 1, 0], limit=2)] == ["y", "z"]
    assert items.dims == 3
    with pytest.raises(DimensionMismatchError):
        items.put(("v",), "w", {}, vectors={"a": [1, 2]})
    with pytest.raises(InvalidArgumentError, match="dimensions"):
        items.search(("v",), vector=[1, 2])


def test_search_sees_every_handles_writes(data_dir: Path, items: ItemStore, clock: Clock) -> None:
    items.put(("c",), "a", {}, vectors={"f": [1, 0]})
    assert [h.item.key for h in items.search(("c",), vector=[0, 1])] == ["a"]  # now cached
    with ItemStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, clock=clock) as other:
        other.put(("c",), "b", {}, vectors={"f": [0, 1]})
        assert [h.item.key for h in items.search(("c",), vector=[0, 1])] == ["b", "a"]
        other.put(("c",), "b", {}, vectors={"f": [1, 0]})  # replaced: its old vector goes
        hits = items.search(("c",), vector=[0, 1])
        assert [round(h.score or 0, 3) for h in hits] == [0.0, 0.0]
        other.delete(("c",), "a")
        assert [h.item.key for h in items.search(("c",), vector=[0, 1])] == ["b"]
    items.put(("c",), "short", {}, vectors={"f": [0, 1]}, ttl=5)
    assert items.search(("c",), vector=[0, 1], limit=1)[0].item.key == "short"
    clock.advance(seconds=6)  # expired: never returned, though its vector is still cached
    assert [h.item.key for h in items.search(("c",), vector=[0, 1])] == ["b"]


def test_hybrid_ranking_fuses_keywords(items: ItemStore) -> None:
    items.put(("h",), "vec", {}, vectors={"t": [1, 0]}, text="nothing in common")
    items.put(("h",), "word", {}, vectors={"t": [0.6, 0.8]}, text="the zebra crossing")
    plain = items.search(("h",), vector=[1, 0], text="zebra")
    assert [h.item.key for h in plain] == ["vec", "word"]  # vector ranking ignores text
    hybrid = items.search(("h",), vector=[1, 0], text="zebra", ranking="hybrid")
    assert [h.item.key for h in hybrid] == ["word", "vec"]
    assert hybrid[0].score == pytest.approx(0.6)  # the score stays the cosine


# ---------------------------------------------------------------------- time to live
def test_ttl_expiry_refresh_and_sweep(items: ItemStore, clock: Clock) -> None:
    items.put(("t",), "short", {"v": 1}, ttl=10)
    items.put(("t",), "forever", {"v": 2})
    clock.advance(seconds=8)
    assert items.get(("t",), "short", refresh_ttl=True) is not None  # restarts the 10 s
    clock.advance(seconds=8)
    assert items.get(("t",), "short") is not None  # 16 s after the put, 8 after the read
    clock.advance(seconds=3)
    assert items.get(("t",), "short") is None  # expired: never returned
    assert [i.key for i in items.scan(("t",))] == ["forever"]
    assert items.namespaces() == [("t",)] and items.count() == 1
    assert items.sweep_expired() == 1 and items.sweep_expired() == 0
    items.put(("gone",), "k", {}, ttl=1)
    clock.advance(seconds=1)
    assert items.namespaces() == [("t",)]  # a namespace of expired items is not listed


def test_search_refreshes_ttl_only_when_asked(items: ItemStore, clock: Clock) -> None:
    items.put(("s",), "k", {}, ttl=10)
    clock.advance(seconds=9)
    assert len(items.search(("s",))) == 1
    clock.advance(seconds=2)
    assert items.search(("s",)) == []
    items.put(("s",), "k", {}, ttl=10)
    clock.advance(seconds=9)
    assert len(items.search(("s",), refresh_ttl=True)) == 1
    clock.advance(seconds=2)
    assert len(items.search(("s",))) == 1


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda s: s.put((), "k", {}), "must not be empty"),
        (lambda s: s.put("users", "k", {}), "tuple of strings"),
        (lambda s: s.put(("a", 1), "k", {}), "segments must be strings"),
        (lambda s: s.put(("a\x1fb",), "k", {}), "NUL or"),
        (lambda s: s.put(("a",), 5, {}), "key must be a string"),
        (lambda s: s.put(("a",), "k\ud800", {}), "surrogate"),
        (lambda s: s.put(("a",), "k", [1, 2]), "JSON object"),
        (lambda s: s.put(("a",), "k", {"when": datetime.now(UTC)}), "not JSON"),
        (lambda s: s.put(("a",), "k", {"x": float("nan")}), "NaN"),
        (lambda s: s.put(("a",), "k", {1: "int key"}), "keys must be strings"),
        (lambda s: s.put(("a",), "k", {}, data="text"), "bytes"),
        (lambda s: s.put(("a",), "k", {}, ttl=-1), "ttl"),
        (lambda s: s.put(("a",), "k", {}, vectors={"f": [float("inf")]}), "NaN or infinity"),
        (lambda s: s.search(("a",), limit=0), "limit"),
        (lambda s: s.search(("a",), offset=-1), "offset"),
        (lambda s: s.search(("a",), ranking="magic"), "ranking"),
        (lambda s: s.namespaces(max_depth=0), "max_depth"),
        (lambda s: s.namespaces(match=[("middle", ("a",))]), "namespace match"),
    ],
)
def test_bad_input_is_a_typed_error_and_writes_nothing(
    items: ItemStore, call: object, says: str
) -> None:
    items.put(("a",), "k", {"kept": True})
    with pytest.raises(InvalidArgumentError, match=says):
        call(items)  # type: ignore[operator]
    assert [i.value for i in items.scan()] == [{"kept": True}]


def test_deep_and_huge_values(items: ItemStore) -> None:
    deep: dict[str, object] = {}
    cur = deep
    for _ in range(MAX_METADATA_DEPTH + 1):
        cur["d"] = {}
        cur = cur["d"]  # type: ignore[assignment]
    with pytest.raises(InvalidArgumentError, match="nested"):
        items.put(("a",), "deep", deep)
    big = {"text": "x" * (8 * 1024 * 1024)}
    items.put(("a",), "big", big, data=b"y" * (4 * 1024 * 1024))
    got = items.get(("a",), "big")
    assert got is not None and got.value == big and len(got.data or b"") == 4 * 1024 * 1024


def test_closed_handle_raises_typed(data_dir: Path) -> None:
    s = ItemStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    s.close()
    s.close()  # idempotent
    for call in (
        lambda: s.get(("a",), "k"),
        lambda: s.put(("a",), "k", {}),
        lambda: s.search(("a",)),
        lambda: s.namespaces(),
        lambda: s.scan(),
    ):
        with pytest.raises(StoreClosedError):
            call()
    # A handle on a memory store someone else closed is closed too.
    mem = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    on_mem = ItemStore(mem, "c")
    mem.close()
    with pytest.raises(StoreClosedError):
        on_mem.get(("a",), "k")


def test_threads_share_one_handle(items: ItemStore) -> None:
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(20):
                items.put(("th", str(t)), str(i), {"t": t, "i": i})
                assert items.get(("th", str(t)), str(i)).value == {"t": t, "i": i}  # type: ignore[union-attr]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == [] and items.count(("th",)) == 80


def test_two_handles_on_one_data_dir(data_dir: Path, items: ItemStore) -> None:
    with ItemStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as second:
        items.put(("x",), "1", {"from": 1})
        second.put(("x",), "2", {"from": 2})
        assert {i.key for i in items.scan(("x",))} == {"1", "2"}
        assert {i.key for i in second.scan(("x",))} == {"1", "2"}


def test_namespace_checks_hold_for_repeated_tuples(items: ItemStore) -> None:
    """Valid tuple namespaces are memoized: a refused one is refused every time, and
    the same namespace as a tuple or a list reads the same items."""
    for _ in range(2):
        with pytest.raises(InvalidArgumentError, match="NUL"):
            items.put(("a", "b\x00"), "k", {})
        with pytest.raises(InvalidArgumentError, match="empty"):
            items.put((), "k", {})
    items.put(("a", "b"), "k", {"v": 1})
    assert items.get(("a", "b"), "k") == items.get(["a", "b"], "k")
    assert [i.namespace for i in items.scan(("a", "b"), exact=True)] == [("a", "b")]
