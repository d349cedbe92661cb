"""Shared helpers for the sidecar/HNSW tests: clustered vectors and store builders.

Clustered vectors (not isotropic Gaussian): HNSW recall on random Gaussians is
meaningless (about 0.35 at ef=50 with hnswlib 0.8), real embeddings are clustered.
"""

from __future__ import annotations

import functools
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS

KEY = bytes(range(32))
FAST = StoreConfig(kdf=FAST_KDF_FOR_TESTS)
DIM = 384
CLUSTERS = 64
ROOT = Path(__file__).resolve().parents[2]

_CENTROIDS = np.random.default_rng(1234).normal(size=(CLUSTERS, DIM)).astype(np.float32)


_BLOCK = 1024


@functools.lru_cache(maxsize=64)
def _noise(block: int, dim: int) -> npt.NDArray[np.float32]:
    return np.random.default_rng(10_000 + block).normal(size=(_BLOCK, dim)).astype(np.float32)


def vecs(start: int, n: int, dim: int = DIM) -> npt.NDArray[np.float32]:
    """Deterministic clustered unit vectors ``start .. start+n-1`` as an (n, dim) matrix."""
    idx = np.arange(start, start + n)
    noise = np.concatenate(
        [_noise(b, dim) for b in range(start // _BLOCK, (start + n - 1) // _BLOCK + 1)]
    )
    x = _CENTROIDS[idx % CLUSTERS, :dim] + 0.35 * noise[idx - (start // _BLOCK) * _BLOCK]
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def vec(i: int, dim: int = DIM) -> npt.NDArray[np.float32]:
    """Deterministic clustered unit vector number ``i``."""
    return vecs(i, 1, dim)[0]


def entry(i: int, *, conversations: int = 40) -> MemoryEntry:
    """Entry ``i`` in conversation ``conv{i % conversations}`` of org "o", agent "a"."""
    return MemoryEntry(
        f"memory number {i}", org_id="o", agent_id="a", conversation_id=f"conv{i % conversations}"
    )


def fill(store: SqliteMemoryStore, start: int, n: int, *, batch: int = 2_000) -> list[str]:
    """Append entries ``start..start+n-1`` with clustered vectors; returns their ids."""
    ids: list[str] = []
    x = vecs(start, n)
    for b in range(0, n, batch):
        m = min(batch, n - b)
        ids += store.append_many(
            [entry(start + b + j) for j in range(m)], vectors=list(x[b : b + m])
        )
    return ids


def checkpoint_vectors(data_dir: Path, keys: Any, dim: int) -> npt.NDArray[np.float32]:
    """Every element's vector (deleted ones included) in the memory store's HNSW
    checkpoint on disk, decrypted and verified the way the sidecar reads it."""
    from agentzero_store.base.config import Layout
    from agentzero_store.memory.sqlite.index import MAGIC
    from agentzero_store.sidecar.hnsw import HnswIndex
    from agentzero_store.sidecar.manifest import CheckpointFiles, coverage, data_aad

    files = CheckpointFiles(Layout(data_dir).memory_hnsw, keys.sidecar_key)
    seq, table = coverage(files.read_manifest())
    _, plain = files.read_sealed(
        table, lambda name: data_aad(keys.store_id, "hnsw", seq, name), in_place=False
    )
    blob = plain["index"]
    head = len(MAGIC) + 8
    (glen,) = struct.unpack_from("<Q", blob, len(MAGIC))
    state = HnswIndex(dim).parse(memoryview(blob)[head : head + glen])
    return np.array(state.rows(dim)[1])


def run_child(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (a native crash then fails the test, not pytest)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )
