"""The memory store's write path: appends and deletes, each with its change-feed entry.

Every write is one SQLCipher transaction that changes ``memory``, its vector row in
``memory_vec``, its FTS5 index and the ``changes`` feed together, so a derived index that
replays the feed sees exactly the committed writes, in order. The commit is the
durability point (WAL, synchronous=FULL).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from .embeddings import Embedder, Vector, as_vector
from .errors import EmbedderMismatchError, InvalidArgumentError, NoEmbedderError
from .fts_scope import scope_tokens
from .records import MemoryEntry, to_us
from .sqlcipher import Database


def embedding_info(db: Database) -> tuple[str | None, int | None]:
    """(model id, dimension) of the vectors stored so far, or (None, None)."""
    dim = db.get_meta("embedding_dim")
    return db.get_meta("embedding_model"), int(dim) if dim else None


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


def append_many(
    db: Database,
    entries: Sequence[MemoryEntry],
    vectors: Sequence[Any] | None,
    *,
    embedder: Embedder | None,
    now: datetime,
) -> list[str]:
    """Insert ``entries`` in one transaction (all or none); returns their ids."""
    entries = list(entries)
    if vectors is not None and len(vectors) != len(entries):
        raise InvalidArgumentError(f"{len(entries)} entries but {len(vectors)} vectors")
    model: str | None
    vecs: list[Vector | None]
    if vectors is not None:
        model = entries[0].embedding_model if entries else None
        vecs = list(vectors)
    elif embedder is not None and entries:
        model = check_embedder(db, embedder)
        vecs = list(embedder.embed([e.content for e in entries]))
    else:
        model, vecs = None, [None] * len(entries)
    ids: list[str] = []
    with db.tx() as c:
        dim = _ensure_dim(c, model, vecs)
        for entry, vec in zip(entries, vecs, strict=True):
            e = entry.with_(
                id=entry.id or uuid.uuid4().hex,
                created_at=entry.created_at or now,
                embedding_model=(entry.embedding_model or model) if vec is not None else None,
            )
            blob = as_vector(vec, dim).tobytes() if vec is not None and dim else None
            cur = c.execute(
                "INSERT INTO memory (id, role, content, created_at_us, conversation_id, org_id,"
                " agent_id, expires_at_us, kind, source, metadata, fingerprint,"
                " embedding_model) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    e.id,
                    e.role,
                    e.content,
                    to_us(e.created_at),  # type: ignore[arg-type]
                    e.conversation_id,
                    e.org_id,
                    e.agent_id,
                    to_us(e.expires_at) if e.expires_at else None,
                    e.kind,
                    e.source,
                    json.dumps(dict(e.metadata), sort_keys=True),
                    e.fingerprint(),
                    e.embedding_model,
                ),
            )
            label = cur.lastrowid
            if blob is not None:
                c.execute("INSERT INTO memory_vec (label, embedding) VALUES (?, ?)", (label, blob))
            c.execute(
                "INSERT INTO memory_fts (rowid, content, scope) VALUES (?, ?, ?)",
                (label, e.content, scope_tokens(e.org_id, e.agent_id, e.conversation_id)),
            )
            c.execute("INSERT INTO changes (op, label) VALUES ('insert', ?)", (label,))
            ids.append(e.id)  # type: ignore[arg-type]
    return ids


def _ensure_dim(c: Any, model: str | None, vecs: Sequence[Any]) -> int | None:
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
        for label in labels:
            # The vector goes in the same transaction (secure_delete zeroes its bytes).
            c.execute("DELETE FROM memory_vec WHERE label = ?", (label,))
            c.execute("DELETE FROM memory WHERE label = ?", (label,))
            c.execute("DELETE FROM memory_fts WHERE rowid = ?", (label,))
            # A delete is a change with its own seq, so sidecars replay it too.
            c.execute("INSERT INTO changes (op, label) VALUES ('delete', ?)", (label,))
    return len(labels)


__all__ = ["append_many", "check_embedder", "delete_where", "embedding_info"]
