"""``agentzero key change-passphrase`` and ``key export-recovery``: new ways in, same data.

Both only rewrap the master key (``keys.with_slot``) and store the new key header
through ``header_store.HeaderStore``: in a data dir one atomic rewrite of keys.json under
the writer lock, in PostgreSQL one UPDATE of ``az_keys`` in a transaction holding the
row lock. Either way, after a crash at any instant exactly one of "before" and "after"
is in place — the old credential or the new one works, never neither — and two key
changes cannot lose each other's slot (read-modify-write under a lock). No data is
touched.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.config import KdfParams, Layout
from ..base.errors import InvalidArgumentError, WrongKeyError
from ..memory.postgres.keys import PgHeaders
from ..storage.credentials import KEY_BYTES, Credential
from ..storage.fileio import DEFAULT_IO, FileIO
from ..storage.header_store import DataDirHeaders, HeaderStore
from ..storage.keys import StoreKeys, unlock_header, with_slot
from .backends import is_postgres_url

RECOVERY_SLOT = "recovery"


@dataclass(frozen=True)
class KeyChange:
    """Which slot was written, and the slots the key header holds now."""

    data_dir: str
    slot: str
    slots: list[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def slot_kdf(header: Mapping[str, Any], slot_id: str) -> KdfParams | None:
    """The scrypt cost of passphrase slot ``slot_id`` of ``header``, kept when it is
    rewrapped."""
    for s in header["slots"]:
        kdf = s.get("kdf", {})
        if s.get("id") == slot_id and kdf.get("name") == "scrypt":
            return KdfParams(n=int(kdf["n"]), r=int(kdf["r"]), p=int(kdf["p"]))
    return None


def header_store(
    target: Path | str, *, purpose: str, timeout: float | None = None, io: FileIO = DEFAULT_IO
) -> HeaderStore:
    """The key header of the store at ``target``: a PostgreSQL URL's ``az_keys``, or a
    data dir's keys.json."""
    if isinstance(target, str) and is_postgres_url(target):
        return PgHeaders(target)
    layout = Layout(Path(target).expanduser())
    return DataDirHeaders(layout, purpose=purpose, timeout=timeout, io=io)


def _unlock(
    headers: HeaderStore, header: Mapping[str, Any], cred: Credential
) -> tuple[StoreKeys, str]:
    try:
        return unlock_header(header, cred, where=headers.where, path=headers.path)
    except WrongKeyError as exc:
        raise WrongKeyError(
            exc.message, hint=f"check the passphrase or key; {headers.unchanged}"
        ) from None


def _slot_ids(header: Mapping[str, Any]) -> list[str]:
    return [str(s.get("id")) for s in header["slots"]]


def change_passphrase(
    target: Path | str,
    cred: Credential,
    new_passphrase: str,
    *,
    kdf: KdfParams | None = None,
    timeout: float | None = None,
    io: FileIO = DEFAULT_IO,
) -> KeyChange:
    """Make ``new_passphrase`` open the store at ``target`` (a data dir or a PostgreSQL
    URL) instead of the passphrase ``cred``.

    With a passphrase, its own slot is replaced (the old passphrase stops working). With
    a raw key, the store's passphrase slot is replaced or added (the key keeps working).
    """
    headers = header_store(target, purpose="key change-passphrase", timeout=timeout, io=io)
    new = Credential.from_passphrase(new_passphrase)
    _unlock(headers, headers.read(), cred)  # a wrong credential fails before any lock
    if cred.kind == "passphrase" and cred.secret == new.secret:
        raise InvalidArgumentError("the new passphrase is the same as the current one")
    written: list[str] = []

    def change(header: dict[str, Any]) -> dict[str, Any]:
        # Unlocked again: the header may have changed since the check above.
        keys, slot = _unlock(headers, header, cred)
        if cred.kind != "passphrase":
            slot = next(
                (str(s["id"]) for s in header["slots"] if s.get("kind") == "passphrase"),
                "passphrase",
            )
        written.append(slot)
        cost = kdf or slot_kdf(header, slot) or KdfParams()
        return with_slot(header, keys, new, slot_id=slot, kdf=cost)

    header = headers.replace(change)
    return KeyChange(headers.where, written[-1], _slot_ids(header))


def export_recovery(
    target: Path | str, cred: Credential, *, timeout: float | None = None, io: FileIO = DEFAULT_IO
) -> tuple[str, KeyChange]:
    """A new random recovery key (64 hex digits) that opens the store at ``target`` (a
    data dir or a PostgreSQL URL), and its slot.

    It replaces an earlier recovery key. Shown once; only its wrapped form is stored.
    """
    headers = header_store(target, purpose="key export-recovery", timeout=timeout, io=io)
    secret = secrets.token_bytes(KEY_BYTES)
    _unlock(headers, headers.read(), cred)  # a wrong credential fails before any lock

    def change(header: dict[str, Any]) -> dict[str, Any]:
        keys, _ = _unlock(headers, header, cred)  # again: the header may have changed
        recovery = Credential.from_key(secret)
        return with_slot(header, keys, recovery, slot_id=RECOVERY_SLOT, kdf=KdfParams())

    header = headers.replace(change)
    return secret.hex(), KeyChange(headers.where, RECOVERY_SLOT, _slot_ids(header))


__all__ = [
    "RECOVERY_SLOT",
    "KeyChange",
    "change_passphrase",
    "export_recovery",
    "header_store",
    "slot_kdf",
]
