"""The payload of each document-log line: explicit, versioned JSON, sealed by ``framing``.

Everything a user wrote (document id, text, title, source path, metadata) lives ONLY in
the sealed payload; ``rag.framing`` adds the plaintext envelope (seq, ciphertext, crc).
The payload is compact JSON with a version field ``v``; no pickle, unknown keys refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from agentzero_store.base.errors import SchemaVersionError

from .records import (
    ChunkVectors,
    DocumentRecord,
    Entry,
    LogHeader,
    Op,
    PayloadError,
    Tombstone,
    iso,
)

PAYLOAD_VERSION = 1


# json.dumps with these arguments builds a new encoder per call: keep one.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dumps(obj: Mapping[str, Any]) -> bytes:
    return _ENCODER.encode(obj).encode()


# The string encoder JSONEncoder(ensure_ascii=False) itself uses for keys and values.
_json_str: Callable[[str], str] = json.encoder.encode_basestring
# ISO 8601 timestamps are digits and "-:.+T" only: nothing to escape, quoted as they are.
_UPSERT = (
    '{"v":%d,"op":"upsert","id":%s,"text":%s,"content_hash":%s,"created_at":"%s",'
    '"updated_at":"%s","title":%s,"source_path":%s,"metadata":{}}'
)


def encode_entry(entry: Entry) -> bytes:
    """Serialise an upsert or delete payload (to be sealed)."""
    if isinstance(entry, DocumentRecord):
        if not entry.metadata and entry.vectors is None:
            # The common record, formatted directly: the same bytes as the dict below
            # through _ENCODER (tests/rag/test_records.py checks it), a third of the time.
            return (
                _UPSERT
                % (
                    PAYLOAD_VERSION,
                    _json_str(entry.id),
                    _json_str(entry.text),
                    _json_str(entry.content_hash),
                    iso(entry.created_at),
                    iso(entry.updated_at),
                    "null" if entry.title is None else _json_str(entry.title),
                    "null" if entry.source_path is None else _json_str(entry.source_path),
                )
            ).encode()
        obj = {"v": PAYLOAD_VERSION, "op": "upsert", **entry.to_dict()}
        if entry.vectors is not None:
            obj["vectors"] = entry.vectors.to_json()
        return _dumps(obj)
    return _dumps(
        {
            "v": PAYLOAD_VERSION,
            "op": "delete",
            "id": entry.id,
            "deleted_at": entry.deleted_at.isoformat(),
        }
    )


def encode_header(header: LogHeader) -> bytes:
    """Serialise a header payload (the generation itself is bound by the header's AAD)."""
    return _dumps(
        {
            "v": PAYLOAD_VERSION,
            "op": "header",
            "generation": header.generation,
            "created_at": header.created_at.isoformat(),
            "origin": header.origin,
        }
    )


def _load(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PayloadError(f"payload is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise PayloadError("payload is not a JSON object")
    v = obj.get("v")
    if isinstance(v, int) and v > PAYLOAD_VERSION:
        raise SchemaVersionError(
            f"document record version {v}; this version reads {PAYLOAD_VERSION}"
        )
    if v != PAYLOAD_VERSION:
        raise PayloadError(f"unknown payload version {v!r}")
    return obj


def _dt(obj: Mapping[str, Any], key: str) -> datetime:
    value = obj.get(key)
    if not isinstance(value, str):
        raise PayloadError(f"{key} missing")
    try:
        dt = datetime.fromisoformat(value)
    except ValueError as exc:
        raise PayloadError(f"{key} is not ISO 8601") from exc
    if dt.tzinfo is None:
        raise PayloadError(f"{key} is naive")
    return dt


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise PayloadError(f"{key} is not a string")
    return value


_UPSERT_KEYS = {
    "v",
    "op",
    "id",
    "text",
    "content_hash",
    "created_at",
    "updated_at",
    "title",
    "source_path",
    "metadata",
}
_DELETE_KEYS = {"v", "op", "id", "deleted_at"}
_HEADER_KEYS = {"v", "op", "generation", "created_at", "origin"}


def decode_entry(data: bytes) -> Entry:
    """Inverse of ``encode_entry``. Raises ``PayloadError`` or ``SchemaVersionError``."""
    obj = _load(data)
    op = obj.get("op")
    doc_id = obj.get("id")
    if not isinstance(doc_id, str) or not doc_id:
        raise PayloadError("id missing")
    if op == "upsert" and set(obj) - {"vectors"} == _UPSERT_KEYS:
        text, digest, metadata = obj["text"], obj["content_hash"], obj["metadata"]
        if (
            not isinstance(text, str)
            or not isinstance(digest, str)
            or not isinstance(metadata, dict)
        ):
            raise PayloadError("malformed upsert")
        return DocumentRecord(
            id=doc_id,
            text=text,
            content_hash=digest,
            created_at=_dt(obj, "created_at"),
            updated_at=_dt(obj, "updated_at"),
            title=_opt_str(obj, "title"),
            source_path=_opt_str(obj, "source_path"),
            metadata=metadata,
            vectors=ChunkVectors.from_json(obj["vectors"]) if "vectors" in obj else None,
        )
    if op == "delete" and set(obj) == _DELETE_KEYS:
        return Tombstone(id=doc_id, deleted_at=_dt(obj, "deleted_at"))
    raise PayloadError(f"unknown or malformed record (op {op!r})")


# How every payload encode_entry writes begins: the version, the op, then the id (a JSON
# string without escapes; any other id, or another key order, goes to decode_entry).
_HEAD = re.compile(
    rb'\{"v":%d,"op":"(upsert|delete)","id":"([^"\\\x00-\x1f]+)","' % PAYLOAD_VERSION
)


def decode_head(data: bytes) -> tuple[Op, str] | None:
    """``(op, id)`` read from the start of an authentic payload, or None: then ask
    ``decode_entry`` (which decodes it whole, or says what is wrong with it).

    Replay keeps nothing else, and this is ~20x cheaper than ``decode_entry``. It does
    NOT check the rest of the payload (the text, the dates, unknown keys, even that it
    is valid JSON): such a record is reported by ``decode_entry`` when it is read, and
    by ``agentzero store verify``, which decodes every record in full.
    """
    m = _HEAD.match(data)
    if m is None:
        return None
    try:
        doc_id = m[2].decode("utf-8")
    except UnicodeDecodeError:
        return None  # json.loads would read it with surrogatepass: leave it to decode_entry
    return ("upsert" if m[1] == b"upsert" else "delete"), doc_id


def decode_header(data: bytes, generation: str) -> LogHeader:
    """Inverse of ``encode_header``; the sealed generation must equal the plaintext one."""
    obj = _load(data)
    if obj.get("op") != "header" or set(obj) != _HEADER_KEYS:
        raise PayloadError("not a header")
    if obj["generation"] != generation:
        raise PayloadError("header generation does not match its envelope")
    if obj["origin"] not in ("new", "compact", "salvage", "migrate"):
        raise PayloadError("unknown header origin")
    return LogHeader(generation=generation, created_at=_dt(obj, "created_at"), origin=obj["origin"])


__all__ = [
    "PAYLOAD_VERSION",
    "decode_entry",
    "decode_head",
    "decode_header",
    "encode_entry",
    "encode_header",
]
