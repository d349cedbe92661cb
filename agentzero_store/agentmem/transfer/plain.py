"""The agent memory's state in a backend-neutral, plain form: what ``store migrate``
reads out of one backend and writes into the other.

Each backend keeps the layer in its own shape: SQLite holds texts and lookup keys in
the clear inside its encrypted file, PostgreSQL seals every text per table, row and scope
and blinds every lookup key per scope (``postgres.codec``). Neither shape can be copied
into the other, so a move goes through this plain form: an exporter of the source opens
what it sealed, an importer of the target seals and blinds it as its own writes do.

- ``MemoryState``: one memory row's layer columns (type, speaker, confidence, decay and
  access state, archive time, promotion), the entities it is about (spellings: each
  backend derives its keys from them), its access log and, if archived, its text. Keyed
  by the memory's id, which the memory-row copy keeps (labels differ between stores).
- ``ScopeRows``: one (org, agent) scope's facts, procedures, edges, belief history,
  tombstones, pins, core marks, warm summaries, sessions and provenance.
- ``NamespaceState`` / ``GrantState``: shared namespaces and their grants, per org.

What is *not* here: the undo area (a forget's payload is a backend-shaped snapshot for
that backend's undo; ``store migrate`` refuses while any forget is pending), each scope's
speaker list and adoption mark (derived from the memory rows), pending erase purges
(local cleanup of the source), and the archive digest (the target computes its own:
SQLite's is a SHA-256, PostgreSQL's keyed).

``transfer.side.LayerTransfer`` is what either backend's side offers
(``sqlite.transfer.SqliteLayer``, ``postgres.transfer.PgLayer``); ``ops.migrate_layer``
drives a move, ``ops.migrate_check_layer`` its check.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..records import entity_key

PAGE = 500  # memories per export page and import transaction


@dataclass(frozen=True, slots=True)
class MemoryState:
    """The agent memory's state of one memory row (see the module)."""

    id: str
    org_id: str
    agent_id: str
    type: str
    speaker: str | None
    confidence: float | None
    importance: float | None
    salience: float | None  # None: never computed (each backend computes it from the text)
    stability: float | None
    difficulty: float | None
    last_review_us: int | None  # None: never reviewed
    access_count: int
    last_access_us: int | None
    retrievability: float | None
    archived_at_us: int | None
    promoted_to: str | None
    about: tuple[str, ...]  # entities as written, besides the speaker, by key
    accesses: tuple[int, ...]  # the access log's times, oldest first
    archived: tuple[str, str] | None  # (content, metadata JSON) when archived

    @property
    def speaker_key(self) -> str | None:
        """The speaker's entity key (what both backends look a speaker up by)."""
        return None if self.speaker is None else entity_key(self.speaker)

    def about_keyed(self) -> list[tuple[str, str]]:
        """(spelling, entity key) of each ``about`` entity but the speaker's."""
        skip = self.speaker_key
        return [(n, k) for n in self.about if (k := entity_key(n)) != skip]


# The layer columns of a memory row, as both backends name them, in ``MemoryState``'s
# order (the speaker and its key are written apart: sealed and blinded on PostgreSQL).
COLUMNS = (
    "type",
    "confidence",
    "importance",
    "salience",
    "stability",
    "difficulty",
    "last_review_us",
    "access_count",
    "last_access_us",
    "retrievability",
    "promoted_to",
)


def column_values(s: MemoryState) -> tuple[Any, ...]:
    """``s``'s values of ``COLUMNS``, in that order."""
    return tuple(getattr(s, c) for c in COLUMNS)


def memory_state(
    row: Sequence[Any],
    about: Sequence[str],
    accesses: Sequence[int],
    archived: tuple[str, str] | None,
) -> MemoryState:
    """A ``MemoryState`` from a row of (id, org, agent, type, speaker, then ``COLUMNS``
    but type, with archived_at_us before promoted_to): ``STATE_COLUMNS``."""
    (mid, org, agent, type_, speaker, conf, imp, sal, stab, diff) = row[:10]
    (review, count, last, retr, archived_at, promoted) = row[10:16]
    return MemoryState(
        str(mid),
        str(org),
        str(agent),
        str(type_),
        None if speaker is None else str(speaker),
        _float(conf),
        _float(imp),
        _float(sal),
        _float(stab),
        _float(diff),
        None if review is None else int(review),
        int(count),
        None if last is None else int(last),
        _float(retr),
        None if archived_at is None else int(archived_at),
        None if promoted is None else str(promoted),
        tuple(sorted(about, key=entity_key)),
        tuple(sorted(int(a) for a in accesses)),
        archived,
    )


