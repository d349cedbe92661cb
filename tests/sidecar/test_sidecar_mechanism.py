"""The generic source → sidecar mechanism: verify before load, replay, checkpoint, rebuild."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentzero_store import SqliteMemoryStore, StoreIOError
from agentzero_store.memory.sqlite.hnsw import MemoryVectorSource
from agentzero_store.sidecar.hnsw import HnswIndex
from agentzero_store.sidecar.manifest import MANIFEST
from agentzero_store.sidecar.mechanism import Sidecar
from agentzero_store.sidecar.types import EmbedderInfo
from agentzero_store.storage.fileio import TMP_MARKER, FileIO
from tests.support.hnsw import DIM, FAST, KEY, fill

N = 300


class FaultyIO(FileIO):
    """Fault injection: the ``fail_at``-th durable-file call raises EIO (or exits)."""

    def __init__(self, fail_at: int, *, exit_process: bool = False) -> None:
        self.fail_at = fail_at
        self.exit_process = exit_process
        self.calls = 0

    def _tick(self, what: str) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            if self.exit_process:
                os._exit(137)  # a crash: no cleanup, no finally blocks
            raise OSError(errno.EIO, f"injected fault in {what}")

    def open(self, path: Path, flags: int, mode: int = 0o600) -> int:
        self._tick("open")
        return super().open(path, flags, mode)

    def write(self, fd: int, data: bytes) -> None:
        self._tick("write")
        super().write(fd, data)

    def fsync(self, fd: int) -> None:
        self._tick("fsync")
        super().fsync(fd)

    def replace(self, src: Path, dst: Path) -> None:
        self._tick("replace")
        super().replace(src, dst)

    def fsync_dir(self, path: Path) -> None:
        self._tick("fsync_dir")
        super().fsync_dir(path)

    def unlink(self, path: Path) -> None:
        self._tick("unlink")
        super().unlink(path)


@pytest.fixture
def source_store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    """A store with N vectors and no index enabled: the source for hand-built sidecars."""
    s = SqliteMemoryStore.open(tmp_path / "data", key=KEY, config=FAST, hnsw=False)
    fill(s, 0, N)
    yield s
    s.close()


def make_sidecar(
    store: SqliteMemoryStore,
    directory: Path,
    *,
    io: FileIO | None = None,
    m: int = 16,
    model: str | None = None,
) -> Sidecar[bytes]:
    kw = {"io": io} if io is not None else {}
    return Sidecar(
        directory,
        HnswIndex(DIM, m=m),
        MemoryVectorSource(store),
        key=store.keys.sidecar_key,
        embedder=EmbedderInfo(model, DIM),
        checkpoint_every=100,
        **kw,
    )


def sidecar_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != ".lock")


def test_first_open_builds_then_loads_and_replays(
    source_store: SqliteMemoryStore, tmp_path: Path
) -> None:
    d = tmp_path / "sc"
    first = make_sidecar(source_store, d).open()
    assert first.rebuilt and "missing" in (first.reason or "")
    assert sidecar_files(d)[0].startswith("hnsw-") and MANIFEST in sidecar_files(d)
    fill(source_store, N, 42)  # written while no sidecar was open
    sc = make_sidecar(source_store, d)
    second = sc.open()
    assert second.loaded and not second.rebuilt
    assert second.replayed == 42 and sc.index.count() == N + 42


def test_manifest_records_what_the_design_says(
    source_store: SqliteMemoryStore, tmp_path: Path
) -> None:
    d = tmp_path / "sc"
    make_sidecar(source_store, d, model="m1").open()
    m = json.loads((d / MANIFEST).read_text())
    assert m["format"] == "agentzero-sidecar/1" and m["kind"] == "hnsw"
    assert m["store_id"] == source_store.store_id
    assert m["covered_seq"] == source_store.source_seq() and m["entries"] == N
    assert m["embedder"] == {"model_id": "m1", "dimension": DIM}
    assert m["params"]["M"] == 16 and m["params"]["ef_construction"] == 200
    (f,) = m["files"].values()
    assert len(f["sha256"]) == 64 and (d / f["file"]).stat().st_size == f["bytes"]
    assert len(m["mac"]) == 64


@pytest.mark.parametrize("change", ["covered_seq", "entries", "store_id", "mac", "params"])
def test_edited_manifest_fails_authentication_and_rebuilds(
    source_store: SqliteMemoryStore, tmp_path: Path, change: str
) -> None:
    d = tmp_path / "sc"
    make_sidecar(source_store, d).open()
    m = json.loads((d / MANIFEST).read_text())
    m[change] = {
        "covered_seq": 1,
        "entries": 7,
        "store_id": "x" * 32,
        "mac": "0" * 64,
        "params": {"M": 8},
    }[change]
    (d / MANIFEST).write_text(json.dumps(m))
    sc = make_sidecar(source_store, d)
    r = sc.open()
    assert r.rebuilt and "authentication" in (r.reason or "")
    assert sc.index.count() == N


@pytest.mark.parametrize("what", ["embedder", "params"])
def test_other_embedder_or_params_rebuild(
    source_store: SqliteMemoryStore, tmp_path: Path, what: str
) -> None:
    d = tmp_path / "sc"
    make_sidecar(source_store, d, model="m1").open()
    kw = {"model": "m2"} if what == "embedder" else {"model": "m1", "m": 8}
    r = make_sidecar(source_store, d, **kw).open()  # type: ignore[arg-type]
    assert r.rebuilt and what in (r.reason or "")


def test_sidecar_of_another_store_is_rebuilt(
    source_store: SqliteMemoryStore, tmp_path: Path
) -> None:
    d = tmp_path / "sc"
    make_sidecar(source_store, d).open()
    other = SqliteMemoryStore.open(tmp_path / "other", key=KEY, config=FAST, hnsw=False)
    try:
        fill(other, 0, 10)
        sc = make_sidecar(other, d)
        r = sc.open()
        assert r.rebuilt  # same key material, different store id: the MAC and AAD differ
        assert sc.index.count() == 10
    finally:
        other.close()


def test_authenticated_but_inconsistent_state_never_reaches_hnswlib(
    source_store: SqliteMemoryStore, tmp_path: Path
) -> None:
    """Defence in depth: even a correctly sealed and signed state is size-checked."""
    d = tmp_path / "sc"
    sc = make_sidecar(source_store, d)
    sc.open()
    blob = sc.index.dump()["index"]
    bad = blob.replace(b'"cur_element_count": 300', b'"cur_element_count": 999')
    assert bad != blob

    class Tampered(HnswIndex):
        def dump(self) -> dict[str, bytes]:
            return {"index": bad}

    evil: Sidecar[bytes] = Sidecar(
        d,
        Tampered(DIM),
        MemoryVectorSource(source_store),
        key=source_store.keys.sidecar_key,
        embedder=EmbedderInfo(None, DIM),
    )
    evil.applied_seq = source_store.source_seq() + 0
    evil.checkpoint()  # a validly signed checkpoint of an inconsistent state
    fresh = make_sidecar(source_store, d)
    r = fresh.open()
    assert r.rebuilt and "inconsistent" in (r.reason or "")
    assert fresh.index.count() == N


def test_checkpoint_every_100_changes(source_store: SqliteMemoryStore, tmp_path: Path) -> None:
    d = tmp_path / "sc"
    sc = make_sidecar(source_store, d)
    sc.open()
    base = sc.covered_seq
    for i in range(250):
        fill(source_store, 1_000 + i, 1)
        sc.catch_up()
    assert sc.covered_seq == base + 200 and sc.pending == 50
    assert sc.applied_seq == source_store.source_seq()


def test_deletes_replay_and_are_idempotent(source_store: SqliteMemoryStore, tmp_path: Path) -> None:
    d = tmp_path / "sc"
    sc = make_sidecar(source_store, d)
    sc.open()
    ids = [e.id for e in source_store.recent(5, conversation_id="conv3")]
    for i in ids:
        assert i is not None
        source_store.delete(i)
    sc2 = make_sidecar(source_store, d)
    r = sc2.open()
    assert r.replayed == 5 and sc2.index.count() == N - 5
    sc2.applied_seq -= 5  # replaying the same deletes again must be harmless
    sc2.catch_up()
    assert sc2.index.count() == N - 5


def count_checkpoint_calls(store: SqliteMemoryStore, d: Path) -> int:
    io = FaultyIO(fail_at=-1)
    sc = make_sidecar(store, d, io=io)
    sc.open()
    fill(store, 50_000 + store.source_seq(), 3)
    sc.catch_up()
    io.calls = 0
    sc.checkpoint()
    return io.calls


def test_fault_at_every_checkpoint_step_leaves_old_or_new(
    source_store: SqliteMemoryStore, tmp_path: Path
) -> None:
    d = tmp_path / "sc"
    steps = count_checkpoint_calls(source_store, d)
    assert steps >= 11  # data file and manifest: open, write, fsync, rename, fsync dir; unlink
    for fail_at in range(1, steps + 1):
        old = make_sidecar(source_store, d).open().covered_seq
        fill(source_store, 60_000 + 10 * fail_at, 3)
        io = FaultyIO(fail_at=-1)
        sc = make_sidecar(source_store, d, io=io)
        sc.open()
        new = source_store.source_seq()
        io.calls, io.fail_at = 0, fail_at
        with contextlib.suppress(StoreIOError):
            sc.checkpoint()  # fails at step fail_at (or, past the manifest rename, not at all)
        r = make_sidecar(source_store, d).open()
        assert r.loaded, f"fault at step {fail_at}: {r.reason}"
        assert r.covered_seq in (old, new), fail_at
        names = sidecar_files(d)
        assert not any(TMP_MARKER in n for n in names), names
        assert len(names) == 2, names  # the manifest and the one data file it names


@pytest.mark.crash
def test_process_killed_at_every_checkpoint_step_leaves_old_or_new(
    source_store: SqliteMemoryStore, tmp_path: Path
) -> None:
    from tests.support.hnsw import run_child

    d = tmp_path / "sc"
    steps = count_checkpoint_calls(source_store, d)
    data = source_store.data_dir
    child = """
import sys
from pathlib import Path
from agentzero_store import SqliteMemoryStore
from tests.support.hnsw import FAST, KEY, fill
from tests.sidecar.test_sidecar_mechanism import FaultyIO, make_sidecar
s = SqliteMemoryStore.open(sys.argv[1], key=KEY, config=FAST, hnsw=False)
io = FaultyIO(fail_at=-1, exit_process=True)
sc = make_sidecar(s, Path(sys.argv[2]), io=io)
sc.open()
fill(s, 70_000 + 10 * int(sys.argv[3]), 3)
sc.catch_up()
io.calls, io.fail_at = 0, int(sys.argv[3])
sc.checkpoint()
print("completed")
"""
    for fail_at in range(1, steps + 1):
        old = make_sidecar(source_store, d).open().covered_seq
        p = run_child(child, str(data), str(d), str(fail_at))
        assert p.returncode == 137, p.stderr
        new = source_store.source_seq()
        r = make_sidecar(source_store, d).open()
        assert r.loaded, f"killed at step {fail_at}: {r.reason}"
        assert r.covered_seq in (old, new)
        assert not any(TMP_MARKER in n for n in sidecar_files(d))
