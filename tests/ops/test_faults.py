"""ENOSPC / EIO on the N-th write, fsync or rename of an ingest and of a checkpoint, for
every N: a typed error (or a logged, harmless checkpoint failure), the store reopens
clean, nothing acknowledged is lost."""

from __future__ import annotations

import errno
import shutil
import warnings
from collections import Counter
from pathlib import Path

import pytest

from agentzero_store import StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from agentzero_store.base.errors import StoreIOError
from agentzero_store.ops import verify_store
from agentzero_store.storage.fileio import FileIO
from rag.store import DocumentStore

from ..conftest import PASSPHRASE
from ..rag.conftest import FakeFaultyIO
from .conftest import CRED

EVERY = StoreConfig(kdf=FAST_KDF_FOR_TESTS, checkpoint_every=1)  # each ingest checkpoints
OPS = ("write", "fsync", "replace")


class CountingIO(FileIO):
    """Counts the calls an operation makes (to know every N to fail)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def write(self, fd: int, data: bytes) -> None:
        self.calls["write"] += 1
        super().write(fd, data)

    def fsync(self, fd: int) -> None:
        self.calls["fsync"] += 1
        super().fsync(fd)

    def replace(self, src: Path, dst: Path) -> None:
        self.calls["replace"] += 1
        super().replace(src, dst)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faults") / "base"
    with DocumentStore.open(root, passphrase=PASSPHRASE, config=EVERY) as docs:
        for i in range(5):
            docs.ingest(f"doc-{i}", f"acknowledged document {i}")
    return root


def _calls(base: Path, tmp: Path, action: str) -> Counter[str]:
    root = tmp / "count"
    shutil.copytree(base, root)
    io = CountingIO()
    with DocumentStore.open(root, passphrase=PASSPHRASE, config=EVERY, io=io) as docs:
        io.calls.clear()
        _act(docs, action)
        return Counter(io.calls)


def _act(docs: DocumentStore, action: str) -> None:
    if action == "ingest":
        docs.ingest("new", "the document being ingested when the disk fails")
    else:
        docs.bm25.rebuild(reason="test")  # a full checkpoint: sealed files, then manifest


def _reopen_state(root: Path) -> set[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with DocumentStore.open(root, passphrase=PASSPHRASE, config=EVERY) as docs:
            assert {h.id for h in docs.query("acknowledged", 10)} >= {f"doc-{i}" for i in range(5)}
            return {d.id for d in docs.documents()}


@pytest.mark.crash
@pytest.mark.parametrize("action", ["ingest", "checkpoint"])
def test_every_nth_call_failing(base: Path, tmp_path: Path, action: str) -> None:
    calls = _calls(base, tmp_path, action)
    assert calls["write"] and calls["fsync"] and calls["replace"] or action == "ingest"
    cases = 0
    for op in OPS:
        for nth in range(1, calls[op] + 1):
            for err in (errno.ENOSPC, errno.EIO):
                root = tmp_path / f"{op}-{nth}-{err}"
                shutil.copytree(base, root)
                io = FakeFaultyIO()
                acked = False
                with DocumentStore.open(root, passphrase=PASSPHRASE, config=EVERY, io=io) as docs:
                    io.arm(op, nth, err, partial=op == "write")
                    try:
                        _act(docs, action)
                        acked = True
                    except StoreIOError:
                        pass  # typed; anything else fails the test
                    io.disarm()
                ids = _reopen_state(root)
                assert ids >= {f"doc-{i}" for i in range(5)}
                if action == "ingest" and acked:
                    assert "new" in ids, (op, nth, err)
                report = verify_store(root, CRED)
                assert report.clean, (op, nth, err, report.findings)
                leftovers = [p for p in root.rglob("*") if ".tmp-" in p.name]
                assert leftovers == [], leftovers
                cases += 1
    assert cases >= 6
