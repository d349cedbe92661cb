"""One writer per data dir: waits, names the holder, recovers stale locks; readers pass."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentzero_store import SqliteMemoryStore
from agentzero_store.base.errors import StoreLockedError, StoreNotFoundError
from agentzero_store.storage.lock import acquire_writer, lock_holder, writer_lock
from rag.store import DocumentStore

from ..conftest import FAST, PASSPHRASE, js, run_cli

HOLD = r"""
import sys, time
from agentzero_store.storage.lock import acquire_writer
lock = acquire_writer(sys.argv[1], timeout=5, purpose="test holder")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
print("released", flush=True)
time.sleep(30)
"""


@pytest.fixture
def store_dir(data_dir: Path) -> Path:
    SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST).close()
    return data_dir


def _holder(root: Path, seconds: float) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stdout.readline() == "held\n"
    return p


def test_second_writer_times_out_naming_the_holder(store_dir: Path) -> None:
    p = _holder(store_dir, 60)
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreLockedError, match=f"pid {p.pid} .*test holder"):
            acquire_writer(store_dir, timeout=0.3)
        assert time.monotonic() - t0 >= 0.3
        assert lock_holder(store_dir)["pid"] == p.pid  # type: ignore[index]
    finally:
        p.kill()
        p.wait()


def test_second_writer_waits_for_the_first(store_dir: Path) -> None:
    p = _holder(store_dir, 0.5)
    try:
        with writer_lock(store_dir, timeout=10):
            assert lock_holder(store_dir)["pid"] == os.getpid()  # type: ignore[index]
    finally:
        p.kill()
        p.wait()


def test_lock_of_a_killed_holder_is_taken_over(store_dir: Path) -> None:
    p = _holder(store_dir, 60)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert lock_holder(store_dir)["pid"] == p.pid  # type: ignore[index]  # stale content
    with writer_lock(store_dir, timeout=0):
        assert lock_holder(store_dir)["pid"] == os.getpid()  # type: ignore[index]
    assert lock_holder(store_dir) is None  # released: the name is cleared


def test_reentrant_within_a_process(store_dir: Path) -> None:
    outer = acquire_writer(store_dir, timeout=0)
    with writer_lock(store_dir, timeout=0):
        pass
    # Still held by the outer acquisition: another process cannot take it.
    code = (
        "import sys; from agentzero_store.storage.lock import acquire_writer as a; "
        "a(sys.argv[1], timeout=0)"
    )
    busy = subprocess.run([sys.executable, "-c", code, str(store_dir)], capture_output=True)
    assert busy.returncode != 0 and b"StoreLockedError" in busy.stderr
    outer.release()
    outer.release()  # idempotent
    free = subprocess.run([sys.executable, "-c", code, str(store_dir)], capture_output=True)
    assert free.returncode == 0, free.stderr


def test_locking_never_creates_a_data_dir(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        acquire_writer(tmp_path / "nothing-here", timeout=0)
    assert not (tmp_path / "nothing-here").exists()


def test_cli_writers_wait_readers_pass(store_dir: Path) -> None:
    env = {"AGENTZERO_LOCK_TIMEOUT": "0.5", "AGENTZERO_EMBEDDER": "none"}
    with DocumentStore.open(store_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("d1", "a document written while the lock is held")
        q = run_cli(store_dir, "rag", "query", "document", "--json", passphrase=PASSPHRASE, env=env)
        assert [h["id"] for h in js(q)] == ["d1"]  # a reader beside the writer
        # A second document writer is refused at once (the log has one writer for life)...
        p = run_cli(
            store_dir,
            "rag",
            "ingest",
            "--id",
            "d2",
            "--text",
            "x",
            "--json",
            passphrase=PASSPHRASE,
            env=env,
            check=False,
        )
        assert p.returncode == 6, p.stderr
        assert js(p)["error"] == "store_locked" and "document log" in js(p)["message"]
        # ...but an open document store holds the data dir's writer role only while it
        # writes, so memory writers are not blocked by it (e.g. beside `rag watch`).
        m = run_cli(
            store_dir, "memory", "append", "beside", "--json", passphrase=PASSPHRASE, env=env
        )
        assert js(m)["id"]
        # While a write is really in progress, another writer waits and then names it.
        with acquire_writer(store_dir, purpose="test write"):
            p = run_cli(
                store_dir,
                "memory",
                "append",
                "blocked",
                "--json",
                passphrase=PASSPHRASE,
                env=env,
                check=False,
            )
            assert p.returncode == 6, p.stderr
            assert js(p)["error"] == "store_locked" and f"pid {os.getpid()}" in js(p)["message"]
    ok = run_cli(
        store_dir, "memory", "append", "now free", "--json", passphrase=PASSPHRASE, env=env
    )
    assert js(ok)["id"]


def _locked_elsewhere(root: Path) -> bool:
    code = (
        "import sys; from agentzero_store.storage.lock import acquire_writer as a; "
        "a(sys.argv[1], timeout=0)"
    )
    busy = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True)
    return busy.returncode != 0 and b"StoreLockedError" in busy.stderr


def test_a_kept_descriptor_is_not_used_for_a_new_lock_file(store_dir: Path) -> None:
    """The file stays open between writes; if the path names another file by the next
    write (the old one unlinked, the data dir made anew), the new file is locked, not
    the old inode that nobody else can see."""
    with writer_lock(store_dir, timeout=0):
        pass
    (store_dir / "writer.lock").unlink()
    with writer_lock(store_dir, timeout=0):
        assert lock_holder(store_dir)["pid"] == os.getpid()  # type: ignore[index]
        assert _locked_elsewhere(store_dir)
    assert not _locked_elsewhere(store_dir)


def test_a_forked_child_never_shares_the_parents_lock(store_dir: Path) -> None:
    """A child forked while the parent keeps the file open between writes opens its
    own: a flock on the inherited open file would be the parent's lock (two writers)."""
    with writer_lock(store_dir, timeout=0):
        pass  # the descriptor is now kept, unlocked
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: wait until the parent holds the lock, then try to take it
        code = 1
        try:
            os.read(ready_r, 1)
            try:
                acquire_writer(store_dir, timeout=0).release()
            except StoreLockedError:
                code = 0
        finally:
            os._exit(code)
    os.close(ready_r)
    with writer_lock(store_dir, timeout=0):
        os.write(ready_w, b"x")
        _, status = os.waitpid(pid, 0)
    os.close(ready_w)
    assert os.waitstatus_to_exitcode(status) == 0
