"""Keys: the header never holds a secret; a wrong credential is an error that changes no byte."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import (
    CorruptStoreError,
    CredentialRequiredError,
    InvalidKeyError,
    MemoryEntry,
    SqliteMemoryStore,
    StoreNotFoundError,
    WrongKeyError,
)
from agentzero_store.base.config import Layout
from agentzero_store.storage.credentials import Credential, parse_key_text, resolve_credential
from agentzero_store.storage.keys import unlock

from ..conftest import FAST, PASSPHRASE, rand_vectors, tree_digest


def _populate(data_dir: Path, **cred: object) -> None:
    s = SqliteMemoryStore.open(data_dir, config=FAST, **cred)  # type: ignore[arg-type]
    vecs = rand_vectors(20)
    for i in range(20):
        s.append_with_embedding(MemoryEntry(content=f"secret note {i}"), vecs[i])
    s.close()


@pytest.mark.parametrize("wrong", [{"passphrase": "wrong"}, {"key": os.urandom(32)}])
def test_wrong_credential_changes_no_byte(data_dir: Path, wrong: dict[str, object]) -> None:
    _populate(data_dir, passphrase=PASSPHRASE)
    before = tree_digest(data_dir)
    mtimes = {p: p.stat().st_mtime_ns for p in data_dir.rglob("*")}
    with pytest.raises(WrongKeyError) as info:
        SqliteMemoryStore.open(data_dir, config=FAST, **wrong)  # type: ignore[arg-type]
    assert info.value.hint
    assert tree_digest(data_dir) == before
    assert {p: p.stat().st_mtime_ns for p in data_dir.rglob("*")} == mtimes


def test_wrong_key_with_open_writer_changes_no_byte(data_dir: Path) -> None:
    """Even with a live WAL beside the database, a wrong key touches nothing."""
    key = os.urandom(32)
    s = SqliteMemoryStore.open(data_dir, key=key, config=FAST)
    s.append_with_embedding(MemoryEntry(content="in the wal"), rand_vectors(1)[0])
    before = tree_digest(data_dir)
    with pytest.raises(WrongKeyError):
        SqliteMemoryStore.open(data_dir, key=os.urandom(32), config=FAST)
    assert tree_digest(data_dir) == before
    s.close()


def test_raw_key_store_rejects_passphrase_with_clear_message(data_dir: Path) -> None:
    _populate(data_dir, key=os.urandom(32))
    with pytest.raises(WrongKeyError, match="opens with a key, not a passphrase"):
        SqliteMemoryStore.open(data_dir, passphrase="x", config=FAST)


def test_keys_json_holds_no_secret(data_dir: Path) -> None:
    key = os.urandom(32)
    s = SqliteMemoryStore.open(data_dir, key=key, config=FAST)
    master, sub = s.keys.master, s.keys.sqlcipher_key
    s.close()
    raw = (data_dir / "keys.json").read_bytes()
    for secret in (key, master, sub):
        for enc in (secret, secret.hex().encode(), base64.b64encode(secret)):
            assert enc not in raw
    assert (data_dir / "keys.json").stat().st_mode & 0o777 == 0o600
    header = json.loads(raw)
    assert {s["kind"] for s in header["slots"]} == {"key"}
    assert "master" not in json.dumps(header).lower()


def test_secrets_not_in_reprs(data_dir: Path) -> None:
    cred = Credential.from_passphrase("hunter2-very-secret")
    assert "hunter2" not in repr(cred)
    s = SqliteMemoryStore.open(data_dir, passphrase="hunter2-very-secret", config=FAST)
    assert s.keys.master.hex() not in repr(s.keys)
    s.close()


def test_key_text_forms() -> None:
    k = os.urandom(32)
    assert parse_key_text(k.hex()) == k
    assert parse_key_text(base64.b64encode(k).decode()) == k
    assert parse_key_text(base64.urlsafe_b64encode(k).decode().rstrip("=")) == k
    with pytest.raises(InvalidKeyError):
        parse_key_text("00" * 16)
    with pytest.raises(InvalidKeyError):
        parse_key_text("not a key!")


def test_key_file_must_be_private(tmp_path: Path, data_dir: Path) -> None:
    kf = tmp_path / "k"
    kf.write_text(os.urandom(32).hex())
    kf.chmod(0o644)
    with pytest.raises(InvalidKeyError, match="chmod 600"):
        SqliteMemoryStore.open(data_dir, key_file=kf, config=FAST)
    assert not data_dir.exists()
    kf.chmod(0o600)
    SqliteMemoryStore.open(data_dir, key_file=kf, config=FAST).close()
    SqliteMemoryStore.open(data_dir, key=bytes.fromhex(kf.read_text()), config=FAST).close()


def test_credential_order_and_env() -> None:
    k = os.urandom(32)
    env = {"AGENTZERO_PASSPHRASE": "p", "AGENTZERO_DATA_KEY": k.hex()}
    assert resolve_credential(passphrase="x", env=env, prompt=False).kind == "passphrase"
    assert resolve_credential(key=k, env=env, prompt=False).secret == k
    assert resolve_credential(env=env, prompt=False).secret == b"p"
    assert resolve_credential(env={"AGENTZERO_DATA_KEY": k.hex()}, prompt=False).secret == k
    with pytest.raises(CredentialRequiredError):
        resolve_credential(env={}, prompt=False)


def test_missing_store_is_not_created_when_create_false(data_dir: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, create=False)
    assert not data_dir.exists()


def test_data_without_keys_is_never_overwritten(data_dir: Path) -> None:
    _populate(data_dir, passphrase=PASSPHRASE)
    (data_dir / "keys.json").unlink()
    before = tree_digest(data_dir)
    with pytest.raises(CorruptStoreError, match="keys.json is missing"):
        SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    assert tree_digest(data_dir) == before


def test_corrupt_key_header_is_named(data_dir: Path) -> None:
    _populate(data_dir, passphrase=PASSPHRASE)
    (data_dir / "keys.json").write_text("{not json")
    with pytest.raises(CorruptStoreError, match="keys.json"):
        SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)


def test_subkeys_are_independent(data_dir: Path) -> None:
    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    ks = {s.keys.sqlcipher_key, s.keys.documents_key, s.keys.sidecar_key}
    s.close()
    assert len(ks) == 3
    again = unlock(Layout(data_dir), Credential.from_passphrase(PASSPHRASE))
    assert again.sqlcipher_key in ks
    assert np.all([len(k) == 32 for k in ks])