# What ``memory_state`` reads, in its order (the speaker column holds a sealed blob on
# PostgreSQL: its exporter opens it before building the state).
STATE_COLUMNS = (
    "id, org_id, agent_id, type, speaker, confidence, importance, salience, stability,"
    " difficulty, last_review_us, access_count, last_access_us, retrievability,"
    " archived_at_us, promoted_to"
)


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


@dataclass(frozen=True, slots=True)
class FactState:
    """A fact: its plain parts, validity and supersession (``am_fact``)."""

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float
    single_valued: bool
    valid_from_us: int
    valid_to_us: int | None
    superseded_by: str | None
    retracted: bool

    def lookup_keys(self) -> tuple[str, str, str]:
        """The (subject, predicate, object) keys the facade looks the fact up by."""
        return entity_key(self.subject), entity_key(self.predicate), entity_key(self.object)


@dataclass(frozen=True, slots=True)
class ProcedureState:
    """A procedure and its outcomes (``am_procedure``)."""

    id: str
    action: str
    context: str | None
    successes: int
    failures: int
    updated_at_us: int

    def lookup_keys(self) -> tuple[str, str]:
        """(action key, context key) as ``AgentMemory.record_outcome`` computes them."""
        return entity_key(self.action), entity_key(self.context) if self.context else ""


@dataclass(frozen=True, slots=True)
class EdgeState:
    """A stored, typed edge between two memories (``am_edge``)."""

    src: str
    dst: str
    type: str
    confidence: float
    created_at_us: int


@dataclass(frozen=True, slots=True)
class HistoryState:
    """One line of the belief history; its sequence number is kept (``history()``
    shows it), its detail is canonical JSON (sorted keys)."""

    seq: int
    at_us: int
    op: str
    target: str
    detail: str

    def detail_value(self) -> Any:
        """The detail as the facade stores it (a JSON object)."""
        return json.loads(self.detail)


def canonical(detail: Any) -> str:
    """A history detail (a JSON text or value) as ``HistoryState.detail``."""
    value = json.loads(detail) if isinstance(detail, str) else detail
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class TombstoneState:
    """What an erase left behind: ids and a count, never content (``am_tombstone``)."""

    seq: int
    at_us: int
    selector: str
    count: int
    ids: tuple[str, ...]
    derived: tuple[str, ...] = ()  # erased for what they were derived from


@dataclass(frozen=True, slots=True)
class SourceState:
    """Provenance: a derived memory and one memory it came from (``am_source``)."""

    memory_id: str
    source_id: str


@dataclass(frozen=True, slots=True)
class PinState:
    """A pinned memory (``am_pin``)."""

    memory_id: str
    at_us: int


@dataclass(frozen=True, slots=True)
class CoreState:
    """A core mark on a semantic memory (``am_core``)."""

    memory_id: str
    since_us: int
    reason: str


@dataclass(frozen=True, slots=True)
class SummaryState:
    """A warm summary of a conversation, with its sources in order (``am_summary``)."""

    id: str
    conversation_id: str
    text: str | None  # None: extractive (its sources are its text)
    created_at_us: int
    expires_at_us: int
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SessionState:
    """A session of one agent and the sessions it inherits (``am_session``)."""

    name: str
    inherits: tuple[str, ...]
    created_at_us: int


