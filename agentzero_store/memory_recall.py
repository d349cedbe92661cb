"""The memory store's recall paths: semantic, keyword and hybrid, always scoped.

Every hit is read back from SQLCipher with scope and expiry in the WHERE clause, so
whatever proposed it (the HNSW sidecar, FTS5, exact search) the database has the last
word: an expired, deleted or out-of-scope row never comes back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .memory_rows import COLUMNS, placeholders, row_to_entry, scope_where
from .recall import exact_top_k, fts5_query, rrf_fuse
from .records import MemoryHit, Scope
from .sqlcipher import Database

if TYPE_CHECKING:
    import numpy.typing as npt

    from .memory_hnsw import MemoryHnsw


def semantic(
    db: Database,
    hnsw: MemoryHnsw | None,
    q: npt.NDArray[np.float32],
    k: int,
    scope: Scope,
    now_us: int,
) -> list[MemoryHit]:
    """The ``k`` live rows in ``scope`` most similar to the unit vector ``q``.

    Through the HNSW sidecar when it is ready (only the final ``k`` rows are read);
    otherwise, or if a proposed row no longer qualifies in the database (another
    process deleted it after the index caught up), exact search in SQL decides.
    """
    if hnsw is not None:
        scored = hnsw.recall(q, k, scope, now_us)
        if scored is not None:
            hits = read_hits(db, scored, "semantic", scope, now_us)
            if len(hits) == len(scored):
                return hits
    return _semantic_sql(db, q, k, scope, now_us)


def _semantic_sql(
    db: Database, q: npt.NDArray[np.float32], k: int, scope: Scope, now_us: int
) -> list[MemoryHit]:
    """Exact search over every stored vector in scope, read from SQLCipher."""
    where, params = scope_where(scope, now_us, alias="m.")
    rows = db.query(
        "SELECT v.label, v.embedding FROM memory m JOIN memory_vec v ON v.label = m.label "
        f"WHERE {where}",
        params,
    )
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
    top = exact_top_k(matrix.reshape(len(rows), -1), q, k)
    return read_hits(db, [(rows[i][0], s) for i, s in top], "semantic", scope, now_us)


def keyword(db: Database, query_text: str, k: int, scope: Scope, now_us: int) -> list[MemoryHit]:
    """BM25 keyword recall through the encrypted FTS5 index, scoped, best first."""
    match = fts5_query(query_text)
    if match is None:
        return []
    where, params = scope_where(scope, now_us, alias="m.")
    rows = db.query(
        "SELECT m.label, bm25(memory_fts) AS r FROM memory_fts "
        "JOIN memory m ON m.label = memory_fts.rowid "
        f"WHERE memory_fts MATCH ? AND {where} ORDER BY r, m.label LIMIT ?",
        (match, *params, k),
    )
    # bm25() is "lower is better" (negative); report it as a positive score.
    return read_hits(db, [(r[0], -float(r[1])) for r in rows], "keyword", scope, now_us)


def fuse(sem: list[MemoryHit], kw: list[MemoryHit], *, limit: int, rrf_k: int) -> list[MemoryHit]:
    """Reciprocal Rank Fusion of semantic and keyword hits, deduplicated on fingerprint."""
    by_id = {h.id: h for h in (*sem, *kw)}
    fused = rrf_fuse(
        {"semantic": [h.id for h in sem], "keyword": [h.id for h in kw]},
        k=rrf_k,
        limit=limit,
        fingerprint=lambda i: by_id[i].entry.fingerprint(),
    )
    return [MemoryHit(f.key, by_id[f.key].entry, f.score, f.ranks) for f in fused]


def read_hits(
    db: Database, scored: Iterable[tuple[int, float]], signal: str, scope: Scope, now_us: int
) -> list[MemoryHit]:
    """Hits for ``(label, score)``, in order, keeping only rows that are still live,
    unexpired and in scope (re-checked in the database)."""
    scored = list(scored)
    if not scored:
        return []
    where, params = scope_where(scope, now_us)
    labels = [lab for lab, _ in scored]
    # NOT INDEXED: with every scope field given, SQLite would otherwise walk the scope
    # index and read every row of the scope; rowid lookups read only these k rows.
    rows: list[Any] = db.query(
        f"SELECT {COLUMNS} FROM memory NOT INDEXED WHERE label IN ({placeholders(len(labels))})"
        f" AND {where}",
        (*labels, *params),
    )
    by_label = {r[0]: r for r in rows}
    return [
        MemoryHit(by_label[lab][1], row_to_entry(by_label[lab]), score, {signal: rank})
        for rank, (lab, score) in enumerate(
            ((lab, s) for lab, s in scored if lab in by_label), start=1
        )
    ]


__all__ = ["fuse", "keyword", "read_hits", "semantic"]
