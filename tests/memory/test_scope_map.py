"""ScopeMap unit tests: bulk load over an HNSW state's rows, upserts after a load, and
the cached scope size (it must never outlive a change or an expiry)."""

from __future__ import annotations

import numpy as np
import pytest

from agentzero_store.base.errors import SidecarCorruptError
from agentzero_store.memory.records import Scope
from agentzero_store.memory.sqlite.scope_map import ScopeMap

DIM = 8


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


def _filled(n: int = 30) -> tuple[ScopeMap, np.ndarray]:
    m = ScopeMap(DIM)
    v = _vectors(n)
    labels = list(range(1, n + 1))
    scopes = [(f"o{i % 3}", "a", f"c{i // 5}") for i in range(n)]
    expires = [1_000 + i if i % 4 == 0 else None for i in range(n)]
    m.upsert(labels, scopes, expires, v)
    return m, v


def _reload(m: ScopeMap, v: np.ndarray, extra: int = 2) -> ScopeMap:
    """Load ``m``'s dump over a fake graph: its rows shuffled, plus ``extra`` rows the
    map does not name (deleted in the graph)."""
    labels = np.arange(1, len(v) + 1 + extra, dtype=np.uint64)
    vecs = np.concatenate([v, _vectors(extra, seed=9)])
    perm = np.random.default_rng(3).permutation(len(labels))
    return ScopeMap.load(memoryview(m.dump()), DIM, labels[perm], vecs[perm])


def _answer(m: ScopeMap, scope: Scope, now: int) -> dict[int, bytes]:
    want = m.resolve(scope)
    assert want is not None
    slots = m.scope_slots(want, now)
    assert slots is not None
    return dict(zip(m.labels(slots).tolist(), (r.tobytes() for r in m.vectors(slots)), strict=True))


@pytest.mark.parametrize(
    "scope", [Scope(), Scope(org_id="o1"), Scope(conversation_id="c2"), Scope("o0", "a", "c3")]
)
def test_load_answers_like_the_map_it_was_dumped_from(scope: Scope) -> None:
    m, v = _filled()
    m.delete([4, 7])
    loaded = _reload(m, v)
    for now in (0, 1_010, 5_000):
        assert _answer(loaded, scope, now) == _answer(m, scope, now)
    assert sorted(loaded.live_labels().tolist()) == sorted(m.live_labels().tolist())
    assert loaded.live == m.live


def test_upsert_after_load_replaces_the_vector_and_moves_the_scope() -> None:
    m, v = _filled()
    loaded = _reload(m, v)
    new = _vectors(1, seed=5)
    loaded.upsert([3], [("o9", "a", "c9")], [None], new)
    assert _answer(loaded, Scope(org_id="o9"), 0) == {3: new[0].tobytes()}
    assert 3 not in _answer(loaded, Scope(org_id="o2"), 0)
    assert loaded.live == m.live
    loaded.upsert([99], [("o1", "b", "c0")], [None], _vectors(1, seed=6))
    both = _answer(loaded, Scope(org_id="o1"), 0)
    assert 99 in both and 2 in both  # a tail row and a loaded row in one gather


def test_load_refuses_a_map_naming_rows_the_graph_lacks() -> None:
    m, v = _filled()
    labels = np.arange(2, len(v) + 1, dtype=np.uint64)  # label 1 missing
    with pytest.raises(SidecarCorruptError):
        ScopeMap.load(memoryview(m.dump()), DIM, labels, v[1:])


def test_scope_size_is_recounted_after_changes_and_expiry() -> None:
    m, _ = _filled()
    want = m.resolve(Scope(org_id="o0"))
    assert want is not None
    first = m.scope_size(want, 0)
    assert first == 10
    # Row index 0 (label 1, org o0) expires at 1_000: the cached count must not outlive it.
    assert m.scope_size(want, 999) == 10
    assert m.scope_size(want, 1_000) == 9
    m.delete([4])  # label 4 = row index 3 (org o0)
    assert m.scope_size(want, 1_000) == 8
    m.upsert([50], [("o0", "a", "c0")], [None], _vectors(1))
    assert m.scope_size(want, 1_000) == 9


def test_memory_index_round_trip_keeps_vectors_scopes_and_deletes() -> None:
    """dump → load_buffers: the map reads its vectors compacted in the plaintext buffer,
    and exact answers match the index that was dumped (deleted rows stay out)."""
    from agentzero_store.memory.sqlite.feed import MemoryItem
    from agentzero_store.memory.sqlite.index import MemoryIndex
    from agentzero_store.sidecar.hnsw import HnswIndex

    dim, n = 16, 300
    v = np.random.default_rng(1).normal(size=(n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    items = [
        (i + 1, MemoryItem(v[i].tobytes(), f"o{i % 4}", "a", f"c{i // 10}", None)) for i in range(n)
    ]
    a = MemoryIndex(HnswIndex(dim, ef_construction=40))
    a.insert(items)
    a.delete([5, 17, 200])
    b = MemoryIndex(HnswIndex(dim, ef_construction=40))
    b.load_buffers({"index": bytearray(a.dump()["index"])})
    assert b.count() == a.count() == n - 3
    q = v[7]
    for scope in (Scope(org_id="o1"), Scope(conversation_id="c3"), Scope("o0", "a", "c4")):
        got, how = b.top_k(q, 5, scope, 0)
        want, _ = a.top_k(q, 5, scope, 0)
        assert how == "exact"
        assert [lab for lab, _ in got] == [lab for lab, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-5)
    slots = np.flatnonzero(b.map._live[: b.map.size])
    # hnswlib renormalises what it stores: equal to float32 rounding.
    np.testing.assert_allclose(b.map.vectors(slots), v[b.map.labels(slots) - 1], atol=1e-6)
    # An insert after the load lands in the tail; a loaded row re-upserted moves there too.
    b.insert([(9, MemoryItem(v[0].tobytes(), "o9", "a", "c9", None))])
    got, _ = b.top_k(v[0], 1, Scope(org_id="o9"), 0)
    assert got[0][0] == 9 and got[0][1] == pytest.approx(1.0, abs=1e-5)
