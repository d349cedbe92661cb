"""Frozen records of the agent-memory layer. Every result is a copy: changing one never
changes what is stored (LangGraph's users were bitten by live references)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from ..base.errors import InvalidArgumentError
from ..base.limits import check_text
from ..memory.records import Kind

MemoryType = Literal["episodic", "semantic", "procedural"]
MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)
EdgeType = Literal["temporal", "causal", "entity", "semantic", "supersedes"]
EDGE_TYPES: tuple[str, ...] = get_args(EdgeType)
Status = Literal["created", "duplicate", "updated"]


def entity_key(name: str) -> str:
    """How entities and fact parts compare: NFKC, case-folded, spaces collapsed."""
    check_text("entity", name)
    key = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    if not key:
        raise InvalidArgumentError("an entity, subject, predicate or object must not be blank")
    return key


def check_types(types: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """``types`` as a tuple of known memory types (a single string is one type)."""
    if types is None:
        return None
    seq = (types,) if isinstance(types, str) else tuple(types)
    bad = [t for t in seq if t not in MEMORY_TYPES]
    if bad or not seq:
        raise InvalidArgumentError(
            f"types must be some of {', '.join(MEMORY_TYPES)}; got {list(seq)!r}"
        )
    return seq


@dataclass(frozen=True)
class Turn:
    """One message of a conversation, for ``AgentMemory.add_turns``."""

    role: str
    content: str
    speaker: str | None = None
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WriteResult:
    """What a write did: ``created``, ``duplicate`` (nothing written: an identical memory
    exists, ``id`` is that one) or ``updated``; facts it superseded."""

    id: str
    status: Status
    superseded: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"id": self.id, "status": self.status, "superseded": list(self.superseded)}


@dataclass(frozen=True)
class Memory:
    """One agent memory as stored: its text, its type and its decay state."""

    id: str
    type: MemoryType
    content: str
    role: str
    conversation_id: str
    speaker: str | None
    created_at: datetime
    expires_at: datetime | None
    confidence: float
    importance: float
    salience: float
    stability_days: float
    difficulty: float
    last_review: datetime
    access_count: int
    archived: bool
    about: tuple[str, ...]
    metadata: Mapping[str, Any]
    # The ids of the memories this one was derived from (consolidation's promotion of
    # recurring turns; any derived memory or fact): forgetting or erasing one of them
    # takes this one with it. Empty for a memory written as it is.
    sources: tuple[str, ...] = ()
    kind: Kind = "granted"  # how it came to be remembered (``MemoryEntry.kind``)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (datetimes as ISO 8601)."""
        return {
            "id": self.id,
            "type": self.type,
            "content": self.content,
            "role": self.role,
            "conversation_id": self.conversation_id,
            "speaker": self.speaker,
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "confidence": self.confidence,
            "importance": self.importance,
            "salience": self.salience,
            "stability_days": self.stability_days,
            "difficulty": self.difficulty,
            "last_review": self.last_review.isoformat(),
            "access_count": self.access_count,
            "archived": self.archived,
            "about": list(self.about),
            "metadata": dict(self.metadata),
            "sources": list(self.sources),
            "kind": self.kind,
        }


@dataclass(frozen=True)
class RecallHit:
    """One recall result: the memory, its fused score and each signal's 1-based rank."""

    memory: Memory
    score: float
    ranks: Mapping[str, int] = field(default_factory=dict)
    # With ``explain=True``: per signal, its rank, its weight and what it added.
    explain: Mapping[str, Mapping[str, float]] | None = None

    @property
    def id(self) -> str:
        """The memory's id."""
        return self.memory.id

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        out = {"score": self.score, "ranks": dict(self.ranks), **self.memory.to_dict()}
        if self.explain is not None:
            out["explain"] = {k: dict(v) for k, v in self.explain.items()}
        return out


