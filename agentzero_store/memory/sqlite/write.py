"""The memory store's write path: appends and deletes, each with its change-feed entry.

Every write is one SQLCipher transaction that changes ``memory``, its vector row in
``memory_vec``, its FTS5 index and the ``changes`` feed together, so a derived index that
replays the feed sees exactly the committed writes, in order. The commit is the
durability point (WAL, synchronous=FULL).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ...base.errors import (
    DuplicateIdError,
    EmbedderMismatchError,
    InvalidArgumentError,
    NoEmbedderError,
)
from ...embed.vectors import Embedder, Vector, as_vector, as_vectors
from ...storage.sqlcipher import Database
from ..batch import check_batch, new_ids
from ..records import MemoryEntry, to_us
from .fts_scope import scope_tokens
from .schema import get_meta


def embedding_info(db: Database) -> tuple[str | None, int | None]:
    """(model id, dimension) of the vectors stored so far, or (None, None)."""
    dim = get_meta(db, "embedding_dim")
    return get_meta(db, "embedding_model"), int(dim) if dim else None


def check_embedder(db: Database, embedder: Embedder | None) -> str:
    """The embedder's model id, if it fits the vectors already stored."""
    if embedder is None:
        raise NoEmbedderError("this call needs an embedder and the store has none")
    stored_model, stored_dim = embedding_info(db)
    if (stored_model and stored_model != embedder.model_id) or (
        stored_dim and stored_dim != embedder.dimension
    ):
        raise EmbedderMismatchError(
            f"this store's vectors were built with {stored_model} ({stored_dim}-d); "
            f"the configured embedder is {embedder.model_id} ({embedder.dimension}-d)",
            hint=f"open the store with {stored_model}, or run `agentzero store reembed`",
        )
    return embedder.model_id


@dataclass(frozen=True)
class Prepared:
    """Entries ready to insert: ids chosen, vectors computed (outside any transaction, so
    embedding never holds the write lock)."""

    entries: list[MemoryEntry]
    vecs: Sequence[Any] | Vector
    model: str | None
    ids: list[str]
    now_us: int


def prepare(
    db: Database,
    entries: Sequence[MemoryEntry],
    vectors: Sequence[Any] | None,
    *,
    embedder: Embedder | None,
    now: datetime,
) -> Prepared:
    """Validate ``entries``, choose their ids and compute their vectors (if an embedder)."""
    entries = list(entries)
    check_batch(entries, vectors)
    model: str | None
    vecs: Sequence[Any] | Vector
    if not entries:
        model, vecs = None, []
    elif vectors is not None:
        model = entries[0].embedding_model
        vecs = vectors
    elif embedder is not None:
        model = check_embedder(db, embedder)
        vecs = embedder.embed([e.content for e in entries])
    else:
        model, vecs = None, [None] * len(entries)
    now_us = to_us(now)
    fresh = iter(new_ids(sum(1 for e in entries if not e.id), now_us))
    ids = [e.id or next(fresh) for e in entries]
    return Prepared(entries, vecs, model, ids, now_us)


def append_many(
    db: Database,
    entries: Sequence[MemoryEntry],
    vectors: Sequence[Any] | None,
    *,
    embedder: Embedder | None,
    now: datetime,
) -> list[str]:
    """Insert ``entries`` in one transaction (all or none); returns their ids."""
    p = prepare(db, entries, vectors, embedder=embedder, now=now)
    if p.entries:
        with db.tx() as c:
            insert(c, p)
    return p.ids


@dataclass(frozen=True)
class ExtraColumns:
    """Values of columns a layer above added to the ``memory`` row (its own migrations
    add them), written by the same INSERT: one tuple per prepared entry, in order."""

    names: tuple[str, ...]
    rows: Sequence[tuple[Any, ...]]


