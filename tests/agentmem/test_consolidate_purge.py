"""Consolidation erases what expired and the forgets past their undo window once per
run: one scrub of the HNSW graph and one checkpoint at the end (no rebuild, and no
checkpoint in between however many changes the run makes), through the same pending
purge as ``erase``, so a crash before the end leaves it for the next open to finish."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agentzero_store.agentmem.lifecycle import Lifecycle
from agentzero_store.sidecar.mechanism import Sidecar
from tests.support.hnsw import checkpoint_vectors

from .conftest import Clock, open_memory

DIM = 32
EXPIRING = 130  # > checkpoint_every: their deletes alone make a checkpoint fall due
KEPT = 60


def _vectors(n: int) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(4).normal(size=(n, DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _write(data_dir: Path, clock: Clock) -> tuple[npt.NDArray[np.float32], dict[str, str]]:
    """Notes with a TTL of a day, one forgotten note and notes to keep; then the clock
    moves on past the TTL and the undo window. Returns the vectors (forgotten first,
    then the expiring ones, then the kept ones) and an id of each kind."""
    v = _vectors(1 + EXPIRING + KEPT)
    rng = np.random.default_rng(9)
    words = [f"w{i}" for i in range(400)]

    def text(i: int) -> str:
        return f"note {i}: " + " ".join(rng.choice(words, size=8, replace=False).tolist())

    with open_memory(data_dir, clock) as mem:
        forgotten = mem.remember("the safe opens with 0815", vector=v[0])
        mem.forget(id=forgotten.id)
        ids = {"forgotten": forgotten.id}
        for i in range(1, 1 + EXPIRING):
            ids["expired"] = mem.remember(text(i), ttl=timedelta(days=1), vector=v[i]).id
        for i in range(1 + EXPIRING, len(v)):
            ids["kept"] = mem.remember(text(i), vector=v[i]).id
    clock.advance(days=30)
    return v, ids


def _gone(rows: npt.NDArray[np.float32], v: npt.NDArray[np.float32]) -> bool:
    """No element of the checkpoint is (nearly) the vector of any row of ``v``."""
    return float((rows @ v.T).max()) < 0.999


def _held(rows: npt.NDArray[np.float32], v: npt.NDArray[np.float32]) -> bool:
    """Every row of ``v`` is an element of the checkpoint."""
    return bool(((rows @ v.T).max(axis=0) > 0.9999).all())


def _count_checkpoints(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    writes: list[int] = []
    write = Sidecar._write_checkpoint

    def counted(self: Sidecar) -> None:  # type: ignore[type-arg]
        writes.append(1)
        write(self)

    def no_rebuild(*a: object, **k: object) -> None:
        raise AssertionError("the HNSW index was rebuilt")

    monkeypatch.setattr(Sidecar, "_write_checkpoint", counted)
    monkeypatch.setattr(Sidecar, "_rebuild", no_rebuild)
    return writes


def test_a_run_erases_expired_and_old_forgets_with_one_checkpoint(
    data_dir: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    v, ids = _write(data_dir, clock)
    erased, kept = v[: 1 + EXPIRING], v[1 + EXPIRING :]
    with open_memory(data_dir, clock) as mem:
        keys = mem.store.keys
        # Before: every vector is in the checkpoint (the forgotten one as a deleted
        # element), so the checks below can see a vector there.
        assert _held(checkpoint_vectors(data_dir, keys, DIM), v)
        writes = _count_checkpoints(monkeypatch)
        report = mem.consolidate()
        assert (report.expired, report.purged) == (EXPIRING, 1)
        assert writes == [1]  # one checkpoint for the whole run
        assert mem.store.database.query("SELECT count(*) FROM am_purge")[0][0] == 0
        rows = checkpoint_vectors(data_dir, keys, DIM)
        assert _gone(rows, erased) and _held(rows, kept)
        assert mem.get(ids["expired"]) is None and mem.get(ids["kept"]) is not None
        again = mem.consolidate().to_dict()
        assert not {k: n for k, n in again.items() if n and k != "dry_run"}
        assert writes == [1]  # nothing changed: nothing written


def test_a_crash_before_the_purge_is_finished_by_the_next_open(
    data_dir: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    v, ids = _write(data_dir, clock)

    class Crash(Exception):
        pass

    def crash(self: Lifecycle) -> bool:
        raise Crash

    mem = open_memory(data_dir, clock)
    keys = mem.store.keys
    try:
        with monkeypatch.context() as mp:
            mp.setattr(Lifecycle, "finish_pending_erase", crash)
            with pytest.raises(Crash):
                mem.consolidate()
        pending = mem.store.database.query("SELECT count(*) FROM am_purge")[0][0]
        assert pending == 1 + EXPIRING
    finally:
        # What a crash leaves on disk: the checkpoint of before the run.
        mem.store.hnsw_index.close = lambda: None  # type: ignore[method-assign, union-attr]
        mem.close()
    assert _held(checkpoint_vectors(data_dir, keys, DIM), v)  # not erased yet
    with open_memory(data_dir, clock) as again:
        assert again.store.database.query("SELECT count(*) FROM am_purge")[0][0] == 0
        rows = checkpoint_vectors(data_dir, keys, DIM)
        assert _gone(rows, v[: 1 + EXPIRING]) and _held(rows, v[1 + EXPIRING :])
        assert again.get(ids["expired"]) is None and again.get(ids["kept"]) is not None