@dataclass(frozen=True)
class ScopeRows:
    """Every row of one (org, agent) scope that is not a memory row's own state. Each
    tuple is in a fixed order (ids, seqs), so two exports of equal state are equal."""

    org_id: str
    agent_id: str
    facts: tuple[FactState, ...] = ()
    procedures: tuple[ProcedureState, ...] = ()
    edges: tuple[EdgeState, ...] = ()
    history: tuple[HistoryState, ...] = ()
    tombstones: tuple[TombstoneState, ...] = ()
    pins: tuple[PinState, ...] = ()
    cores: tuple[CoreState, ...] = ()
    summaries: tuple[SummaryState, ...] = ()
    sessions: tuple[SessionState, ...] = ()
    sources: tuple[SourceState, ...] = ()

    KINDS = (
        "facts",
        "procedures",
        "edges",
        "history",
        "tombstones",
        "pins",
        "cores",
        "summaries",
        "sessions",
        "sources",
    )

    def counts(self) -> dict[str, int]:
        """How many rows of each kind (``KINDS``)."""
        return {k: len(getattr(self, k)) for k in self.KINDS}

    def memory_ids(self) -> set[str]:
        """Every memory id the rows point at (each must have moved for its row to)."""
        out = {f.id for f in self.facts} | {p.id for p in self.procedures}
        out |= {e.src for e in self.edges} | {e.dst for e in self.edges}
        out |= {p.memory_id for p in self.pins} | {c.memory_id for c in self.cores}
        out |= {x.memory_id for x in self.sources} | {x.source_id for x in self.sources}
        for s in self.summaries:
            out.update(s.sources)
        return out

    def only_moved(self, moved: set[str]) -> ScopeRows:
        """These rows without those that point at a memory not in ``moved`` (the memory
        expired before the copy, so it did not move: neither do its rows). The history
        and tombstones point at no live memory and stay whole."""
        return ScopeRows(
            self.org_id,
            self.agent_id,
            tuple(f for f in self.facts if f.id in moved),
            tuple(p for p in self.procedures if p.id in moved),
            tuple(e for e in self.edges if e.src in moved and e.dst in moved),
            self.history,
            self.tombstones,
            tuple(p for p in self.pins if p.memory_id in moved),
            tuple(c for c in self.cores if c.memory_id in moved),
            tuple(s for s in self.summaries if set(s.sources) <= moved),
            self.sessions,
            tuple(x for x in self.sources if x.memory_id in moved and x.source_id in moved),
        )


def scope_rows(org_id: str, agent_id: str, **parts: Sequence[Any]) -> ScopeRows:
    """``ScopeRows`` with each kind put in its fixed order."""
    order = {
        "facts": lambda x: x.id,
        "procedures": lambda x: x.id,
        "edges": lambda x: (x.src, x.dst, x.type),
        "history": lambda x: x.seq,
        "tombstones": lambda x: x.seq,
        "pins": lambda x: x.memory_id,
        "cores": lambda x: x.memory_id,
        "summaries": lambda x: x.id,
        "sessions": lambda x: x.name,
        "sources": lambda x: (x.memory_id, x.source_id),
    }
    return ScopeRows(
        org_id, agent_id, **{k: tuple(sorted(v, key=order[k])) for k, v in parts.items()}
    )


@dataclass(frozen=True, slots=True)
class NamespaceState:
    """A shared namespace of an org and its owner (``am_namespace``)."""

    org_id: str
    name: str
    owner: str
    created_at_us: int


@dataclass(frozen=True, slots=True)
class GrantState:
    """An agent granted a namespace (``am_grant``)."""

    org_id: str
    namespace: str
    agent_id: str
    granted_by: str
    at_us: int


@dataclass(frozen=True)
class Namespaces:
    """Every namespace and grant of a store, in order."""

    namespaces: tuple[NamespaceState, ...] = ()
    grants: tuple[GrantState, ...] = ()

    def ordered(self) -> Namespaces:
        """The same, each kind in its fixed order (by org, then name)."""
        return Namespaces(
            tuple(sorted(self.namespaces, key=lambda n: (n.org_id, n.name))),
            tuple(sorted(self.grants, key=lambda g: (g.org_id, g.namespace, g.agent_id))),
        )


def differing(a: Any, b: Any) -> list[str]:
    """The names of the fields in which two records of one dataclass differ."""
    return [f.name for f in fields(a) if getattr(a, f.name) != getattr(b, f.name)]


__all__ = [
    "COLUMNS",
    "PAGE",
    "STATE_COLUMNS",
    "CoreState",
    "EdgeState",
    "FactState",
    "GrantState",
    "HistoryState",
    "MemoryState",
    "NamespaceState",
    "Namespaces",
    "PinState",
    "ProcedureState",
    "ScopeRows",
    "SessionState",
    "SourceState",
    "SummaryState",
    "TombstoneState",
    "canonical",
    "column_values",
    "differing",
    "memory_state",
    "scope_rows",
]
