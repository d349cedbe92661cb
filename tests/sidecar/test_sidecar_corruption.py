"""Delete, truncate or flip bytes in each sidecar file: the store reopens, rebuilds, and
answers like exact search. Each reopen runs in a child process, so if a damaged file
ever reached hnswlib and crashed it natively, the test would fail instead of pytest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agentzero_store import SqliteMemoryStore
from agentzero_store.sidecar.manifest import MANIFEST
from tests.support.hnsw import FAST, KEY, fill, run_child

N = 10_000
N_SMALL = 2_000

CHILD = """
import json, sys
import numpy as np
from agentzero_store import SqliteMemoryStore
from tests.support.hnsw import FAST, KEY, vecs
s = SqliteMemoryStore.open(sys.argv[1], key=KEY, config=FAST)
h = s.hnsw_index
r = h.open_report
rows = s.vectors_after(0, 10**9)
labels = np.array([lab for lab, _ in rows])
matrix = np.frombuffer(b"".join(b for _, b in rows), dtype=np.float32).reshape(len(rows), -1)
ids = dict(s._live().query("SELECT label, id FROM memory"))
queries = vecs(1_000_000, 200)
exact = np.argsort(-(queries @ matrix.T), axis=1)[:, :10]
found = 0
for q, top in zip(queries, exact):
    got = {x.id for x in s.semantic_recall(q, 10)}
    found += len(got & {ids[int(labels[j])] for j in top})
print(json.dumps({"rebuilt": r.rebuilt, "reason": r.reason, "entries": h.sidecar.index.count(),
                  "recall": found / (10 * len(queries))}))
s.close()
"""


def _build(data: Path, n: int) -> Path:
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=False)
    fill(s, 0, n)
    s.close()
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True)  # builds + checkpoints
    s.close()
    return data


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """A 10k-vector store (recall is measured at that size) and a 2k one (fast rebuilds)."""
    root = tmp_path_factory.mktemp("corrupt")
    return {N: _build(root / "big", N), N_SMALL: _build(root / "small", N_SMALL)}


def _data_file(d: Path) -> Path:
    (f,) = json.loads((d / MANIFEST).read_text())["files"].values()
    return d / f["file"]


def _flip(at: float) -> Callable[[Path], None]:
    def damage(p: Path) -> None:
        b = bytearray(p.read_bytes())
        i = min(len(b) - 1, int(len(b) * at))
        b[i] ^= 0x40
        p.write_bytes(bytes(b))

    return damage


def _truncate(p: Path) -> None:
    with p.open("r+b") as f:
        f.truncate(p.stat().st_size // 2)


# case -> (file, damage, store size). Every file gets every kind of damage; two cases run
# on 10k vectors to measure recall after a rebuild, the rest on 2k to keep the run short.
CASES: dict[str, tuple[str, Callable[[Path], None], int]] = {
    "manifest-deleted": ("manifest", Path.unlink, N_SMALL),
    "manifest-truncated": ("manifest", _truncate, N_SMALL),
    "manifest-flipped": ("manifest", _flip(0.5), N),
    "data-deleted": ("data", Path.unlink, N_SMALL),
    "data-truncated": ("data", _truncate, N_SMALL),
    "data-flipped-header": ("data", _flip(0.0001), N),
    "data-flipped-tag": ("data", _flip(1.0), N_SMALL),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_damaged_sidecar_is_rebuilt_and_matches_exact(
    bases: dict[int, Path], tmp_path: Path, case: str
) -> None:
    which, damage, n = CASES[case]
    data = tmp_path / "data"
    shutil.copytree(bases[n], data)
    d = data / "memory.hnsw"
    damage(d / MANIFEST if which == "manifest" else _data_file(d))
    p = run_child(CHILD, str(data))
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["rebuilt"], out
    assert out["entries"] == n
    assert out["recall"] >= 0.99, out
    assert "rebuilding the hnsw index" in p.stderr  # the rebuild is logged


def test_intact_sidecar_loads_without_rebuild(bases: dict[int, Path], tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(bases[N], data)
    p = run_child(CHILD, str(data))
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert not out["rebuilt"] and out["entries"] == N and out["recall"] >= 0.99, out
