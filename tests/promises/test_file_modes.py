"""What the store leaves on disk: nothing after a failed open, and only private files.

- A wrong credential, or a directory that holds no store, is an error that creates,
  changes and touches no file (not even ``writer.lock``), for every command that writes.
- Every file the store creates is 0600 and every directory 0700, whatever the umask,
  after a realistic session: init, memory append, rag ingest, backup and restore.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentzero_store import MemoryEntry, SqliteMemoryStore

from ..conftest import FAST, PASSPHRASE, rand_vectors, run_cli

NO_EMBEDDER = ("--embedder", "none")


def cli(root: Path, *args: str) -> object:
    return run_cli(root, *args, passphrase=PASSPHRASE)


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """(mode, size, mtime in ns) of ``root`` and of everything under it."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


# Every command that writes (or takes the writer lock), with its arguments. The agent
# memory's reads are here too: opening it writes (its tables, its access log).
WRITERS: list[tuple[str, ...]] = [
    ("memory", "append", "hello", *NO_EMBEDDER),
    ("memory", "import", "{memories}", *NO_EMBEDDER),
    ("memory", "delete", "some-id"),
    ("memory", "delete", "--org", "o1"),
    ("memory", "gc"),
    ("memory", "grant", "hello", *NO_EMBEDDER),
    ("memory", "remember", "hello", *NO_EMBEDDER),
    ("memory", "fact", "Ana", "lives_in", "Lisbon", *NO_EMBEDDER),
    ("memory", "feedback", "some-id", "--used"),
    ("memory", "archive", "some-id"),
    ("memory", "restore", "some-id"),
    ("memory", "forget", "--conversation", "c1"),
    ("memory", "undo", "some-token"),
    ("memory", "erase", "--id", "some-id", "--yes"),
    ("memory", "consolidate"),
    ("memory", "recall", "hello", *NO_EMBEDDER),
    ("memory", "list"),
    ("memory", "facts"),
    ("rag", "ingest", "--id", "d", "--text", "hello", *NO_EMBEDDER),
    ("rag", "delete", "--id", "d"),
    ("rag", "compact"),
    ("store", "rebuild"),
    ("store", "reembed", "--embedder", "local"),  # the model loads only to embed
    ("store", "accept-loss", "--yes"),
    ("key", "change-passphrase"),
    ("key", "rotate"),
    ("key", "export-recovery"),
]


def _args(command: tuple[str, ...], memories: Path) -> list[str]:
    return [a.replace("{memories}", str(memories)) for a in command]


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    f = tmp_path / "in.jsonl"
    f.write_text(json.dumps({"content": "imported"}) + "\n")
    return f


@pytest.mark.parametrize("command", WRITERS, ids=lambda c: " ".join(c[:2]))
def test_wrong_credential_creates_and_touches_no_file(
    data_dir: Path, memories: Path, command: tuple[str, ...]
) -> None:
    run_cli(data_dir, "init", passphrase=PASSPHRASE)
    # As in a restored store (a backup holds no lock file): a failed open must not make one.
    (data_dir / "writer.lock").unlink(missing_ok=True)
    before = snapshot(data_dir)
    p = run_cli(
        data_dir,
        *_args(command, memories),
        "--json",
        passphrase="wrong",
        env={"AGENTZERO_NEW_PASSPHRASE": "new one"},
        check=False,
    )
    assert p.returncode == 3 and json.loads(p.stdout)["error"] == "wrong_key", p
    assert "Traceback" not in p.stderr
    assert snapshot(data_dir) == before  # same names, modes, sizes and mtimes


@pytest.mark.parametrize("command", WRITERS, ids=lambda c: " ".join(c[:2]))
def test_a_directory_without_a_store_gets_no_file(
    tmp_path: Path, memories: Path, command: tuple[str, ...]
) -> None:
    not_a_store = tmp_path / "documents"
    not_a_store.mkdir()
    (not_a_store / "notes.txt").write_text("someone's files")
    before = snapshot(not_a_store)
    p = run_cli(
        not_a_store,
        *_args(command, memories),
        "--json",
        passphrase=PASSPHRASE,
        env={"AGENTZERO_NEW_PASSPHRASE": "new one"},
        check=False,
    )
    assert p.returncode == 4 and json.loads(p.stdout)["error"] == "store_not_found", p
    assert snapshot(not_a_store) == before


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common default umask (files 0644, dirs 0755 unless the store says otherwise);
    subprocesses inherit it."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def loose_modes(*roots: Path) -> list[str]:
    """Every file not 0600 and every directory not 0700 under (and including) ``roots``."""
    bad = []
    for root in roots:
        for p in [root, *sorted(root.rglob("*"))]:
            st = p.lstat()
            mode = stat.S_IMODE(st.st_mode)
            want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
            if mode != want:
                bad.append(f"{p} is {mode:o}, not {want:o}")
    return bad


