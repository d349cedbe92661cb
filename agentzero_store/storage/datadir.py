"""Opening a data dir: the first step of every store's open.

``open_data_dir`` resolves the credential (``store_credential``: arguments, environment,
the OS keyring, a prompt), unlocks (or creates) the key header, and brings the store's
keys up to date: a store from before the acknowledgement ledger is upgraded once, and a
key rotation a crash interrupted is finished first. ``create_data_dir`` makes a new key
header, with a key kept in the OS keyring if asked.

Finishing a rotation re-keys every file of the data dir (memory.db, the document log,
the ledger, the sidecars): that is ``ops.rotate``, two layers above this one. It is
plugged in with ``install_rotation_resumer`` by the package root, which composes the
layers (see ``agentzero_store/__init__.py``), so storage never imports upward.
"""

from __future__ import annotations

import logging
import secrets
import sys
from pathlib import Path
from typing import Protocol

from ..base.config import KdfParams, Layout
from ..base.errors import (
    CredentialRequiredError,
    KeyringError,
    RotationInProgressError,
    StoreExistsError,
    StoreNotFoundError,
    WrongKeyError,
)
from .acks import create_ledger, ledger_path
from .credentials import KEY_BYTES, Credential, resolve_credential
from .fileio import DEFAULT_IO, FileIO
from .key_header import read_header, read_store_id, store_exists, write_header
from .keys import StoreKeys, create_keys, new_slot, unlock_slot
from .lock import writer_lock
from .os_keyring import KEYRING_SLOT, SERVICE, delete_key, keyring_account, load_key, store_key

log = logging.getLogger(__name__)


class ResumeRotation(Protocol):
    """Finishes an interrupted key rotation of ``layout`` and returns the new keys."""

    def __call__(self, layout: Layout, cred: Credential, *, io: FileIO) -> StoreKeys:
        """Finish the rotation (unless another process has by now) and unlock."""
        ...


_resume_rotation: ResumeRotation | None = None


def install_rotation_resumer(resume: ResumeRotation) -> None:
    """Make every open finish a key rotation a crash interrupted, with ``resume``.

    The package root installs ``ops.rotate.resume_rotation`` when it is imported, which
    is before any module of the package can be: every process that can open a store has
    it. Without one, an interrupted rotation stays a ``RotationInProgressError``.
    """
    global _resume_rotation
    _resume_rotation = resume


def open_data_dir(
    data_dir: Path | str,
    *,
    passphrase: str | None = None,
    key: bytes | str | None = None,
    key_file: Path | str | None = None,
    create: bool = True,
    kdf: KdfParams | None = None,
    prompt: bool | None = None,
    io: FileIO = DEFAULT_IO,
) -> tuple[Layout, StoreKeys]:
    """Unlock (or create) the key header of a data dir; the first step of every open.

    A wrong credential raises ``WrongKeyError`` here, before any data file is touched.
    """
    layout = Layout(Path(data_dir).expanduser())
    exists = store_exists(layout)
    if not exists and not create:
        raise StoreNotFoundError(f"no store in {layout.root}")
    if not exists:
        cred = resolve_credential(
            passphrase=passphrase, key=key, key_file=key_file, prompt=prompt, confirm=True
        )
        return layout, create_keys(layout, cred, kdf=kdf or KdfParams(), io=io)
    cred = store_credential(
        layout, passphrase=passphrase, key=key, key_file=key_file, prompt=prompt
    )
    return layout, unlock_data_dir(layout, cred, io=io)


def unlock_data_dir(layout: Layout, cred: Credential, *, io: FileIO = DEFAULT_IO) -> StoreKeys:
    """Unlock an existing store with ``cred``, finishing what a crash left (a key
    rotation) and starting the ledger of a store from before it."""
    try:
        keys, slot = unlock_slot(layout, cred)
    except RotationInProgressError:
        # A crash interrupted `key rotate`: finish it (under the writer lock) so the
        # store opens with the same credential (see ``install_rotation_resumer``).
        if _resume_rotation is None:
            raise
        return _resume_rotation(layout, cred, io=io)
    except WrongKeyError as exc:
        if cred.origin != "keyring":
            raise
        raise WrongKeyError(
            f"the key the OS keyring holds for this store ({_keyring_where(layout)}) does "
            "not open it",
            hint="the entry was replaced or belongs to another store: restore it, or open "
            "the store with another of its credentials; no file under the data dir was "
            "changed",
        ) from exc
    if not keys.acks_required:
        keys = _upgrade_to_ledger(layout, keys, cred, slot, io=io)
    return keys


