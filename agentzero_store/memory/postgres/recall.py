"""Recall on PostgreSQL: semantic (pgvector HNSW), keyword (BM25 in SQL over blinded
terms) and hybrid (both, fused with RRF), always scoped and unexpired in the WHERE clause.

Semantic recall filters the scope inside the index scan: with
``hnsw.iterative_scan = relaxed_order`` (pgvector >= 0.8) the HNSW scan keeps going until
``k`` rows pass the filter, so a tenant holding 2% of the rows still gets ``k`` results.
Relaxed order may return them slightly out of order: they are re-sorted here.

Keyword recall scores BM25 (k1 = 1.2, b = 0.75) in one SQL statement, without scanning
the scope (schema 2, ``bm25``): the row count and total length are summed from the
scope's delta rows in ``az_bm25_scope`` (kept by triggers on every write), and the query
terms' postings come from ``az_terms_scope``, an index range holding only the scope's
postings, each with its tf and its row's length (an index-only scan); their count per
term is the document frequency. Matches are scored, then checked against their rows
(expiry, scope) best first, so a top ``k`` reads about ``k`` rows. All of it is one
statement, so one snapshot: the statistics are exactly those of the rows it sees. They
count the scope's expired rows until ``gc_expired`` deletes them; expired rows are never
returned. Nothing is read outside the scope (a posting's scope is its row's, triggers
hold it), so another tenant's rows never change a score. A scope with a
conversation id counts its rows and postings through ``az_memory`` (one conversation:
a short range). The terms are keyed hashes (``sidecar.bm25_terms.BlindTerms``): the
server ranks without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...base.ranking import fuse_and_read
from ..records import MemoryEntry, MemoryHit, Scope
from ..rows import scope_condition
from . import bm25
from .rows import COLUMNS, RowCodec

K1, B = 1.2, 0.75


def scope_where(scope: Scope, now_us: int | None, alias: str = "") -> tuple[str, list[Any]]:
    """SQL condition (``%s`` placeholders) for the scope and, with ``now_us``, expiry."""
    return scope_condition(scope, now_us, alias=alias, mark="%s", always="TRUE")


def semantic_scored(
    c: Any, q_text: str, k: int, scope: Scope, now_us: int, ef_search: int, *, exact: bool = False
) -> list[tuple[int, float]]:
    """The ``k`` best (label, cosine similarity) in scope, best first. Runs inside the
    caller's transaction (the ``SET LOCAL``s end with it). ``exact``: no index scan, so
    not the HNSW index: every vector in scope is compared (exact, slower)."""
    where, params = scope_where(scope, now_us)
    if exact:
        c.execute("SET LOCAL enable_indexscan = off")
    else:
        c.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        c.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
    rows = c.execute(
        "SELECT label, embedding <=> %s::vector AS d FROM az_memory"
        f" WHERE embedding IS NOT NULL AND {where} ORDER BY d LIMIT %s",
        (q_text, *params, k),
    ).fetchall()
    # relaxed_order: re-sort the k rows (ties on the label, so the order is deterministic).
    return [(int(lab), 1.0 - float(d)) for lab, d in sorted(rows, key=lambda r: (r[1], r[0]))]


def keyword_scored(
    c: Any, terms: Sequence[str], k: int, scope: Scope, now_us: int
) -> list[tuple[int, float]]:
    """The ``k`` best (label, BM25 score) in scope, unexpired at ``now_us``, best first
    (no terms: none)."""
    wanted = sorted(set(terms))
    if not wanted:
        return []
    stats, stats_params = bm25.scope_stats(scope)
    # The postings' own scope columns: with an org, one range of az_terms_scope.
    given = [name for name in ("org_id", "agent_id") if getattr(scope, name) is not None]
    post_where = " AND ".join(["t.term = ANY(%s::text[])", *(f"t.{n} = %s" for n in given)])
    post_params: list[Any] = [wanted, *(getattr(scope, n) for n in given)]
    row_where, row_params = scope_where(scope, now_us, alias="m.")
    if scope.conversation_id is None:  # index-only: the postings hold all a score needs
        post = f"SELECT t.label, t.term, t.tf, t.doc_len FROM az_terms t WHERE {post_where}"
    else:  # df and the scores of one conversation's rows
        conv_where, conv_params = scope_where(scope, None, alias="m.")
        post = (
            "SELECT t.label, t.term, t.tf, t.doc_len FROM az_terms t"
            f" JOIN az_memory m ON m.label = t.label WHERE {post_where} AND {conv_where}"
        )
        post_params += conv_params
    # Expiry is the row's: checked best score first, so a top k reads about k rows. The
    # row's scope again too (a trigger holds it to the posting's; it costs nothing).
    rows = c.execute(
        f"""
        WITH totals AS ({stats}),
        s AS (SELECT n::float8 AS n,
                     greatest(total_len::float8 / nullif(n, 0)::float8, 1) AS avgdl
              FROM totals),
        post AS ({post}),
        df AS (SELECT term, count(*)::float8 AS df FROM post GROUP BY term),
        scored AS (
            SELECT p.label, sum(
                ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                * p.tf * ({K1} + 1) / (p.tf + {K1} * (1 - {B} + {B} * p.doc_len / s.avgdl))
            ) AS score
            FROM post p JOIN df ON df.term = p.term CROSS JOIN s
            GROUP BY p.label)
        SELECT x.label, x.score
        FROM (SELECT label, score FROM scored ORDER BY score DESC, label) x
        CROSS JOIN LATERAL (SELECT 1 FROM az_memory m
                            WHERE m.label = x.label AND {row_where}) live
        ORDER BY x.score DESC, x.label LIMIT %s
        """,
        (*stats_params, *post_params, *row_params, k),
    ).fetchall()
    return [(int(lab), float(score)) for lab, score in rows]


def read_rows(
    c: Any, labels: Sequence[int], scope: Scope, now_us: int, codec: RowCodec
) -> dict[int, MemoryEntry]:
    """The entries of ``labels`` that are live, unexpired and in scope, by label."""
    if not labels:
        return {}
    where, params = scope_where(scope, now_us)
    rows = c.execute(
        f"SELECT {COLUMNS} FROM az_memory WHERE label = ANY(%s::bigint[]) AND {where}",
        (list(labels), *params),
    ).fetchall()
    return {int(r[0]): codec.open(r) for r in rows}


def hits(
    c: Any,
    scored: Sequence[tuple[int, float]],
    signal: str,
    scope: Scope,
    now_us: int,
    codec: RowCodec,
) -> list[MemoryHit]:
    """Hits for ``(label, score)`` in order, re-read under scope and expiry."""
    rows = read_rows(c, [lab for lab, _ in scored], scope, now_us, codec)
    kept = [(lab, s) for lab, s in scored if lab in rows]
    return [
        MemoryHit(str(rows[lab].id), rows[lab], s, {signal: rank})
        for rank, (lab, s) in enumerate(kept, 1)
    ]


def fuse(
    c: Any,
    sem: Sequence[tuple[int, float]],
    kw: Sequence[tuple[int, float]],
    scope: Scope,
    now_us: int,
    codec: RowCodec,
    *,
    limit: int,
    rrf_k: int,
    weights: dict[str, float],
) -> list[MemoryHit]:
    """Semantic and keyword candidates fused with weighted RRF, deduplicated on the keyed
    fingerprint; only the final ``limit`` rows are read and opened."""
    labels = sorted({lab for lab, _ in (*sem, *kw)})
    fps: dict[int, bytes] = {}
    if labels:
        where, params = scope_where(scope, now_us)
        fps = {
            int(lab): bytes(fp)
            for lab, fp in c.execute(
                f"SELECT label, fingerprint FROM az_memory WHERE label = ANY(%s::bigint[])"
                f" AND {where}",
                (labels, *params),
            )
        }
    kept = fuse_and_read(
        {
            "semantic": [lab for lab, _ in sem if lab in fps],
            "keyword": [lab for lab, _ in kw if lab in fps],
        },
        lambda labels: read_rows(c, labels, scope, now_us, codec),
        k=rrf_k,
        limit=limit,
        fingerprint=fps.__getitem__,
        weights=weights,
    )
    return [MemoryHit(str(e.id), e, f.score, f.ranks) for e, f in kept]


__all__ = ["fuse", "hits", "keyword_scored", "read_rows", "scope_where", "semantic_scored"]
