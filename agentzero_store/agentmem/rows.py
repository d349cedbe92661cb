"""The records that cross the agent memory's backend seam (``seam``), shared by both
backends (``sqlite``, ``postgres``) and the layer above them; no backend is imported here.

- ``NewMemory``, ``Filter``, ``Candidate``, ``Row``: what the layer writes and reads;
- ``ForgetPayload``: what a forget keeps of a memory for its undo (``KeptMemory``, its
  memory row; ``KeptLayer``, the layer's columns; its entities, fact, procedure and
  edges), read and written by name. Each backend fills it in one place (its
  ``lifecycle.forget``) and reads it in one place (its ``lifecycle.unforget``).

The payload is stored (SQLite's ``am_forgotten.payload`` as JSON; PostgreSQL's
``az_am_forgotten.payload`` sealed JSON), so its encoding is fixed: the JSON object of
``encode_payload`` keeps every row as a list in a fixed column order (``KEPT_MEMORY``,
``KEPT_LAYER``, and each backend's ``PayloadTables``), exactly as every earlier version
wrote it. Only these two functions know the positions; a payload written before the
layer's schema v4 (its layer row has no ``speaker_key``) reads with ``speaker_key`` None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import CorruptStoreError
from ..memory.records import Kind, Source
from .records import Memory


@dataclass(frozen=True)
class NewMemory:
    """The layer's attributes of a memory row about to be inserted."""

    type: str
    speaker: str | None
    speaker_key: str | None  # records.entity_key(speaker)
    confidence: float
    importance: float
    stability: float
    difficulty: float
    about: tuple[tuple[str, str], ...]  # (entity as written, key), the speaker's not


@dataclass(frozen=True)
class Filter:
    """Which memories a recall may return, beyond the repository's scope."""

    now_us: int
    types: tuple[str, ...] | None = None
    about: tuple[str, ...] | None = None  # entity keys: any of them
    as_of_us: int | None = None
    include_archived: bool = False
    any_validity: bool = False  # facts whatever their validity (``get`` of a closed fact)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What recall's signals need to know of a qualifying candidate (no text)."""

    id: str
    type: str
    confidence: float
    access_count: int
    conversation_id: str
    created_at_us: int
    fingerprint: str


@dataclass(frozen=True)
class Row:
    """A memory as read, before the archive fills in archived text."""

    label: int
    memory: Memory
    digest: str | None  # set when the text is in the archive


def entities(
    speaker: str | None, speaker_key: str | None, about: Sequence[tuple[str, str]]
) -> tuple[str, ...]:
    """A memory's entities as written, ordered by key: its speaker (first spelling wins
    over an ``about`` entity with the same key) and its ``am_about`` rows."""
    keyed = {k: n for n, k in about}
    if speaker is not None and speaker_key is not None:
        keyed[speaker_key] = speaker
    return tuple(keyed[k] for k in sorted(keyed))


# ------------------------------------------------------------------ forget payload
@dataclass(frozen=True)
class KeptMemory:
    """A forgotten memory's memory row: what an undo inserts again."""

    id: str
    role: str
    content: str
    created_at_us: int
    conversation_id: str
    org_id: str
    agent_id: str
    expires_at_us: int | None
    kind: Kind
    source: Source
    metadata: str  # JSON
    embedding_model: str | None


@dataclass(frozen=True)
class KeptLayer:
    """A forgotten memory's layer columns (the ``am_memory`` view's), as forget read
    them. ``fingerprint`` is the store's text fingerprint (on PostgreSQL its keyed one,
    in hex); ``last_review_us`` is ``created_at_us`` if never reviewed."""

    id: str
    label: int
    org_id: str
    agent_id: str
    conversation_id: str
    type: str
    speaker: str | None
    created_at_us: int
    fingerprint: str
    confidence: float
    importance: float
    salience: float | None
    stability: float
    difficulty: float
    last_review_us: int
    access_count: int
    last_access_us: int | None
    retrievability: float | None
    archived_at_us: int | None  # not None: the text is in the archive
    archive_digest: str | None
    promoted_to: str | None
    speaker_key: str | None = None  # None in a payload kept before the layer's v4


