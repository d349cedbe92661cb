"""Frozen records of the document log and their explicit, versioned (de)serialisation.

Everything a user wrote (document id, text, title, source path, metadata) lives ONLY in
the sealed payload; ``rag.framing`` adds the plaintext envelope (seq, ciphertext, crc).
The payload is compact JSON with a version field ``v``; no pickle, unknown keys refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from agentzero_store.base.errors import (
    AgentZeroStoreError,
    InvalidArgumentError,
    SchemaVersionError,
)
from agentzero_store.base.limits import check_optional_text, check_text, metadata_json

PAYLOAD_VERSION = 1

Op = Literal["upsert", "delete"]
Origin = Literal["new", "compact", "salvage", "migrate"]


class PayloadError(ValueError):
    """An authentic payload that does not decode (bug or foreign writer). Internal."""


class StaleFeedError(AgentZeroStoreError):
    """A change-feed position does not belong to the current log generation."""

    code = "stale_change_feed"
    default_hint = "rebuild the derived index from the document log (it is safe to rebuild)"


def utcnow() -> datetime:
    """The default clock: aware UTC now."""
    return datetime.now(UTC)


def content_hash(text: str) -> str:
    """sha256 (hex) of the UTF-8 text: lets ingest skip unchanged documents."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen_metadata(metadata: Mapping[str, Any] | None, *, new: bool = False) -> Mapping[str, Any]:
    if metadata is None or metadata is _EMPTY or (type(metadata) is dict and not metadata):
        return _EMPTY  # checked before the (slow) abstract isinstance below
    if isinstance(metadata, Mapping) and not metadata:
        return _EMPTY  # the common case; skips a JSON round trip per record
    if new:
        # Metadata about to be written: a JSON round trip both validates (str keys, no
        # NaN, bounded size and depth: see agentzero_store.base.limits) and deep-copies, so
        # later edits by the caller cannot change a record that was already sealed.
        return MappingProxyType(json.loads(metadata_json(metadata)))
    # Read back from the log: written before the caps existed, perhaps; never refused.
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidArgumentError("metadata must be a JSON object (a mapping with str keys)")
    try:
        copy = json.loads(json.dumps(dict(metadata), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"metadata is not JSON-serialisable: {exc}") from exc
    return MappingProxyType(copy)


_last_iso: tuple[datetime | None, str] = (None, "")


def _iso(dt: datetime) -> str:
    # A batch stamps every record with the same datetime object: format it once. Keyed
    # by identity, not equality: equal instants in other time zones format differently.
    global _last_iso
    last = _last_iso
    if last[0] is not dt:
        last = _last_iso = (dt, dt.isoformat())
    return last[1]


def _check_id(doc_id: object) -> str:
    if not isinstance(doc_id, str) or not doc_id:
        raise InvalidArgumentError("a document id must be a non-empty string")
    return check_text("document id", doc_id)


@dataclass(frozen=True)
class ChunkVectors:
    """Embeddings of a document's chunks, sealed with the record they belong to.

    Kept in the source (not only in the derived HNSW index) so a lost or corrupt index is
    rebuilt without re-embedding: embedding is the slow part of ingest.
    """

    model: str  # embedder model id
    dim: int
    chunking: str  # ChunkParams.id the chunks were cut with
    data: bytes = field(repr=False)  # float32, row-major, one row per chunk

    def __post_init__(self) -> None:
        if self.dim <= 0 or len(self.data) % (4 * self.dim):
            raise InvalidArgumentError("chunk vectors do not match their dimension")

    @property
    def rows(self) -> int:
        """Number of chunk vectors."""
        return len(self.data) // (4 * self.dim)

    def to_json(self) -> dict[str, Any]:
        """Explicit serialisation (base64 of the float32 bytes)."""
        return {"model": self.model, "dim": self.dim, "chunking": self.chunking,
                "data": base64.b64encode(self.data).decode("ascii")}

    @classmethod
    def from_json(cls, obj: Any) -> ChunkVectors:
        """Inverse of ``to_json``; raises ``PayloadError`` when malformed."""
        try:
            return cls(str(obj["model"]), int(obj["dim"]), str(obj["chunking"]),
                       base64.b64decode(obj["data"], validate=True))
        except (KeyError, TypeError, ValueError, InvalidArgumentError) as exc:
            raise PayloadError(f"malformed chunk vectors: {exc}") from exc


@dataclass(frozen=True)
class Upsert:
    """Input: store ``text`` under ``id``, replacing an earlier version (keeps created_at)."""

    id: str
    text: str
    title: str | None = None
    source_path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    vectors: ChunkVectors | None = None

    def __post_init__(self) -> None:
        _check_id(self.id)
        if not isinstance(self.text, str):
            raise InvalidArgumentError("document text must be a string")
        check_text("document text", self.text)
        if self.title is not None and not isinstance(self.title, str):
            raise InvalidArgumentError("title must be a string or None")
        check_optional_text("title", self.title)
        if self.source_path is not None and not isinstance(self.source_path, str):
            raise InvalidArgumentError("source_path must be a string or None")
        check_optional_text("source_path", self.source_path)
        object.__setattr__(self, "metadata", _frozen_metadata(self.metadata, new=True))


@dataclass(frozen=True)
class Delete:
    """Input: remove the document ``id`` (written as a tombstone with its own seq)."""

    id: str

    def __post_init__(self) -> None:
        _check_id(self.id)


@dataclass(frozen=True)
class DocumentRecord:
    """One stored version of a document (the payload of an upsert record)."""

    id: str
    text: str
    content_hash: str
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    source_path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    vectors: ChunkVectors | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", _frozen_metadata(self.metadata))

    @classmethod
    def of_upsert(
        cls, op: Upsert, digest: str, created_at: datetime, updated_at: datetime
    ) -> DocumentRecord:
        """The version ``op`` writes: equal to ``DocumentRecord(op.id, op.text, digest,
        created_at, updated_at, op.title, op.source_path, op.metadata, op.vectors)``.

        Built without the dataclass ``__init__``: ``op`` was checked and its metadata
        frozen when it was made, and the generated ``__init__`` of a frozen dataclass
        sets each of the nine fields through ``object.__setattr__`` (about as long as
        sealing a short record).
        """
        record = object.__new__(cls)
        record.__dict__.update(
            id=op.id,
            text=op.text,
            content_hash=digest,
            created_at=created_at,
            updated_at=updated_at,
            title=op.title,
            source_path=op.source_path,
            metadata=op.metadata,
            vectors=op.vectors,
        )
        return record

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (datetimes as ISO 8601)."""
        return {
            "id": self.id,
            "text": self.text,
            "content_hash": self.content_hash,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "title": self.title,
            "source_path": self.source_path,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class Tombstone:
    """The payload of a delete record."""

    id: str
    deleted_at: datetime


@dataclass(frozen=True)
class LogHeader:
    """The sealed first line of a log: which generation this file is and how it was made."""

    generation: str
    created_at: datetime
    origin: Origin


class Change(NamedTuple):
    """One entry of the change feed, oldest first. ``record`` is None for a delete.

    A NamedTuple so sidecars can unpack ``for seq, op, doc_id, record in log.changes_since(n)``.
    """

    seq: int
    op: Op
    doc_id: str
    record: DocumentRecord | None


Entry = DocumentRecord | Tombstone


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
                    _iso(entry.created_at),
                    _iso(entry.updated_at),
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
