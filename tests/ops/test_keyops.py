"""change-passphrase, export-recovery, rotate (and resuming it after a crash at each step)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentzero_store import SqliteMemoryStore
from agentzero_store.base.config import Layout
from agentzero_store.base.errors import RotationInProgressError, WrongKeyError
from agentzero_store.ops import change_passphrase, export_recovery, rotate_keys, verify_store
from agentzero_store.ops import rotate as rotate_mod
from agentzero_store.storage.credentials import Credential
from agentzero_store.storage.keys import unlock

from ..conftest import FAST, PASSPHRASE, js, run_cli, tree_digest
from .conftest import CRED, answers


def _data_files(root: Path) -> dict[str, str]:
    return {
        k: v
        for k, v in tree_digest(root).items()
        if k != "keys.json" and not k.startswith("writer.lock")
    }


def test_change_passphrase_rewraps_only(populated: Path) -> None:
    before, data = answers(populated), _data_files(populated)
    change_passphrase(populated, CRED, "a new passphrase")
    assert _data_files(populated) == data  # no data file rewritten
    with pytest.raises(WrongKeyError):
        unlock(Layout(populated), CRED)
    assert answers(populated, "a new passphrase") == before


def test_change_passphrase_from_a_raw_key_adds_a_passphrase(tmp_path: Path) -> None:
    key = bytes(range(32))
    SqliteMemoryStore.open(tmp_path / "d", key=key, config=FAST).close()
    change_passphrase(tmp_path / "d", Credential.from_key(key), "pw added", kdf=FAST.kdf)
    unlock(Layout(tmp_path / "d"), Credential.from_key(key))
    unlock(Layout(tmp_path / "d"), Credential.from_passphrase("pw added"))


def test_export_recovery_opens_and_replaces_the_previous_one(populated: Path) -> None:
    first, _ = export_recovery(populated, CRED)
    second, change = export_recovery(populated, CRED)
    assert change.slots == ["primary", "recovery"]
    keys = unlock(Layout(populated), Credential.from_key(second))
    assert keys.master == unlock(Layout(populated), CRED).master
    with pytest.raises(WrongKeyError):
        unlock(Layout(populated), Credential.from_key(first))


def test_rotate_changes_every_key_and_keeps_every_answer(populated: Path) -> None:
    before = answers(populated)
    old = unlock(Layout(populated), CRED)
    log_before = Layout(populated).rag_log.read_bytes().splitlines()
    export_recovery(populated, CRED)
    assert list(Layout(populated).rag_tantivy.glob("*.tree"))  # blinded BM25 checkpoint
    r = rotate_keys(populated, CRED)
    assert r.memory_rekeyed and r.log_resealed and r.sidecars_dropped == 2
    # Its terms were hashed under the old key: gone with the manifest, rebuilt on open.
    assert not list(Layout(populated).rag_tantivy.glob("*.tree"))
    assert r.slots_dropped == ["recovery"]
    new = unlock(Layout(populated), CRED)
    assert new.master != old.master and new.store_id == old.store_id
    log_after = Layout(populated).rag_log.read_bytes().splitlines()
    assert len(log_after) == len(log_before)
    assert not set(log_after) & set(log_before)  # every record re-sealed
    assert verify_store(populated, CRED).clean
    assert answers(populated) == before


def test_rotate_drops_the_log_catalog_sealed_under_the_old_key(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rag.catalog
    from rag import DocumentStore

    monkeypatch.setattr(rag.catalog, "MIN_NEW_RECORDS", 1)
    DocumentStore.open(populated, passphrase=PASSPHRASE, config=FAST).close()
    catalog = Layout(populated).rag_catalog
    assert catalog.exists() and catalog == rag.catalog.catalog_path(Layout(populated).rag_log)
    before = answers(populated)
    rotate_keys(populated, CRED)
    assert not catalog.exists()
    assert answers(populated) == before


STEPS = [
    "_rekey_memory",
    "_verify_memory",
    "reseal_log",
    "_reseal_ledger",
    "drop_sidecar_checkpoints",
    "_commit",
]


class Crash(BaseException):
    """Stands in for a kill between two steps."""


@pytest.mark.parametrize("step", STEPS)
def test_rotation_interrupted_before_each_step_resumes_on_open(
    populated: Path, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = answers(populated)

    def crash(*a: object, **k: object) -> None:
        raise Crash(step)

    if step == "reseal_log":
        monkeypatch.setattr("rag.maintenance.reseal_log", crash)
    else:
        monkeypatch.setattr(rotate_mod, step, crash)
    with pytest.raises(Crash):
        rotate_keys(populated, CRED)
    monkeypatch.undo()
    assert "rotation" in json.loads(Layout(populated).keys.read_text())
    with pytest.raises(RotationInProgressError):
        unlock(Layout(populated), CRED)
    report = verify_store(populated, CRED)
    assert not report.clean and report.findings[0].fix == "agentzero key rotate"
    # A plain open finishes the rotation, with the same credential.
    SqliteMemoryStore.open(populated, passphrase=PASSPHRASE, config=FAST).close()
    assert "rotation" not in json.loads(Layout(populated).keys.read_text())
    assert verify_store(populated, CRED).clean
    assert answers(populated) == before


def test_cli_key_commands(populated: Path) -> None:
    r = js(run_cli(populated, "key", "export-recovery", "--json", passphrase=PASSPHRASE))
    recovery = r["recovery_key"]
    assert len(recovery) == 64
    ok = run_cli(
        populated, "store", "verify", "--json", env={"AGENTZERO_DATA_KEY": recovery}, passphrase=""
    )
    assert js(ok)["checked"]["keys"]["slot"] == "recovery"
    js(
        run_cli(
            populated,
            "key",
            "change-passphrase",
            "--json",
            passphrase=PASSPHRASE,
            env={"AGENTZERO_NEW_PASSPHRASE": "second"},
        )
    )
    rot = js(run_cli(populated, "key", "rotate", "--json", passphrase="second"))
    assert rot["slots_dropped"] == ["recovery"] and rot["resumed"] is False
    old = run_cli(populated, "store", "verify", check=False, passphrase=PASSPHRASE)
    assert old.returncode == 3
    assert js(run_cli(populated, "store", "verify", "--json", passphrase="second"))["clean"]


def test_resume_never_starts_a_new_rotation(populated: Path) -> None:
    # E.g. the rotating process finished while this one waited for the writer lock.
    before = unlock(Layout(populated), CRED).master
    assert rotate_mod.resume_rotation(Layout(populated), CRED).master == before
    assert "rotation" not in json.loads(Layout(populated).keys.read_text())
