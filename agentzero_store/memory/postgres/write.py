"""The PostgreSQL write path: appends (idempotent re-sends) and deletes.

Every append is one transaction: the rows (sealed on the client), their vectors and their
blinded terms commit together or not at all. Ids are unique in the whole store (a
UNIQUE constraint): ``INSERT ... ON CONFLICT (id) DO NOTHING`` waits for a concurrent
writer of the same id to finish, so a retry of an acknowledged write is recognised as
such (the stored row is opened and compared) and any other reuse of an id fails the
whole batch with ``DuplicateIdError``, whichever of two concurrent writers comes first.
Deletes cascade to the terms in the same statement. Each term row carries its memory's
(org, agent) and length (``bm25``), and triggers keep each scope's BM25 statistics:
nothing here writes them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ...base.errors import DuplicateIdError, NotFoundError
from ...embed.vectors import Embedder, as_vector
from ...sidecar.bm25_terms import BlindTerms
from ..batch import check_batch, new_ids
from ..records import MemoryEntry, to_us
from . import schema
from .rows import COLUMNS, RowCodec


@dataclass(frozen=True)
class Batch:
    """Entries ready to insert: ids chosen, vectors computed (before the transaction)."""

    entries: list[MemoryEntry]
    vectors: list[Any]
    model: str | None
    ids: list[str]
    now_us: int


def prepare(
    entries: Sequence[MemoryEntry],
    vectors: Sequence[Any] | None,
    *,
    embedder: Embedder | None,
    model_id: str | None,
    now: datetime,
) -> Batch:
    """Validate ``entries``, choose their ids and compute their vectors (if an embedder;
    ``model_id`` is its id, already checked against the store's vectors)."""
    entries = list(entries)
    check_batch(entries, vectors)
    vecs: list[Any]
    model: str | None
    if not entries:
        vecs, model = [], None
    elif vectors is not None:
        vecs, model = list(vectors), entries[0].embedding_model
    elif embedder is not None:
        vecs, model = list(embedder.embed([e.content for e in entries])), model_id
    else:
        vecs, model = [None] * len(entries), None
    now_us = to_us(now)
    fresh = iter(new_ids(sum(1 for e in entries if not e.id), now_us))
    return Batch(entries, vecs, model, [e.id or next(fresh) for e in entries], now_us)


def vector_text(v: Any, dim: int) -> str:
    """A validated, normalised vector in pgvector's text form (``[x,y,...]``); float32
    values printed with 9 significant digits, which read back as the same float32."""
    arr = as_vector(v, dim)
    return (
        "["
        + ",".join(np.format_float_positional(x, precision=9, unique=True, trim="-") for x in arr)
        + "]"
    )


def insert(
    c: Any, b: Batch, codec: RowCodec, terms: BlindTerms, *, vector_index: bool = True
) -> list[str]:
    """Insert ``b`` inside the caller's transaction; returns the ids (identical re-sends
    of stored memories are written no second time). ``vector_index`` False: if these are
    the store's first vectors, the HNSW index is left for later (a bulk load)."""
    insert_rows(c, b, codec, terms, vector_index=vector_index)
    return list(b.ids)


def insert_rows(
    c: Any, b: Batch, codec: RowCodec, terms: BlindTerms, *, vector_index: bool = True
) -> list[tuple[str, int]]:
    """``insert``, returning the (id, label) of the rows written, in ``b``'s order (an
    identical re-send of a stored memory is not among them)."""
    if not b.entries:
        return []
    first = next((v for v in b.vectors if v is not None), None)
    dim: int | None = None
    if first is not None:
        dim = schema.fix_dimension(
            c, int(np.asarray(first).reshape(-1).shape[0]), b.model, index=vector_index
        )
    elif row := c.execute("SELECT value FROM az_meta WHERE key = 'embedding_dim'").fetchone():
        dim = int(row[0])
    cols: dict[str, list[Any]] = {
        k: []
        for k in ("id", "org", "agent", "conv", "created", "expires", "fp", "len", "sealed", "emb")
    }
    bags: list[Counter[str]] = []
    for e, eid, v in zip(b.entries, b.ids, b.vectors, strict=True):
        created = to_us(e.created_at) if e.created_at else b.now_us
        expires = to_us(e.expires_at) if e.expires_at else None
        emb = vector_text(v, dim) if v is not None and dim is not None else None
        model = (e.embedding_model or b.model) if emb is not None else None
        bag = Counter(terms.terms(e.content))
        bags.append(bag)
        for k, val in (
            ("id", eid),
            ("org", e.org_id),
            ("agent", e.agent_id),
            ("conv", e.conversation_id),
            ("created", created),
            ("expires", expires),
            ("fp", codec.fingerprint(e)),
            ("len", sum(bag.values())),
            ("sealed", codec.seal(e, eid, created, expires, model)),
            ("emb", emb),
        ):
            cols[k].append(val)
    written = c.execute(
        "INSERT INTO az_memory (id, org_id, agent_id, conversation_id, created_at_us,"
        " expires_at_us, fingerprint, doc_len, sealed, embedding)"
        " SELECT i, o, a, cv, cr, ex, fp, dl, s, e::vector FROM unnest("
        "%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[],"
        " %s::bytea[], %s::int[], %s::bytea[], %s::text[])"
        " AS t(i, o, a, cv, cr, ex, fp, dl, s, e)"
        " ON CONFLICT (id) DO NOTHING RETURNING id, label",
        [cols[k] for k in cols],
    ).fetchall()
    labels = {str(eid): int(label) for eid, label in written}
    _check_resent(c, b, [i for i, eid in enumerate(b.ids) if eid not in labels], codec)
    _insert_terms(
        c,
        [
            (labels[eid], e.org_id, e.agent_id, bag)
            for e, eid, bag in zip(b.entries, b.ids, bags, strict=True)
            if eid in labels
        ],
    )
    return [(eid, labels[eid]) for eid in b.ids if eid in labels]


def _insert_terms(c: Any, rows: Sequence[tuple[int, str, str, Counter[str]]]) -> None:
    """The postings of rows (label, org_id, agent_id, term bag), each with its row's
    scope and length (a trigger checks both against the row)."""
    cols: tuple[list[Any], ...] = ([], [], [], [], [], [])
    for label, org, agent, bag in rows:
        length = sum(bag.values())
        for term, tf in bag.items():
            for col, val in zip(cols, (label, org, agent, length, term, tf), strict=True):
                col.append(val)
    if cols[0]:
        c.execute(
            "INSERT INTO az_terms (label, org_id, agent_id, doc_len, term, tf) SELECT * FROM"
            " unnest(%s::bigint[], %s::text[], %s::text[], %s::int[], %s::text[], %s::int[])",
            cols,
        )


def replace_terms(c: Any, label: int, text: str, terms: BlindTerms) -> None:
    """Index ``text`` as the keywords of row ``label`` (whose sealed content is not that
    text: an archived memory keeps its words searchable), inside the caller's
    transaction. ``NotFoundError`` if there is no such row."""
    bag = Counter(terms.terms(text))
    c.execute("DELETE FROM az_terms WHERE label = %s", (label,))
    row = c.execute(
        "UPDATE az_memory SET doc_len = %s WHERE label = %s RETURNING org_id, agent_id",
        (sum(bag.values()), label),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no memory row {label} to index keywords for")
    _insert_terms(c, [(label, str(row[0]), str(row[1]), bag)])


def _check_resent(c: Any, b: Batch, positions: list[int], codec: RowCodec) -> None:
    """Every entry at ``positions`` hit an id already stored: accept it only if the stored
    memory is the same one (a retry after a lost acknowledgement), else fail the batch."""
    if not positions:
        return
    ids = [b.ids[i] for i in positions]
    rows = {
        str(r[1]): r
        for r in c.execute(f"SELECT {COLUMNS} FROM az_memory WHERE id = ANY(%s)", (ids,))
    }
    for i in positions:
        e, eid = b.entries[i], b.ids[i]
        row = rows.get(eid)
        if row is None or not _same_memory(e, codec.open(row)):
            # One message whoever holds the id: it never tells whose scope it is in.
            raise DuplicateIdError(f"memory id {eid!r} is already used by another memory")


def _same_memory(e: MemoryEntry, s: MemoryEntry) -> bool:
    """True if the stored ``s`` is exactly what ``e`` asks for (see ``sqlite.write``)."""
    return (
        (e.content, e.role, e.conversation_id, e.org_id, e.agent_id, e.kind, e.source)
        == (s.content, s.role, s.conversation_id, s.org_id, s.agent_id, s.kind, s.source)
        and json.loads(json.dumps(dict(s.metadata))) == json.loads(json.dumps(dict(e.metadata)))
        and (e.expires_at is None) == (s.expires_at is None)
        and (
            e.expires_at is None
            or s.expires_at is None
            or to_us(e.expires_at) == to_us(s.expires_at)
        )
        and (
            e.created_at is None
            or s.created_at is None
            or to_us(e.created_at) == to_us(s.created_at)
        )
    )


def delete_where(c: Any, where: str, params: Sequence[Any]) -> int:
    """Delete the rows matching ``where`` and their terms (cascade); returns how many."""
    cur = c.execute(f"DELETE FROM az_memory WHERE {where}", params)
    return int(cur.rowcount)


__all__ = [
    "Batch",
    "delete_where",
    "insert",
    "insert_rows",
    "prepare",
    "replace_terms",
    "vector_text",
]
