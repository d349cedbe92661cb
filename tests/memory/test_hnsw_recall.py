"""Semantic recall through the HNSW sidecar: same answers as exact search, nothing leaks."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import DimensionMismatchError, MemoryEntry, SqliteMemoryStore
from agentzero_store.memory.sqlite.hnsw import exact_scope_limit
from agentzero_store.sidecar.hnsw import HnswIndex
from tests.support.hnsw import DIM, FAST, KEY, entry, fill, run_child, vec, vecs

N = 3_000


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[SqliteMemoryStore, SqliteMemoryStore]]:
    """The same data dir opened twice: with the HNSW index and exact-only."""
    data = tmp_path / "data"
    ann = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True)
    exact = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=False)
    yield ann, exact
    ann.close()
    exact.close()


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.id for h in hits]


def test_index_is_created_with_the_first_vector_and_reenabled_by_its_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True)
    h = s.hnsw_index
    assert h is not None and h.sidecar is None  # no vector yet: no dimension yet
    assert (data / "memory.hnsw").is_dir()
    s.append(MemoryEntry("no vector"))  # a vector-less entry does not create the index
    assert h.sidecar is None
    fill(s, 0, 5)
    assert h.sidecar is not None and h.sidecar.index.count() == 5
    s.close()
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST)  # hnsw=None: the dir decides
    assert s.hnsw_index is not None and s.hnsw_index.open_report is not None
    assert s.hnsw_index.open_report.loaded
    s.close()
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=False)
    assert s.hnsw_index is None
    s.close()


def test_unscoped_and_scoped_recall_match_exact(
    pair: tuple[SqliteMemoryStore, SqliteMemoryStore],
) -> None:
    ann, exact = pair
    fill(ann, 0, N)
    assert ann.hnsw_index is not None and ann.hnsw_index.ready
    queries = vecs(500_000, 60)
    found = 0
    for q in queries:
        found += len(set(ids(ann.semantic_recall(q, 10))) & set(ids(exact.semantic_recall(q, 10))))
        # A conversation is a small scope (N/40 rows): exactly the exact top-k, in order.
        for scope in (
            {"conversation_id": "conv7"},
            {"org_id": "o", "agent_id": "a", "conversation_id": "conv3"},
        ):
            want = ids(exact.semantic_recall(q, 5, **scope))
            assert ids(ann.semantic_recall(q, 5, **scope)) == want
    assert found / (10 * len(queries)) >= 0.99


def test_large_scope_goes_through_hnsw_and_never_leaks(tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True)
    x = vecs(0, 2 * (exact_scope_limit(10, 6_000) + 1_000))
    half = len(x) // 2
    s.append_many([MemoryEntry(f"a{i}", org_id="A") for i in range(half)], vectors=list(x[:half]))
    s.append_many([MemoryEntry(f"b{i}", org_id="B") for i in range(half)], vectors=list(x[half:]))
    exact = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=False)
    try:
        found = 0
        h = s.hnsw_index
        assert h is not None
        before = dict(h.answers)
        for i in range(40):
            q = x[i * 37 % len(x)]
            hits = s.semantic_recall(q, 10, org_id="B")
            assert len(hits) == 10 and all(h.entry.org_id == "B" for h in hits)
            found += len(set(ids(hits)) & set(ids(exact.semantic_recall(q, 10, org_id="B"))))
        assert found / 400 >= 0.97
        assert h.answers["index"] - before["index"] >= 35  # not the exact fallback
    finally:
        exact.close()
        s.close()


def test_deletes_forget_and_expiry_never_come_back(tmp_path: Path) -> None:
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    s = SqliteMemoryStore.open(
        tmp_path / "d", key=KEY, config=FAST, hnsw=True, clock=lambda: now[0]
    )
    try:
        got = fill(s, 0, 400)
        exp = s.append_with_embedding(
            MemoryEntry("short-lived", expires_at=now[0] + timedelta(hours=1)), vec(10_000)
        )
        assert ids(s.semantic_recall(vec(10_000), 1)) == [exp]
        now[0] += timedelta(hours=2)
        assert exp not in ids(s.semantic_recall(vec(10_000), 10))  # expired: filtered
        assert s.gc_expired() == 1
        assert s.delete(got[5])
        assert got[5] not in ids(s.semantic_recall(vec(5), 10))
        assert s.forget(conversation_id="conv9") == 10
        for i in range(9, 400, 40):
            assert all(h.entry.conversation_id != "conv9" for h in s.semantic_recall(vec(i), 10))
        h = s.hnsw_index
        assert h is not None and h.sidecar is not None
        assert h.sidecar.index.count() == s.count() == 400 - 1 - 10
    finally:
        s.close()


def test_another_process_writes_are_seen_before_answering(
    pair: tuple[SqliteMemoryStore, SqliteMemoryStore],
) -> None:
    ann, _ = pair
    fill(ann, 0, 50)
    p = run_child(
        """
