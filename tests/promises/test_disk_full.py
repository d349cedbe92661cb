"""A full disk (issue 13): every OS error is a ``StoreIOError`` (exit 6, with a hint),
reads keep answering, and once space is freed the store works again, with nothing
acknowledged lost and no manual repair.

Where this machine lets a test mount a small tmpfs (root with CAP_SYS_ADMIN), the disk
is really full: every writer (the document log, SQLite, Tantivy, the writer lock) meets
a real ENOSPC, and the CLI test drives the real ``agentzero`` in child processes until
it does. Elsewhere the same promises are checked in-process through the file-I/O fault
seam (``DiskFullIO``, a fault-injection fake of ``FileIO``), which reaches the document
log but not Tantivy, SQLite or the writer lock. Each test prints which path ran and
records it as the ``enospc_path`` property.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agentzero_store import StoreIOError
from agentzero_store.sidecar import bm25_blinded
from agentzero_store.sidecar.manifest import MANIFEST
from agentzero_store.storage.fileio import TMP_MARKER, FileIO
from agentzero_store.storage.lock import acquire_writer
from rag import DocInput, DocumentStore

from ..conftest import FAST, js
from ..conftest import run_cli as run

KEY = bytes(range(32))
# What must never reach a user: a traceback or a native error's own words.
RAW = (
    "Traceback",
    "ValueError",
    "OSError",
    "PanicException",
    "RuntimeError",
    "Errno",
    "IoError",
    "os error",
    "DatabaseError",
)


@contextlib.contextmanager
def small_disk(where: Path, size: str = "2m") -> Iterator[Path | None]:
    """A tmpfs of ``size`` mounted at ``where``, or None where mounting is not allowed."""
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        yield None
        return
    p = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True,
    )
    if p.returncode != 0:
        yield None
        return
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Take the disk's free space but ``leave`` bytes (0: every last byte)."""
    filler = disk / f"filler-{leave}"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        st = os.statvfs(disk)
        want = st.f_bavail * st.f_frsize - leave
        with contextlib.suppress(OSError):
            while want > 0:
                want -= os.write(fd, b"\0" * min(want, 1 << 20))
        if leave == 0:
            with contextlib.suppress(OSError):
                while True:  # the last partial page, byte by byte
                    os.write(fd, b"\0")
    finally:
        os.close(fd)
    return filler


def free(disk: Path) -> None:
    for p in disk.glob("filler-*"):
        p.unlink()


def report(request: pytest.FixtureRequest, path: str) -> None:
    request.node.user_properties.append(("enospc_path", path))
    print(f"ENOSPC path: {path}")


def no_leftovers(data_dir: Path) -> None:
    """One BM25 checkpoint (the manifest's), no working dir of a dead process, no temp."""
    side = data_dir / "rag" / "index.jsonl.tantivy"
    names = sorted(p.name for p in side.iterdir())
    assert MANIFEST in names and len([n for n in names if n.endswith(".tree")]) == 1, names
    assert not [n for n in names if n.startswith("work-")], names
    assert not [p for p in data_dir.rglob("*") if TMP_MARKER in p.name]


def text(i: int, words: int = 12) -> str:
    return f"boiler note {i} " + " ".join(f"w{i}x{j}" for j in range(words))


class DiskFullIO(FileIO):
    """Fault-injection fake: while ``full``, every write and fsync fails with ENOSPC."""

    def __init__(self) -> None:
        self.full = False

    def write(self, fd: int, data: bytes) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        super().write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        super().fsync(fd)


def seam_scenario(data_dir: Path) -> None:
    """The promises the fault seam reaches: a full disk under the document log."""
    io = DiskFullIO()
    with DocumentStore.open(data_dir, key=KEY, config=FAST, io=io) as s:
        s.ingest_many([DocInput(f"doc{i}", text(i)) for i in range(5)])
        acked = {f"doc{i}" for i in range(5)}
        io.full = True
        for i in range(5, 8):
            with pytest.raises(StoreIOError) as caught:
                s.ingest(f"doc{i}", text(i))
            assert "ENOSPC" in caught.value.message and caught.value.exit_code == 6
        assert {h.id for h in s.query("boiler", 50)} == acked  # reads still answer
        io.full = False
        s.ingest("after", text(99))
        acked.add("after")
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        assert {d.id for d in s.documents()} == acked
        assert {h.id for h in s.query("boiler", 50)} == acked


def clean(p: subprocess.CompletedProcess[str]) -> int:
    """A CLI run that ended well or with exit 6 and a hint, with no raw error text."""
    assert p.returncode in (0, 6), (p.returncode, p.stderr)
    assert not [w for w in RAW if w in p.stderr], p.stderr
    if p.returncode == 6:
        assert "ENOSPC" in p.stdout or "disk" in p.stdout, p.stdout  # --json error object
        assert js(p)["error"] == "io_error" and js(p)["hint"], p.stdout
    return p.returncode


