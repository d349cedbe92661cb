"""The key header (``keys.json``), its key slots and per-purpose subkeys.

One credential (see ``credentials.py``) opens a store. It unwraps a random 256-bit master
key stored in ``keys.json`` in one or more *slots* (a passphrase slot stretched with scrypt,
a raw-key slot, later a recovery-key slot). The master key never touches disk unwrapped;
subkeys for SQLCipher, document records and sidecar checkpoints are derived from it with
HKDF, so the slow KDF runs once per open and never per connection.

A wrong credential is detected here, before any data file is opened, and raises
``WrongKeyError``. Nothing in this module logs or reprs a secret.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping
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
    StoreIOError,
    StoreNotFoundError,
    WrongKeyError,
)
from ..base.limits import KEY_HEADER_MAX_BYTES, scrypt_problem
from .acks import ACKS_FORMAT, create_ledger, ledger_path
from .credentials import (
    ENV_DATA_KEY,
    ENV_KEY_FILE,
    ENV_PASSPHRASE,
    KEY_BYTES,
    Credential,
    CredentialKind,
    generate_key_file,
    parse_key_text,
    resolve_credential,
)
from .fileio import DEFAULT_IO, FileIO, atomic_write

KEYS_FORMAT = "agentzero-keys/1"
NONCE_BYTES = 12
WRAPPED_BYTES = KEY_BYTES + 16  # AES-GCM: the master key and its 16-byte tag
SALT_MIN_BYTES, SALT_MAX_BYTES = 16, 64  # this version writes 16
_KDF_OF_KIND = {"passphrase": "scrypt", "key": "hkdf-sha256"}


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _unb64(s: str) -> bytes:
    return base64.b64decode(s.encode("ascii"), validate=True)


def _hkdf(ikm: bytes, salt: bytes | None, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=salt, info=info).derive(ikm)


def _wrapping_key(cred: Credential, kdf: Mapping[str, Any]) -> bytes:
    salt = _unb64(kdf["salt"])
    if kdf["name"] == "scrypt":
        # Headers read from disk were bounded by _read_header; this refuses parameters a
        # caller asked for (StoreConfig.kdf), so no store is made that could not open.
        problem = _scrypt_problem(kdf)
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
    kdf["salt"] = _b64(salt)
    slot: dict[str, Any] = {"id": slot_id, "kind": cred.kind, "kdf": kdf}
    nonce = secrets.token_bytes(NONCE_BYTES)
    wrapped = AESGCM(_wrapping_key(cred, kdf)).encrypt(nonce, master, _slot_aad(store_id, slot))
    slot.update(nonce=_b64(nonce), wrapped=_b64(wrapped))
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


def _read_header(layout: Layout) -> dict[str, Any]:
    path = layout.keys
    try:
        with path.open("rb") as f:
            raw = f.read(KEY_HEADER_MAX_BYTES + 1)
    except FileNotFoundError as exc:
        raise StoreNotFoundError(f"no store in {layout.root} (missing {path.name})") from exc
    except IsADirectoryError as exc:
        raise CorruptStoreError("the key header is a directory, not a file", path=path) from exc
    except OSError as exc:
        raise StoreIOError(f"reading {path} failed: {exc.strerror or exc}") from exc
    try:
        if len(raw) > KEY_HEADER_MAX_BYTES:
            raise ValueError(f"larger than {KEY_HEADER_MAX_BYTES:,} bytes")
        header = json.loads(raw)
        if not isinstance(header, dict):
            raise ValueError("not an object")
        fmt = header.get("format")
        if fmt != KEYS_FORMAT:
            if isinstance(fmt, str) and fmt.startswith("agentzero-keys/"):
                raise SchemaVersionError(
                    f"{path} has format {fmt}, this version reads {KEYS_FORMAT}"
                )
            raise ValueError(f"unknown format {fmt!r}")
        store_id = header["store_id"]
        slots = header["slots"]
        if not isinstance(store_id, str) or not isinstance(slots, list) or not slots:
            raise ValueError("missing store_id or slots")
        if not store_id:
            raise ValueError("empty store_id")
        for i, slot in enumerate(slots):
            _check_slot(i, slot)
        if not isinstance(header.get("rotation"), dict | None):
            raise ValueError("the key-rotation journal is not an object")
    except SchemaVersionError:
        raise
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise CorruptStoreError(
            f"the key header is unreadable: {exc}",
            path=path,
            hint="restore keys.json from a backup; without it the data cannot be decrypted",
        ) from exc
    return header


def _check_slot(i: int, slot: Any) -> None:
    """Raise ``ValueError`` naming what is wrong with key slot ``i`` of a header.

    Everything a slot holds is checked before it reaches base64, scrypt or AES-GCM:
    types, base64, the lengths this version writes, and the KDF's cost (bounded, so a
    hostile header cannot make an open allocate gigabytes). A KDF this version does not
    know is left to ``_wrapping_key`` (a ``SchemaVersionError`` if its slot is used).
    """
    where = f"key slot {i}"
    if not isinstance(slot, dict):
        raise ValueError(f"{where} is not an object")
    for name in ("id", "kind"):
        if not isinstance(slot.get(name), str) or not slot[name]:
            raise ValueError(f"{where}: {name} is not a non-empty string")
    kdf = slot.get("kdf")
    if not isinstance(kdf, dict) or not isinstance(kdf.get("name"), str):
        raise ValueError(f"{where}: kdf is not an object with a name")
    lengths = {"nonce": (NONCE_BYTES, NONCE_BYTES), "wrapped": (WRAPPED_BYTES, WRAPPED_BYTES)}
    for name, (low, high) in lengths.items():
        _check_b64(f"{where}: {name}", slot.get(name), low, high)
    if kdf["name"] in ("scrypt", "hkdf-sha256"):
        _check_b64(f"{where}: kdf salt", kdf.get("salt"), SALT_MIN_BYTES, SALT_MAX_BYTES)
        # A passphrase is stretched (scrypt); a raw key is only separated (HKDF).
        if _KDF_OF_KIND.get(slot["kind"], kdf["name"]) != kdf["name"]:
            raise ValueError(f"{where}: a {slot['kind']} slot cannot use {kdf['name']}")
    if kdf["name"] == "scrypt":
        problem = _scrypt_problem(kdf)
        if problem is not None:
            raise ValueError(f"{where}: {problem}")


def _check_b64(what: str, value: Any, low: int, high: int) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a string")
    try:
        n = len(_unb64(value))
    except ValueError as exc:  # binascii.Error and UnicodeEncodeError are ValueErrors
        raise ValueError(f"{what} is not base64") from exc
    if not low <= n <= high:
        size = f"{low}" if low == high else f"{low} to {high}"
        raise ValueError(f"{what} is {n} bytes, not {size}")


def _scrypt_problem(kdf: Mapping[str, Any]) -> str | None:
    """What is wrong with a slot's scrypt n, r and p (see ``limits.scrypt_problem``)."""
    return scrypt_problem(kdf.get("n"), kdf.get("r"), kdf.get("p"))


