"""The archive (``memory.archive.db``) through the operations that span the data dir:
key rotation re-keys it, backup/restore carries it, verify checks it against memory.db.

Each test archives real memories through ``AgentMemory`` and works on the real files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentzero_store.base.config import Layout, StoreConfig
from agentzero_store.base.errors import CorruptStoreError, RotationInProgressError
from agentzero_store.ops import backup as backup_mod
from agentzero_store.ops import backup_store, restore_store, rotate_keys, verify_store
from agentzero_store.ops import rotate as rotate_mod
from agentzero_store.storage.keys import unlock
from agentzero_store.storage.sqlcipher import Database

from ..agentmem.conftest import Clock, open_memory
from ..conftest import scan_for, text_needles
from .conftest import CRED

ARCHIVED_TEXT = "the quokka named Zanzibar sleeps in the garage"
KEPT_TEXT = "the weather in Lisbon was mild all week"


def archived_store(root: Path, n_archived: int = 1) -> list[str]:
    """A store with ``n_archived`` archived memories (and one that is not); their ids."""
    ids = []
    with open_memory(root, Clock()) as mem:
        mem.remember(KEPT_TEXT)
        for i in range(n_archived):
            mid = mem.remember(f"{ARCHIVED_TEXT} ({i})").id
            assert mem.archive(mid)
            ids.append(mid)
        assert "quokka" not in mem.store.get(ids[0]).content  # type: ignore[union-attr]
    return ids


def opens_under(path: Path, key: bytes) -> bool:
    """True if the SQLCipher file ``path`` reads under ``key``."""
    try:
        Database(path, key, busy_timeout_ms=StoreConfig().busy_timeout_ms, readonly=True).close()
    except CorruptStoreError:
        return False
    return True


def assert_archived_texts(root: Path, ids: list[str]) -> None:
    with open_memory(root, Clock()) as mem:
        for i, mid in enumerate(ids):
            m = mem.get(mid)
            assert m is not None and m.archived and m.content == f"{ARCHIVED_TEXT} ({i})"


# ---------------------------------------------------------------------- rotation
def test_rotation_rekeys_the_archive(data_dir: Path) -> None:
    ids = archived_store(data_dir, 2)
    layout = Layout(data_dir)
    old = unlock(layout, CRED)
    r = rotate_keys(data_dir, CRED)
    assert r.memory_rekeyed and r.archive_rekeyed
    new = unlock(layout, CRED)
    assert opens_under(layout.memory_archive, new.archive_key)
    assert not opens_under(layout.memory_archive, old.archive_key)
    assert_archived_texts(data_dir, ids)
    assert verify_store(data_dir, CRED).clean


def test_rotation_without_an_archive_creates_none(data_dir: Path) -> None:
    with open_memory(data_dir, Clock()) as mem:
        mem.remember(KEPT_TEXT)
    r = rotate_keys(data_dir, CRED)
    assert r.memory_rekeyed and not r.archive_rekeyed
    assert not Layout(data_dir).memory_archive.exists()


class Crash(BaseException):
    """Stands in for a kill between two steps."""


@pytest.mark.parametrize("step", ["_rekey_archive", "_verify_archive", "_reseal_ledger"])
def test_rotation_interrupted_around_the_archive_resumes_on_open(
    data_dir: Path, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash after memory.db is re-keyed: before the archive's rekey, after its rekey
    committed (before the check), or after both. Every file is under one key; the next
    open probes each and finishes."""
    ids = archived_store(data_dir)
    layout = Layout(data_dir)
    old = unlock(layout, CRED)
    real = getattr(rotate_mod, step)

    def crash(*a: object, **k: object) -> None:
        if step == "_verify_archive":
            real(*a, **k)  # the rekey committed and checks out; the crash comes after
        raise Crash(step)

    monkeypatch.setattr(rotate_mod, step, crash)
    with pytest.raises(Crash):
        rotate_keys(data_dir, CRED)
    monkeypatch.undo()
    with pytest.raises(RotationInProgressError):
        unlock(layout, CRED)
    journal = json.loads(layout.keys.read_text())["rotation"]
    assert journal is not None
    assert not opens_under(layout.memory_db, old.sqlcipher_key)  # memory.db got the new key
    archive_on_old = opens_under(layout.memory_archive, old.archive_key)
    assert archive_on_old == (step == "_rekey_archive")
    # A plain open finishes the rotation with the same credential; the text reads back.
    assert_archived_texts(data_dir, ids)
    assert "rotation" not in json.loads(layout.keys.read_text())
    new = unlock(layout, CRED)
    assert opens_under(layout.memory_archive, new.archive_key)
    assert verify_store(data_dir, CRED).clean


