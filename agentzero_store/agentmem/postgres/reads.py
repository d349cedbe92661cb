"""The agent-memory repository's reads on PostgreSQL: the same methods as
``sqlite.reads.ReadRows`` (SQLite). A memory's text is opened from its sealed
``az_memory`` row on the client (``pg.rows.RowCodec``), its speaker and entities from their
sealed spellings (``codec.LayerCodec``), and every lookup by an entity key goes through
its blinded form; what a caller gets back is exactly what SQLite's reads return."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.records import Scope, from_us
from ..fsrs import text_salience
from ..records import Memory, entity_key
from ..rows import Candidate, Filter, Row, entities
from .core import MEMORY_COLUMNS, READ_COLUMNS
from .sources import PgSourceRows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class PgReadRows(PgSourceRows):
    """Reads of one scope: rows, recall's candidates, keyword and exact vector ranking."""

    # ------------------------------------------------------------------ reads
    def rows(self, labels: Sequence[int], f: Filter) -> dict[int, Row]:
        """The memories of ``labels`` that are live, unexpired, in scope and pass ``f``."""
        if not labels:
            return {}
        where, params = self._filter_sql(f)
        rows = self._q(
            f"SELECT {READ_COLUMNS} FROM az_memory m WHERE m.label = ANY(%s::bigint[])"
            " AND m.type IS NOT NULL AND m.org_id = %s AND m.agent_id = %s"
            " AND (m.expires_at_us IS NULL OR m.expires_at_us > %s)"
            f" AND {where}",
            ([int(x) for x in labels], *self._scope, f.now_us, *params),
        )
        return {row.label: row for row in self._built(rows)}

    def _built(self, rows: Sequence[Any]) -> list[Row]:
        """``Row``s of rows of ``READ_COLUMNS``, with their entities and sources."""
        about = self._about_rows([r[1] for r in rows])
        sources = self.sources_of([r[1] for r in rows])
        return [
            Row(int(r[0]), self._memory(r, about.get(r[1], []), sources.get(r[1], ())), r[18])
            for r in rows
        ]

    def candidates(self, labels: Sequence[int], f: Filter) -> dict[int, Candidate]:
        """Those of ``labels`` that are live, unexpired, in scope and pass ``f``, with what
        recall's signals read of them (no text): one query."""
        if not labels:
            return {}
        where, params = self._filter_sql(f)
        return {
            int(r[0]): Candidate(
                str(r[1]),
                str(r[2]),
                float(r[3]),
                int(r[4]),
                str(r[5]),
                int(r[6]),
                bytes(r[7]).hex(),
            )
            for r in self._q(
                "SELECT m.label, m.id, m.type, m.confidence, m.access_count,"
                " m.conversation_id, m.created_at_us, m.fingerprint FROM az_memory m"
                " WHERE m.label = ANY(%s::bigint[]) AND m.type IS NOT NULL AND m.org_id = %s"
                " AND m.agent_id = %s AND (m.expires_at_us IS NULL OR m.expires_at_us > %s)"
                f" AND {where}",
                ([int(x) for x in labels], *self._scope, f.now_us, *params),
            )
        }

    def roles_of(self, labels: Sequence[int]) -> dict[int, str]:
        """The role of each of ``labels`` in this scope, opened from its sealed row."""
        if not labels:
            return {}
        rows = self._q(
            f"SELECT {MEMORY_COLUMNS} FROM az_memory m WHERE m.label = ANY(%s::bigint[])"
            " AND m.org_id = %s AND m.agent_id = %s",
            ([int(x) for x in labels], *self._scope),
        )
        return {int(r[0]): self._rows.open(r).role for r in rows}

    def by_id(self, memory_id: str, now_us: int) -> Row | None:
        """One live memory of this scope by id."""
        rows = self._q(
            "SELECT label FROM az_am_memory WHERE id = %s AND org_id = %s AND agent_id = %s",
            (memory_id, *self._scope),
        )
        if not rows:
            return None
        f = Filter(now_us=now_us, include_archived=True, any_validity=True)
        return self.rows([rows[0][0]], f).get(rows[0][0])

    def _about_rows(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
        """The (entity, key) ``az_am_about`` rows of each memory (its speaker's not),
        opened: the key is the plain entity key of the spelling, as SQLite stores it."""
        out: dict[str, list[tuple[str, str]]] = {}
        if not ids:
            return out
        for mid, blob in self._q(
            "SELECT memory_id, entity FROM az_am_about WHERE memory_id = ANY(%s)"
            " AND org_id = %s AND agent_id = %s ORDER BY memory_id, key",
            (list(ids), *self._scope),
        ):
            name = str(self.codec.open("az_am_about", mid, blob))
            out.setdefault(mid, []).append((name, entity_key(name)))
        return out

    def _about(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The entities each memory is about, its speaker among them (as written)."""
        rows = self._about_rows(ids)
        if ids:
            for mid, blob in self._q(
                "SELECT id, speaker FROM az_memory WHERE id = ANY(%s) AND org_id = %s"
                " AND agent_id = %s AND speaker IS NOT NULL",
                (list(ids), *self._scope),
            ):
                name = self._speaker(mid, blob)
                assert name is not None
                rows.setdefault(mid, []).append((name, entity_key(name)))
        return {mid: entities(None, None, found) for mid, found in rows.items()}

    def _memory(
        self, r: Sequence[Any], about: Sequence[tuple[str, str]], sources: tuple[str, ...] = ()
    ) -> Memory:
        e = self._rows.open(r[:8])
        importance = float(r[11])
        salience = float(r[12]) if r[12] is not None else text_salience(e.content, importance)
        speaker = self._speaker(str(r[1]), r[9])
        return Memory(
            id=str(r[1]),
            type=r[8],
            content=e.content,
            role=e.role,
            conversation_id=str(r[4]),
            speaker=speaker,
            created_at=from_us(int(r[5]), r[1]),
            expires_at=from_us(int(r[6]), r[1]) if r[6] is not None else None,
            confidence=float(r[10]),
            importance=importance,
            salience=salience,
            stability_days=float(r[13]),
            difficulty=float(r[14]),
            last_review=from_us(int(r[15]), r[1]),
            access_count=int(r[16]),
            archived=r[17] is not None,
            about=entities(speaker, None if speaker is None else entity_key(speaker), about),
            metadata=dict(e.metadata),
            sources=sources,
            kind=e.kind,
        )

    def _filter_sql(self, f: Filter) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if f.types is not None:
            clauses.append("m.type = ANY(%s)")
            params.append(list(f.types))
        if not f.include_archived:
            clauses.append("m.archived_at_us IS NULL")
        if f.about is not None:
            keys = self._blind(f.about)
            clauses.append(
                "(m.speaker_key = ANY(%s) OR m.id IN (SELECT memory_id FROM az_am_about"
                " WHERE org_id = %s AND agent_id = %s AND key = ANY(%s)))"
            )
            params.extend((keys, *self._scope, keys))
        if f.as_of_us is None and not f.any_validity:
            # The current view: a superseded or retracted fact is history, not knowledge.
            clauses.append(
                "m.id NOT IN (SELECT id FROM az_am_fact WHERE valid_to_us IS NOT NULL"
                " AND org_id = %s AND agent_id = %s)"
            )
            params.extend(self._scope)
        elif f.as_of_us is not None:
            clauses.append("m.created_at_us <= %s")
            clauses.append(
                "m.id NOT IN (SELECT id FROM az_am_fact WHERE org_id = %s AND agent_id = %s"
                " AND (valid_from_us > %s OR (valid_to_us IS NOT NULL AND valid_to_us <= %s)))"
            )
            params.extend((f.as_of_us, *self._scope, f.as_of_us, f.as_of_us))
        return " AND ".join(clauses) or "TRUE", params

    # ------------------------------------------------------------------ keyword ranking
    # BM25 over the blinded terms (``pg.recall.keyword_scored``), scored within the scope.
    # Scores are returned negated, as FTS5's are (lower is better).
    def _keyword(self, query_text: str, k: int, f: Filter, filtered: bool) -> list[int]:
        terms = self._store.blind_terms.query_terms(query_text)
        if not terms:
            return []
        if not filtered:
            scored = self._store.keyword_scored(terms, k, Scope(*self._scope), f.now_us)
            return [lab for lab, _ in scored]
        where, params = self._filter_sql(f)
        pool = max(k * 4, 100)
        labels = self._keyword(query_text, pool, f, False)
        keep = self._q(
            f"SELECT m.label FROM az_memory m WHERE m.label = ANY(%s::bigint[]) AND {where}",
            (labels, *params),
        )
        kept = {int(r[0]) for r in keep}
        out = [lab for lab in labels if lab in kept]
        if len(out) >= k or len(labels) < pool:
            return out[:k]
        return self._keyword_all(terms, k, f)

    def _keyword_all(self, terms: Sequence[str], k: int, f: Filter) -> list[int]:
        ranked = self._store.keyword_scored(terms, 1 << 30, Scope(*self._scope), f.now_us)
        where, params = self._filter_sql(f)
        labels = [lab for lab, _ in ranked]
        kept = {
            int(r[0])
            for r in self._q(
                f"SELECT m.label FROM az_memory m WHERE m.label = ANY(%s::bigint[]) AND {where}",
                (labels, *params),
            )
        }
        return [lab for lab in labels if lab in kept][:k]

    def keyword_ranked(self, query_text: str, k: int, f: Filter) -> list[int]:
        """Labels of up to ``k`` best BM25 matches of the scope, unexpired, best first,
        before the filter."""
        return self._keyword(query_text, k, f, False)

    def keyword_filtered(self, query_text: str, k: int, f: Filter) -> list[int]:
        """The ``k`` best BM25 matches that pass ``f``."""
        return self._keyword(query_text, k, f, True)

    def keyword_scores(self, query_text: str, labels: Sequence[int]) -> dict[int, float]:
        """The BM25 score (negated: lower is better, as FTS5's) of each of ``labels`` that
        matches ``query_text`` in this scope."""
        terms = self._store.blind_terms.query_terms(query_text)
        if not terms or not labels:
            return {}
        wanted = {int(x) for x in labels}
        ranked = self._store.keyword_scored(terms, 1 << 30, Scope(*self._scope), 0)
        return {lab: -s for lab, s in ranked if lab in wanted}

    def nearest_exact(
        self, qv: npt.NDArray[np.float32], pool: int, f: Filter
    ) -> list[tuple[int, float]]:
        """Up to ``pool`` (label, cosine) nearest ``qv`` among every memory that passes
        ``f``, exactly: the server scans the filtered rows (no index scan), and only the
        ``pool`` best come back, never every vector."""
        from ...memory.postgres.write import vector_text

        where, params = self._filter_sql(f)
        with self._store.snapshot() as tx:
            tx.execute("SET LOCAL enable_indexscan = off")
            rows = tx.query(
                "SELECT m.label, m.embedding <=> %s::vector AS d FROM az_memory m"
                " WHERE m.type IS NOT NULL AND m.org_id = %s AND m.agent_id = %s"
                " AND m.embedding IS NOT NULL"
                f" AND (m.expires_at_us IS NULL OR m.expires_at_us > %s) AND {where}"
                " ORDER BY d, m.label LIMIT %s",
                (vector_text(qv, len(qv)), *self._scope, f.now_us, *params, pool),
            )
        return [(int(lab), 1.0 - float(d)) for lab, d in rows]


__all__ = ["PgReadRows"]
