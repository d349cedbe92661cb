"""Index directories lost under an open store (issue 13: fail closed).

A checkpoint that fails (a full disk, an index lost under it) used to leave its
``bm25-*.tree`` dir behind, holding space, until a later checkpoint succeeded: now a
checkpoint no manifest names is removed when it fails, and at open.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from agentzero_store import StoreIOError
from agentzero_store.sidecar import MANIFEST
from rag import DocInput, DocumentStore

from ..conftest import FAST
from .conftest import FakeFaultyIO
from .test_bm25_blinded import corpus, side, trees

KEY = bytes(range(32))
Q = ("boiler pressure", "tax invoice", "sourdough starter oven")
Answers = list[list[tuple[str, float]]]


def docs(n: int, seed: int = 0, prefix: str = "d") -> list[DocInput]:
    return [DocInput(f"{prefix}{k}", text) for k, text in corpus(n, seed)]


def answers(store: DocumentStore, mode: str = "bm25") -> Answers:
    return [
        [(h.id, round(h.score, 4)) for h in store.query(q, 10, mode)]  # type: ignore[arg-type]
        for q in Q
    ]


@pytest.mark.parametrize("op", ["fsync", "replace"])
def test_a_failed_checkpoint_leaves_no_tree_behind(tmp_path: Path, op: str) -> None:
    # fsync: a file of the new tree fails; replace: the manifest's rename fails, after
    # the whole tree was written. Either way no manifest names the new tree: it goes.
    data_dir = tmp_path / "data"
    io = FakeFaultyIO()
    with DocumentStore.open(data_dir, key=KEY, config=FAST, io=io) as s:
        s.ingest_many(docs(40))
        s.bm25.checkpoint()
        (old,) = trees(data_dir)
        s.ingest_many(docs(5, seed=2, prefix="n"))
        io.arm(op, 1, errno.ENOSPC)
        with pytest.raises(StoreIOError):
            s.bm25.checkpoint()
        io.disarm()
        assert trees(data_dir) == [old]
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        assert s.bm25.opened is not None and s.bm25.opened.loaded


def test_trees_no_manifest_names_are_collected_at_open(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        s.ingest_many(docs(30))
    stray = [side(data_dir) / "bm25-000000000001-deadbeef.tree",
             side(data_dir) / "bm25-000000000002-feedf00d.tree"]
    for p in stray:
        p.mkdir()
        (p / "meta.json").write_bytes(b"{}")
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:  # loads the checkpoint
        assert s.bm25.opened is not None and s.bm25.opened.loaded
    assert not any(p.exists() for p in stray)
    # No manifest at all, and the checkpoint after the rebuild fails: still collected.
    for p in stray:
        p.mkdir()
    (side(data_dir) / MANIFEST).unlink()
    io = FakeFaultyIO()
    io.arm("replace", 1, errno.ENOSPC)
    with DocumentStore.open(data_dir, key=KEY, config=FAST, io=io) as s:
        assert s.bm25.opened is not None and s.bm25.opened.rebuilt
        io.disarm()
        assert trees(data_dir) == []  # the failed checkpoint's tree went with the strays
        assert answers(s)[0]