def test_every_file_is_0600_and_every_dir_0700_after_a_session(
    tmp_path: Path, umask_022: None
) -> None:
    data, backup, restored = tmp_path / "data", tmp_path / "backup", tmp_path / "restored"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tea.md").write_text("Brew green tea at 80 degrees for two minutes.")
    (notes / "bike.txt").write_text("Road bike tyres take 6 bar.")
    cli(data, "init")
    cli(data, "memory", "append", "I am allergic to peanuts", *NO_EMBEDDER)
    cli(data, "rag", "ingest", str(notes), *NO_EMBEDDER)
    cli(data, "rag", "query", "green tea")  # opens and checkpoints the BM25 index
    # Vectors and the HNSW sidecars, through the API in this process (same umask).
    with SqliteMemoryStore.open(data, passphrase=PASSPHRASE, config=FAST, hnsw=True) as mem:
        mem.append_many([MemoryEntry(content=f"note {i}") for i in range(5)], rand_vectors(5))
    cli(data, "store", "rebuild")
    cli(data, "store", "backup", str(backup))
    cli(data, "store", "restore", str(backup), "--data-dir", str(restored))
    cli(restored, "memory", "recall", "peanuts", "--mode", "keyword")
    cli(restored, "memory", "append", "after the restore", *NO_EMBEDDER)
    cli(restored, "rag", "query", "tyres")
    with SqliteMemoryStore.open(restored, passphrase=PASSPHRASE, config=FAST) as mem:
        # While open (the -wal and -shm exist), then after close.
        assert loose_modes(restored) == []
        assert mem.count() == 7
    assert {p.name for p in data.iterdir()} >= {"keys.json", "memory.db", "memory.hnsw", "rag"}
    assert loose_modes(data, backup, restored) == []


def test_a_store_made_through_the_api_is_private_too(tmp_path: Path, umask_022: None) -> None:
    """The CLI makes its whole process private; a host application keeps its own umask,
    so the store's own create points must be private by themselves."""
    from agentzero_store.ops import backup_store, restore_store
    from agentzero_store.storage.credentials import Credential

    data, backup, restored = tmp_path / "data", tmp_path / "backup", tmp_path / "restored"
    with SqliteMemoryStore.open(data, passphrase=PASSPHRASE, config=FAST, hnsw=True) as mem:
        mem.append_many([MemoryEntry(content=f"note {i}") for i in range(5)], rand_vectors(5))
        assert (data / "memory.db-wal").exists() and (data / "memory.db-shm").exists()
        assert loose_modes(data) == []  # memory.db made 0600 first, so its -wal and -shm too
    from rag import DocumentStore

    with DocumentStore.open(data, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("tea", "Brew green tea at 80 degrees for two minutes.")
    assert loose_modes(data) == []  # the BM25 checkpoint's Tantivy files too
    cred = Credential.from_passphrase(PASSPHRASE)
    backup_store(data, cred, backup)
    restore_store(backup, restored, cred)
    assert loose_modes(data, backup, restored) == []
    # A database left group-readable (an older version, a copy) is tightened on open.
    os.chmod(restored / "memory.db", 0o644)
    SqliteMemoryStore.open(restored, passphrase=PASSPHRASE, config=FAST).close()
    assert loose_modes(restored) == []


def test_rotate_through_the_api_with_a_wrong_key_creates_no_lock(tmp_path: Path) -> None:
    from agentzero_store.base.errors import WrongKeyError
    from agentzero_store.ops import rotate_keys
    from agentzero_store.storage.credentials import Credential

    data = tmp_path / "data"
    SqliteMemoryStore.open(data, passphrase=PASSPHRASE, config=FAST).close()
    (data / "writer.lock").unlink(missing_ok=True)
    before = snapshot(data)
    with pytest.raises(WrongKeyError):
        rotate_keys(data, Credential.from_passphrase("not the passphrase"))
    assert snapshot(data) == before
