"""Frozen records of the document log: what is written (``Upsert``, ``Delete``), what is
stored (``DocumentRecord``, ``Tombstone``, ``LogHeader``), and the change feed's entries.

Their bytes (the sealed payload of each log line) are ``rag.payload``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from agentzero_store.base.errors import (
    AgentZeroStoreError,
    InvalidArgumentError,
)
from agentzero_store.base.limits import check_optional_text, check_text, metadata_json

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


def iso(dt: datetime) -> str:
    """``dt.isoformat()``, formatted once per datetime object."""
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
        return {
            "model": self.model,
            "dim": self.dim,
            "chunking": self.chunking,
            "data": base64.b64encode(self.data).decode("ascii"),
        }

    @classmethod
    def from_json(cls, obj: Any) -> ChunkVectors:
        """Inverse of ``to_json``; raises ``PayloadError`` when malformed."""
        try:
            return cls(
                str(obj["model"]),
                int(obj["dim"]),
                str(obj["chunking"]),
                base64.b64decode(obj["data"], validate=True),
            )
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
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
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
