"""``agentzero memory import-agentzero``: AgentZero's memory table into this store.

The source is AgentZero's ``memory.db``, plain SQLite or SQLCipher under its own
passphrase, read-only (``storage.foreign_db``). Each row becomes a ``MemoryEntry`` with
the same role, content, scope and times, and metadata ``{"imported_from": "agentzero"}``.

**Idempotent.** A row's memory id is derived from the row itself: sha256 over its role,
content, times and scope (and, for rows that are exact copies of each other, their
position among the copies), so the same row always gets the same id. A re-run skips
every id already stored (and embeds nothing for it); an interrupted run, re-run, imports
the rest. Rows whose ``expires_at`` has passed are skipped (they would be deleted by the
next ``memory gc`` and imported again by the next run).

**Embeddings.** A row's stored vector is kept only when it is certainly the store's
model: the store embeds with the local all-MiniLM-L6-v2 (AgentZero's model) and the blob
is 384 finite float32 values, not all zero. Any other row is embedded again with the
store's embedder (batch by batch, so the CLI shows a progress bar); with no embedder,
memories are imported without vectors (keyword recall only; ``store reembed`` later).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import AgentZeroStoreError
from ..embed.local import LOCAL_MODEL_DIM, LOCAL_MODEL_ID
from ..embed.vectors import Embedder
from ..memory.records import DEFAULT_SCOPE, MemoryEntry
from ..memory.seam import DataDirStore
from ..memory.sqlite.write import check_embedder
from ..storage.foreign_db import ForeignMemoryDb, ForeignRow

PROVENANCE = {"imported_from": "agentzero"}
MAX_LISTED = 20  # rowids of invalid rows named in the report


@dataclass
class ImportReport:
    """What an import did (``to_dict`` for ``--json``)."""

    source: str
    encrypted: bool
    rows: int = 0  # rows in the source table
    imported: int = 0  # new memories written by this run
    already_imported: int = 0  # rows an earlier run imported (same id): skipped
    skipped: dict[str, int] = field(default_factory=lambda: {"expired": 0, "empty": 0})
    invalid: int = 0  # rows that are not a memory (bad dates, undecodable text)
    invalid_rows: list[int] = field(default_factory=list)  # their rowids (the first 20)
    embeddings_kept: int = 0  # vectors taken over from the source
    embedded: int = 0  # vectors computed again with the store's embedder

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def open_agentzero(path: Path | str, passphrase: str | None = None) -> ForeignMemoryDb:
    """AgentZero's ``memory.db`` opened read-only (``WrongKeyError`` for a wrong or
    missing source passphrase; nothing is written anywhere)."""
    return ForeignMemoryDb.open(path, passphrase)


def import_agentzero(
    store: DataDirStore,
    source: ForeignMemoryDb,
    *,
    batch: int = 256,
    advance: Callable[[int], None] | None = None,
    now: datetime | None = None,
) -> ImportReport:
    """Import every row of ``source`` into ``store`` (one transaction per batch)."""
    embedder = store.embedder
    if embedder is not None:
        check_embedder(store.database, embedder)  # refuse before anything is written
    keep = embedder is not None and (embedder.model_id, embedder.dimension) == (
        LOCAL_MODEL_ID,
        LOCAL_MODEL_DIM,
    )
    now = now or datetime.now(UTC)
    report = ImportReport(str(source.path), source.encrypted, rows=source.count())
    copies: Counter[str] = Counter()
    for rows in source.rows(batch):
        entries: list[MemoryEntry] = []
        blobs: list[bytes | None] = []
        for row in rows:
            entry = _entry(row, now, copies, report)
            if entry is not None:
                entries.append(entry)
                blobs.append(row.embedding)
        fresh = _not_stored(store, entries)
        report.already_imported += len(entries) - len(fresh)
        entries = [entries[i] for i in fresh]
        blobs = [blobs[i] for i in fresh]
        if entries:
            vectors = _vectors(entries, blobs, embedder, keep, report)
            if vectors is not None:
                model = embedder.model_id if embedder is not None else None
                entries = [e.with_(embedding_model=model) for e in entries]
            store.append_many(entries, vectors)
            report.imported += len(entries)
        if advance is not None:
            advance(len(rows))
    return report


def _entry(
    row: ForeignRow, now: datetime, copies: Counter[str], report: ImportReport
) -> MemoryEntry | None:
    """The memory of one source row, or None (counted in ``report``) if it is skipped."""
    v = row.values
    content = v.get("content")
    if content is None or (isinstance(content, str) and not content.strip()):
        report.skipped["empty"] += 1
        return None
    try:
        content = _text(content)
        expires = _when(v.get("expires_at"))
        if expires is not None and expires <= now:
            report.skipped["expired"] += 1
            return None
        raw = [content, *(_text(v.get(k)) for k in ("role", "created_at", "expires_at"))]
        scope = [
            _text(v.get(k)) or DEFAULT_SCOPE for k in ("conversation_id", "org_id", "agent_id")
        ]
        key = json.dumps([*raw, *scope], ensure_ascii=True)
        copies[key] += 1  # exact copies of a row get ids of their own, stable in rowid order
        eid = hashlib.sha256(f"agentzero|{copies[key]}|{key}".encode()).hexdigest()[:32]
        return MemoryEntry(
            content=content,
            role=raw[1] or "user",
            conversation_id=scope[0],
            org_id=scope[1],
            agent_id=scope[2],
            created_at=_when(v.get("created_at")),
            expires_at=expires,
            metadata=dict(PROVENANCE),
            id=eid,
        )
    except (AgentZeroStoreError, ValueError, TypeError, OverflowError):
        report.invalid += 1
        if len(report.invalid_rows) < MAX_LISTED:
            report.invalid_rows.append(row.rowid)
        return None


def _text(value: Any) -> str:
    """A source value as text ('' for NULL): ids may be stored as numbers."""
    if value is None:
        return ""
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("utf-8")
    return str(value)


def _when(value: Any) -> datetime | None:
    """A source timestamp: ISO 8601 text (naive means UTC, as SQLite's CURRENT_TIMESTAMP)
    or a number of seconds (milliseconds when it is that large) since the epoch."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if abs(value) > 1e11 else value
        return datetime.fromtimestamp(seconds, UTC)
    dt = datetime.fromisoformat(_text(value).strip())
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def _not_stored(store: DataDirStore, entries: Sequence[MemoryEntry]) -> list[int]:
    """Positions of ``entries`` whose id the store does not hold yet."""
    ids = [e.id for e in entries]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    held = {r[0] for r in store.database.query(f"SELECT id FROM memory WHERE id IN ({marks})", ids)}
    return [i for i, eid in enumerate(ids) if eid not in held]


def _usable(blob: bytes | None) -> np.ndarray | None:
    """The source vector if it is 384 finite float32 values with a norm, else None."""
    if blob is None or len(blob) != 4 * LOCAL_MODEL_DIM:
        return None
    vec = np.frombuffer(blob, dtype="<f4")
    if not np.isfinite(vec).all() or not np.any(vec):
        return None
    return vec


def _vectors(
    entries: Sequence[MemoryEntry],
    blobs: Sequence[bytes | None],
    embedder: Embedder | None,
    keep: bool,
    report: ImportReport,
) -> list[Any] | None:
    """One vector per entry (kept or embedded again), or None with no embedder."""
    if embedder is None:
        return None
    vectors: list[Any] = [_usable(b) if keep else None for b in blobs]
    todo = [i for i, v in enumerate(vectors) if v is None]
    report.embeddings_kept += len(vectors) - len(todo)
    if todo:
        fresh = embedder.embed([entries[i].content for i in todo])
        for i, vec in zip(todo, fresh, strict=True):
            vectors[i] = vec
        report.embedded += len(todo)
    return vectors


__all__ = ["ImportReport", "import_agentzero", "open_agentzero"]