# ---------------------------------------------------------------------- verify
def archive_db(root: Path) -> Database:
    """The archive of ``root`` opened read-write with its real key (to tamper with it)."""
    key = unlock(Layout(root), CRED).archive_key
    return Database(Layout(root).memory_archive, key, busy_timeout_ms=StoreConfig().busy_timeout_ms)


def archive_findings(root: Path) -> list[tuple[str | None, str]]:
    report = verify_store(root, CRED)
    archive = str(Layout(root).memory_archive)
    others = [f for f in report.findings if f.file != archive]
    assert others == []  # only the archive is wrong
    return [(f.where, f.problem) for f in report.findings]


def test_verify_a_healthy_archive_is_clean(data_dir: Path) -> None:
    archived_store(data_dir, 3)
    report = verify_store(data_dir, CRED)
    assert report.clean and report.findings == []
    assert report.checked["memory_archive"] == {
        "pages_checked": True,
        "archived_required": 3,
        "missing_or_different": 0,
    }


def test_verify_a_store_that_never_archived(data_dir: Path) -> None:
    with open_memory(data_dir, Clock()) as mem:
        mem.remember(KEPT_TEXT)
    report = verify_store(data_dir, CRED)
    assert report.clean and report.checked["memory_archive"] == "absent (no memory archived)"


def test_verify_reports_a_deleted_archive(data_dir: Path) -> None:
    ids = archived_store(data_dir, 2)
    Layout(data_dir).memory_archive.unlink()
    ((where, problem),) = archive_findings(data_dir)
    assert where is None and "archive is missing" in problem and "2 archived memories" in problem
    assert all(i in problem for i in ids)


def test_verify_names_the_memory_whose_archived_row_was_deleted(data_dir: Path) -> None:
    ids = archived_store(data_dir, 3)
    db = archive_db(data_dir)
    with db.tx() as c:
        assert c.execute("DELETE FROM archived WHERE id = ?", (ids[1],)).rowcount == 1
    db.close()
    ((where, problem),) = archive_findings(data_dir)
    assert where == f"memory {ids[1]}" and "no text" in problem and "sha256" in problem
    assert not verify_store(data_dir, CRED).clean


def test_verify_names_the_memory_whose_archived_text_was_replaced(data_dir: Path) -> None:
    ids = archived_store(data_dir, 2)
    db = archive_db(data_dir)
    with db.tx() as c:
        c.execute("UPDATE archived SET content = 'something else' WHERE id = ?", (ids[0],))
    db.close()
    ((where, problem),) = archive_findings(data_dir)
    assert where == f"memory {ids[0]}" and "not the one memory.db recorded" in problem


def test_verify_counts_forgotten_archived_memories(data_dir: Path) -> None:
    """A memory forgotten while archived keeps its text in the archive for the undo."""
    (mid,) = archived_store(data_dir)
    with open_memory(data_dir, Clock()) as mem:
        mem.forget(id=mid)
    assert verify_store(data_dir, CRED).clean
    db = archive_db(data_dir)
    with db.tx() as c:
        c.execute("DELETE FROM archived")
    db.close()
    ((where, _),) = archive_findings(data_dir)
    assert where == f"memory {mid}"


def test_verify_reports_another_stores_archive(data_dir: Path, tmp_path: Path) -> None:
    archived_store(data_dir)
    other = tmp_path / "other"
    archived_store(other)
    Layout(other).memory_archive.replace(Layout(data_dir).memory_archive)
    ((_, problem),) = archive_findings(data_dir)
    assert "cannot be read" in problem  # under another store's archive key


def test_verify_reports_an_archive_whose_store_id_was_changed(data_dir: Path) -> None:
    archived_store(data_dir)
    db = archive_db(data_dir)
    with db.tx() as c:
        c.execute("UPDATE meta SET value = 'another-store' WHERE key = 'store_id'")
    db.close()
    ((where, problem),) = archive_findings(data_dir)
    assert where == "meta" and "another store" in problem and "another-store" in problem