@pytest.mark.crash
def test_disk_full_through_the_cli(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    with small_disk(tmp_path / "disk") as disk:
        if disk is None:
            report(request, "fault seam (cannot mount a tmpfs here): document log only")
            seam_scenario(tmp_path / "data")
            return
        report(request, "tmpfs: a real ENOSPC under the real CLI")
        data = disk / "data"
        env = {"AGENTZERO_EMBEDDER": "none"}

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return run(data, *args, "--json", check=False, env=env)

        assert cli("init").returncode == 0
        src = tmp_path / "src"
        src.mkdir()
        for i in range(3):
            (src / f"doc{i}.txt").write_text(text(i))
        assert cli("rag", "ingest", str(src)).returncode == 0
        docs = {f"doc{i}.txt" for i in range(3)}  # a file's name is its id
        assert cli("memory", "append", "kettle note 0").returncode == 0
        mems = {"kettle note 0"}

        # Room for a few documents in the log, not for everything around them: ingest
        # until the disk says no. Acknowledged ones must all survive.
        fill(disk, leave=24 << 10)
        codes = []
        for i in range(3, 40):
            p = cli("rag", "ingest", "--id", f"doc{i}", "--text", text(i, 1_200))
            codes.append(clean(p))
            if p.returncode == 6:
                break
            docs.add(f"doc{i}")
        assert codes[-1] == 6 and len(docs) > 3, codes
        fill(disk)  # every last byte
        for args in (("memory", "append", "kettle note 1"), ("rag", "delete", "--id", "doc3")):
            assert clean(cli(*args)) == 6, args

        # Reads on the full disk: BM25 answers (its index moves to RAM when Tantivy
        # cannot commit the changes its checkpoint lacks).
        q = cli("rag", "query", "boiler", "-n", "100")
        assert clean(q) == 0
        assert {h["id"] for h in js(q)} == docs
        r = cli("memory", "search", "kettle", "--mode", "keyword", "-n", "50")
        if clean(r) == 0:  # SQLite in WAL mode may need to create memory.db-shm to read
            assert {h["content"] for h in js(r)} == mems

        free(disk)
        assert cli("rag", "ingest", "--id", "after", "--text", text(99)).returncode == 0
        assert cli("memory", "append", "kettle note 2").returncode == 0
        docs.add("after")
        mems.add("kettle note 2")
        q = cli("rag", "query", "boiler", "-n", "100")
        assert clean(q) == 0 and {h["id"] for h in js(q)} == docs
        r = cli("memory", "search", "kettle", "--mode", "keyword", "-n", "50")
        assert clean(r) == 0 and {h["content"] for h in js(r)} == mems
        v = cli("store", "verify")
        assert v.returncode == 0 and js(v)["clean"], v.stdout
        no_leftovers(data)


def test_bm25_answers_from_ram_while_the_disk_is_full_then_returns_to_disk(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        if disk is None:
            report(request, "fault seam (cannot mount a tmpfs here): document log only")
            seam_scenario(tmp_path / "data")
            return
        report(request, "tmpfs: a real ENOSPC under Tantivy, the log and the writer lock")
        monkeypatch.setattr(bm25_blinded, "DISK_RETRY_S", 0.0)  # retry at the first chance
        data = disk / "data"
        config = replace(FAST, checkpoint_every=5)
        s = DocumentStore.open(data, key=KEY, config=config)
        try:
            s.ingest_many([DocInput(f"a{i}", text(i)) for i in range(10)])
            assert len(s.query("boiler", 50)) == 10  # committed on disk
            s.ingest_many([DocInput(f"b{i}", text(i)) for i in range(3)])  # in the log only
            fill(disk)
            # The query must commit the three new documents: Tantivy cannot, so the
            # index is rebuilt in RAM and answers everything acknowledged.
            assert len(s.query("boiler", 50)) == 13
            assert "RAM" in repr(s.bm25.index)
            fill(disk)  # the pages the failed checkpoint gave back, too
            with pytest.raises(StoreIOError):
                s.ingest("c0", text(0, 5_000))
            with pytest.raises(StoreIOError) as caught:
                acquire_writer(data, timeout=0)  # the lock's holder info cannot be written
            assert "writer.lock" in caught.value.message
            assert len(s.query("boiler", 50)) == 13

            free(disk)
            acquire_writer(data, timeout=0).release()  # the failed claim left it free
            s.ingest_many([DocInput(f"c{i}", text(i)) for i in range(5)])  # a checkpoint due
            assert len(s.query("boiler", 50)) == 18  # rebuilt on disk on the way
            assert "RAM" not in repr(s.bm25.index)
            s.ingest_many([DocInput(f"d{i}", text(i)) for i in range(5)])
            assert s.bm25.covered_seq == s.bm25.applied_seq  # checkpoints work again
        finally:
            s.close()
        with DocumentStore.open(data, key=KEY, config=config) as s:
            assert s.bm25.opened is not None and s.bm25.opened.loaded
            assert len(s.query("boiler", 50)) == 23
        no_leftovers(data)
