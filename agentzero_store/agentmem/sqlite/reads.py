"""The agent-memory repository's reads: memory rows by label or id with their entities,
recall's candidate check, the filter every read applies, keyword ranking and the
vectors of an exact search (``repository`` assembles the whole repository)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...base.ranking import exact_top_k
from ...memory.records import Scope, from_us
from ...memory.sqlite.recall import fts_match
from ...memory.sqlite.rows import placeholders
from ..fsrs import text_salience
from ..records import Memory
from ..rows import Candidate, Filter, Row, entities
from .core import READ_COLUMNS, batches
from .sources import SourceRows


class ReadRows(SourceRows):
    """Reads of memory rows (see the module)."""

    # ------------------------------------------------------------------ reads
    # _BY_LABEL: lookups of a list of labels or ids (recall's candidates, archive batches)
    # write the scope test as ``+a.org_id = ?``. The unary + changes no result, but it
    # keeps SQLite (which has no ANALYZE statistics here) from choosing a scope index that
    # walks every memory of the scope (110 ms at 100k) over the label or id index (about
    # 1 ms for 40 labels).
    def rows(self, labels: Sequence[int], f: Filter) -> dict[int, Row]:
        """The memories of ``labels`` that are live, unexpired, in scope and pass ``f``."""
        out: dict[int, Row] = {}
        for part in batches(list(labels)):
            where, params = self._filter_sql(f)
            rows = self._q(
                f"SELECT {READ_COLUMNS} FROM memory m NOT INDEXED"
                " JOIN am_memory a ON a.label = m.label"
                f" WHERE m.label IN ({placeholders(len(part))}) AND m.org_id = ?"
                " AND m.agent_id = ? AND +a.org_id = ? AND +a.agent_id = ?"
                " AND (m.expires_at_us IS NULL OR m.expires_at_us > ?)"
                f" AND {where}",
                (*part, *self._scope, *self._scope, f.now_us, *params),
            )
            out.update((row.label, row) for row in self._built(rows))
        return out

    def _built(self, rows: Sequence[Any]) -> list[Row]:
        """``Row``s of rows of ``READ_COLUMNS``, with their entities and sources."""
        about = self._about_rows([r[1] for r in rows])
        sources = self.sources_of([r[1] for r in rows])
        return [
            Row(r[0], self._memory(r, about.get(r[1], ()), sources.get(r[1], ())), r[18])
            for r in rows
        ]

    def candidates(self, labels: Sequence[int], f: Filter) -> dict[int, Candidate]:
        """Those of ``labels`` that are live, unexpired, in scope and pass ``f``, with what
        recall's signals read of them (no text): one query. The labels go in as one JSON
        array, so the statement's text is the same whatever their number and SQLite
        reuses its prepared plan (0.80 -> 0.54 ms for 100-200 labels at 10k)."""
        if not labels:
            return {}
        where, params = self._filter_sql(f)
        return {
            int(r[0]): Candidate(
                str(r[1]), str(r[2]), float(r[3]), int(r[4]), str(r[5]), int(r[6]), str(r[7])
            )
            for r in self._q(
                "SELECT a.label, a.id, a.type, a.confidence, a.access_count,"
                " a.conversation_id, a.created_at_us, a.fingerprint FROM am_memory a"
                " JOIN memory m ON m.label = a.label"
                " WHERE a.label IN (SELECT value FROM json_each(?)) AND +a.org_id = ?"
                " AND +a.agent_id = ? AND +m.org_id = ? AND +m.agent_id = ?"
                f" AND (m.expires_at_us IS NULL OR m.expires_at_us > ?) AND {where}",
                (
                    json.dumps([int(x) for x in labels]),
                    *self._scope,
                    *self._scope,
                    f.now_us,
                    *params,
                ),
            )
        }

    def roles_of(self, labels: Sequence[int]) -> dict[int, str]:
        """The role of each of ``labels`` in this scope: one query (labels as JSON)."""
        if not labels:
            return {}
        return {
            int(r[0]): str(r[1])
            for r in self._q(
                "SELECT label, role FROM memory WHERE label IN (SELECT value FROM json_each(?))"
                " AND +org_id = ? AND +agent_id = ?",
                (json.dumps([int(x) for x in labels]), *self._scope),
            )
        }

    def by_id(self, memory_id: str, now_us: int) -> Row | None:
        """One live memory of this scope by id."""
        rows = self._q(
            "SELECT label FROM am_memory WHERE id = ? AND org_id = ? AND agent_id = ?",
            (memory_id, *self._scope),
        )
        if not rows:
            return None
        f = Filter(now_us=now_us, include_archived=True, any_validity=True)
        return self.rows([rows[0][0]], f).get(rows[0][0])

    def _about_rows(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
        """The (entity, key) ``am_about`` rows of each memory (its speaker's not)."""
        out: dict[str, list[tuple[str, str]]] = {}
        sql = "SELECT memory_id, entity, key FROM am_about WHERE memory_id IN ({in})"
        for mid, entity, key in self._each(sql, ids):
            out.setdefault(mid, []).append((entity, key))
        return out

    def _about(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The entities each memory is about, its speaker among them (as written)."""
        rows = self._about_rows(ids)
        sql = (
            "SELECT id, speaker, speaker_key FROM memory WHERE id IN ({in})"
            " AND speaker_key IS NOT NULL"
        )
        for mid, speaker, key in self._each(sql, ids):
            rows.setdefault(mid, []).append((speaker, key))
        return {mid: entities(None, None, found) for mid, found in rows.items()}

    @staticmethod
    def _memory(
        r: Sequence[Any], about: Sequence[tuple[str, str]], sources: tuple[str, ...] = ()
    ) -> Memory:
        importance = float(r[11])
        # r[3] is the text here: an archived row's salience was filled before its text
        # left (``fill_salience``).
        salience = float(r[12]) if r[12] is not None else text_salience(r[3], importance)
        return Memory(
            id=r[1],
            type=r[8],
            content=r[3],
            role=r[2],
            conversation_id=r[5],
            speaker=r[9],
            created_at=from_us(r[4], r[1]),
            expires_at=from_us(r[6], r[1]) if r[6] is not None else None,
            confidence=float(r[10]),
            importance=importance,
            salience=salience,
            stability_days=float(r[13]),
            difficulty=float(r[14]),
            last_review=from_us(r[15], r[1]),
            access_count=int(r[16]),
            archived=r[17] is not None,
            about=entities(r[9], r[19], about),
            metadata={} if r[7] == "{}" else json.loads(r[7]),
            sources=sources,
            kind=r[20],
        )

    def _filter_sql(self, f: Filter) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if f.types is not None:
            clauses.append(f"a.type IN ({placeholders(len(f.types))})")
            params.extend(f.types)
        if not f.include_archived:
            clauses.append("a.archived_at_us IS NULL")
        if f.about is not None:
            keys = placeholders(len(f.about))
            clauses.append(
                f"(a.speaker_key IN ({keys}) OR a.id IN (SELECT memory_id FROM am_about"
                f" WHERE org_id = ? AND agent_id = ? AND key IN ({keys})))"
            )
            params.extend((*f.about, *self._scope, *f.about))
        if f.as_of_us is None and not f.any_validity:
            # The current view: a superseded or retracted fact is history, not knowledge.
            clauses.append("a.id NOT IN (SELECT id FROM am_fact WHERE valid_to_us IS NOT NULL)")
        elif f.as_of_us is not None:
            clauses.append("a.created_at_us <= ?")
            clauses.append(
                "a.id NOT IN (SELECT id FROM am_fact WHERE valid_from_us > ?"
                " OR (valid_to_us IS NOT NULL AND valid_to_us <= ?))"
            )
            params.extend((f.as_of_us, f.as_of_us, f.as_of_us))
        return " AND ".join(clauses) or "1", params

    def keyword_ranked(self, query_text: str, k: int, f: Filter) -> list[int]:
        """Labels of up to ``k`` best BM25 matches of the scope, unexpired, best first,
        before the filter. FTS5 scores the scope's rows only (``fts_match``) and reads no
        memory row."""
        match = fts_match(self._store.database, query_text, Scope(*self._scope))
        if match is None:
            return []
        return [
            int(r[0])
            for r in self._q(
                "SELECT rowid, bm25(memory_fts, 1.0, 0.0) AS r FROM memory_fts"
                " WHERE memory_fts MATCH ? AND rowid NOT IN (SELECT label FROM memory"
                " WHERE expires_at_us IS NOT NULL AND expires_at_us <= ?)"
                " ORDER BY r, rowid LIMIT ?",
                (match, f.now_us, k),
            )
        ]

    def keyword_scores(self, query_text: str, labels: Sequence[int]) -> dict[int, float]:
        """FTS5's BM25 score (lower is better) of each of ``labels`` that matches
        ``query_text`` in this scope (reads the keyword index alone)."""
        match = fts_match(self._store.database, query_text, Scope(*self._scope))
        if match is None or not labels:
            return {}
        rows = self._q(
            "SELECT rowid, bm25(memory_fts, 1.0, 0.0) FROM memory_fts WHERE memory_fts MATCH ?"
            " AND rowid IN (SELECT value FROM json_each(?))",
            (match, json.dumps([int(x) for x in labels])),
        )
        return {int(r[0]): float(r[1]) for r in rows}

    def keyword_filtered(self, query_text: str, k: int, f: Filter) -> list[int]:
        """The ``k`` best BM25 matches that pass ``f``, the filter applied inside the
        ranking (each match joined to its rows: slower, but never starved by a narrow
        filter)."""
        match = fts_match(self._store.database, query_text, Scope(*self._scope))
        if match is None:
            return []
        where, params = self._filter_sql(f)
        rows = self._q(
            "SELECT f.rowid, bm25(memory_fts, 1.0, 0.0) AS r FROM memory_fts f"
            " JOIN am_memory a ON a.label = f.rowid JOIN memory m ON m.label = f.rowid"
            " WHERE memory_fts MATCH ? AND +a.org_id = ? AND +a.agent_id = ?"
            " AND (m.expires_at_us IS NULL OR m.expires_at_us > ?)"
            f" AND {where} ORDER BY r, f.rowid LIMIT ?",
            (match, *self._scope, f.now_us, *params, k),
        )
        return [int(r[0]) for r in rows]

    def nearest_exact(
        self, qv: npt.NDArray[np.float32], pool: int, f: Filter
    ) -> list[tuple[int, float]]:
        """Up to ``pool`` (label, cosine) nearest ``qv`` among every memory that passes
        ``f``, exactly (recall's fallback when a filter starves the index's candidates)."""
        labels, blob = self.vectors(f)
        if not labels:
            return []
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(labels), -1)
        return [(labels[i], c) for i, c in exact_top_k(matrix, qv, pool)]

    def vectors(self, f: Filter) -> tuple[list[int], bytes]:
        """Labels and float32 vectors of every memory that passes ``f`` (exact search)."""
        where, params = self._filter_sql(f)
        rows = self._q(
            "SELECT v.label, v.embedding FROM am_memory a JOIN memory m ON m.label = a.label"
            " JOIN memory_vec v ON v.label = a.label WHERE a.org_id = ? AND a.agent_id = ?"
            f" AND (m.expires_at_us IS NULL OR m.expires_at_us > ?) AND {where}",
            (*self._scope, f.now_us, *params),
        )
        return [int(r[0]) for r in rows], b"".join(r[1] for r in rows)


__all__ = ["ReadRows"]
