"""What the store leaves on disk: nothing after a failed open, and only private files.

- A wrong credential, or a directory that holds no store, is an error that creates,
  changes and touches no file (not even ``writer.lock``), for every command that writes.
- Every file the store creates is 0600 and every directory 0700, whatever the umask,
  after a realistic session: init, memory append, rag ingest, backup and restore.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import PASSPHRASE, run_cli

NO_EMBEDDER = ("--embedder", "none")


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """(mode, size, mtime in ns) of ``root`` and of everything under it."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


# Every command that writes (or takes the writer lock), with its arguments.
WRITERS: list[tuple[str, ...]] = [
    ("memory", "append", "hello", *NO_EMBEDDER),
    ("memory", "import", "{memories}", *NO_EMBEDDER),
    ("memory", "delete", "some-id"),
    ("memory", "forget", "--org", "o1"),
    ("memory", "gc"),
    ("rag", "ingest", "--id", "d", "--text", "hello", *NO_EMBEDDER),
    ("rag", "delete", "--id", "d"),
    ("rag", "compact"),
    ("store", "rebuild"),
    ("store", "reembed", "--embedder", "local"),  # the model loads only to embed
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
    assert not (data_dir / "writer.lock").exists()
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
