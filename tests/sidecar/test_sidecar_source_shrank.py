"""Issue 13, finding 3: a checkpoint that claims more than its source holds is never kept.

Before, `store rebuild` on a source that had lost its end "succeeded" and wrote nothing:
the old checkpoint covered a higher seq, was taken for another process's newer one, and
a later open served it. The opens now refuse such a source (the ledger), but the
mechanism must not trust a checkpoint beyond its source either. The source here is a
list whose end can be cut: the cut is the fault under test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from agentzero_store.sidecar.hnsw import HnswIndex
from agentzero_store.sidecar.manifest import MANIFEST
from agentzero_store.sidecar.mechanism import Sidecar
from agentzero_store.sidecar.types import Change

from ..conftest import rand_vectors

KEY = bytes(range(32))
DIM = 16


class CuttableSource:
    """Inserts 1..n of fixed vectors (float32 bytes); ``cut(m)`` loses every change after m."""

    def __init__(self, n: int) -> None:
        self.vectors = [v.tobytes() for v in rand_vectors(n, DIM)]  # float32, as stored
        self.n = n

    @property
    def store_id(self) -> str:
        return "s" * 32

    def cut(self, m: int) -> None:
        self.n = m

    def source_seq(self) -> int:
        return self.n

    def changes_since(self, seq: int, limit: int) -> Sequence[Change[bytes]]:
        end = min(self.n, seq + limit)
        return [Change(k, "insert", k, self.vectors[k - 1]) for k in range(seq + 1, end + 1)]

    def item_count(self) -> int:
        return self.n

    def snapshot(self, batch: int) -> Iterator[Sequence[tuple[int, bytes]]]:
        for start in range(0, self.n, batch):
            keys = range(start + 1, min(self.n, start + batch) + 1)
            yield [(k, self.vectors[k - 1]) for k in keys]


def sidecar(directory: Path, source: CuttableSource) -> Sidecar[bytes]:
    return Sidecar(directory, HnswIndex(DIM), source, key=KEY, checkpoint_every=10)


def covered(directory: Path) -> int:
    return int(json.loads((directory / MANIFEST).read_text())["covered_seq"])


def test_rebuild_after_the_source_shrank_writes_a_checkpoint_that_matches_it(
    tmp_path: Path,
) -> None:
    src = CuttableSource(300)
    side = sidecar(tmp_path / "idx", src)
    side.open()
    side.checkpoint()
    assert covered(tmp_path / "idx") == 300
    src.cut(150)
    again = sidecar(tmp_path / "idx", src)
    again.rebuild(reason="requested")
    assert covered(tmp_path / "idx") == 150
    assert again.index.count() == 150


def test_open_after_the_source_shrank_rebuilds_instead_of_loading(tmp_path: Path) -> None:
    src = CuttableSource(120)
    side = sidecar(tmp_path / "idx", src)
    side.open()
    side.checkpoint()
    src.cut(40)
    again = sidecar(tmp_path / "idx", src)
    report = again.open()
    assert report.rebuilt and not report.loaded
    assert covered(tmp_path / "idx") == 40
