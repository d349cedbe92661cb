"""Opening a data dir: the first step of every store's open.

``open_data_dir`` resolves the credential, unlocks (or creates) the key header, and
brings the store's keys up to date: a store from before the acknowledgement ledger is
upgraded once, and a key rotation a crash interrupted is finished first.

Finishing a rotation re-keys every file of the data dir (memory.db, the document log,
the ledger, the sidecars): that is ``ops.rotate``, two layers above this one. It is
plugged in with ``install_rotation_resumer`` by the package root, which composes the
layers (see ``agentzero_store/__init__.py``), so storage never imports upward.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..base.config import KdfParams, Layout
from ..base.errors import RotationInProgressError, StoreNotFoundError
from .acks import create_ledger, ledger_path
from .credentials import Credential, resolve_credential
from .fileio import DEFAULT_IO, FileIO
from .key_header import read_header, store_exists, write_header
from .keys import StoreKeys, create_keys, new_slot, unlock_slot
from .lock import writer_lock


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
    cred = resolve_credential(
        passphrase=passphrase, key=key, key_file=key_file, prompt=prompt, confirm=not exists
    )
    if exists:
        try:
            keys, slot = unlock_slot(layout, cred)
        except RotationInProgressError:
            # A crash interrupted `key rotate`: finish it (under the writer lock) so the
            # store opens with the same credential (see ``install_rotation_resumer``).
            if _resume_rotation is None:
                raise
            return layout, _resume_rotation(layout, cred, io=io)
        if not keys.acks_required:
            keys = _upgrade_to_ledger(layout, keys, cred, slot, io=io)
        return layout, keys
    return layout, create_keys(layout, cred, kdf=kdf or KdfParams(), io=io)


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


__all__ = ["ResumeRotation", "install_rotation_resumer", "open_data_dir"]
