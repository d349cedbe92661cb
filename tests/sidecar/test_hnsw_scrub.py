"""Scrubbing deleted elements out of the HNSW graph (``HnswIndex.scrub``), and the purge
that uses it instead of a rebuild (``SqliteMemoryStore.purge_index``, which erase and
consolidation call): the vectors and links of deleted labels are gone from the graph in
memory and from the checkpoint written after it, the live rows stay searchable, and
nothing is rebuilt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from agentzero_store import SqliteMemoryStore
from agentzero_store.sidecar.hnsw import HnswIndex, State
from agentzero_store.sidecar.mechanism import Sidecar
from tests.support.hnsw import FAST, KEY, checkpoint_vectors, fill, vecs

DIM = 48


def _index(n: int, m: int = 8) -> tuple[HnswIndex, npt.NDArray[np.float32]]:
    x = vecs(0, n, DIM)
    index = HnswIndex(DIM, m=m, ef_construction=100)
    index.add_vectors(np.arange(n, dtype=np.uint64), x)
    return index, x


def _state(index: HnswIndex) -> State:
    return index.parse(memoryview(index.dump()["index"]))


def _links(state: State) -> tuple[list[npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
    """Every element's level-0 neighbours (internal ids), and each upper block's."""
    s, a = state.scalars, state.arrays
    cur, per, off = s["cur_element_count"], s["size_data_per_element"], s["offset_data"]
    rows = a["data_level0"][: cur * per].reshape(cur, per)[:, :off].copy().view(np.uint32)
    level0 = [r[1 : 1 + (r[0] & 0xFFFF)].astype(np.int64) for r in rows]
    blocks = a["link_lists"].copy().view(np.uint32).reshape(-1, 1 + s["max_M"])
    upper = np.concatenate(
        [b[1 : 1 + (b[0] & 0xFFFF)].astype(np.int64) for b in blocks] or [np.zeros(0, np.int64)]
    )
    return level0, upper


def _internal(state: State, labels: Any) -> set[int]:
    ext, internal = state.arrays["label_lookup_external"], state.arrays["label_lookup_internal"]
    return set(internal[np.isin(ext, np.asarray(labels, np.uint64))].tolist())


def _recall(index: HnswIndex, x: npt.NDArray[np.float32], live: npt.NDArray[np.int64]) -> float:
    queries = vecs(10**6, 100, DIM)
    hits = 0
    for q in queries:
        want = set(live[np.argsort(-(x[live] @ q))[:10]].tolist())
        hits += len(want & {lab for lab, _ in index.search(q, 10)})
    return hits / (10 * len(queries))


def test_scrub_leaves_no_vector_and_no_link_of_a_deleted_element() -> None:
    index, x = _index(3_000)
    before = _state(index)
    ep_label = int(
        before.arrays["label_lookup_external"][
            np.flatnonzero(
                before.arrays["label_lookup_internal"] == before.scalars["enterpoint_node"]
            )[0]
        ]
    )
    rng = np.random.default_rng(5)
    deleted = sorted({ep_label, *rng.choice(3_000, 150, replace=False).tolist()})
    live = np.setdiff1d(np.arange(3_000), deleted)
    index.delete(deleted)
    marked = _recall(index, x, live)
    assert index.scrub() == len(deleted)
    assert index.scrub() == 0  # nothing left to do, nothing copied

    state = _state(index)
    labels, held = state.rows(DIM)
    gone = _internal(state, deleted)
    # Vectors: the deleted rows are zero, the live rows are what they were.
    assert not held[np.isin(labels, deleted)].any()
    assert np.allclose(held[np.isin(labels, live)], x[labels[np.isin(labels, live)].astype(int)])
    blob = index.dump()["index"]
    for d in deleted[:40]:
        v = x[d].astype(np.float32).tobytes()
        assert v[:96] not in blob and v[96:] not in blob
    assert float((held @ x[deleted[0]]).max()) < 0.999
    # Links: none to or from a deleted element; its lists are empty; every list's unused
    # tail is zero.
    level0, upper = _links(state)
    assert all(len(level0[g]) == 0 for g in gone)
    assert not gone & {int(i) for row in level0 for i in row}
    assert not gone & set(upper.tolist())
    s = state.scalars
    cur, per, off = s["cur_element_count"], s["size_data_per_element"], s["offset_data"]
    rows = state.arrays["data_level0"][: cur * per].reshape(cur, per)[:, :off].copy()
    rows32 = rows.view(np.uint32)
    counts = rows32[:, 0] & 0xFFFF
    assert all(not rows32[i, 1 + counts[i] :].any() for i in range(cur))
    # The deleted marks and the counts stay; the entry point moved to a live element.
    assert int(((rows32[:, 0] >> 16) & 1).sum()) == len(deleted)
    assert s["enterpoint_node"] not in gone
    levels = state.arrays["element_levels"][:cur]
    assert not levels[sorted(gone)].any() and s["max_level"] == levels.max()
    assert levels[s["enterpoint_node"]] == s["max_level"]
    assert index.count() == len(live)
    # Search: live labels only, and the graph still finds the neighbours.
    assert _recall(index, x, live) >= marked - 0.02
    assert _recall(index, x, live) >= 0.95
    for q in vecs(2 * 10**6, 20, DIM):
        assert not {lab for lab, _ in index.search(q, 20)} & set(deleted)


def test_a_scrubbed_index_reloads_as_it_is_in_memory() -> None:
    index, x = _index(1_200)
    index.delete(list(range(0, 1_200, 7)))
    index.scrub()
    again = HnswIndex(DIM, m=8, ef_construction=100)
    again.load(index.dump())
    assert again.scrub() == 0  # the reload knows they are scrubbed
    ours, theirs = _state(index), _state(again)
    (la, va), (lb, vb) = ours.rows(DIM), theirs.rows(DIM)
    assert np.array_equal(la, lb) and np.array_equal(va, vb)
    assert all(
        np.array_equal(p, q) for p, q in zip(_links(ours)[0], _links(theirs)[0], strict=True)
    )
    for q in vecs(3 * 10**6, 30, DIM):
        assert again.search(q, 10) == index.search(q, 10)


def test_a_scrubbed_label_can_come_back_and_be_found() -> None:
    index, x = _index(800)
    index.delete([5, 6, 7])
    index.scrub()
    index.insert([(6, x[6].tobytes())])  # the same label again (hnswlib relinks it)
    assert index.contains(6) and not index.contains(5)
    assert index.search(x[6], 1)[0][0] == 6
    assert index.scrub() == 0  # 5 and 7 were scrubbed already
    index.delete([6])
    assert index.scrub() == 1


def test_scrubbing_every_element_above_level_zero_leaves_a_flat_graph() -> None:
    """The entry point and every other element of the upper levels go: the top level
    drops to 0 and a live element becomes the entry point (hnswlib reads an element's
    upper lists by the top level, so it must be one the element has)."""
    index, x = _index(1_000)
    state = _state(index)
    levels = state.arrays["element_levels"][: state.scalars["cur_element_count"]]
    ext, internal = state.arrays["label_lookup_external"], state.arrays["label_lookup_internal"]
    high = set(np.flatnonzero(levels > 0).tolist())
    upper = sorted(int(e) for e, i in zip(ext, internal, strict=True) if int(i) in high)
    assert state.scalars["max_level"] >= 1 and upper
    index.delete(upper)
    index.scrub()
    again = HnswIndex(DIM, m=8, ef_construction=100)
    again.load(index.dump())  # the loader's consistency checks pass
    state = _state(again)
    assert state.scalars["max_level"] == 0 and len(state.arrays["link_lists"]) == 0
    live = np.setdiff1d(np.arange(1_000), upper)
    assert _recall(again, x, live) >= 0.9
    assert not {lab for q in vecs(4 * 10**6, 10, DIM) for lab, _ in again.search(q, 10)} & set(
        upper
    )


def test_scrubbing_every_element_then_adding_again() -> None:
    index, x = _index(300)
    index.delete(list(range(300)))
    assert index.scrub() == 300
    assert index.count() == 0 and index.search(x[0], 5) == []
    index.add_vectors(np.arange(300, 400, dtype=np.uint64), vecs(300, 100, DIM))
    assert index.search(vecs(300, 1, DIM)[0], 1)[0][0] == 300


def test_purge_index_writes_one_checkpoint_without_the_deleted_rows_and_never_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "d"
    with SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True) as s:
        ids = fill(s, 0, 600)
        x = vecs(0, 600)
        for i in range(0, 600, 50):
            assert s.delete(ids[i])
    with SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True) as s:
        # The checkpoint written at close holds the deleted rows' vectors (marked only).
        rows = checkpoint_vectors(data, s.keys, 384)
        assert float((rows @ x[50]).max()) > 0.9999

        def no_rebuild(*a: object, **k: object) -> None:
            raise AssertionError("purge_index rebuilt the index")

        monkeypatch.setattr(Sidecar, "_rebuild", no_rebuild)
        writes: list[int] = []
        write = Sidecar._write_checkpoint

        def counted(self: Sidecar) -> None:  # type: ignore[type-arg]
            writes.append(1)
            write(self)

        monkeypatch.setattr(Sidecar, "_write_checkpoint", counted)
        assert s.purge_index()
        assert writes == [1]
        rows = checkpoint_vectors(data, s.keys, 384)
        for i in range(0, 600, 50):
            assert float((rows @ x[i]).max()) < 0.999, i
        assert all(float((rows @ x[i]).max()) > 0.9999 for i in (1, 51, 599))
        hits = s.semantic_recall(x[51], 3)
        assert hits[0].id == ids[51] and ids[50] not in {h.id for h in hits}
    with SqliteMemoryStore.open(tmp_path / "none", key=KEY, config=FAST, hnsw=False) as s:
        assert not s.purge_index()  # no index, nothing to purge


def test_a_scrub_that_fails_is_healed_by_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A native failure while scrubbing must not leave the deleted vectors on disk: the
    index is rebuilt from the source (which no longer has them), then written."""
    data = tmp_path / "d"
    with SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True) as s:
        ids = fill(s, 0, 300)
        x = vecs(0, 300)
        assert s.delete(ids[7])
        failures = [RuntimeError("hnswlib failed")]
        scrub = HnswIndex.scrub

        def flaky(self: HnswIndex) -> int:
            if failures:
                raise failures.pop()
            return scrub(self)

        rebuilds: list[int] = []
        rebuild = Sidecar._rebuild

        def counted(self: Sidecar, *a: Any, **k: Any) -> None:  # type: ignore[type-arg]
            rebuilds.append(1)
            rebuild(self, *a, **k)

        monkeypatch.setattr(HnswIndex, "scrub", flaky)
        monkeypatch.setattr(Sidecar, "_rebuild", counted)
        assert s.purge_index()
        assert rebuilds == [1] and not failures
        rows = checkpoint_vectors(data, s.keys, 384)
        assert float((rows @ x[7]).max()) < 0.999 and float((rows @ x[8]).max()) > 0.9999
        assert s.semantic_recall(x[8], 1)[0].id == ids[8]
