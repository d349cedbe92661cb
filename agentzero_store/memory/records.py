"""Frozen records of the memory store and their explicit (de)serialisation."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

from ..base.errors import CorruptStoreError, InvalidArgumentError
from ..base.limits import (
    check_optional_text,
    check_optional_time,
    check_text,
    check_time,
    metadata_json,
)

Kind = Literal["granted", "recalled", "self_noted", "archived"]
Source = Literal["controller", "tool", "peer", "self"]
KINDS: tuple[str, ...] = get_args(Kind)
SOURCES: tuple[str, ...] = get_args(Source)

DEFAULT_SCOPE = "default"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Change:
    """One entry of a store's change feed (the ``change_feed`` capability of ``seam``): an
    insert (with its vector, if any) or a delete.

    An insert whose row still exists carries the row's scope and expiry; the fields are
    None for deletes and for inserts whose row has since been deleted.
    """

    seq: int
    op: Literal["insert", "delete"]
    label: int
    embedding: bytes | None
    org_id: str | None = None
    agent_id: str | None = None
    conversation_id: str | None = None
    expires_at_us: int | None = None


def text_fingerprint(text: str) -> str:
    """A text's fingerprint, insensitive to case, Unicode form and spacing (32 hex)."""
    norm = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.sha256(norm.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class MemoryEntry:
    """One remembered message or note. ``id`` and ``created_at`` are set on append if empty."""

    content: str
    role: str = "user"
    conversation_id: str = DEFAULT_SCOPE
    org_id: str = DEFAULT_SCOPE
    agent_id: str = DEFAULT_SCOPE
    expires_at: datetime | None = None
    kind: Kind = "granted"
    source: Source = "controller"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    created_at: datetime | None = None
    embedding_model: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.content, str) or not self.content.strip():
            raise InvalidArgumentError("content must be a non-empty string")
        # Text that does not encode as UTF-8 (lone surrogates) would fail deep in SQLCipher.
        check_text("content", self.content)
        for name in ("role", "conversation_id", "org_id", "agent_id"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise InvalidArgumentError(f"{name} must be a non-empty string")
            check_text(name, v)
        check_optional_text("id", self.id)
        check_optional_text("embedding_model", self.embedding_model)
        if self.kind not in KINDS:
            raise InvalidArgumentError(f"kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        if self.source not in SOURCES:
            raise InvalidArgumentError(
                f"source must be one of {', '.join(SOURCES)}; got {self.source!r}"
            )
        check_optional_time("expires_at", self.expires_at)
        check_optional_time("created_at", self.created_at)
        if self.metadata:  # the common empty case needs no encoding
            metadata_json(self.metadata)  # JSON only, no NaN, bounded (see ``base.limits``)
        elif not isinstance(self.metadata, Mapping):
            raise InvalidArgumentError("metadata must be a JSON object (a mapping)")

    def with_(self, **changes: Any) -> MemoryEntry:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def fingerprint(self) -> str:
        """Content fingerprint used to deduplicate fused results (``text_fingerprint``).
        Computed once per entry: a write asks for it in the store's row and the agent
        memory's. The entry is frozen, so the cache sits beside the fields (not one of
        them: equality, ``replace`` and ``to_dict`` ignore it)."""
        fp: str | None = self.__dict__.get("_fingerprint")
        if fp is None:
            fp = text_fingerprint(self.content)
            self.__dict__["_fingerprint"] = fp
        return fp

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (datetimes as ISO 8601)."""
        return {
            "id": self.id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "conversation_id": self.conversation_id,
            "org_id": self.org_id,
            "agent_id": self.agent_id,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "kind": self.kind,
            "source": self.source,
            "metadata": dict(self.metadata),
            "embedding_model": self.embedding_model,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryEntry:
        """Inverse of ``to_dict`` (unknown keys are rejected)."""
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a memory must be a JSON object, got {type(d).__name__}")
        known = {f for f in cls.__dataclass_fields__}
        extra = set(d) - known
        if extra:
            raise InvalidArgumentError(f"unknown memory fields: {', '.join(sorted(extra))}")
        kw = dict(d)
        for k in ("created_at", "expires_at"):
            if isinstance(kw.get(k), str):
                kw[k] = parse_datetime(kw[k])
        kw = {k: v for k, v in kw.items() if v is not None or k in ("expires_at",)}
        return cls(**kw)


@dataclass(frozen=True)
class MemoryHit:
    """One recall result: the entry, its score, and each signal's 1-based rank."""

    id: str
    entry: MemoryEntry
    score: float
    ranks: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "id": self.id,
            "score": self.score,
            "ranks": dict(self.ranks),
            **{k: v for k, v in self.entry.to_dict().items() if k != "id"},
        }


@dataclass(frozen=True)
class Scope:
    """Which rows a query may see. ``None`` fields are unconstrained."""

    org_id: str | None = None
    agent_id: str | None = None
    conversation_id: str | None = None

    def __post_init__(self) -> None:
        # Every read path builds a Scope: a value SQLite cannot bind fails here, named.
        for name in ("org_id", "agent_id", "conversation_id"):
            check_optional_text(name, getattr(self, name))

    def is_empty(self) -> bool:
        """True if no field constrains the scope."""
        return self.org_id is None and self.agent_id is None and self.conversation_id is None


def parse_datetime(text: str) -> datetime:
    """Parse ISO 8601; a naive value (ambiguous) or one outside the range of times
    (``base.limits.check_time``) is refused."""
    try:
        dt = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"not an ISO 8601 datetime: {text!r}") from exc
    return check_time("datetime", dt)


def to_us(dt: datetime) -> int:
    """Microseconds since the epoch (UTC) of an aware datetime."""
    return (dt - _EPOCH) // timedelta(microseconds=1)


def from_us(us: int, memory_id: object = None) -> datetime:
    """Aware UTC datetime from microseconds since the epoch.

    A stored time ``datetime`` cannot hold (written before every entry checked its
    range) is a ``CorruptStoreError`` naming the memory it was read for (when given),
    never a raw OverflowError.
    """
    try:
        return _EPOCH + timedelta(microseconds=us)
    except OverflowError:
        raise CorruptStoreError(
            f"a stored time ({us} µs since 1970) is outside the years 1 to 9999",
            record=None if memory_id is None else f"memory {memory_id}",
            hint="`agentzero store verify` lists every such memory; erase it by id "
            "(`agentzero memory erase --id ID --yes`) or restore a backup",
        ) from None