def insert(c: Any, p: Prepared, extra: ExtraColumns | None = None) -> list[tuple[str, int]]:
    """Insert prepared entries inside the caller's write transaction; returns the
    (id, label) of each row written (identical re-sends of stored memories are skipped).
    ``extra``: more columns of the same rows (see ``ExtraColumns``).

    Batched: vectors are validated and normalised as one matrix, and each table gets one
    ``executemany`` with labels chosen here (see ``_next_label``), instead of per-row
    ``execute`` calls that read each label back.
    """
    entries, vecs, ids = p.entries, p.vecs, p.ids
    more: Sequence[tuple[Any, ...]] = extra.rows if extra else [()] * len(entries)
    if extra is not None and len(more) != len(entries):
        raise InvalidArgumentError(f"{len(entries)} entries but {len(more)} extra rows")
    keep = _not_yet_stored(c, entries)
    if len(keep) < len(entries):  # identical re-sends: already stored, write nothing
        if not keep:
            return []
        entries, vecs = [entries[i] for i in keep], [vecs[i] for i in keep]
        more = [more[i] for i in keep]
    written = [ids[i] for i in keep] if len(keep) < len(ids) else ids
    dim = _ensure_dim(c, p.model, vecs)
    blobs = _blobs(vecs, dim)
    first = _next_label(c)
    labels = range(first, first + len(entries))
    now_us, model = p.now_us, p.model
    names = "".join(f", {n}" for n in extra.names) if extra else ""
    c.executemany(
        "INSERT INTO memory (label, id, role, content, created_at_us, conversation_id,"
        f" org_id, agent_id, expires_at_us, kind, source, metadata, fingerprint,"
        f" embedding_model{names}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?"
        f"{',?' * len(extra.names) if extra else ''})",
        [
            (
                label,
                eid,
                e.role,
                e.content,
                to_us(e.created_at) if e.created_at else now_us,
                e.conversation_id,
                e.org_id,
                e.agent_id,
                to_us(e.expires_at) if e.expires_at else None,
                e.kind,
                e.source,
                # Most entries carry no metadata: skip the encoder for the common case.
                json.dumps(dict(e.metadata), sort_keys=True) if e.metadata else "{}",
                e.fingerprint(),
                (e.embedding_model or model) if blob is not None else None,
                *x,
            )
            for label, eid, e, blob, x in zip(labels, written, entries, blobs, more, strict=True)
        ],
    )
    c.executemany(
        "INSERT INTO memory_vec (label, embedding) VALUES (?, ?)",
        [(label, blob) for label, blob in zip(labels, blobs, strict=True) if blob is not None],
    )
    c.executemany(
        "INSERT INTO memory_fts (rowid, content, scope) VALUES (?, ?, ?)",
        [
            (label, e.content, scope_tokens(e.org_id, e.agent_id, e.conversation_id))
            for label, e in zip(labels, entries, strict=True)
        ],
    )
    c.executemany(
        "INSERT INTO changes (op, label) VALUES ('insert', ?)", [(label,) for label in labels]
    )
    return list(zip(written, labels, strict=True))


def add_vectors(c: Any, labels: Sequence[int], vecs: Vector, model: str) -> None:
    """Give rows stored without a vector (written while no embedder was given) the
    vectors ``vecs`` of ``model``, inside the caller's write transaction; each is a new
    ``insert`` change, so the HNSW sidecar adds it as it replays the feed."""
    blobs = _blobs(vecs, _ensure_dim(c, model, vecs))
    c.executemany(
        "INSERT INTO memory_vec (label, embedding) VALUES (?, ?)",
        [(label, blob) for label, blob in zip(labels, blobs, strict=True)],
    )
    c.executemany(
        "UPDATE memory SET embedding_model = ? WHERE label = ?", [(model, lab) for lab in labels]
    )
    c.executemany(
        "INSERT INTO changes (op, label) VALUES ('insert', ?)", [(lab,) for lab in labels]
    )


def _duplicate(eid: str) -> DuplicateIdError:
    # One message whoever holds the id: it never tells a caller whether the memory that
    # has it is in their scope or another tenant's (ids are unique in the whole store).
    return DuplicateIdError(f"memory id {eid!r} is already used by another memory")


def _not_yet_stored(c: Any, entries: Sequence[MemoryEntry]) -> list[int]:
    """Positions of ``entries`` to write: all but identical re-sends of stored memories.

    A caller-chosen id that is already stored is accepted only when the stored memory is
    the same one (same content, role, scope, kind, source, metadata, expiry and, when
    given, creation time): a retry after a lost acknowledgement must succeed and write
    nothing. Any other use of a stored id is a ``DuplicateIdError`` for the whole batch.
    Runs inside the write transaction, so no other writer can insert the id meanwhile.
    """
    chosen = {e.id: i for i, e in enumerate(entries) if e.id}
    if not chosen:
        return list(range(len(entries)))
    skip: set[int] = set()
    wanted = list(chosen)
    for start in range(0, len(wanted), 10_000):  # below SQLite's bound-variable limit
        part = wanted[start : start + 10_000]
        rows = c.execute(
            "SELECT id, content, role, conversation_id, org_id, agent_id, kind, source,"
            " metadata, expires_at_us, created_at_us FROM memory"
            f" WHERE id IN ({','.join('?' * len(part))})",
            part,
        ).fetchall()
        for row in rows:
            i = chosen[row[0]]
            if not _same_memory(entries[i], row):
                raise _duplicate(row[0])
            skip.add(i)
    return [i for i in range(len(entries)) if i not in skip]


