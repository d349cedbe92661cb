"""The key header ``keys.json``: its format, its checks, and its durable replacement.

keys.json holds the store id and one or more key *slots* (see ``keys``): wrapped master
keys, salts and KDF parameters, never a secret in the clear. Everything read from it is
checked here (types, base64, the lengths this version writes, the KDF's cost) before it
reaches base64, scrypt or AES-GCM, so a damaged or hostile header is a typed error,
never a crash or an allocation of gigabytes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base.config import Layout
from ..base.errors import CorruptStoreError, SchemaVersionError, StoreIOError, StoreNotFoundError
from ..base.limits import KEY_HEADER_MAX_BYTES, scrypt_problem
from .credentials import KEY_BYTES
from .fileio import DEFAULT_IO, FileIO, atomic_write

KEYS_FORMAT = "agentzero-keys/1"

NONCE_BYTES = 12

WRAPPED_BYTES = KEY_BYTES + 16  # AES-GCM: the master key and its 16-byte tag

SALT_MIN_BYTES, SALT_MAX_BYTES = 16, 64  # this version writes 16

_KDF_OF_KIND = {"passphrase": "scrypt", "key": "hkdf-sha256"}


def b64(b: bytes) -> str:
    """``b`` as base64 text (how keys.json stores bytes)."""
    return base64.b64encode(b).decode("ascii")


def unb64(s: str) -> bytes:
    """Inverse of ``b64``; strict (``ValueError`` on anything that is not base64)."""
    return base64.b64decode(s.encode("ascii"), validate=True)


def read_header(layout: Layout) -> dict[str, Any]:
    """The parsed key header (wrapped keys, salts, KDF params; no secret in the clear)."""
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
    return parse_header(raw, path)


def parse_header(raw: bytes, where: Path | str) -> dict[str, Any]:
    """A key header from its JSON bytes, checked (see ``_check_slot``); ``where`` names
    the file or table it came from in errors. Used for keys.json and for the same header
    kept in a database table (the PostgreSQL backend's ``az_keys``)."""
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
                    f"{where} has format {fmt}, this version reads {KEYS_FORMAT}"
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
            path=where,
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
        problem = slot_scrypt_problem(kdf)
        if problem is not None:
            raise ValueError(f"{where}: {problem}")


def _check_b64(what: str, value: Any, low: int, high: int) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a string")
    try:
        n = len(unb64(value))
    except ValueError as exc:  # binascii.Error and UnicodeEncodeError are ValueErrors
        raise ValueError(f"{what} is not base64") from exc
    if not low <= n <= high:
        size = f"{low}" if low == high else f"{low} to {high}"
        raise ValueError(f"{what} is {n} bytes, not {size}")


def slot_scrypt_problem(kdf: Mapping[str, Any]) -> str | None:
    """What is wrong with a slot's scrypt n, r and p (see ``limits.scrypt_problem``)."""
    return scrypt_problem(kdf.get("n"), kdf.get("r"), kdf.get("p"))


def store_exists(layout: Layout) -> bool:
    """True if the data dir has a key header."""
    return layout.keys.exists()


def read_store_id(layout: Layout) -> str:
    """The store id from keys.json (no credential needed)."""
    return str(read_header(layout)["store_id"])


def write_header(layout: Layout, header: Mapping[str, Any], *, io: FileIO = DEFAULT_IO) -> None:
    """Durably replace keys.json (0600). Holds only wrapped keys, salts and KDF params."""
    data = json.dumps(header, indent=2, sort_keys=True).encode() + b"\n"
    atomic_write(layout.keys, data, io=io, mode=0o600)


__all__ = [
    "KEYS_FORMAT",
    "NONCE_BYTES",
    "b64",
    "parse_header",
    "read_header",
    "read_store_id",
    "slot_scrypt_problem",
    "store_exists",
    "unb64",
    "write_header",
]