@dataclass(frozen=True)
class ForgetPayload:
    """What a forget keeps of one memory, for its undo. ``fact``, ``procedure`` and
    ``edges`` are the backend's own table rows by column name (``PayloadTables``),
    put back as they were; ``about``: (entity as written, key), the speaker's not."""

    memory: KeptMemory
    layer: KeptLayer
    about: tuple[tuple[str, str], ...]
    fact: dict[str, Any] | None
    procedure: dict[str, Any] | None
    edges: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class PayloadTables:
    """A backend's fact, procedure and edge tables' columns, in their stored order."""

    fact: tuple[str, ...]
    procedure: tuple[str, ...]
    edge: tuple[str, ...]


@dataclass(frozen=True)
class Forgotten:
    """One entry of the undo area still within its window."""

    id: str
    payload: ForgetPayload
    vector: bytes | None


KEPT_MEMORY = tuple(f.name for f in dataclasses.fields(KeptMemory))
KEPT_LAYER = tuple(f.name for f in dataclasses.fields(KeptLayer))
_OPTIONAL_LAYER = 1  # speaker_key: absent from payloads kept before the layer's v4


def payload_path(column: str) -> str:
    """The JSON path of a layer column in a stored payload (for SQL over the stored
    JSON: ``json_extract(payload, payload_path("archived_at_us"))``)."""
    return f"$.am_memory[{KEPT_LAYER.index(column)}]"


def _named(
    what: str, columns: Sequence[str], row: Sequence[Any], optional: int = 0
) -> dict[str, Any]:
    if not len(columns) - optional <= len(row) <= len(columns):
        raise CorruptStoreError(
            f"a forget payload's {what} row has {len(row)} values, expected {len(columns)}",
            hint="restore the store from a backup (the undo area is damaged)",
        )
    return dict(zip(columns, row, strict=False))


def encode_payload(p: ForgetPayload, tables: PayloadTables) -> dict[str, Any]:
    """The stored JSON object of ``p`` (rows as lists in their fixed column order)."""

    def row(columns: Sequence[str], values: Mapping[str, Any]) -> list[Any]:
        return [values[c] for c in columns]

    return {
        "memory": [getattr(p.memory, c) for c in KEPT_MEMORY],
        "am_memory": [getattr(p.layer, c) for c in KEPT_LAYER],
        "about": [list(a) for a in p.about],
        "fact": None if p.fact is None else row(tables.fact, p.fact),
        "procedure": None if p.procedure is None else row(tables.procedure, p.procedure),
        "edges": [row(tables.edge, e) for e in p.edges],
    }


def decode_payload(raw: Mapping[str, Any], tables: PayloadTables) -> ForgetPayload:
    """The ``ForgetPayload`` of a stored JSON object (``encode_payload``'s, or one an
    earlier version wrote: the same lists). A row of the wrong length is
    ``CorruptStoreError``."""
    fact, proc = raw.get("fact"), raw.get("procedure")
    return ForgetPayload(
        KeptMemory(**_named("memory", KEPT_MEMORY, raw["memory"])),
        KeptLayer(**_named("layer", KEPT_LAYER, raw["am_memory"], _OPTIONAL_LAYER)),
        tuple((str(e), str(k)) for e, k in raw.get("about") or ()),
        None if fact is None else _named("fact", tables.fact, fact),
        None if proc is None else _named("procedure", tables.procedure, proc),
        tuple(_named("edge", tables.edge, e) for e in raw.get("edges") or ()),
    )


__all__ = [
    "KEPT_LAYER",
    "KEPT_MEMORY",
    "Candidate",
    "Filter",
    "ForgetPayload",
    "Forgotten",
    "KeptLayer",
    "KeptMemory",
    "NewMemory",
    "PayloadTables",
    "Row",
    "decode_payload",
    "encode_payload",
    "entities",
    "payload_path",
]
