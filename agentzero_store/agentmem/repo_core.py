"""The agent-memory repository's core: its scope, the schema, inserts, reads, decay
and access, belief history, facts, edges, procedures and selection (``repository``
assembles the whole repository from this and the classes built on it)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..memory.recall import fts_match
from ..memory.records import Scope, from_us
from ..memory.rows import placeholders
from ..memory.write import ExtraColumns
from .fsrs import text_salience
from .records import Fact, HistoryEntry, Memory, Procedure
from .schema import MIGRATIONS, SCHEMA_KEY, migrate_chain

if TYPE_CHECKING:
    from ..memory.store import SqliteMemoryStore
    from ..memory.tx import WriteTx
    from ..memory.write import Prepared

# memory columns, then the layer's, as ``_memory`` reads them
READ_COLUMNS = (
    "m.label, m.id, m.role, m.content, m.created_at_us, m.conversation_id, m.expires_at_us,"
    " m.metadata, a.type, a.speaker, a.confidence, a.importance, a.salience, a.stability,"
    " a.difficulty, a.last_review_us, a.access_count, a.archived_at_us, a.archive_digest,"
    " a.speaker_key"
)
# The layer's columns a new memory row is written with (``RepositoryCore.insert``).
_NEW_COLUMNS = (
    "type",
    "speaker",
    "speaker_key",
    "confidence",
    "importance",
    "stability",
    "difficulty",
)  # last_review_us stays NULL until a review: the am_memory view shows created_at_us


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


def batches(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class RepositoryCore:
    """The agent-memory tables of one (org, agent) scope in ``memory.db``: the core."""

    """The agent-memory tables of one (org, agent) scope in ``memory.db``."""

    def __init__(self, store: SqliteMemoryStore, org_id: str, agent_id: str) -> None:
        self._store = store
        self.org_id = org_id
        self.agent_id = agent_id
        self._scope = (org_id, agent_id)

    # ------------------------------------------------------------------ schema
    def migrate(self) -> None:
        """Create or upgrade the layer's tables (``schema.migrate_chain``)."""
        migrate_chain(self._store, SCHEMA_KEY, MIGRATIONS, "agent-memory")

    def feed_seq(self, tx: WriteTx) -> int:
        """The change feed's newest seq, read inside ``tx`` (under the write lock)."""
        return int(tx.query("SELECT max(seq) FROM changes")[0][0] or 0)

    def transaction(self) -> Any:
        """The memory store's write transaction (a ``WriteTx`` context manager)."""
        return self._store.transaction()

    def _each(self, sql: str, values: Sequence[Any], after: Sequence[Any] = ()) -> list[Any]:
        """The rows of ``sql`` (its ``{in}`` a placeholder list) over ``values`` in
        batches below SQLite's bound-variable limit; ``after``: parameters that follow."""
        rows: list[Any] = []
        for part in batches(list(values)):
            rows.extend(self._q(sql.format(**{"in": placeholders(len(part))}), (*part, *after)))
        return rows

    def _q(self, sql: str, params: Sequence[Any] = (), tx: WriteTx | None = None) -> list[Any]:
        # Inside a write transaction, reads go through it: they see its writes, and no
        # other writer can change what they saw before it commits.
        if tx is not None:
            return tx.query(sql, params)
        return self._store.database.query(sql, params)

    # ------------------------------------------------------------------ inserts
    def insert(
        self, tx: WriteTx, prepared: Prepared, metas: Sequence[NewMemory]
    ) -> list[tuple[str, int]]:
        """Insert memory rows with the layer's columns through ``tx``: ``metas`` in the
        order of ``prepared``'s entries. Returns the (id, label) of the rows written (an
        identical re-send is not). One INSERT per table: the memory row carries the
        layer's columns; only entities other than the speaker get ``am_about`` rows, and
        each speaker new to the scope one ``am_speaker`` row."""
        if not prepared.entries:
            return []
        # One tuple per distinct record (a batch of turns shares one per speaker): a
        # fresh tuple per row was measurable (~3% of a batch, much of it the cyclic
        # garbage collector running over the new containers).
        values: dict[int, tuple[Any, ...]] = {}
        rows: list[tuple[Any, ...]] = []
        for m in metas:
            row = values.get(id(m))
            if row is None:
                row = values[id(m)] = (
                    m.type,
                    m.speaker,
                    m.speaker_key,
                    m.confidence,
                    m.importance,
                    m.stability,
                    m.difficulty,
                )
            rows.append(row)
        written = tx.insert(prepared, ExtraColumns(_NEW_COLUMNS, rows))
        if not written:
            return written
        by_id = dict(zip(prepared.ids, metas, strict=True))
        about = [(mid, *self._scope, n, k) for mid, _ in written for n, k in by_id[mid].about]
        if about:
            tx.executemany(
                "INSERT OR IGNORE INTO am_about (memory_id, org_id, agent_id, entity, key)"
                " VALUES (?,?,?,?,?)",
                about,
            )
        self._add_speakers(tx, {m.speaker_key for m in metas if m.speaker_key})
        return written

    def _add_speakers(self, tx: WriteTx, keys: set[str]) -> None:
        """Note speakers of this scope (once each: the entity signal's list of them)."""
        if keys:
            tx.executemany(
                "INSERT OR IGNORE INTO am_speaker (org_id, agent_id, key) VALUES (?,?,?)",
                [(*self._scope, k) for k in sorted(keys)],
            )

    def find_duplicate(self, fingerprint: str, type_: str, tx: WriteTx | None = None) -> str | None:
        """The id of a memory of this type with the same text fingerprint, if any."""
        # Only notes are indexed by fingerprint (memory_note_fp): an episodic one is
        # looked for among the scope's rows (remember(type="episodic") is rare; turns are
        # never checked).
        notes = " AND type <> 'episodic'" if type_ != "episodic" else ""
        rows = self._q(
            "SELECT id FROM am_memory WHERE org_id = ? AND agent_id = ? AND fingerprint = ?"
            f" AND type = ?{notes} ORDER BY created_at_us, id LIMIT 1",
            (*self._scope, fingerprint, type_),
            tx,
        )
        return str(rows[0][0]) if rows else None

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
            about = self._about_rows([r[1] for r in rows])
            for r in rows:
                out[r[0]] = Row(r[0], self._memory(r, about.get(r[1], ())), r[18])
        return out

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
    def _memory(r: Sequence[Any], about: Sequence[tuple[str, str]]) -> Memory:
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
            created_at=from_us(r[4]),
            expires_at=from_us(r[6]) if r[6] is not None else None,
            confidence=float(r[10]),
            importance=importance,
            salience=salience,
            stability_days=float(r[13]),
            difficulty=float(r[14]),
            last_review=from_us(r[15]),
            access_count=int(r[16]),
            archived=r[17] is not None,
            about=entities(r[9], r[19], about),
            metadata={} if r[7] == "{}" else json.loads(r[7]),
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

    # ------------------------------------------------------------------ decay, access
    def log_access(self, tx: WriteTx, accesses: Sequence[tuple[str, int]]) -> None:
        """Append (memory id, time) accesses and bump each memory's counters."""
        tx.executemany("INSERT INTO am_access (memory_id, at_us) VALUES (?, ?)", accesses)
        tx.executemany(
            "UPDATE memory SET access_count = access_count + 1,"
            " last_access_us = max(coalesce(last_access_us, 0), ?) WHERE id = ?",
            [(at, mid) for mid, at in accesses],
        )

    def accesses(self, memory_id: str) -> list[int]:
        """Times (µs) a recall returned this memory, oldest first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT at_us FROM am_access WHERE memory_id = ? ORDER BY at_us", (memory_id,)
            )
        ]

    def set_review(
        self, tx: WriteTx, memory_id: str, stability: float, difficulty: float, at_us: int
    ) -> None:
        """Store a memory's FSRS state after feedback."""
        tx.execute(
            "UPDATE memory SET stability = ?, difficulty = ?, last_review_us = ? WHERE id = ?",
            (stability, difficulty, at_us, memory_id),
        )

    def decay_rows(
        self,
    ) -> list[tuple[str, int, str, float, float | None, int, float | None, float, int | None]]:
        """(id, label, type, stability, salience, last_review_us, retrievability,
        importance, archived_at_us) of every memory in scope, by id; salience is None
        where it was never computed (``fill_salience``)."""
        return [
            tuple(r)
            for r in self._q(
                "SELECT id, label, type, stability, salience, last_review_us, retrievability,"
                " importance, archived_at_us FROM am_memory WHERE org_id = ? AND agent_id = ?"
                " ORDER BY id",
                self._scope,
            )
        ]

    def missing_salience(
        self, ids: Sequence[str] | None = None, tx: WriteTx | None = None
    ) -> dict[str, float]:
        """The salience of memories that have none stored yet (of ``ids``, or of the
        whole scope), computed from their text, by id (``fill_salience`` stores it)."""
        sql = (
            "SELECT id, content, importance FROM memory WHERE org_id = ? AND agent_id = ?"
            " AND type IS NOT NULL AND salience IS NULL AND archived_at_us IS NULL"
        )
        rows: list[Any] = []
        if ids is None:
            rows = self._q(sql, self._scope, tx)
        else:
            for part in batches(list(ids)):
                rows += self._q(
                    f"{sql} AND id IN ({placeholders(len(part))})", (*self._scope, *part), tx
                )
        return {str(mid): text_salience(text, float(imp)) for mid, text, imp in rows}

    def fill_salience(self, tx: WriteTx, ids: Sequence[str] | None = None) -> dict[str, float]:
        """Compute and store the salience of memories that have none yet (of ``ids``, or
        of the whole scope): before consolidation decays them, and before archive moves
        their text away. Returns what it stored, by id."""
        filled = self.missing_salience(ids, tx)
        tx.executemany(
            "UPDATE memory SET salience = ? WHERE id = ?", [(v, k) for k, v in filled.items()]
        )
        return filled

    def live_texts(self) -> list[tuple[str, str, int, int | None, int, float, float]]:
        """(id, content, created_at_us, last_access_us, access_count, salience,
        importance) of every live, unarchived memory of the scope, by id."""
        return [
            (
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5] if r[5] is not None else text_salience(r[1], r[6]),
                r[6],
            )
            for r in self._q(
                "SELECT a.id, m.content, a.created_at_us, a.last_access_us, a.access_count,"
                " a.salience, a.importance FROM am_memory a JOIN memory m ON m.label = a.label"
                " WHERE a.org_id = ? AND a.agent_id = ? AND a.archived_at_us IS NULL"
                " ORDER BY a.id",
                self._scope,
            )
        ]

    def set_retrievability(self, tx: WriteTx, values: Sequence[tuple[float, str]]) -> None:
        """Store each (R, id) snapshot."""
        tx.executemany("UPDATE memory SET retrievability = ? WHERE id = ?", values)

    # ------------------------------------------------------------------ history
    def append_history(
        self, tx: WriteTx, at_us: int, entries: Sequence[tuple[str, str, dict[str, Any]]]
    ) -> None:
        """Append (op, target, detail) lines to the belief history."""
        tx.executemany(
            "INSERT INTO am_history (org_id, agent_id, at_us, op, target, detail)"
            " VALUES (?,?,?,?,?,?)",
            [
                (*self._scope, at_us, op, target, json.dumps(detail, sort_keys=True))
                for op, target, detail in entries
            ],
        )

    def history(self, target: str | None, limit: int) -> list[HistoryEntry]:
        """The belief history (of one target, or all), oldest first."""
        cond, params = ("AND target = ?", [target]) if target else ("", [])
        rows = self._q(
            f"SELECT seq, at_us, op, target, detail FROM am_history WHERE org_id = ?"
            f" AND agent_id = ? {cond} ORDER BY seq LIMIT ?",
            (*self._scope, *params, limit),
        )
        return [HistoryEntry(r[0], from_us(r[1]), r[2], r[3], json.loads(r[4])) for r in rows]

    # ------------------------------------------------------------------ facts
    _FACT = (
        "id, subject, predicate, object, confidence, single_valued, valid_from_us,"
        " valid_to_us, superseded_by, retracted"
    )

    @staticmethod
    def _fact(r: Sequence[Any]) -> Fact:
        return Fact(
            r[0],
            r[1],
            r[2],
            r[3],
            float(r[4]),
            bool(r[5]),
            from_us(r[6]),
            from_us(r[7]) if r[7] is not None else None,
            r[8],
            bool(r[9]),
        )

    def current_facts(
        self, subject_key: str, predicate_key: str, tx: WriteTx | None = None
    ) -> list[Fact]:
        """Facts of (subject, predicate) still believed, oldest first."""
        rows = self._q(
            f"SELECT {self._FACT} FROM am_fact WHERE org_id = ? AND agent_id = ?"
            " AND subject_key = ? AND predicate_key = ? AND valid_to_us IS NULL"
            " ORDER BY valid_from_us, id",
            (*self._scope, subject_key, predicate_key),
            tx,
        )
        return [self._fact(r) for r in rows]

    def facts(
        self,
        subject_key: str | None,
        predicate_key: str | None,
        as_of_us: int | None,
        history: bool,
    ) -> list[Fact]:
        """Facts believed now, at ``as_of_us``, or (``history``) ever; oldest first."""
        clauses = ["org_id = ?", "agent_id = ?"]
        params: list[Any] = [*self._scope]
        if subject_key is not None:
            clauses.append("subject_key = ?")
            params.append(subject_key)
        if predicate_key is not None:
            clauses.append("predicate_key = ?")
            params.append(predicate_key)
        if not history:
            if as_of_us is None:
                clauses.append("valid_to_us IS NULL")
            else:
                clauses.append("valid_from_us <= ? AND (valid_to_us IS NULL OR valid_to_us > ?)")
                params.extend((as_of_us, as_of_us))
        rows = self._q(
            f"SELECT {self._FACT} FROM am_fact WHERE {' AND '.join(clauses)}"
            " ORDER BY valid_from_us, id",
            params,
        )
        return [self._fact(r) for r in rows]

    def fact(self, fact_id: str) -> Fact | None:
        """One fact of this scope by id."""
        rows = self._q(
            f"SELECT {self._FACT} FROM am_fact WHERE id = ? AND org_id = ? AND agent_id = ?",
            (fact_id, *self._scope),
        )
        return self._fact(rows[0]) if rows else None

    def insert_fact(
        self,
        tx: WriteTx,
        fact_id: str,
        parts: tuple[str, str, str],
        keys: tuple[str, str, str],
        confidence: float,
        single_valued: bool,
        valid_from_us: int,
    ) -> None:
        """A new fact, stored under the id of the semantic memory holding its text."""
        tx.execute(
            "INSERT INTO am_fact (id, org_id, agent_id, subject, predicate, object, subject_key,"
            " predicate_key, object_key, confidence, single_valued, valid_from_us)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (fact_id, *self._scope, *parts, *keys, confidence, int(single_valued), valid_from_us),
        )

    def close_fact(self, tx: WriteTx, fact_id: str, at_us: int, superseded_by: str | None) -> None:
        """End a fact's validity (superseded by another, or retracted)."""
        tx.execute(
            "UPDATE am_fact SET valid_to_us = ?, superseded_by = ?, retracted = ?"
            " WHERE id = ? AND valid_to_us IS NULL",
            (at_us, superseded_by, int(superseded_by is None), fact_id),
        )

    def set_confidence(self, tx: WriteTx, fact_id: str, confidence: float) -> None:
        """Change a fact's (and its memory's) confidence."""
        tx.execute("UPDATE am_fact SET confidence = ? WHERE id = ?", (confidence, fact_id))
        tx.execute("UPDATE memory SET confidence = ? WHERE id = ?", (confidence, fact_id))

    # ------------------------------------------------------------------ edges
    def add_edges(
        self, tx: WriteTx, edges: Sequence[tuple[str, str, str, float]], at_us: int
    ) -> None:
        """Add (src, dst, type, confidence) edges (an existing one is kept)."""
        tx.executemany(
            "INSERT OR IGNORE INTO am_edge (src, dst, type, org_id, agent_id, confidence,"
            " created_at_us) VALUES (?,?,?,?,?,?,?)",
            [(s, d, t, *self._scope, c, at_us) for s, d, t, c in edges],
        )

    def edges(self, node: str) -> list[tuple[str, str, str, float, int]]:
        """Stored edges touching ``node``: (src, dst, type, confidence, created_at_us)."""
        return [
            tuple(r)
            for r in self._q(
                "SELECT src, dst, type, confidence, created_at_us FROM am_edge WHERE org_id = ?"
                " AND agent_id = ? AND (src = ? OR dst = ?) ORDER BY created_at_us, src, dst, type",
                (*self._scope, node, node),
            )
        ]

    # ------------------------------------------------------------------ procedures
    _PROC = "id, action, context, successes, failures"

    def procedure_by_key(
        self, action_key: str, context_key: str, tx: WriteTx | None = None
    ) -> Procedure | None:
        """The procedure recorded for this action (in this context), if any."""
        rows = self._q(
            f"SELECT {self._PROC} FROM am_procedure WHERE org_id = ? AND agent_id = ?"
            " AND action_key = ? AND context_key = ?",
            (*self._scope, action_key, context_key),
            tx,
        )
        return Procedure(*rows[0]) if rows else None

    def procedures(self, ids: Sequence[str]) -> dict[str, Procedure]:
        """Procedures by id."""
        out: dict[str, Procedure] = {}
        for part in batches(list(ids)):
            for r in self._q(
                f"SELECT {self._PROC} FROM am_procedure WHERE id IN ({placeholders(len(part))})"
                " AND +org_id = ? AND +agent_id = ?",  # by id, not a scan (see _BY_LABEL)
                (*part, *self._scope),
            ):
                out[r[0]] = Procedure(*r)
        return out

    def insert_procedure(
        self,
        tx: WriteTx,
        pid: str,
        action: str,
        context: str | None,
        keys: tuple[str, str],
        success: bool,
        at_us: int,
    ) -> None:
        """A new procedure with its first outcome."""
        tx.execute(
            "INSERT INTO am_procedure (id, org_id, agent_id, action, context, action_key,"
            " context_key, successes, failures, updated_at_us) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (pid, *self._scope, action, context, *keys, int(success), int(not success), at_us),
        )

    def count_outcome(self, tx: WriteTx, pid: str, success: bool, at_us: int) -> None:
        """One more success or failure."""
        col = "successes" if success else "failures"
        tx.execute(
            f"UPDATE am_procedure SET {col} = {col} + 1, updated_at_us = ? WHERE id = ?",
            (at_us, pid),
        )

    # ------------------------------------------------------------------ selection
    def select(self, selector: str, value: str) -> list[tuple[str, int]]:
        """(id, label) of this scope's memories chosen by ``id``, ``conversation_id`` or
        ``about`` (an entity key), archived ones included."""
        cond = {
            "id": "id = ?",
            "conversation_id": "conversation_id = ?",
            "about": "(speaker_key = ? OR id IN (SELECT memory_id FROM am_about"
            " WHERE org_id = ? AND agent_id = ? AND key = ?))",
        }[selector]
        extra = (value, *self._scope, value) if selector == "about" else (value,)
        rows = self._q(
            f"SELECT id, label FROM am_memory WHERE org_id = ? AND agent_id = ? AND {cond}"
            " ORDER BY id",
            (*self._scope, *extra),
        )
        return [(str(r[0]), int(r[1])) for r in rows]


__all__ = [
    "READ_COLUMNS",
    "Candidate",
    "Filter",
    "NewMemory",
    "RepositoryCore",
    "Row",
    "batches",
    "entities",
]