def _same_memory(e: MemoryEntry, row: Sequence[Any]) -> bool:
    """True if ``row`` (see ``_not_yet_stored``) stores exactly what ``e`` asks for."""
    return (
        (e.content, e.role, e.conversation_id, e.org_id, e.agent_id, e.kind, e.source)
        == tuple(row[1:8])
        and json.loads(row[8]) == json.loads(json.dumps(dict(e.metadata)))
        and row[9] == (to_us(e.expires_at) if e.expires_at else None)
        and (e.created_at is None or row[10] == to_us(e.created_at))
    )


def _next_label(c: Any) -> int:
    """The label AUTOINCREMENT would give the next row: one above both the largest label
    ever handed out (``sqlite_sequence``, which outlives deleted rows) and the largest
    live one. Labels are never reused: the HNSW index keys vectors by label.

    Choosing the labels of a whole batch here is safe because the caller holds the write
    transaction (BEGIN IMMEDIATE: no other connection can insert until it commits) and
    the connection's lock (no other thread of this process can either). A clash would
    still fail loudly: ``label`` is the primary key.
    """
    row = c.execute(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memory'), 0),"
        " coalesce((SELECT max(label) FROM memory), 0))"
    ).fetchone()
    return int(row[0]) + 1


def _blobs(vecs: Sequence[Any] | Vector, dim: int | None) -> list[bytes | None]:
    """float32 bytes of each validated, normalised vector (None where there is none)."""
    if dim is None:
        return [None] * len(vecs)
    if isinstance(vecs, np.ndarray) or all(v is not None for v in vecs):
        try:
            with np.errstate(over="ignore"):  # too large for float32: as_vectors names it
                matrix = np.asarray(vecs, dtype=np.float32)
        except (TypeError, ValueError):
            matrix = None  # ragged: the per-row path below names the bad vector
        if matrix is not None and matrix.ndim == 2:
            # A value the cast made infinite is named from the caller's own numbers.
            rows = as_vectors(matrix if np.isfinite(matrix).all() else vecs, dim)
            return [row.tobytes() for row in rows]
    return [as_vector(v, dim).tobytes() if v is not None else None for v in vecs]


def _ensure_dim(c: Any, model: str | None, vecs: Sequence[Any] | Vector) -> int | None:
    """The store's vector dimension, fixed by the first vector ever stored."""
    first = next((v for v in vecs if v is not None), None)
    row = c.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
    if row is not None:
        return int(row[0])
    if first is None:
        return None
    dim = int(np.asarray(first).reshape(-1).shape[0])
    c.execute("INSERT INTO meta VALUES ('embedding_dim', ?)", (str(dim),))
    if model:
        c.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (model,))
    return dim


def delete_where(db: Database, where: str, params: Sequence[Any]) -> int:
    """Delete the rows matching ``where`` (one transaction); returns how many."""
    with db.tx() as c:
        labels = [r[0] for r in c.execute(f"SELECT label FROM memory WHERE {where}", params)]
        delete_labels(c, labels)
    return len(labels)


def replace_keywords(c: Any, label: int, text: str, scope: tuple[str, str, str]) -> None:
    """Replace the keyword entries of row ``label`` with those of ``text``."""
    c.execute("DELETE FROM memory_fts WHERE rowid = ?", (label,))
    c.execute(
        "INSERT INTO memory_fts (rowid, content, scope) VALUES (?, ?, ?)",
        (label, text, scope_tokens(*scope)),
    )


def delete_labels(c: Any, labels: Sequence[int]) -> None:
    """Delete rows by label inside the caller's write transaction: the row, its vector
    and its keyword entries (secure_delete zeroes their bytes), each with a change."""
    rows = [(label,) for label in labels]
    c.executemany("DELETE FROM memory_vec WHERE label = ?", rows)
    c.executemany("DELETE FROM memory WHERE label = ?", rows)
    c.executemany("DELETE FROM memory_fts WHERE rowid = ?", rows)
    # A delete is a change with its own seq, so sidecars replay it too.
    c.executemany("INSERT INTO changes (op, label) VALUES ('delete', ?)", rows)


__all__ = [
    "ExtraColumns",
    "Prepared",
    "add_vectors",
    "append_many",
    "check_embedder",
    "delete_labels",
    "delete_where",
    "embedding_info",
    "insert",
    "prepare",
    "replace_keywords",
]
