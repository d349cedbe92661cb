"""The memory store's recall paths: semantic, keyword and hybrid, always scoped.

Every hit is read back from SQLCipher with scope and expiry in the WHERE clause, so
whatever proposed it (the HNSW sidecar, FTS5, exact search) the database has the last
word: an expired, deleted or out-of-scope row never comes back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.ranking import exact_top_k, fts5_query, fuse_and_read
from ...storage.sqlcipher import Database
from ..records import MemoryHit, Scope
from ..rows import row_to_entry
from .fts_scope import match_expression
from .rows import COLUMNS, placeholders, scope_where

if TYPE_CHECKING:
    import numpy.typing as npt

    from .hnsw import MemoryHnsw


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
    return read_hits(db, _semantic_sql(db, q, k, scope, now_us), "semantic", scope, now_us)


def _semantic_sql(
    db: Database, q: npt.NDArray[np.float32], k: int, scope: Scope, now_us: int
) -> list[tuple[int, float]]:
    """Exact search over every stored vector in scope, read from SQLCipher: (label, cosine)."""
    where, params = scope_where(scope, now_us, alias="m.")
    rows = db.query(
        "SELECT v.label, v.embedding FROM memory m JOIN memory_vec v ON v.label = m.label "
        f"WHERE {where}",
        params,
    )
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
    return [(rows[i][0], s) for i, s in exact_top_k(matrix.reshape(len(rows), -1), q, k)]


def keyword(db: Database, query_text: str, k: int, scope: Scope, now_us: int) -> list[MemoryHit]:
    """BM25 keyword recall through the encrypted FTS5 index, scoped, best first."""
    return read_hits(
        db, _keyword_scored(db, query_text, k, scope, now_us), "keyword", scope, now_us
    )


def _keyword_scored(
    db: Database, query_text: str, k: int, scope: Scope, now_us: int
) -> list[tuple[int, float]]:
    """The ``k`` best (label, BM25 score) in scope, not yet re-checked against ``memory``.

    The scope is part of the MATCH (``fts_scope``): only the scope's rows are scored and no
    ``memory`` row is read. Expired rows not yet collected are left out through the
    partial expiry index, so the ``LIMIT`` counts only rows that qualify.
    """
    match = fts_match(db, query_text, scope)
    if match is None:
        return []
    rows = db.query(
        "SELECT rowid, bm25(memory_fts, 1.0, 0.0) AS r FROM memory_fts "
        "WHERE memory_fts MATCH ? AND rowid NOT IN (SELECT label FROM memory "
        "WHERE expires_at_us IS NOT NULL AND expires_at_us <= ?) ORDER BY r, rowid LIMIT ?",
        (match, now_us, k),
    )
    # bm25() is "lower is better" (negative); report it as a positive score.
    return [(int(r[0]), -float(r[1])) for r in rows]


def owner_holds_all(db: Database, scope: Scope) -> bool:
    """Whether every row of ``memory`` (expired ones included) belongs to the scope's org
    and, when given, agent: the usual one-user, one-agent desktop store. Up to four
    seeks of the ``memory_scope`` index (org, agent, ...) for a row on either side of the
    scope, whatever the number of rows. False when no org is given (no seek possible)."""
    if scope.org_id is None:
        return False
    sides = ["org_id < ?1", "org_id > ?1"]
    params: tuple[str, ...] = (scope.org_id,)
    if scope.agent_id is not None:
        sides += ["org_id = ?1 AND agent_id < ?2", "org_id = ?1 AND agent_id > ?2"]
        params += (scope.agent_id,)
    sql = " OR ".join(f"EXISTS (SELECT 1 FROM memory WHERE {w})" for w in sides)
    return not db.query(f"SELECT {sql}", params)[0][0]


def fts_match(db: Database, query_text: str, scope: Scope) -> str | None:
    """The FTS5 MATCH of a scoped keyword query (``fts_scope.match_expression``), without
    the org and agent tokens when they would filter nothing (``owner_holds_all``)."""
    if fts5_query(query_text) is None:
        return None  # no words: no need to look at the scope
    return match_expression(query_text, scope, owner_holds_all=owner_holds_all(db, scope))


def hybrid(
    db: Database,
    hnsw: MemoryHnsw | None,
    q: npt.NDArray[np.float32] | None,
    query_text: str,
    scope: Scope,
    now_us: int,
    *,
    candidates: int,
    limit: int,
    rrf_k: int,
    weights: dict[str, float] | None = None,
) -> list[MemoryHit]:
    """Semantic and keyword candidates fused with RRF, deduplicated on fingerprint.

    Candidates are labels and scores only; one query re-checks them all (scope, expiry,
    existence) and fetches their fingerprints, and only the final ``limit`` rows are read
    in full. ``q`` is None when the store holds no vector yet: keyword alone, still RRF.
    """
    sem = hnsw.recall(q, candidates, scope, now_us) if hnsw and q is not None else None
    kw = _keyword_scored(db, query_text, candidates, scope, now_us)
    fps = _fingerprints(db, [lab for lab, _ in (*(sem or ()), *kw)], scope, now_us)
    if q is None:
        sem = []
    elif sem is None or any(lab not in fps for lab, _ in sem):
        # No index yet, or it proposed a row deleted since it caught up: exact search.
        sem = _semantic_sql(db, q, candidates, scope, now_us)
        fps.update(_fingerprints(db, [lab for lab, _ in sem if lab not in fps], scope, now_us))
    kept = fuse_and_read(
        {
            # Only candidates still live when their fingerprints were read: another
            # writer may delete one between the two statements (each its own snapshot).
            "semantic": [lab for lab, _ in sem if lab in fps],
            "keyword": [lab for lab, _ in kw if lab in fps],
        },
        lambda labels: _rows(db, labels, scope, now_us),
        k=rrf_k,
        limit=limit,
        fingerprint=fps.__getitem__,
        weights=weights,
    )
    return [MemoryHit(row[1], row_to_entry(row), f.score, f.ranks) for row, f in kept]


def _fingerprints(db: Database, labels: list[int], scope: Scope, now_us: int) -> dict[int, str]:
    """Fingerprint of each of ``labels`` that is live, unexpired and in scope."""
    if not labels:
        return {}
    where, params = scope_where(scope, now_us)
    return dict(
        db.query(
            f"SELECT label, fingerprint FROM memory NOT INDEXED WHERE label IN "
            f"({placeholders(len(labels))}) AND {where}",
            (*labels, *params),
        )
    )


def read_hits(
    db: Database, scored: Iterable[tuple[int, float]], signal: str, scope: Scope, now_us: int
) -> list[MemoryHit]:
    """Hits for ``(label, score)``, in order, keeping only rows that are still live,
    unexpired and in scope (re-checked in the database)."""
    scored = list(scored)
    rows = _rows(db, [lab for lab, _ in scored], scope, now_us)
    return [
        MemoryHit(rows[lab][1], row_to_entry(rows[lab]), score, {signal: rank})
        for rank, (lab, score) in enumerate(((lab, s) for lab, s in scored if lab in rows), 1)
    ]


def _rows(db: Database, labels: list[int], scope: Scope, now_us: int) -> dict[int, Any]:
    """The full rows of ``labels`` that are live, unexpired and in scope, by label."""
    if not labels:
        return {}
    where, params = scope_where(scope, now_us)
    # NOT INDEXED: with every scope field given, SQLite would otherwise walk the scope
    # index and read every row of the scope; rowid lookups read only these k rows.
    rows: list[Any] = db.query(
        f"SELECT {COLUMNS} FROM memory NOT INDEXED WHERE label IN ({placeholders(len(labels))})"
        f" AND {where}",
        (*labels, *params),
    )
    return {r[0]: r for r in rows}


__all__ = ["hybrid", "keyword", "read_hits", "semantic"]
