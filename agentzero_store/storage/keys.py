"""Key slots, the master key they wrap, and the per-purpose subkeys derived from it.

One credential (see ``credentials``) opens a store. It unwraps a random 256-bit master
key stored in ``keys.json`` in one or more *slots* (a passphrase slot stretched with scrypt,
a raw-key slot, later a recovery-key slot). The master key never touches disk unwrapped;
subkeys for SQLCipher, document records and sidecar checkpoints are derived from it with
HKDF, so the slow KDF runs once per open and never per connection. The file itself
(its format and checks) is ``key_header``; opening a data dir is ``datadir``.

A wrong credential is detected here, before any data file is opened, and raises
``WrongKeyError``. Nothing in this module logs or reprs a secret.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from ..base.config import KdfParams, Layout
from ..base.errors import (
    CorruptStoreError,
    InvalidArgumentError,
    RotationInProgressError,
    SchemaVersionError,
    StoreExistsError,
    WrongKeyError,
)
from .ack_format import ACKS_FORMAT
from .acks import create_ledger
from .credentials import KEY_BYTES, Credential
from .fileio import DEFAULT_IO, FileIO
from .key_header import (
    KEYS_FORMAT,
    NONCE_BYTES,
    b64,
    read_header,
    slot_scrypt_problem,
    unb64,
    write_header,
)


def _hkdf(ikm: bytes, salt: bytes | None, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=salt, info=info).derive(ikm)


def _wrapping_key(cred: Credential, kdf: Mapping[str, Any]) -> bytes:
    salt = unb64(kdf["salt"])
    if kdf["name"] == "scrypt":
        # Headers read from disk were bounded by _read_header; this refuses parameters a
        # caller asked for (StoreConfig.kdf), so no store is made that could not open.
        problem = slot_scrypt_problem(kdf)
        if problem is not None:
            raise InvalidArgumentError(f"scrypt parameters out of bounds: {problem}")
        if cred.kind != "passphrase":
            raise AssertionError("scrypt slot with a non-passphrase credential")
        return Scrypt(salt=salt, length=KEY_BYTES, n=kdf["n"], r=kdf["r"], p=kdf["p"]).derive(
            cred.secret
        )
    if kdf["name"] == "hkdf-sha256":
        # A raw key already has full entropy: no stretching needed, only separation.
        return _hkdf(cred.secret, salt, b"agentzero/wrap-key/v1")
    raise SchemaVersionError(f"unknown KDF {kdf['name']!r} in keys.json")


def _slot_aad(store_id: str, slot: Mapping[str, Any], *, acks: bool = True) -> bytes:
    # A slot written since the acknowledgement ledger exists binds it into its AAD: such
    # a store cannot have its ledger deleted and be taken for an older store that never
    # had one (only the credential could rewrap the slot without the binding).
    base = f"{KEYS_FORMAT}|{store_id}|{slot['id']}|{slot['kind']}"
    return f"{base}|{ACKS_FORMAT}".encode() if acks else base.encode()


def _new_slot(
    slot_id: str, cred: Credential, master: bytes, store_id: str, kdf_params: KdfParams
) -> dict[str, Any]:
    salt = secrets.token_bytes(16)
    kdf: dict[str, Any]
    if cred.kind == "passphrase":
        kdf = {"name": "scrypt", "n": kdf_params.n, "r": kdf_params.r, "p": kdf_params.p}
    else:
        kdf = {"name": "hkdf-sha256"}
    kdf["salt"] = b64(salt)
    slot: dict[str, Any] = {"id": slot_id, "kind": cred.kind, "kdf": kdf}
    nonce = secrets.token_bytes(NONCE_BYTES)
    wrapped = AESGCM(_wrapping_key(cred, kdf)).encrypt(nonce, master, _slot_aad(store_id, slot))
    slot.update(nonce=b64(nonce), wrapped=b64(wrapped))
    return slot


@dataclass(frozen=True)
class StoreKeys:
    """The unwrapped master key of an open store and the subkeys derived from it."""

    store_id: str
    master: bytes = field(repr=False)
    # The slot that opened binds the acknowledgement ledger (see ``_slot_aad``): the
    # ledger must exist. False only for a store from before the ledger, until upgraded.
    acks_required: bool = False

    def subkey(self, purpose: str) -> bytes:
        """A 32-byte key for one purpose; different purposes get independent keys."""
        return _hkdf(self.master, self.store_id.encode(), f"agentzero/{purpose}/v1".encode())

    @property
    def sqlcipher_key(self) -> bytes:
        """Raw key for SQLCipher (passed as x'..', so SQLCipher's own KDF does not run)."""
        return self.subkey("sqlcipher")

    @property
    def archive_key(self) -> bytes:
        """Raw key for the SQLCipher archive of faded memories (``memory.archive.db``)."""
        return self.subkey("archive")

    @property
    def documents_key(self) -> bytes:
        """AES-256-GCM key for document-log records."""
        return self.subkey("documents")

    @property
    def sidecar_key(self) -> bytes:
        """AES-256-GCM key for sidecar checkpoints."""
        return self.subkey("sidecar")

    @property
    def ledger_key(self) -> bytes:
        """AES-256-GCM key for the acknowledgement ledger (``acks``)."""
        return self.subkey("acks")

    @property
    def term_key(self) -> bytes:
        """BLAKE2b key that blinds the terms of the on-disk BM25 index."""
        return self.subkey("bm25-terms")


def new_slot(
    slot_id: str, cred: Credential, master: bytes, store_id: str, kdf: KdfParams
) -> dict[str, Any]:
    """A key slot in which ``cred`` wraps ``master`` (for key rotation and recovery keys)."""
    return _new_slot(slot_id, cred, master, store_id, kdf)


def unwrap_slot(store_id: str, slot: Mapping[str, Any], cred: Credential) -> bytes | None:
    """The master key ``slot`` wraps, if ``cred`` opens it; None if it does not fit."""
    got = _unwrap(store_id, slot, cred)
    return got[0] if got is not None else None


def _unwrap(store_id: str, slot: Mapping[str, Any], cred: Credential) -> tuple[bytes, bool] | None:
    """(master key, whether the slot binds the ledger), or None if ``cred`` does not fit."""
    if slot.get("kind") != cred.kind:
        return None
    wk = AESGCM(_wrapping_key(cred, slot["kdf"]))  # the slow KDF runs once for both tries
    nonce, wrapped = unb64(slot["nonce"]), unb64(slot["wrapped"])
    for acks in (True, False):
        try:
            return wk.decrypt(nonce, wrapped, _slot_aad(store_id, slot, acks=acks)), acks
        except InvalidTag:
            continue
    return None


def unlock_slot(
    layout: Layout, cred: Credential, *, allow_rotation: bool = False
) -> tuple[StoreKeys, str]:
    """Like ``unlock``, and also the id of the slot that opened. Reads keys.json only.

    ``allow_rotation``: return the (old) keys even when keys.json records an unfinished
    key rotation; only the rotation code itself and ``verify`` ask for that.
    """
    return unlock_header(
        read_header(layout),
        cred,
        where=str(layout.root),
        path=layout.keys,
        allow_rotation=allow_rotation,
    )


def unlock_header(
    header: Mapping[str, Any],
    cred: Credential,
    *,
    where: str,
    path: Path | str,
    allow_rotation: bool = False,
) -> tuple[StoreKeys, str]:
    """The keys a checked key header (``key_header.parse_header``) gives ``cred``, and
    the id of the slot that opened; ``WrongKeyError`` if no slot accepts it. Pure: it
    reads and writes nothing, so a data dir's keys.json and a database's key table
    (``where`` names the store, ``path`` the header, in errors) unlock the same way.
    """
    store_id = header["store_id"]
    kinds = sorted({s.get("kind") for s in header["slots"]})
    for slot in header["slots"]:
        try:
            got = _unwrap(store_id, slot, cred)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStoreError(f"key slot {slot.get('id')!r} is malformed", path=path) from exc
        if got is None:
            continue
        master, acks_required = got
        if header.get("rotation") is not None and not allow_rotation:
            # The data files may be under the old key, the new one, or a mix: only the
            # rotation code knows how to finish, so a plain open must not guess.
            raise RotationInProgressError(f"a key rotation of {where} was interrupted")
        keys = StoreKeys(store_id=store_id, master=master, acks_required=acks_required)
        return keys, str(slot["id"])
    if cred.kind not in kinds:
        raise WrongKeyError(
            f"this store opens with a {' or '.join(str(k) for k in kinds)}, not a {cred.kind}",
        )
    raise WrongKeyError(f"the {cred.kind} does not open the store in {where}")


def new_header(
    cred: Credential | None,
    *,
    kdf: KdfParams,
    store_id: str | None = None,
    more_slots: Sequence[tuple[str, Credential]] = (),
) -> tuple[StoreKeys, dict[str, Any]]:
    """A fresh master key and store id, and the key header (format of keys.json) whose
    ``primary`` slot ``cred`` opens (and one slot per (id, credential) of
    ``more_slots``). Writes nothing: the caller stores the header (a file, or a database
    table) before any data is written under the keys."""
    slots = ([("primary", cred)] if cred is not None else []) + list(more_slots)
    if not slots:
        raise InvalidArgumentError("a store needs at least one credential")
    master = secrets.token_bytes(KEY_BYTES)
    store_id = store_id or secrets.token_hex(16)
    keys = StoreKeys(store_id=store_id, master=master, acks_required=True)
    header = {
        "format": KEYS_FORMAT,
        "store_id": store_id,
        "created_at": datetime.now(UTC).isoformat(),
        "slots": [_new_slot(sid, c, master, store_id, kdf) for sid, c in slots],
    }
    return keys, header


def unlock(layout: Layout, cred: Credential) -> StoreKeys:
    """Unwrap the master key with ``cred``. Reads keys.json only; writes nothing.

    Raises ``WrongKeyError`` if no slot of the credential's kind accepts it, and
    ``RotationInProgressError`` if a key rotation was interrupted.
    """
    return unlock_slot(layout, cred)[0]


def create_keys(
    layout: Layout,
    cred: Credential | None,
    *,
    kdf: KdfParams,
    io: FileIO = DEFAULT_IO,
    store_id: str | None = None,
    more_slots: Sequence[tuple[str, Credential]] = (),
    adopt_log: bool = False,
    header: Mapping[str, Any] | None = None,
) -> StoreKeys:
    """Create keys.json with a fresh master key and store id. Never overwrites one.

    ``cred`` opens the ``primary`` slot; ``more_slots`` are further (slot id, credential)
    pairs (the OS keyring's key). ``store_id`` is chosen by the caller when something
    outside the data dir is named after it before keys.json exists (the keyring entry).
    ``adopt_log``: the caller checked that ``rag/index.jsonl`` is a plaintext legacy log
    to be sealed under the new key (``ops.adopt``); any other data file is refused.
    ``header``: keep this existing key header (checked with ``key_header.parse_header``;
    ``cred`` must open it) instead of making a fresh one: a store moved here from
    another backend keeps its store id, master key and credentials.
    """
    if layout.keys.exists():
        raise StoreExistsError(f"{layout.keys} already exists")
    for data in (layout.memory_db, layout.rag_log):
        if data.exists() and not (adopt_log and data == layout.rag_log):
            # Never start a new key header over existing data: it could never be read again.
            raise CorruptStoreError(
                f"{data.name} exists but keys.json is missing",
                path=layout.keys,
                hint="restore keys.json from a backup; without it the data cannot be decrypted",
            )
    if header is None:
        keys, header = new_header(cred, kdf=kdf, store_id=store_id, more_slots=more_slots)
    else:
        if cred is None:
            raise InvalidArgumentError("keeping a key header needs a credential that opens it")
        keys = unlock_header(header, cred, where=str(layout.root), path=layout.keys)[0]
    layout.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    # The ledger first: keys.json is what makes the data dir a store, and its slot
    # requires the ledger. A crash in between leaves a ledger and no store; the next
    # init replaces it.
    create_ledger(layout.root, keys.ledger_key, keys.store_id, io=io)
    write_header(layout, header, io=io)
    return keys


def with_slot(
    header: Mapping[str, Any],
    keys: StoreKeys,
    cred: Credential,
    *,
    slot_id: str,
    kdf: KdfParams,
) -> dict[str, Any]:
    """A copy of ``header`` in which slot ``slot_id`` (added or replaced) lets ``cred``
    unwrap the same master key. Pure: the caller stores it (``header_store``), so a data
    dir's keys.json and a database's key table are rewrapped by the same code.
    """
    slots = [s for s in header["slots"] if s.get("id") != slot_id]
    slots.append(_new_slot(slot_id, cred, keys.master, keys.store_id, kdf))
    return {**header, "slots": slots}


__all__ = [
    "StoreKeys",
    "create_keys",
    "new_header",
    "new_slot",
    "unlock",
    "unlock_header",
    "unlock_slot",
    "unwrap_slot",
    "with_slot",
]
