"""``agentzero key change-passphrase`` and ``key export-recovery``: new ways in, same data.

Both only rewrap the master key (``keys.rewrap``): one atomic rewrite of keys.json, so
after a crash at any instant exactly one of "before" and "after" is on disk — the old
credential or the new one works, never neither. No data file is touched. Both hold the
writer lock, so two key changes cannot race on keys.json (read-modify-write).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.config import KdfParams, Layout
from ..base.errors import InvalidArgumentError
from ..storage.credentials import KEY_BYTES, Credential
from ..storage.fileio import DEFAULT_IO, FileIO
from ..storage.key_header import read_header
from ..storage.keys import rewrap, unlock_slot
from ..storage.lock import writer_lock

RECOVERY_SLOT = "recovery"


@dataclass(frozen=True)
class KeyChange:
    """Which slot was written, and the slots keys.json holds now."""

    data_dir: str
    slot: str
    slots: list[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def slot_kdf(layout: Layout, slot_id: str) -> KdfParams | None:
    """The scrypt cost of passphrase slot ``slot_id``, kept when it is rewrapped."""
    for s in read_header(layout)["slots"]:
        kdf = s.get("kdf", {})
        if s.get("id") == slot_id and kdf.get("name") == "scrypt":
            return KdfParams(n=int(kdf["n"]), r=int(kdf["r"]), p=int(kdf["p"]))
    return None


def _slot_ids(layout: Layout) -> list[str]:
    return [str(s.get("id")) for s in read_header(layout)["slots"]]


def change_passphrase(
    root: Path | str,
    cred: Credential,
    new_passphrase: str,
    *,
    kdf: KdfParams | None = None,
    timeout: float | None = None,
    io: FileIO = DEFAULT_IO,
) -> KeyChange:
    """Make ``new_passphrase`` open the store instead of the passphrase ``cred``.

    With a passphrase, its own slot is replaced (the old passphrase stops working). With
    a raw key, the store's passphrase slot is replaced or added (the key keeps working).
    """
    layout = Layout(Path(root).expanduser())
    new = Credential.from_passphrase(new_passphrase)
    unlock_slot(layout, cred)  # a wrong credential fails before writer.lock is touched
    with writer_lock(layout.root, timeout=timeout, purpose="key change-passphrase"):
        keys, slot = unlock_slot(layout, cred)  # again: keys.json may have changed meanwhile
        if cred.kind == "passphrase" and cred.secret == new.secret:
            raise InvalidArgumentError("the new passphrase is the same as the current one")
        if cred.kind != "passphrase":
            slot = next(
                (
                    str(s["id"])
                    for s in read_header(layout)["slots"]
                    if s.get("kind") == "passphrase"
                ),
                "passphrase",
            )
        cost = kdf or slot_kdf(layout, slot) or KdfParams()
        rewrap(layout, keys, new, slot_id=slot, kdf=cost, io=io)
        return KeyChange(str(layout.root), slot, _slot_ids(layout))


def export_recovery(
    root: Path | str, cred: Credential, *, timeout: float | None = None, io: FileIO = DEFAULT_IO
) -> tuple[str, KeyChange]:
    """A new random recovery key (64 hex digits) that opens the store, and its slot.

    It replaces an earlier recovery key. Shown once; only its wrapped form is stored.
    """
    layout = Layout(Path(root).expanduser())
    secret = secrets.token_bytes(KEY_BYTES)
    unlock_slot(layout, cred)  # a wrong credential fails before writer.lock is touched
    with writer_lock(layout.root, timeout=timeout, purpose="key export-recovery"):
        keys, _ = unlock_slot(layout, cred)  # again: keys.json may have changed meanwhile
        rewrap(
            layout, keys, Credential.from_key(secret), slot_id=RECOVERY_SLOT, kdf=KdfParams(), io=io
        )
        return secret.hex(), KeyChange(str(layout.root), RECOVERY_SLOT, _slot_ids(layout))


__all__ = ["RECOVERY_SLOT", "KeyChange", "change_passphrase", "export_recovery", "slot_kdf"]
