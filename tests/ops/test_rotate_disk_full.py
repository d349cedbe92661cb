"""Issue 13, finding 1: `key rotate` on a nearly full disk must not report success.

SQLCipher's ``PRAGMA rekey`` answers ok when it could not rewrite ``memory.db`` (free
space below the file's size). Rotation now reopens every re-keyed file under the new key
before the commit forgets the old one. The real case runs on a small tmpfs (root may
mount one); the fault-injection case runs everywhere.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.base.errors import StoreIOError
from agentzero_store.ops import rotate as rotate_mod
from agentzero_store.ops import rotate_keys
from agentzero_store.storage.credentials import Credential
from rag import DocumentStore

from ..conftest import FAST, PASSPHRASE, rand_vectors, run_cli

CRED = Credential.from_passphrase(PASSPHRASE)


def fill(root: Path, n: int) -> None:
    with SqliteMemoryStore.open(root, passphrase=PASSPHRASE, config=FAST) as mem:
        mem.append_many(
            [MemoryEntry(content=f"memory {i} " + "x" * 200, org_id="o") for i in range(n)],
            rand_vectors(n),
        )
    with DocumentStore.open(root, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("d", "a document that must survive the rotation")


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    p = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({p.stderr.strip()}); the fault test covers it")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.crash
def test_rotate_on_a_nearly_full_disk_fails_keeps_the_journal_and_resumes(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "fs", "12m") as fs:
        root = fs / "data"
        fill(root, 1500)
        size = (root / "memory.db").stat().st_size
        assert size > 1_000_000
        # Leave less free space than memory.db needs to be rewritten.
        filler = fs / "filler"
        free = shutil.disk_usage(fs).free
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, free - size // 2))
        p = run_cli(root, "key", "rotate", passphrase=PASSPHRASE, check=False)
        assert p.returncode == 6, (p.stdout, p.stderr)
        assert "Traceback" not in p.stderr
        assert "still under the old key" in p.stderr  # rekey said ok; the check did not
        header = json.loads((root / "keys.json").read_text())
        assert header.get("rotation") is not None  # the journal is kept: nothing forgotten
        filler.unlink()
        r = run_cli(root, "key", "rotate", "--json", passphrase=PASSPHRASE)
        assert json.loads(r.stdout)["resumed"] is True
        with SqliteMemoryStore.open(root, passphrase=PASSPHRASE, config=FAST) as mem:
            assert mem.count() == 1500
        v = run_cli(root, "store", "verify", "--json", passphrase=PASSPHRASE)
        assert json.loads(v.stdout)["clean"]


def test_a_rekey_that_answers_ok_but_writes_nothing_is_caught(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: a stand-in for SQLCipher's silent rekey failure."""
    fill(data_dir, 50)

    def silent_rekey(*_: object) -> bool:
        return True  # "ok", and memory.db is still under the old key

    monkeypatch.setattr(rotate_mod, "_rekey_memory", silent_rekey)
    with pytest.raises(StoreIOError, match="still under the old key"):
        rotate_keys(data_dir, CRED)
    assert json.loads((data_dir / "keys.json").read_text()).get("rotation") is not None
    monkeypatch.undo()
    assert rotate_keys(data_dir, CRED).resumed
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        assert mem.count() == 50
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        assert docs.get("d") is not None


def test_rotation_reseals_the_ledger_so_losses_are_still_caught(data_dir: Path) -> None:
    fill(data_dir, 20)
    rotate_keys(data_dir, CRED)
    (data_dir / "rag" / "index.jsonl").unlink()
    p = run_cli(data_dir, "rag", "query", "document", passphrase=PASSPHRASE, check=False)
    assert p.returncode == 5 and "missing" in p.stderr + p.stdout