@dataclass(frozen=True)
class Fact:
    """A subject–predicate–object belief, valid from ``valid_from`` until ``valid_to``
    (None: still believed). A superseded or retracted fact is closed, never deleted."""

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float
    single_valued: bool
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: str | None
    retracted: bool

    @property
    def current(self) -> bool:
        """True while the fact is believed."""
        return self.valid_to is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "id": self.id,
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "confidence": self.confidence,
            "single_valued": self.single_valued,
            "valid_from": self.valid_from.isoformat(),
            "valid_to": self.valid_to.isoformat() if self.valid_to else None,
            "superseded_by": self.superseded_by,
            "retracted": self.retracted,
        }


@dataclass(frozen=True)
class Procedure:
    """What an action led to: its successes and failures so far."""

    id: str
    action: str
    context: str | None
    successes: int
    failures: int

    @property
    def reliability(self) -> float:
        """The mean of Beta(successes + 1, failures + 1): (s + 1) / (s + f + 2)."""
        return (self.successes + 1) / (self.successes + self.failures + 2)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "id": self.id,
            "action": self.action,
            "context": self.context,
            "successes": self.successes,
            "failures": self.failures,
            "reliability": self.reliability,
        }


@dataclass(frozen=True)
class Edge:
    """A typed link between two nodes (memory ids, or ``entity:<name>``); ``confidence``
    is the stored one decayed by the type's half-life to the time it was read."""

    src: str
    dst: str
    type: EdgeType
    confidence: float
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "src": self.src,
            "dst": self.dst,
            "type": self.type,
            "confidence": self.confidence,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True)
class HistoryEntry:
    """One appended line of the belief history (the audit record)."""

    seq: int
    at: datetime
    op: str
    target: str
    detail: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "seq": self.seq,
            "at": self.at.isoformat(),
            "op": self.op,
            "target": self.target,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class ForgetReceipt:
    """What a soft forget removed, and the token that brings it back until
    ``recoverable_until``."""

    token: str
    count: int
    recoverable_until: datetime
    ids: tuple[str, ...] = ()
    # Memories derived from those chosen (``Memory.sources``, followed to the end),
    # hidden with them under the same token; not counted in ``count``.
    derived: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "token": self.token,
            "count": self.count,
            "recoverable_until": self.recoverable_until.isoformat(),
            "ids": list(self.ids),
            "derived": list(self.derived),
        }


@dataclass(frozen=True)
class EraseReport:
    """What a hard erase removed: memory rows (live, archived) and forgotten ones, and
    what was derived from them (``derived``).

    ``pending``: the rows, keyword tokens, vectors and archive copies are gone, but
    another connection was reading an older snapshot, so old pages of memory.db or the
    archive still hold the text; the next erase, ``close`` or open removes them.
    """

    count: int
    ids: tuple[str, ...]
    pending: bool = False
    # Memories derived from those chosen (``Memory.sources``, followed to the end),
    # erased with them; not counted in ``count``.
    derived: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "count": self.count,
            "ids": list(self.ids),
            "pending": self.pending,
            "derived": list(self.derived),
        }


@dataclass(frozen=True)
class ConsolidationReport:
    """What one consolidation did (or, with ``dry_run``, would do)."""

    promoted: int = 0  # new semantic memories made from recurring episodes
    linked: int = 0  # episodes linked to a semantic memory promoted earlier
    decayed: int = 0  # memories whose stored retrievability went down
    archived: int = 0  # memories that faded below ``archive_below``
    merged: int = 0  # near-duplicate semantic memories archived into an older twin
    expired: int = 0  # memories past their TTL, deleted
    purged: int = 0  # forgotten memories past their undo window, deleted for good
    core_promoted: int = 0  # archival facts accessed often enough to load at every spawn
    core_demoted: int = 0  # core facts idle too long (or no longer current), archival again
    warm_evicted: int = 0  # warm summaries past their TTL, deleted
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


__all__ = [
    "EDGE_TYPES",
    "MEMORY_TYPES",
    "ConsolidationReport",
    "Edge",
    "EdgeType",
    "EraseReport",
    "Fact",
    "ForgetReceipt",
    "HistoryEntry",
    "Memory",
    "MemoryType",
    "Procedure",
    "RecallHit",
    "Status",
    "Turn",
    "WriteResult",
    "check_types",
    "entity_key",
]