def read_header(layout: Layout) -> dict[str, Any]:
    """The parsed key header (wrapped keys, salts, KDF params; no secret in the clear)."""
    return _read_header(layout)


def new_slot(
    slot_id: str, cred: Credential, master: bytes, store_id: str, kdf: KdfParams
) -> dict[str, Any]:
    """A key slot in which ``cred`` wraps ``master`` (for key rotation and recovery keys)."""
    return _new_slot(slot_id, cred, master, store_id, kdf)


def store_exists(layout: Layout) -> bool:
    """True if the data dir has a key header."""
    return layout.keys.exists()


def read_store_id(layout: Layout) -> str:
    """The store id from keys.json (no credential needed)."""
    return str(_read_header(layout)["store_id"])


def unwrap_slot(store_id: str, slot: Mapping[str, Any], cred: Credential) -> bytes | None:
    """The master key ``slot`` wraps, if ``cred`` opens it; None if it does not fit."""
    got = _unwrap(store_id, slot, cred)
    return got[0] if got is not None else None


def _unwrap(
    store_id: str, slot: Mapping[str, Any], cred: Credential
) -> tuple[bytes, bool] | None:
    """(master key, whether the slot binds the ledger), or None if ``cred`` does not fit."""
    if slot.get("kind") != cred.kind:
        return None
    wk = AESGCM(_wrapping_key(cred, slot["kdf"]))  # the slow KDF runs once for both tries
    nonce, wrapped = _unb64(slot["nonce"]), _unb64(slot["wrapped"])
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
    header = _read_header(layout)
    store_id = header["store_id"]
    kinds = sorted({s.get("kind") for s in header["slots"]})
    for slot in header["slots"]:
        try:
            got = _unwrap(store_id, slot, cred)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStoreError(
                f"key slot {slot.get('id')!r} is malformed", path=layout.keys
            ) from exc
        if got is None:
            continue
        master, acks_required = got
        if header.get("rotation") is not None and not allow_rotation:
            # The data files may be under the old key, the new one, or a mix: only the
            # rotation code knows how to finish, so a plain open must not guess.
            raise RotationInProgressError(f"a key rotation of {layout.root} was interrupted")
        keys = StoreKeys(store_id=store_id, master=master, acks_required=acks_required)
        return keys, str(slot["id"])
    if cred.kind not in kinds:
        raise WrongKeyError(
            f"this store opens with a {' or '.join(str(k) for k in kinds)}, not a {cred.kind}",
        )
    raise WrongKeyError(f"the {cred.kind} does not open the store in {layout.root}")