def _keyring_where(layout: Layout) -> str:
    return f"service {SERVICE!r}, account {read_store_id(layout)!r}"


def store_credential(
    layout: Layout,
    *,
    passphrase: str | None = None,
    key: bytes | str | None = None,
    key_file: Path | str | None = None,
    prompt: bool | None = None,
) -> Credential:
    """The credential that opens the existing store of ``layout``: an explicit argument,
    then the environment, then the OS keyring (only for a store with a keyring slot),
    then a TTY prompt.

    When the keyring cannot give the key and the store also has a passphrase, a terminal
    still gets the prompt; anywhere else the keyring's error is raised.
    """
    try:
        return resolve_credential(passphrase=passphrase, key=key, key_file=key_file, prompt=False)
    except CredentialRequiredError:
        pass
    try:
        header = read_header(layout)
    except StoreNotFoundError:
        # No store there: ask as before; the operation names the missing store itself.
        return resolve_credential(prompt=prompt)
    account = keyring_account(header)
    if account is not None:
        try:
            return Credential("key", load_key(account), origin="keyring")
        except KeyringError as exc:
            has_passphrase = any(s.get("kind") == "passphrase" for s in header["slots"])
            can_prompt = sys.stdin.isatty() if prompt is None else prompt
            if not (has_passphrase and can_prompt):
                raise
            log.warning("%s; asking for the passphrase instead", exc.message)
    return resolve_credential(prompt=prompt)


def create_data_dir(
    layout: Layout,
    cred: Credential | None,
    *,
    keyring: bool = False,
    kdf: KdfParams | None = None,
    adopt_log: bool = False,
    io: FileIO = DEFAULT_IO,
) -> tuple[StoreKeys, bytes | None]:
    """Create the key header of a new store (``create_keys``); with ``keyring``, also a
    random raw key kept in the OS keyring (slot ``keyring``), returned beside the keys.

    ``cred`` may be None with ``keyring``: the keyring's key is then the only credential
    (export a recovery key: without the keyring entry the store cannot be opened).
    The keyring entry is written first and read back, so keys.json never names a key the
    keyring does not hold; if creating keys.json fails, the entry is removed again.
    """
    if not keyring:
        if cred is None:
            raise CredentialRequiredError("no passphrase or key was given")
        return create_keys(layout, cred, kdf=kdf or KdfParams(), io=io, adopt_log=adopt_log), None
    if store_exists(layout):
        raise StoreExistsError(f"{layout.keys} already exists")
    store_id = secrets.token_hex(16)
    raw = secrets.token_bytes(KEY_BYTES)
    store_key(store_id, raw)
    try:
        keys = create_keys(
            layout,
            cred,
            kdf=kdf or KdfParams(),
            io=io,
            store_id=store_id,
            more_slots=[(KEYRING_SLOT, Credential.from_key(raw))],
            adopt_log=adopt_log,
        )
    except BaseException:
        delete_key(store_id)
        raise
    return keys, raw


def _upgrade_to_ledger(
    layout: Layout, keys: StoreKeys, cred: Credential, slot_id: str, *, io: FileIO
) -> StoreKeys:
    """A store from before the acknowledgement ledger: start one (each source is recorded
    as it is on its next open) and rewrap the credential's slot so it requires it.

    Once, under the writer lock. Other slots (a recovery key) keep their old binding
    until they are rewrapped (``key export-recovery``, ``key rotate``).
    """
    with writer_lock(layout.root, purpose="start the acknowledgement ledger"):
        header = read_header(layout)
        if not ledger_path(layout.root).exists():
            create_ledger(layout.root, keys.ledger_key, keys.store_id, io=io)
        for i, slot in enumerate(header["slots"]):
            if slot.get("id") == slot_id:
                kdf = slot["kdf"]
                params = (
                    KdfParams(n=int(kdf["n"]), r=int(kdf["r"]), p=int(kdf["p"]))
                    if kdf.get("name") == "scrypt"
                    else KdfParams()
                )
                header["slots"][i] = new_slot(slot_id, cred, keys.master, keys.store_id, params)
        write_header(layout, header, io=io)
    return StoreKeys(store_id=keys.store_id, master=keys.master, acks_required=True)


__all__ = [
    "ResumeRotation",
    "create_data_dir",
    "install_rotation_resumer",
    "open_data_dir",
    "store_credential",
    "unlock_data_dir",
]