def test_verify_caps_per_memory_findings(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentzero_store.ops.verify import memory as verify_mod

    monkeypatch.setattr(verify_mod, "MAX_ID_FINDINGS", 2)
    ids = archived_store(data_dir, 5)
    db = archive_db(data_dir)
    with db.tx() as c:
        c.execute("DELETE FROM archived")
    db.close()
    found = archive_findings(data_dir)
    assert [w for w, _ in found] == [f"memory {i}" for i in sorted(ids)[:2]] + [None]
    assert found[-1][1].startswith("3 more archived memories")


# ---------------------------------------------------------------------- backup / restore
def test_backup_carries_the_archive_and_restore_reads_it(data_dir: Path, tmp_path: Path) -> None:
    ids = archived_store(data_dir, 2)
    result = backup_store(data_dir, CRED, tmp_path / "bk")
    assert set(result.files) == {"keys.json", "memory.db", "memory.archive.db"}
    manifest = json.loads((tmp_path / "bk" / "backup.json").read_text())
    assert "memory.archive.db" in manifest["files"]
    assert scan_for(tmp_path / "bk", text_needles("quokka")) == []  # encrypted at rest
    restored = restore_store(tmp_path / "bk", tmp_path / "new", CRED)
    assert restored.verify.clean
    assert restored.verify.checked["memory_archive"]["archived_required"] == 2
    assert_archived_texts(tmp_path / "new", ids)


def test_restore_refuses_a_backup_whose_archive_was_damaged(data_dir: Path, tmp_path: Path) -> None:
    archived_store(data_dir)
    backup_store(data_dir, CRED, tmp_path / "bk")
    copy = tmp_path / "bk" / "memory.archive.db"
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="checksum"):
        restore_store(tmp_path / "bk", tmp_path / "new", CRED)


def _between_the_copies(
    monkeypatch: pytest.MonkeyPatch, action: object, times: int = 1
) -> list[Path]:
    """Run ``action()`` right after memory.db's copy, ``times`` times; the copied paths."""
    real = backup_mod._snapshot_db
    copied: list[Path] = []

    def snapshot(path: Path, key: bytes, target: Path) -> bool:
        done = real(path, key, target)
        copied.append(path)
        if path.name == "memory.db" and copied.count(path) <= times:
            action()  # type: ignore[operator]
        return done

    monkeypatch.setattr(backup_mod, "_snapshot_db", snapshot)
    return copied


def test_a_memory_archived_between_the_copies_is_a_harmless_spare(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive is copied after memory.db: a text archived in between is in the
    archive's copy but not marked in memory.db's (a spare row, dropped later)."""
    ids = archived_store(data_dir)
    with open_memory(data_dir, Clock()) as mem:
        late = mem.remember("archived while the backup ran").id
        copied = _between_the_copies(monkeypatch, lambda: mem.archive(late))
        backup_store(data_dir, CRED, tmp_path / "bk")
    assert [p.name for p in copied] == ["memory.db", "memory.archive.db"]  # the order
    restored = restore_store(tmp_path / "bk", tmp_path / "new", CRED)
    assert restored.verify.clean
    assert_archived_texts(tmp_path / "new", ids)
    with open_memory(tmp_path / "new", Clock()) as mem:
        m = mem.get(late)
        assert m is not None and not m.archived and m.content == "archived while the backup ran"
        assert late in mem.archive_file.ids()  # the spare copy...
        mem.consolidate()
        assert late not in mem.archive_file.ids()  # ...that consolidation drops


def test_a_restore_between_the_copies_takes_the_pair_again(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """restore() puts the text back in memory.db, then deletes it from the archive: in
    between the copies, memory.db's copy still marks it archived and the archive's copy
    lacks it. The backup sees the gap and copies both again."""
    ids = archived_store(data_dir, 2)
    with open_memory(data_dir, Clock()) as mem:
        copied = _between_the_copies(monkeypatch, lambda: mem.restore(ids[0]))
        backup_store(data_dir, CRED, tmp_path / "bk")
    assert [p.name for p in copied] == ["memory.db", "memory.archive.db"] * 2
    restored = restore_store(tmp_path / "bk", tmp_path / "new", CRED)
    assert restored.verify.clean
    with open_memory(tmp_path / "new", Clock()) as mem:
        assert not mem.get(ids[0]).archived  # type: ignore[union-attr]
        assert mem.get(ids[1]).archived  # type: ignore[union-attr]


def test_backup_refuses_an_archive_that_lacks_a_text(data_dir: Path, tmp_path: Path) -> None:
    ids = archived_store(data_dir, 2)
    db = archive_db(data_dir)
    with db.tx() as c:
        c.execute("DELETE FROM archived WHERE id = ?", (ids[1],))
    db.close()
    with pytest.raises(CorruptStoreError, match=ids[1]):
        backup_store(data_dir, CRED, tmp_path / "bk")
    assert not (tmp_path / "bk" / "backup.json").exists()
    assert not (tmp_path / "bk" / "memory.db").exists()
    Layout(data_dir).memory_archive.unlink()
    with pytest.raises(CorruptStoreError, match="archive is missing"):
        backup_store(data_dir, CRED, tmp_path / "bk2")