import sys
from agentzero_store import SqliteMemoryStore
from tests.support.hnsw import FAST, KEY, fill
s = SqliteMemoryStore.open(sys.argv[1], key=KEY, config=FAST, hnsw=False)
print(fill(s, 50, 5)[2])
s.close()
""",
        str(ann.data_dir),
    )
    assert p.returncode == 0, p.stderr
    other_id = p.stdout.split()[-1]
    assert ids(ann.semantic_recall(vec(52), 1)) == [other_id]


def test_wrong_dimension_query_raises_and_the_process_lives(tmp_path: Path) -> None:
    p = run_child(
        """
import sys
import numpy as np
from agentzero_store import DimensionMismatchError, SqliteMemoryStore
from agentzero_store.sidecar.hnsw import HnswIndex
from tests.support.hnsw import FAST, KEY, fill, vec
s = SqliteMemoryStore.open(sys.argv[1], key=KEY, config=FAST, hnsw=True)
fill(s, 0, 100)
for bad in (np.ones(383, "float32"), np.ones(385, "float32"), np.ones((2, 384), "float32")):
    try:
        s.semantic_recall(bad, 5)
        raise SystemExit("no error")
    except DimensionMismatchError:
        pass
    try:
        s.hnsw_index.sidecar.index.search(bad, 5)
        raise SystemExit("no error from the adapter")
    except DimensionMismatchError:
        pass
assert s.semantic_recall(vec(3), 1)
s.close()
print("alive")
""",
        str(tmp_path / "d"),
    )
    assert p.returncode == 0 and p.stdout.strip() == "alive", p.stderr[-2000:]


def test_adapter_rejects_wrong_dimension_inserts() -> None:
    idx = HnswIndex(DIM)
    with pytest.raises(DimensionMismatchError):
        idx.insert([(1, np.ones(DIM - 1, np.float32).tobytes())])
    with pytest.raises(DimensionMismatchError):
        idx.add_vectors(np.array([1], np.uint64), np.ones((1, DIM + 1), np.float32))
    assert idx.count() == 0


def test_no_vector_is_ever_on_disk_in_plaintext(tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True)
    fill(s, 0, 350)  # three checkpoints
    for e in s.recent(20):
        assert e.id is not None
        s.delete(e.id)
    rows = s.vectors_after(0, 10_000)
    stored = [b for _, b in rows]
    inputs = [vec(i).tobytes() for i in range(350)]
    # hnswlib re-normalises what it stores (last-bit differences): scan for its copies too.
    h = s.hnsw_index
    assert h is not None and h.sidecar is not None
    native = np.asarray(
        h.sidecar.index.hnsw._index.get_items([lab for lab, _ in rows]),  # type: ignore[attr-defined]
        dtype=np.float32,
    )
    in_graph = [v.tobytes() for v in native]

    def scan() -> None:
        blobs = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
        assert any(p.suffix == ".sealed" for p in blobs)
        for v in (*stored, *inputs, *in_graph):
            for chunk in (v[:32], v[600:632]):  # any 8 consecutive floats
                for p, blob in blobs.items():
                    assert chunk not in blob, f"plaintext vector bytes in {p}"

    scan()  # while open (WAL and SHM present)
    s.close()
    scan()


def test_sidecar_dir_deleted_while_open_keeps_recall_and_rebuilds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True)
    try:
        got = fill(s, 0, 500)
        h = s.hnsw_index
        assert h is not None
        shutil.rmtree(data / "memory.hnsw")
        assert ids(s.semantic_recall(vec(7), 1)) == [got[7]]  # exact or index: right answer
        # The watcher's event and the rebuild run in other threads: the deadline only
        # bounds a rebuild that never comes (~0.3 s here; minutes on a loaded machine).
        deadline = time.monotonic() + 120
        while not (h.ready and (data / "memory.hnsw" / "manifest.json").exists()):
            assert time.monotonic() < deadline, "no background rebuild"
            time.sleep(0.05)
        assert h.sidecar is not None and h.sidecar.index.count() == 500
        more = fill(s, 500, 3)
        assert ids(s.semantic_recall(vec(501), 1)) == [more[1]]
    finally:
        s.close()
    m = json.loads((data / "memory.hnsw" / "manifest.json").read_text())
    assert m["entries"] == 503


def test_native_search_failure_falls_back_to_exact_and_rebuilds(tmp_path: Path) -> None:
    s = SqliteMemoryStore.open(tmp_path / "d", key=KEY, config=FAST, hnsw=True)
    try:
        got = fill(s, 0, 200)
        h = s.hnsw_index
        assert h is not None and h.sidecar is not None
        # Named fault injection: the native index object is gone, as after a bad free.
        h.sidecar.index.hnsw._index = None  # type: ignore[attr-defined]
        assert ids(s.semantic_recall(vec(11), 1)) == [got[11]]
        assert h.wait_ready(120)  # joins the rebuild thread; 120 s only bounds a hang
        assert ids(s.semantic_recall(vec(12), 1)) == [got[12]]
    finally:
        s.close()


def test_entry_scope_fields_are_what_the_tests_assume() -> None:
    e = entry(85)
    assert (e.org_id, e.agent_id, e.conversation_id) == ("o", "a", "conv5")