def unlock(layout: Layout, cred: Credential) -> StoreKeys:
    """Unwrap the master key with ``cred``. Reads keys.json only; writes nothing.

    Raises ``WrongKeyError`` if no slot of the credential's kind accepts it, and
    ``RotationInProgressError`` if a key rotation was interrupted.
    """
    return unlock_slot(layout, cred)[0]


def create_keys(
    layout: Layout, cred: Credential, *, kdf: KdfParams, io: FileIO = DEFAULT_IO
) -> StoreKeys:
    """Create keys.json with a fresh master key and store id. Never overwrites one."""
    if layout.keys.exists():
        raise StoreExistsError(f"{layout.keys} already exists")
    for data in (layout.memory_db, layout.rag_log):
        if data.exists():
            # Never start a new key header over existing data: it could never be read again.
            raise CorruptStoreError(
                f"{data.name} exists but keys.json is missing",
                path=layout.keys,
                hint="restore keys.json from a backup; without it the data cannot be decrypted",
            )
    layout.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    master = secrets.token_bytes(KEY_BYTES)
    store_id = secrets.token_hex(16)
    keys = StoreKeys(store_id=store_id, master=master, acks_required=True)
    # The ledger first: keys.json is what makes the data dir a store, and its slot
    # requires the ledger. A crash in between leaves a ledger and no store; the next
    # init replaces it.
    create_ledger(layout.root, keys.ledger_key, store_id, io=io)
    header = {
        "format": KEYS_FORMAT,
        "store_id": store_id,
        "created_at": datetime.now(UTC).isoformat(),
        "slots": [_new_slot("primary", cred, master, store_id, kdf)],
    }
    write_header(layout, header, io=io)
    return keys


def write_header(layout: Layout, header: Mapping[str, Any], *, io: FileIO = DEFAULT_IO) -> None:
    """Durably replace keys.json (0600). Holds only wrapped keys, salts and KDF params."""
    data = json.dumps(header, indent=2, sort_keys=True).encode() + b"\n"
    atomic_write(layout.keys, data, io=io, mode=0o600)


def rewrap(
    layout: Layout,
    keys: StoreKeys,
    cred: Credential,
    *,
    slot_id: str,
    kdf: KdfParams,
    io: FileIO = DEFAULT_IO,
) -> None:
    """Add or replace slot ``slot_id`` so ``cred`` unwraps the same master key.

    One atomic rewrite of keys.json: after a crash either the old or the new header is
    in place, so either the old or the new credential works, never neither.
    """
    header = _read_header(layout)
    slots = [s for s in header["slots"] if s.get("id") != slot_id]
    slots.append(_new_slot(slot_id, cred, keys.master, keys.store_id, kdf))
    header["slots"] = slots
    write_header(layout, header, io=io)


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
            # store opens with the same credential. Imported lazily: it needs the ops layer.
            from ..ops.rotate import resume_rotation

            return layout, resume_rotation(layout, cred, io=io)
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
    from .lock import writer_lock

    with writer_lock(layout.root, purpose="start the acknowledgement ledger"):
        header = _read_header(layout)
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
                header["slots"][i] = _new_slot(slot_id, cred, keys.master, keys.store_id, params)
        write_header(layout, header, io=io)
    return StoreKeys(store_id=keys.store_id, master=keys.master, acks_required=True)


__all__ = [
    # Re-exported from ``credentials`` so existing ``from .keys import ...`` keeps working.
    "ENV_DATA_KEY",
    "ENV_KEY_FILE",
    "ENV_PASSPHRASE",
    "KEY_BYTES",
    "KEYS_FORMAT",
    "Credential",
    "CredentialKind",
    "StoreKeys",
    "create_keys",
    "generate_key_file",
    "new_slot",
    "open_data_dir",
    "parse_key_text",
    "read_header",
    "read_store_id",
    "resolve_credential",
    "rewrap",
    "store_exists",
    "unlock",
    "unlock_slot",
    "unwrap_slot",
    "write_header",
]
