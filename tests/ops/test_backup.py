"""`backup` / `restore`: consistent, encrypted, checked; the restored store answers the same."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agentzero_store.base.errors import (
    CorruptStoreError,
    StoreExistsError,
    StoreNotFoundError,
    TamperedRecordError,
)
from agentzero_store.ops import backup_store, restore_store, verify_store
from agentzero_store.ops.backup import read_manifest
from rag.store import DocumentStore

from ..conftest import FAST, PASSPHRASE, js, run_cli, scan_for, text_needles, tree_digest
from .conftest import CRED, SECRET_WORD, answers


def test_round_trip_answers_every_query_the_same(populated: Path, tmp_path: Path) -> None:
    before = answers(populated)
    result = backup_store(populated, CRED, tmp_path / "bk")
    assert result.memory_seq == 121 and result.log_seq == 27
    assert set(result.files) == {"keys.json", "memory.db", "rag/index.jsonl"}  # no sidecars
    assert scan_for(tmp_path / "bk", text_needles(SECRET_WORD)) == []  # encrypted at rest
    assert all(p.stat().st_mode & 0o077 == 0 for p in (tmp_path / "bk").rglob("*") if p.is_file())
    restored = restore_store(tmp_path / "bk", tmp_path / "new", CRED)
    assert restored.verify.clean and restored.store_id == result.store_id
    assert answers(tmp_path / "new") == before


def test_backup_leaves_the_source_untouched(populated: Path, tmp_path: Path) -> None:
    before = tree_digest(populated)
    backup_store(populated, CRED, tmp_path / "bk")
    after = tree_digest(populated)
    # SQLite may create its -wal/-shm beside a reader; nothing else may change.
    assert {k: v for k, v in after.items() if "memory.db-" not in k} == {
        k: v for k, v in before.items() if "memory.db-" not in k
    }


def test_backup_beside_a_writer_is_consistent(populated: Path, tmp_path: Path) -> None:
    stop = threading.Event()
    with DocumentStore.open(populated, passphrase=PASSPHRASE, config=FAST) as docs:

        def write() -> None:
            i = 0
            while not stop.is_set():
                docs.ingest(f"live-{i}", f"written during the backup {i}")
                i += 1

        t = threading.Thread(target=write)
        t.start()
        try:
            result = backup_store(populated, CRED, tmp_path / "bk")
        finally:
            stop.set()
            t.join()
    restored = restore_store(tmp_path / "bk", tmp_path / "new", CRED)
    assert restored.verify.clean and restored.log_seq == result.log_seq >= 27


def test_restore_refuses_a_non_empty_dir(populated: Path, tmp_path: Path) -> None:
    backup_store(populated, CRED, tmp_path / "bk")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("keep me")
    with pytest.raises(StoreExistsError):
        restore_store(tmp_path / "bk", tmp_path / "busy", CRED)
    assert (tmp_path / "busy" / "x").read_text() == "keep me"
    with pytest.raises(StoreExistsError):
        backup_store(populated, CRED, tmp_path / "busy")


@pytest.mark.parametrize("victim", ["memory.db", "rag/index.jsonl", "keys.json"])
def test_restore_refuses_a_damaged_backup(populated: Path, tmp_path: Path, victim: str) -> None:
    backup_store(populated, CRED, tmp_path / "bk")
    path = tmp_path / "bk" / victim
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="checksum"):
        restore_store(tmp_path / "bk", tmp_path / "new", CRED)
    assert not (tmp_path / "new").exists()


def test_restore_refuses_an_edited_manifest_or_an_incomplete_backup(
    populated: Path, tmp_path: Path
) -> None:
    backup_store(populated, CRED, tmp_path / "bk")
    manifest = tmp_path / "bk" / "backup.json"
    m = json.loads(manifest.read_text())
    m["log_seq"] = 1
    manifest.write_text(json.dumps(m))
    with pytest.raises(TamperedRecordError):
        restore_store(tmp_path / "bk", tmp_path / "new", CRED)
    manifest.unlink()  # as if the backup had been interrupted before its commit point
    with pytest.raises(StoreNotFoundError):
        restore_store(tmp_path / "bk", tmp_path / "new", CRED)


def test_cli_backup_restore_verify(populated: Path, tmp_path: Path) -> None:
    bk, new = tmp_path / "bk", tmp_path / "new"
    backup = js(run_cli(populated, "store", "backup", str(bk), "--json", passphrase=PASSPHRASE))
    assert backup["log_seq"] == 27
    restore = ["store", "restore", str(bk), "--data-dir", str(new), "--json"]
    r = js(run_cli(populated, *restore, passphrase=PASSPHRASE))
    assert r["verify"]["clean"] is True
    assert verify_store(new, CRED).clean
    again = run_cli(populated, *restore, passphrase=PASSPHRASE, check=False)
    assert again.returncode == 4 and js(again)["error"] == "store_exists"


def test_each_backup_is_noted_outside_the_store_and_a_failed_note_fails_nothing(
    populated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentzero_store.storage.backup_log import FILE, last_backup, state_dir

    first = backup_store(populated, CRED, tmp_path / "bk1")
    assert first.recorded and last_backup(first.store_id) == {
        "at": read_manifest(tmp_path / "bk1")["created_at"],
        "memory_seq": first.memory_seq,
        "log_seq": first.log_seq,
    }
    assert (state_dir() / FILE).stat().st_mode & 0o077 == 0
    (state_dir() / FILE).write_text("{not json")  # damaged: started again, never an error
    second = backup_store(populated, CRED, tmp_path / "bk2")
    assert second.recorded and last_backup(second.store_id) is not None
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the state dir should be")
    monkeypatch.setenv("AGENTZERO_STATE_DIR", str(blocked / "state"))
    third = backup_store(populated, CRED, tmp_path / "bk3")
    assert not third.recorded and read_manifest(tmp_path / "bk3")["store_id"] == third.store_id
