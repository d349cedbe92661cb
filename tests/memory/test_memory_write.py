"""The batched write path: labels, vectors and the change feed of ``append_many``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import (
    DimensionMismatchError,
    InvalidArgumentError,
    MemoryEntry,
    SqliteMemoryStore,
)
from agentzero_store.embed.vectors import as_vector, as_vectors

from ..conftest import FAST, PASSPHRASE, rand_vectors


def _labels(store: SqliteMemoryStore) -> list[int]:
    return [r[0] for r in store._db.query("SELECT label FROM memory ORDER BY label")]


def test_labels_are_consecutive_and_never_reused(store: SqliteMemoryStore) -> None:
    ids = store.append_many([MemoryEntry(content=f"e{i}") for i in range(5)], rand_vectors(5))
    assert _labels(store) == [1, 2, 3, 4, 5]
    # Deleting the newest rows must not hand their labels out again (HNSW keys by label).
    assert store.delete(ids[4]) and store.delete(ids[3])
    store.append_many([MemoryEntry(content=f"f{i}") for i in range(3)], rand_vectors(3, seed=2))
    assert _labels(store) == [1, 2, 3, 6, 7, 8]
    seqs = [(c.op, c.label) for c in store.changes_since(0)]
    assert seqs == [("insert", i) for i in range(1, 6)] + [("delete", 5), ("delete", 4)] + [
        ("insert", i) for i in (6, 7, 8)
    ]


def test_batch_vectors_match_one_by_one(store: SqliteMemoryStore) -> None:
    vecs = rand_vectors(20, seed=3) * 7.5  # not normalised: the store normalises
    store.append_many([MemoryEntry(content=f"e{i}") for i in range(20)], vecs)
    stored = store.vectors_after(0, 100)
    assert [lab for lab, _ in stored] == list(range(1, 21))
    for (_, blob), v in zip(stored, vecs, strict=True):
        np.testing.assert_allclose(np.frombuffer(blob, np.float32), as_vector(v, 384), atol=1e-6)


def test_mixed_vectors_and_missing_ones(store: SqliteMemoryStore) -> None:
    v = rand_vectors(2, seed=4)
    ids = store.append_many(
        [MemoryEntry(content=f"e{i}", embedding_model="m") for i in range(3)], [v[0], None, v[1]]
    )
    assert [lab for lab, _ in store.vectors_after(0, 10)] == [1, 3]
    assert [store.get(i).embedding_model for i in ids] == ["m", None, "m"]  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["nan", "zero", "dim"])
def test_one_bad_row_rejects_the_whole_batch(store: SqliteMemoryStore, bad: str) -> None:
    store.append_with_embedding(MemoryEntry(content="first"), rand_vectors(1)[0])
    vecs = rand_vectors(4, seed=5)
    if bad == "nan":
        vecs[2, 7] = np.nan
    elif bad == "zero":
        vecs[2] = 0
    else:
        vecs = vecs[:, :100]
    with pytest.raises(DimensionMismatchError) as info:
        store.append_many([MemoryEntry(content=f"e{i}") for i in range(4)], vecs)
    if bad != "dim":
        assert "vector 2" in str(info.value)
    assert store.count() == 1
    assert [c.label for c in store.changes_since(0)] == [1]


def test_as_vectors_matches_as_vector() -> None:
    m = rand_vectors(10, seed=6) * 3
    out = as_vectors(m, 384)
    assert out.dtype == np.float32
    for row, v in zip(out, m, strict=True):
        np.testing.assert_allclose(row, as_vector(v, 384), atol=1e-6)
    with pytest.raises(DimensionMismatchError):
        as_vectors(m[0], 384)


def test_generated_ids_are_time_ordered_uuids(data_dir: Path) -> None:
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    with SqliteMemoryStore.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, clock=lambda: clock[0]
    ) as s:
        ids = s.append_many(
            [MemoryEntry(content="a"), MemoryEntry(content="b", id="mine"), MemoryEntry("c")]
        )
        clock[0] += timedelta(milliseconds=5)
        later = s.append(MemoryEntry(content="d"))
    assert ids[1] == "mine" and len(set(ids)) == 3
    ms = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)
    for i in (ids[0], ids[2], later):
        u = uuid.UUID(i)
        assert u.hex == i and u.version == 7 and u.variant == uuid.RFC_4122
    assert int(ids[0][:12], 16) == int(ids[2][:12], 16) == ms
    assert int(later[:12], 16) == ms + 5 and later > max(ids[0], ids[2])


@pytest.mark.parametrize("bad", ["bare text", {"content": "a dict"}, None])
def test_anything_but_an_entry_is_a_typed_error_and_writes_nothing(
    store: SqliteMemoryStore, bad: object
) -> None:
    with pytest.raises(InvalidArgumentError, match="MemoryEntry records") as err:
        store.append(bad)  # type: ignore[arg-type]
    assert err.value.hint and "MemoryEntry(" in err.value.hint
    with pytest.raises(InvalidArgumentError):
        store.append_many([MemoryEntry("fine"), bad])  # type: ignore[list-item]
    assert store.count() == 0
