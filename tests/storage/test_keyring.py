"""The OS keyring as a credential (``agentzero init --keyring``), with a real backend.

A headless machine has no Keychain, Credential Locker or Secret Service, so the backend is
keyrings.alt's file keyring chosen with ``PYTHON_KEYRING_BACKEND`` (as a headless user
would), its file under a temporary ``XDG_DATA_HOME`` outside the data dir.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import keyring.core
import pytest
from keyrings.alt.file import PlaintextKeyring

from agentzero_store.base.errors import KeyringError
from agentzero_store.ops.create import init_store
from agentzero_store.storage.os_keyring import SERVICE, load_key
from rag import DocumentStore

from ..conftest import js, run_cli, scan_for, tree_digest

FILE_BACKEND = "keyrings.alt.file.PlaintextKeyring"


@pytest.fixture
def kr_env(tmp_path: Path) -> dict[str, str]:
    """Environment of a headless user who chose the file keyring (outside the data dir)."""
    return {
        "PYTHON_KEYRING_BACKEND": FILE_BACKEND,
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
    }


def _keyring_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_DATA_HOME"]) / "python_keyring" / "keyring_pass.cfg"


def _set_entry(env: dict[str, str], account: str, value: str) -> None:
    backend = PlaintextKeyring()
    backend.file_path = str(_keyring_file(env))
    backend.set_password(SERVICE, account, value)


def _slots(data_dir: Path) -> list[str]:
    header = json.loads((data_dir / "keys.json").read_text())
    return sorted(s["id"] for s in header["slots"])


def test_init_keyring_then_every_command_opens_without_a_credential(
    data_dir: Path, kr_env: dict[str, str]
) -> None:
    r = js(run_cli(data_dir, "init", "--keyring", "--json", passphrase="", env=kr_env))
    assert r["created"] is True and r["keyring"] is True
    store_id = r["store_id"]
    assert _slots(data_dir) == ["keyring"]  # no passphrase: the keyring's key alone
    entry = _keyring_file(kr_env)
    assert entry.is_file() and not entry.is_relative_to(data_dir)
    # The raw key is in the keyring's file (hex), never under the data dir.
    key_hex = _read_entry(kr_env, store_id)
    assert len(bytes.fromhex(key_hex)) == 32
    assert scan_for(data_dir, [key_hex.encode(), bytes.fromhex(key_hex)]) == []

    mid = js(
        run_cli(
            data_dir,
            *("memory", "append", "the spare key is under the blue pot"),
            *("--embedder", "none", "--json"),
            passphrase="",
            env=kr_env,
        )
    )["id"]
    hits = js(
        run_cli(
            data_dir,
            *("memory", "recall", "spare key", "--mode", "keyword", "--json"),
            passphrase="",
            env=kr_env,
        )
    )
    assert [h["id"] for h in hits] == [mid]
    # Key operations take the keyring's key too: a rotation (which rewraps the keyring's
    # own slot, so it keeps opening the store), then a recovery key.
    run_cli(data_dir, "key", "rotate", "--json", passphrase="", env=kr_env)
    assert _slots(data_dir) == ["keyring"]
    recovery = js(run_cli(data_dir, "key", "export-recovery", "--json", passphrase="", env=kr_env))[
        "recovery_key"
    ]
    got = js(run_cli(data_dir, "memory", "get", mid, "--json", passphrase="", env=kr_env))
    assert got["content"] == "the spare key is under the blue pot"
    assert js(run_cli(data_dir, "store", "verify", "--json", passphrase="", env=kr_env))["clean"]
    # The keyring entry lost: the recovery key opens the store.
    entry.unlink()
    with_recovery = {**kr_env, "AGENTZERO_DATA_KEY": recovery}
    got = js(run_cli(data_dir, "memory", "get", mid, "--json", passphrase="", env=with_recovery))
    assert got["id"] == mid


def _read_entry(env: dict[str, str], account: str) -> str:
    backend = PlaintextKeyring()
    backend.file_path = str(_keyring_file(env))
    value = backend.get_password(SERVICE, account)
    assert value is not None
    return value


def test_keyring_beside_a_passphrase_either_opens(data_dir: Path, kr_env: dict[str, str]) -> None:
    r = js(run_cli(data_dir, "init", "--keyring", "--json", passphrase="pw", env=kr_env))
    assert _slots(data_dir) == ["keyring", "primary"]
    run_cli(data_dir, "memory", "append", "x1", "--embedder", "none", passphrase="", env=kr_env)
    _keyring_file(kr_env).unlink()  # the keyring entry is gone: the passphrase still opens
    recent = js(run_cli(data_dir, "memory", "recent", "--json", passphrase="pw", env=kr_env))
    assert [e["content"] for e in recent] == ["x1"]
    assert r["keyring"] is True


def test_missing_keyring_entry_is_a_credential_error_that_changes_nothing(
    data_dir: Path, kr_env: dict[str, str]
) -> None:
    store_id = js(run_cli(data_dir, "init", "--keyring", "--json", passphrase="", env=kr_env))[
        "store_id"
    ]
    run_cli(data_dir, "memory", "append", "x", "--embedder", "none", passphrase="", env=kr_env)
    _keyring_file(kr_env).unlink()
    before = tree_digest(data_dir)
    for args in (("memory", "recent"), ("rag", "list"), ("store", "verify")):
        p = run_cli(data_dir, *args, "--json", passphrase="", env=kr_env, check=False)
        assert p.returncode == 3, (args, p.stdout, p.stderr)
        err = js(p)
        assert err["error"] == "keyring_error"
        assert "holds no key for this store" in err["message"] and store_id in err["message"]
        assert "AGENTZERO_PASSPHRASE" in err["hint"]
    assert tree_digest(data_dir) == before


@pytest.mark.parametrize("entry", ["another-key", "not-a-key"])
def test_wrong_keyring_entry_is_refused_and_changes_nothing(
    data_dir: Path, kr_env: dict[str, str], entry: str
) -> None:
    store_id = js(run_cli(data_dir, "init", "--keyring", "--json", passphrase="", env=kr_env))[
        "store_id"
    ]
    run_cli(data_dir, "memory", "append", "x", "--embedder", "none", passphrase="", env=kr_env)
    _set_entry(kr_env, store_id, os.urandom(32).hex() if entry == "another-key" else "oops")
    before = tree_digest(data_dir)
    p = run_cli(data_dir, "memory", "recent", "--json", passphrase="", env=kr_env, check=False)
    assert p.returncode == 3, p.stderr
    err = js(p)
    if entry == "another-key":
        assert err["error"] == "wrong_key" and "OS keyring" in err["message"]
    else:
        assert err["error"] == "keyring_error" and "not a 32-byte key" in err["message"]
    assert tree_digest(data_dir) == before


def test_keyring_unavailable_is_a_clear_error_with_a_hint(
    data_dir: Path, kr_env: dict[str, str]
) -> None:
    none = {**kr_env, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    p = run_cli(data_dir, "init", "--keyring", passphrase="", env=none, check=False)
    assert p.returncode == 3
    assert "no OS keyring is available" in p.stderr and "PYTHON_KEYRING_BACKEND" in p.stderr
    assert not data_dir.exists()  # nothing was created
    # A keyring store opened where no keyring is: the same error, nothing changed.
    run_cli(data_dir, "init", "--keyring", passphrase="", env=kr_env)
    before = tree_digest(data_dir)
    p = run_cli(data_dir, "memory", "recent", "--json", passphrase="", env=none, check=False)
    assert p.returncode == 3 and js(p)["error"] == "keyring_error"
    assert tree_digest(data_dir) == before


def test_a_backend_keyring_does_not_recommend_is_used_only_when_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As keyring's own detection would pick it on a headless machine with keyrings.alt
    # installed: the plain-file backend, not chosen by the user.
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))  # no keyringrc.cfg
    backend = PlaintextKeyring()
    backend.file_path = str(tmp_path / "kr" / "keyring_pass.cfg")
    monkeypatch.setattr(keyring.core, "_keyring_backend", backend)
    root = tmp_path / "data"
    with pytest.raises(KeyringError, match="does not recommend") as info:
        init_store(root, keyring=True, prompt=False)
    assert f"PYTHON_KEYRING_BACKEND={FILE_BACKEND}" in info.value.hint
    assert not root.exists() and not Path(backend.file_path).exists()
    # Chosen on purpose, it is used.
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", FILE_BACKEND)
    r = init_store(root, keyring=True, prompt=False)
    assert load_key(r.store_id) == bytes.fromhex(backend.get_password(SERVICE, r.store_id) or "")


def test_an_adopted_data_dir_can_keep_its_key_in_the_keyring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", FILE_BACKEND)
    backend = PlaintextKeyring()
    backend.file_path = str(tmp_path / "kr" / "keyring_pass.cfg")
    monkeypatch.setattr(keyring.core, "_keyring_backend", backend)
    root = tmp_path / "data"
    log = root / "rag" / "index.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(json.dumps({"id": "a", "text": "an otter holds hands while asleep"}) + "\n")
    r = init_store(root, keyring=True, prompt=False)
    assert r.keyring and r.adopted_documents == 1
    assert scan_for(root, [b"otter"]) == []
    # Opens with the keyring's key: no credential given.

    with DocumentStore.open(root, create=False, readonly=True, prompt=False) as docs:
        got = docs.get("a")
        assert got is not None and got.text == "an otter holds hands while asleep"
