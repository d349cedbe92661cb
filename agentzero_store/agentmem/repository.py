"""Every SQL statement of the agent-memory layer, behind one small interface.

The memory text stays in the memory store's ``memory`` table (so its HNSW and FTS5
indexes and every recall path keep working and stay scoped); this module keeps the
layer's own tables beside it in the same encrypted ``memory.db``:

- ``am_memory``: one row per agent memory (type, speaker, confidence, decay state,
  access counts, archive state), keyed by the memory's id and its current label;
- ``am_about``: which entities a memory is about;
- ``am_fact`` / ``am_procedure``: subject–predicate–object beliefs and action outcomes;
- ``am_edge``: typed links (supersedes, semantic, causal, ...);
- ``am_access``: the access log (every memory a recall returned);
- ``am_history``: the belief history, append-only (only erase removes from it);
- ``am_forgotten``: the undo area of soft forgets; ``am_tombstone``: what erase removed
  (ids and counts, never content); ``am_purge``: erases whose last steps are pending.

Every query is bound to one (org, agent) scope given at construction. A second backend
(PostgreSQL) implements the same methods. Writes take the ``WriteTx`` of
``SqliteMemoryStore.transaction()``, so a layer write and its memory rows commit together.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.errors import SchemaVersionError
from ..memory.recall import fts_match
from ..memory.records import Scope, from_us, to_us
from ..memory.rows import placeholders
from .records import Fact, HistoryEntry, Memory, Procedure

if TYPE_CHECKING:
    from ..memory.store import SqliteMemoryStore
    from ..memory.tx import WriteTx
    from ..memory.write import Prepared

SCHEMA_KEY = "agentmem_schema"
SCHEMA_VERSION = 3
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE am_memory (
        id              TEXT PRIMARY KEY,
        label           INTEGER NOT NULL UNIQUE,  -- memory.label (changes on undo)
        org_id          TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        type            TEXT NOT NULL CHECK (type IN ('episodic', 'semantic', 'procedural')),
        speaker         TEXT,
        created_at_us   INTEGER NOT NULL,
        fingerprint     TEXT NOT NULL,
        confidence      REAL NOT NULL,
        importance      REAL NOT NULL,
        salience        REAL NOT NULL,
        stability       REAL NOT NULL,            -- FSRS S, days
        difficulty      REAL NOT NULL,            -- FSRS D, 1..10
        last_review_us  INTEGER NOT NULL,
        access_count    INTEGER NOT NULL DEFAULT 0,
        last_access_us  INTEGER,
        retrievability  REAL,                     -- R at the last consolidation
        archived_at_us  INTEGER,                  -- not NULL: the text is in the archive
        archive_digest  TEXT,                     -- sha256 the archive must match
        promoted_to     TEXT                      -- episodes: the semantic memory they made
    );
    CREATE INDEX am_memory_scope ON am_memory (org_id, agent_id, type, created_at_us);
    CREATE INDEX am_memory_fp ON am_memory (org_id, agent_id, fingerprint);
    CREATE INDEX am_memory_conv ON am_memory (org_id, agent_id, conversation_id, created_at_us);
    CREATE TABLE am_about (
        memory_id TEXT NOT NULL,
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        entity    TEXT NOT NULL,   -- as first written
        key       TEXT NOT NULL,   -- records.entity_key(entity)
        PRIMARY KEY (memory_id, key)
    );
    CREATE INDEX am_about_key ON am_about (org_id, agent_id, key);
    CREATE TABLE am_fact (
        id            TEXT PRIMARY KEY,  -- the id of the semantic memory holding its text
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        subject       TEXT NOT NULL,
        predicate     TEXT NOT NULL,
        object        TEXT NOT NULL,
        subject_key   TEXT NOT NULL,
        predicate_key TEXT NOT NULL,
        object_key    TEXT NOT NULL,
        confidence    REAL NOT NULL,
        single_valued INTEGER NOT NULL,
        valid_from_us INTEGER NOT NULL,
        valid_to_us   INTEGER,
        superseded_by TEXT,
        retracted     INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX am_fact_sp ON am_fact (org_id, agent_id, subject_key, predicate_key);
    CREATE INDEX am_fact_closed ON am_fact (valid_to_us) WHERE valid_to_us IS NOT NULL;
    CREATE TABLE am_procedure (
        id            TEXT PRIMARY KEY,
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        action        TEXT NOT NULL,
        context       TEXT,
        action_key    TEXT NOT NULL,
        context_key   TEXT NOT NULL,
        successes     INTEGER NOT NULL,
        failures      INTEGER NOT NULL,
        updated_at_us INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX am_procedure_key
        ON am_procedure (org_id, agent_id, action_key, context_key);
    CREATE TABLE am_edge (
        src           TEXT NOT NULL,
        dst           TEXT NOT NULL,
        type          TEXT NOT NULL,
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        confidence    REAL NOT NULL,
        created_at_us INTEGER NOT NULL,
        PRIMARY KEY (src, dst, type)
    );
    CREATE INDEX am_edge_dst ON am_edge (dst);
    CREATE TABLE am_access (memory_id TEXT NOT NULL, at_us INTEGER NOT NULL);
    CREATE INDEX am_access_memory ON am_access (memory_id, at_us);
    CREATE TABLE am_history (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        org_id   TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        at_us    INTEGER NOT NULL,
        op       TEXT NOT NULL,
        target   TEXT NOT NULL,
        detail   TEXT NOT NULL
    );
    CREATE INDEX am_history_target ON am_history (target);
    CREATE TABLE am_forgotten (
        memory_id       TEXT PRIMARY KEY,
        token           TEXT NOT NULL,
        org_id          TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        about           TEXT NOT NULL,   -- JSON list of entity keys
        forgotten_at_us INTEGER NOT NULL,
        until_us        INTEGER NOT NULL,
        payload         TEXT NOT NULL,   -- JSON: the rows to put back
        vector          BLOB
    );
    CREATE INDEX am_forgotten_token ON am_forgotten (token);
    CREATE TABLE am_tombstone (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        org_id   TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        at_us    INTEGER NOT NULL,
        selector TEXT NOT NULL,          -- id | conversation_id | about (never its value)
        count    INTEGER NOT NULL,
        ids      TEXT NOT NULL           -- JSON list of the erased ids (random, no content)
    );
    CREATE TABLE am_purge (memory_id TEXT PRIMARY KEY);
    """,
    # v2: conversation order is (created_at, label): turns of one add_turns batch share a
    # time, and the label keeps their order. With the label in the index, the turn next
    # to another is one index step, not a walk over every turn of that instant.
    """
    DROP INDEX am_memory_conv;
    CREATE INDEX am_memory_turns
        ON am_memory (org_id, agent_id, conversation_id, created_at_us, label);
    """,
    # v3 (issue 17): shared namespaces and their grants, pins, core facts, warm summaries.
    # Pins, core marks and summary sources name memories by id only (no text): a forgotten
    # memory's rows stay, invisible because every read joins the live memory, so undo
    # brings them back; erase and the purge after an undo window delete them.
    """
    CREATE TABLE am_namespace (
        org_id        TEXT NOT NULL,
        name          TEXT NOT NULL,
        owner         TEXT NOT NULL,          -- the agent that created it
        created_at_us INTEGER NOT NULL,
        PRIMARY KEY (org_id, name)
    ) WITHOUT ROWID;
    CREATE TABLE am_grant (
        org_id     TEXT NOT NULL,
        namespace  TEXT NOT NULL,
        agent_id   TEXT NOT NULL,
        granted_by TEXT NOT NULL,
        at_us      INTEGER NOT NULL,
        PRIMARY KEY (org_id, namespace, agent_id)
    ) WITHOUT ROWID;
    CREATE INDEX am_grant_agent ON am_grant (org_id, agent_id);
    CREATE TABLE am_pin (
        memory_id TEXT PRIMARY KEY,
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        at_us     INTEGER NOT NULL
    );
    CREATE INDEX am_pin_scope ON am_pin (org_id, agent_id, at_us);
    CREATE TABLE am_core (
        memory_id TEXT PRIMARY KEY,           -- a semantic memory (a fact) loaded at spawn
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        since_us  INTEGER NOT NULL,
        reason    TEXT NOT NULL CHECK (reason IN ('asserted', 'accessed', 'inherited'))
    );
    CREATE INDEX am_core_scope ON am_core (org_id, agent_id, since_us);
    CREATE TABLE am_summary (
        id              TEXT PRIMARY KEY,
        org_id          TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        text            TEXT,                 -- NULL: extractive, the sources are the text
        created_at_us   INTEGER NOT NULL,
        expires_at_us   INTEGER NOT NULL
    );
    CREATE INDEX am_summary_conv ON am_summary (org_id, agent_id, conversation_id);
    CREATE TABLE am_summary_source (
        summary_id TEXT NOT NULL,
        memory_id  TEXT NOT NULL,
        position   INTEGER NOT NULL,
        PRIMARY KEY (summary_id, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX am_summary_source_memory ON am_summary_source (memory_id);
    CREATE TABLE am_session (
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        name          TEXT NOT NULL,
        inherits      TEXT NOT NULL,          -- JSON list of session names
        created_at_us INTEGER NOT NULL,
        PRIMARY KEY (org_id, agent_id, name)
    ) WITHOUT ROWID;
    """,
)

# memory columns, then am_memory columns, as ``_memory`` reads them
_READ = (
    "m.label, m.id, m.role, m.content, m.created_at_us, m.conversation_id, m.expires_at_us,"
    " m.metadata, a.type, a.speaker, a.confidence, a.importance, a.salience, a.stability,"
    " a.difficulty, a.last_review_us, a.access_count, a.archived_at_us, a.archive_digest"
)


@dataclass(frozen=True)
class NewMemory:
    """The layer's attributes of a memory row about to be inserted."""

    type: str
    speaker: str | None
    confidence: float
    importance: float
    salience: float
    stability: float
    difficulty: float
    about: tuple[tuple[str, str], ...]  # (entity as written, key)


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


def _batches(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SqliteRepository:
    """The agent-memory tables of one (org, agent) scope in ``memory.db``."""

    def __init__(self, store: SqliteMemoryStore, org_id: str, agent_id: str) -> None:
        self._store = store
        self.org_id = org_id
        self.agent_id = agent_id
        self._scope = (org_id, agent_id)

    # ------------------------------------------------------------------ schema
    def migrate(self) -> None:
        """Create or upgrade the layer's tables (one transaction per version)."""
        db = self._store.database
        rows = db.query("SELECT value FROM meta WHERE key = ?", (SCHEMA_KEY,))
        version = int(rows[0][0]) if rows else 0
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"memory.db has agent-memory schema {version}; this version supports up to "
                f"{SCHEMA_VERSION}"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self._store.transaction() as tx:
                for stmt in _MIGRATIONS[target - 1].split(";\n"):
                    if stmt.strip():
                        tx.execute(stmt)
                tx.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    (SCHEMA_KEY, str(target)),
                )

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
        for part in _batches(list(values)):
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
        self,
        tx: WriteTx,
        prepared: Prepared,
        written: Sequence[tuple[str, int]],
        metas: Sequence[NewMemory],
    ) -> None:
        """The layer's rows of memory rows just inserted through ``tx``: ``metas`` are in
        the order of ``prepared``'s entries, ``written`` the (id, label) of those written
        (an identical re-send is not). Everything comes from the prepared entries: no
        memory row is read back."""
        if not written:
            return
        at = {mid: i for i, mid in enumerate(prepared.ids)}
        base: dict[str, tuple[str, int, str]] = {}
        for mid, _ in written:
            e = prepared.entries[at[mid]]
            created = to_us(e.created_at) if e.created_at else prepared.now_us
            base[mid] = (e.conversation_id, created, e.fingerprint())
        metas = [metas[at[mid]] for mid, _ in written]
        tx.executemany(
            "INSERT INTO am_memory (id, label, org_id, agent_id, conversation_id, type, speaker,"
            " created_at_us, fingerprint, confidence, importance, salience, stability,"
            " difficulty, last_review_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    mid,
                    label,
                    *self._scope,
                    base[mid][0],
                    m.type,
                    m.speaker,
                    base[mid][1],
                    base[mid][2],
                    m.confidence,
                    m.importance,
                    m.salience,
                    m.stability,
                    m.difficulty,
                    base[mid][1],
                )
                for (mid, label), m in zip(written, metas, strict=True)
            ],
        )
        tx.executemany(
            "INSERT OR IGNORE INTO am_about (memory_id, org_id, agent_id, entity, key)"
            " VALUES (?,?,?,?,?)",
            [
                (mid, *self._scope, name, key)
                for (mid, _), m in zip(written, metas, strict=True)
                for name, key in m.about
            ],
        )

    def find_duplicate(self, fingerprint: str, type_: str, tx: WriteTx | None = None) -> str | None:
        """The id of a memory of this type with the same text fingerprint, if any."""
        rows = self._q(
            "SELECT id FROM am_memory WHERE org_id = ? AND agent_id = ? AND fingerprint = ?"
            " AND type = ? ORDER BY created_at_us, id LIMIT 1",
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
        for part in _batches(list(labels)):
            where, params = self._filter_sql(f)
            rows = self._q(
                f"SELECT {_READ} FROM memory m NOT INDEXED JOIN am_memory a ON a.label = m.label"
                f" WHERE m.label IN ({placeholders(len(part))}) AND m.org_id = ?"
                " AND m.agent_id = ? AND +a.org_id = ? AND +a.agent_id = ?"
                " AND (m.expires_at_us IS NULL OR m.expires_at_us > ?)"
                f" AND {where}",
                (*part, *self._scope, *self._scope, f.now_us, *params),
            )
            about = self._about([r[1] for r in rows])
            for r in rows:
                out[r[0]] = Row(r[0], self._memory(r, about.get(r[1], ())), r[18])
        return out

    def candidates(self, labels: Sequence[int], f: Filter) -> dict[int, Candidate]:
        """Those of ``labels`` that are live, unexpired, in scope and pass ``f``, with what
        recall's signals read of them (no text): one query per 500 labels."""
        out: dict[int, Candidate] = {}
        where, params = self._filter_sql(f)
        for part in _batches(list(labels)):
            for r in self._q(
                "SELECT a.label, a.id, a.type, a.confidence, a.access_count,"
                " a.conversation_id, a.created_at_us, a.fingerprint FROM am_memory a"
                " JOIN memory m ON m.label = a.label"
                f" WHERE a.label IN ({placeholders(len(part))}) AND +a.org_id = ?"
                " AND +a.agent_id = ? AND +m.org_id = ? AND +m.agent_id = ?"
                f" AND (m.expires_at_us IS NULL OR m.expires_at_us > ?) AND {where}",
                (*part, *self._scope, *self._scope, f.now_us, *params),
            ):
                out[int(r[0])] = Candidate(
                    str(r[1]), str(r[2]), float(r[3]), int(r[4]), str(r[5]), int(r[6]), str(r[7])
                )
        return out

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

    def _about(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for part in _batches(list(ids)):
            for mid, entity in self._q(
                "SELECT memory_id, entity FROM am_about WHERE memory_id IN"
                f" ({placeholders(len(part))}) ORDER BY memory_id, key",
                list(part),
            ):
                out.setdefault(mid, []).append(entity)
        return {k: tuple(v) for k, v in out.items()}

    @staticmethod
    def _memory(r: Sequence[Any], about: tuple[str, ...]) -> Memory:
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
            importance=float(r[11]),
            salience=float(r[12]),
            stability_days=float(r[13]),
            difficulty=float(r[14]),
            last_review=from_us(r[15]),
            access_count=int(r[16]),
            archived=r[17] is not None,
            about=about,
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
            clauses.append(
                "a.id IN (SELECT memory_id FROM am_about WHERE org_id = ? AND agent_id = ?"
                f" AND key IN ({placeholders(len(f.about))}))"
            )
            params.extend((*self._scope, *f.about))
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
            "UPDATE am_memory SET access_count = access_count + 1,"
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
            "UPDATE am_memory SET stability = ?, difficulty = ?, last_review_us = ? WHERE id = ?",
            (stability, difficulty, at_us, memory_id),
        )

    def decay_rows(
        self,
    ) -> list[tuple[str, int, str, float, float, int, float | None, float, int | None]]:
        """(id, label, type, stability, salience, last_review_us, retrievability,
        importance, archived_at_us) of every memory in scope, by id."""
        return [
            tuple(r)
            for r in self._q(
                "SELECT id, label, type, stability, salience, last_review_us, retrievability,"
                " importance, archived_at_us FROM am_memory WHERE org_id = ? AND agent_id = ?"
                " ORDER BY id",
                self._scope,
            )
        ]

    def live_texts(self) -> list[tuple[str, str, int, int | None, int, float, float]]:
        """(id, content, created_at_us, last_access_us, access_count, salience,
        importance) of every live, unarchived memory of the scope, by id."""
        return [
            tuple(r)
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
        tx.executemany("UPDATE am_memory SET retrievability = ? WHERE id = ?", values)

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
        tx.execute("UPDATE am_memory SET confidence = ? WHERE id = ?", (confidence, fact_id))

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

    def neighbours_in_conversation(self, memory_id: str) -> list[tuple[str, int]]:
        """(id, created_at_us) of the turns just before and after a memory in its
        conversation (implicit temporal edges: the order is in the rows themselves)."""
        rows = self._q(
            "SELECT label FROM am_memory WHERE id = ? AND org_id = ? AND agent_id = ?",
            (memory_id, *self._scope),
        )
        if not rows:
            return []
        places = self.turn_places([int(rows[0][0])])
        near = [lab for lab, _ in self.turn_neighbours(places, 1).get(rows[0][0], [])]
        found = dict(
            (int(r[0]), (str(r[1]), int(r[2])))
            for r in self._each(
                "SELECT label, id, created_at_us FROM am_memory WHERE label IN ({in})", near
            )
        )
        return [found[lab] for lab in near if lab in found]

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
        for part in _batches(list(ids)):
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
            "about": "id IN (SELECT memory_id FROM am_about WHERE org_id = ? AND agent_id = ?"
            " AND key = ?)",
        }[selector]
        extra = (*self._scope, value) if selector == "about" else (value,)
        rows = self._q(
            f"SELECT id, label FROM am_memory WHERE org_id = ? AND agent_id = ? AND {cond}"
            " ORDER BY id",
            (*self._scope, *extra),
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    # ------------------------------------------------------------------ forget, undo
    def forget(
        self,
        tx: WriteTx,
        chosen: Sequence[tuple[str, int]],
        token: str,
        at_us: int,
        until_us: int,
    ) -> None:
        """Move memories into the undo area: every row of every table that holds them is
        kept there (text, vector, decay state, facts, edges), then deleted everywhere, in
        the caller's one transaction, so no index can still return them."""
        for mid, label in chosen:
            mem = tx.query(
                "SELECT id, role, content, created_at_us, conversation_id, org_id, agent_id,"
                " expires_at_us, kind, source, metadata, embedding_model FROM memory"
                " WHERE label = ?",
                (label,),
            )[0]
            am = tx.query("SELECT * FROM am_memory WHERE id = ?", (mid,))[0]
            about = tx.query("SELECT entity, key FROM am_about WHERE memory_id = ?", (mid,))
            fact = tx.query("SELECT * FROM am_fact WHERE id = ?", (mid,))
            proc = tx.query("SELECT * FROM am_procedure WHERE id = ?", (mid,))
            edges = tx.query("SELECT * FROM am_edge WHERE src = ? OR dst = ?", (mid, mid))
            vec = tx.query("SELECT embedding FROM memory_vec WHERE label = ?", (label,))
            payload = {
                "memory": list(mem),
                "am_memory": list(am),
                "about": [list(a) for a in about],
                "fact": list(fact[0]) if fact else None,
                "procedure": list(proc[0]) if proc else None,
                "edges": [list(e) for e in edges],
            }
            tx.execute(
                "INSERT INTO am_forgotten (memory_id, token, org_id, agent_id, conversation_id,"
                " about, forgotten_at_us, until_us, payload, vector) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    mid,
                    token,
                    *self._scope,
                    mem[4],
                    json.dumps([a[1] for a in about]),
                    at_us,
                    until_us,
                    json.dumps(payload),
                    vec[0][0] if vec else None,
                ),
            )
        self._drop_layer_rows(tx, [mid for mid, _ in chosen])
        tx.delete_labels([label for _, label in chosen])

    def _drop_layer_rows(self, tx: WriteTx, ids: Sequence[str]) -> None:
        for part in _batches(list(ids)):
            ph, args = placeholders(len(part)), list(part)
            for table, col in (
                ("am_memory", "id"),
                ("am_about", "memory_id"),
                ("am_fact", "id"),
                ("am_procedure", "id"),
            ):
                tx.execute(f"DELETE FROM {table} WHERE {col} IN ({ph})", args)
            tx.execute(f"DELETE FROM am_edge WHERE src IN ({ph}) OR dst IN ({ph})", args + args)

    def _drop_references(self, tx: WriteTx, ids: Sequence[str]) -> None:
        """Pins, core marks and every summary made from these memories (a summary's text
        may quote them): for erase, and the purge after an undo window."""
        for part in _batches(list(ids)):
            ph, args = placeholders(len(part)), list(part)
            tx.execute(f"DELETE FROM am_pin WHERE memory_id IN ({ph})", args)
            tx.execute(f"DELETE FROM am_core WHERE memory_id IN ({ph})", args)
            made = f"SELECT summary_id FROM am_summary_source WHERE memory_id IN ({ph})"
            tx.execute(f"DELETE FROM am_summary WHERE id IN ({made})", args)
            tx.execute(f"DELETE FROM am_summary_source WHERE summary_id IN ({made})", args)

    def forgotten(self, token: str, now_us: int) -> list[tuple[str, dict[str, Any], bytes | None]]:
        """(id, payload, vector) of a forget still within its undo window."""
        rows = self._q(
            "SELECT memory_id, payload, vector FROM am_forgotten WHERE token = ? AND org_id = ?"
            " AND agent_id = ? AND until_us > ? ORDER BY memory_id",
            (token, *self._scope, now_us),
        )
        return [(str(r[0]), json.loads(r[1]), r[2]) for r in rows]

    def unforget(
        self, tx: WriteTx, payloads: Sequence[dict[str, Any]], labels: Sequence[int]
    ) -> None:
        """Put the layer's rows of forgotten memories back (their memory rows were just
        re-inserted through ``tx`` under ``labels``) and empty their undo entries."""
        for p, label in zip(payloads, labels, strict=True):
            am = list(p["am_memory"])
            am[1] = label
            tx.execute(f"INSERT INTO am_memory VALUES ({placeholders(len(am))})", am)
            tx.executemany(
                "INSERT OR IGNORE INTO am_about (memory_id, org_id, agent_id, entity, key)"
                " VALUES (?,?,?,?,?)",
                [(am[0], *self._scope, e, k) for e, k in p["about"]],
            )
            for table, row in (("am_fact", p["fact"]), ("am_procedure", p["procedure"])):
                if row is not None:
                    tx.execute(f"INSERT INTO {table} VALUES ({placeholders(len(row))})", row)
            for e in p["edges"]:
                tx.execute(f"INSERT OR IGNORE INTO am_edge VALUES ({placeholders(len(e))})", e)
            tx.execute("DELETE FROM am_forgotten WHERE memory_id = ?", (am[0],))

    def forgotten_select(self, selector: str, value: str) -> list[str]:
        """Ids in the undo area chosen like ``select`` (erase reaches them too)."""
        cond = {
            "id": "memory_id = ?",
            "conversation_id": "conversation_id = ?",
            "about": "EXISTS (SELECT 1 FROM json_each(about) WHERE value = ?)",
        }[selector]
        rows = self._q(
            f"SELECT memory_id FROM am_forgotten WHERE org_id = ? AND agent_id = ? AND {cond}",
            (*self._scope, value),
        )
        return [str(r[0]) for r in rows]

    def purgeable(self, now_us: int) -> list[str]:
        """Ids in the undo area whose window has passed."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT memory_id FROM am_forgotten WHERE org_id = ? AND agent_id = ?"
                " AND until_us <= ? ORDER BY memory_id",
                (*self._scope, now_us),
            )
        ]

    # ------------------------------------------------------------------ erase
    def erase(
        self,
        tx: WriteTx,
        chosen: Sequence[tuple[str, int]],
        forgotten: Sequence[str],
        selector: str,
        at_us: int,
    ) -> None:
        """Delete every row holding these memories, in every table, with their history,
        access log and undo entries; leave a content-free tombstone and a pending purge
        (the archive, the keyword index's segments, the WAL and the HNSW checkpoint are
        cleaned after the commit; ``am_purge`` makes that resumable)."""
        ids = sorted({mid for mid, _ in chosen} | set(forgotten))
        self._drop_layer_rows(tx, ids)
        self._drop_references(tx, ids)
        for part in _batches(ids):
            ph, args = placeholders(len(part)), list(part)
            tx.execute(f"DELETE FROM am_history WHERE target IN ({ph})", args)
            tx.execute(f"DELETE FROM am_access WHERE memory_id IN ({ph})", args)
            tx.execute(f"DELETE FROM am_forgotten WHERE memory_id IN ({ph})", args)
        tx.delete_labels([label for _, label in chosen])
        tx.execute(
            "INSERT INTO am_tombstone (org_id, agent_id, at_us, selector, count, ids)"
            " VALUES (?,?,?,?,?,?)",
            (*self._scope, at_us, selector, len(ids), json.dumps(ids)),
        )
        tx.executemany("INSERT OR IGNORE INTO am_purge (memory_id) VALUES (?)", [(i,) for i in ids])

    def pending_purge(self) -> list[str]:
        """Ids erased whose cleanup after the commit has not finished (any scope)."""
        return [str(r[0]) for r in self._q("SELECT memory_id FROM am_purge ORDER BY memory_id")]

    def clear_purge(self, tx: WriteTx, ids: Sequence[str]) -> None:
        """The cleanup of these erased ids finished."""
        tx.executemany("DELETE FROM am_purge WHERE memory_id = ?", [(i,) for i in ids])

    def tombstones(self) -> list[dict[str, Any]]:
        """What erase removed in this scope: when, by what kind of selector, which ids."""
        return [
            {
                "seq": r[0],
                "at": from_us(r[1]).isoformat(),
                "selector": r[2],
                "count": r[3],
                "ids": json.loads(r[4]),
            }
            for r in self._q(
                "SELECT seq, at_us, selector, count, ids FROM am_tombstone"
                " WHERE org_id = ? AND agent_id = ? ORDER BY seq",
                self._scope,
            )
        ]

    # ------------------------------------------------------------------ archive
    def texts(self, ids: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(id, label, content, metadata JSON) of live, not yet archived memories."""
        out: list[tuple[str, int, str, str]] = []
        for part in _batches(list(ids)):
            out.extend(
                tuple(r)
                for r in self._q(
                    "SELECT m.id, m.label, m.content, m.metadata FROM am_memory a JOIN memory m"
                    f" ON m.label = a.label WHERE a.id IN ({placeholders(len(part))})"
                    " AND +a.org_id = ? AND +a.agent_id = ? AND a.archived_at_us IS NULL"
                    " ORDER BY m.label",
                    (*part, *self._scope),
                )
            )
        return out

    def vector_of(self, label: int) -> bytes | None:
        """The stored float32 vector of a memory row, if it has one."""
        rows = self._q("SELECT embedding FROM memory_vec WHERE label = ?", (label,))
        return bytes(rows[0][0]) if rows else None

    def mark_archived(self, tx: WriteTx, rows: Sequence[tuple[str, int, str]], at_us: int) -> None:
        """The text of (id, label, digest) rows is now in the archive: the memory row keeps
        kind ``archived`` and a pointer instead of it (its vector and keywords stay)."""
        tx.executemany(
            "UPDATE memory SET content = ?, metadata = '{}', kind = 'archived' WHERE label = ?",
            [(f"archived:memory.archive.db/{mid}", label) for mid, label, _ in rows],
        )
        tx.executemany(
            "UPDATE am_memory SET archived_at_us = ?, archive_digest = ? WHERE id = ?"
            " AND archived_at_us IS NULL",
            [(at_us, digest, mid) for mid, _, digest in rows],
        )

    def unarchive(self, tx: WriteTx, mid: str, label: int, content: str, metadata: str) -> None:
        """Put an archived memory's text back into its row."""
        tx.execute(
            "UPDATE memory SET content = ?, metadata = ?, kind = 'granted' WHERE label = ?",
            (content, metadata, label),
        )
        tx.execute(
            "UPDATE am_memory SET archived_at_us = NULL, archive_digest = NULL WHERE id = ?",
            (mid,),
        )

    def all_archived(self) -> dict[str, str]:
        """Every archived id of the data dir (all scopes: the archive file is shared)."""
        return dict(
            self._q("SELECT id, archive_digest FROM am_memory WHERE archived_at_us IS NOT NULL")
        )

    def archived_payload_ids(self) -> set[str]:
        """Ids in the undo area that were archived when forgotten (their text stays in
        the archive until undone or purged)."""
        return {
            str(r[0])
            for r in self._q(
                "SELECT memory_id FROM am_forgotten WHERE json_extract(payload,"
                " '$.am_memory[18]') IS NOT NULL"
            )
        }

    # ------------------------------------------------------------------ consolidation
    def texts_of_type(self, type_: str) -> list[tuple[str, int, str, int, str | None]]:
        """(id, label, content, created_at_us, promoted_to) of live, unarchived memories
        of one type that are not facts, by creation time then id."""
        return [
            tuple(r)
            for r in self._q(
                "SELECT a.id, a.label, m.content, a.created_at_us, a.promoted_to FROM am_memory a"
                " JOIN memory m ON m.label = a.label WHERE a.org_id = ? AND a.agent_id = ?"
                " AND a.type = ? AND a.archived_at_us IS NULL AND a.id NOT IN (SELECT id FROM"
                " am_fact) ORDER BY a.created_at_us, a.id",
                (*self._scope, type_),
            )
        ]

    def about_of(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Entities of each memory (as written)."""
        return self._about(ids)

    def set_promoted(self, tx: WriteTx, ids: Sequence[str], to: str) -> None:
        """These episodes made (or joined) the semantic memory ``to``."""
        tx.executemany("UPDATE am_memory SET promoted_to = ? WHERE id = ?", [(to, i) for i in ids])

    def add_access_counts(self, tx: WriteTx, into: str, from_ids: Sequence[str]) -> None:
        """Fold the access counts of merged twins into the one kept."""
        for part in _batches(list(from_ids)):
            tx.execute(
                "UPDATE am_memory SET access_count = access_count + (SELECT coalesce(sum("
                f"access_count), 0) FROM am_memory WHERE id IN ({placeholders(len(part))}))"
                " WHERE id = ?",
                (*part, into),
            )

    def expired(self, now_us: int) -> list[tuple[str, int]]:
        """(id, label) of memories past their TTL, not yet deleted."""
        return [
            (str(r[0]), int(r[1]))
            for r in self._q(
                "SELECT a.id, a.label FROM am_memory a JOIN memory m ON m.label = a.label"
                " WHERE a.org_id = ? AND a.agent_id = ? AND m.expires_at_us IS NOT NULL"
                " AND m.expires_at_us <= ? ORDER BY a.id",
                (*self._scope, now_us),
            )
        ]

    def orphans(self) -> list[str]:
        """Layer rows whose memory row is gone (deleted through the memory store)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT id FROM am_memory a WHERE org_id = ? AND agent_id = ? AND NOT EXISTS"
                " (SELECT 1 FROM memory m WHERE m.label = a.label)",
                self._scope,
            )
        ]

    def drop(self, tx: WriteTx, chosen: Sequence[tuple[str, int]]) -> None:
        """Delete memories for good (expired, or orphaned), with their layer rows."""
        self._drop_layer_rows(tx, [mid for mid, _ in chosen])
        tx.delete_labels([label for _, label in chosen if label >= 0])

    def schedule_purge(self, tx: WriteTx, ids: Sequence[str]) -> None:
        """Empty undo entries whose window passed, leaving their cleanup pending exactly
        like an erase's (``am_purge``)."""
        tx.executemany("DELETE FROM am_forgotten WHERE memory_id = ?", [(i,) for i in ids])
        self._drop_references(tx, ids)
        tx.executemany("INSERT OR IGNORE INTO am_purge (memory_id) VALUES (?)", [(i,) for i in ids])

    # ------------------------------------------------------------------ adoption
    def unadopted(
        self, limit: int = 5_000, tx: WriteTx | None = None
    ) -> tuple[list[tuple[int, str, str, str, int]], int, int]:
        """Up to ``limit`` (label, id, conversation_id, content, created_at_us) of memory
        rows of this scope without a layer row yet (written by ``SqliteMemoryStore`` or
        the CLI's ``memory append``), above the label adoption last reached; and that
        label, and the largest label in ``memory``."""
        rows = self._q("SELECT value FROM meta WHERE key = ?", (self._adopted_key(),), tx)
        after = int(rows[0][0]) if rows else 0
        top = int(self._q("SELECT max(label) FROM memory", (), tx)[0][0] or 0)
        found = [
            (int(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4]))
            for r in self._q(
                "SELECT m.label, m.id, m.conversation_id, m.content, m.created_at_us"
                " FROM memory m WHERE m.label > ? AND m.org_id = ? AND m.agent_id = ?"
                " AND NOT EXISTS (SELECT 1 FROM am_memory a WHERE a.label = m.label)"
                " ORDER BY m.label LIMIT ?",
                (after, *self._scope, limit),
                tx,
            )
        ]
        return found, after, top

    def adopt(
        self,
        rows: Sequence[tuple[int, str, str, str, int]],
        metas: Sequence[NewMemory],
        reached: int,
    ) -> None:
        """Give memory rows their layer rows (``unadopted``), and remember the label
        adoption reached, so the next open looks only above it. With no rows, only moves
        that mark, after checking under the write lock that nothing below it is left."""
        with self.transaction() as tx:
            if not rows and any(r[0] <= reached for r in self.unadopted(1, tx)[0]):
                return  # a row came in meanwhile: the next open adopts it
            tx.executemany(
                "INSERT OR IGNORE INTO am_memory (id, label, org_id, agent_id, conversation_id,"
                " type, speaker, created_at_us, fingerprint, confidence, importance, salience,"
                " stability, difficulty, last_review_us)"
                " SELECT ?, ?, ?, ?, ?, ?, ?, ?, fingerprint, ?, ?, ?, ?, ?, ? FROM memory"
                " WHERE label = ?",
                [
                    (
                        mid,
                        label,
                        *self._scope,
                        conv,
                        m.type,
                        m.speaker,
                        created,
                        m.confidence,
                        m.importance,
                        m.salience,
                        m.stability,
                        m.difficulty,
                        created,
                        label,
                    )
                    for (label, mid, conv, _, created), m in zip(rows, metas, strict=True)
                ],
            )
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value",
                (self._adopted_key(), str(reached)),
            )

    def _adopted_key(self) -> str:
        return f"agentmem_adopted:{json.dumps(list(self._scope))}"

    # ------------------------------------------------------------------ namespaces
    # A namespace's memories live in their own scope (org, ``namespaces.scope_agent``);
    # these tables say who may use it. They are read by org, whatever this repository's
    # scope is (an agent's own repository manages the namespaces it owns).
    def namespace_owner(self, name: str) -> str | None:
        """The owner of namespace ``name`` of this org, None if there is none."""
        rows = self._q(
            "SELECT owner FROM am_namespace WHERE org_id = ? AND name = ?", (self.org_id, name)
        )
        return str(rows[0][0]) if rows else None

    def create_namespace(self, name: str, owner: str, at_us: int) -> str:
        """Create namespace ``name`` owned by ``owner`` unless it exists; its owner."""
        with self.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO am_namespace (org_id, name, owner, created_at_us)"
                " VALUES (?,?,?,?)",
                (self.org_id, name, owner, at_us),
            )
            return str(
                tx.query(
                    "SELECT owner FROM am_namespace WHERE org_id = ? AND name = ?",
                    (self.org_id, name),
                )[0][0]
            )

    def set_grant(self, name: str, agent_id: str, by: str, at_us: int, granted: bool) -> None:
        """Grant (or revoke) ``agent_id`` the use of namespace ``name``."""
        with self.transaction() as tx:
            if granted:
                tx.execute(
                    "INSERT OR IGNORE INTO am_grant (org_id, namespace, agent_id, granted_by,"
                    " at_us) VALUES (?,?,?,?,?)",
                    (self.org_id, name, agent_id, by, at_us),
                )
            else:
                tx.execute(
                    "DELETE FROM am_grant WHERE org_id = ? AND namespace = ? AND agent_id = ?",
                    (self.org_id, name, agent_id),
                )

    def may_use(self, name: str, agent_id: str) -> bool:
        """Whether ``agent_id`` owns namespace ``name`` or is granted it (one query: the
        check every call of a namespace handle makes)."""
        rows = self._q(
            "SELECT EXISTS (SELECT 1 FROM am_namespace WHERE org_id = ?1 AND name = ?2"
            " AND owner = ?3) OR EXISTS (SELECT 1 FROM am_grant WHERE org_id = ?1"
            " AND namespace = ?2 AND agent_id = ?3)",
            (self.org_id, name, agent_id),
        )
        return bool(rows[0][0])

    def members(self, name: str) -> list[str]:
        """The agents granted namespace ``name`` (its owner not included)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT agent_id FROM am_grant WHERE org_id = ? AND namespace = ?"
                " ORDER BY agent_id",
                (self.org_id, name),
            )
        ]

    def namespaces_of(self, agent_id: str) -> list[tuple[str, str, int]]:
        """(name, owner, created_at_us) of the namespaces ``agent_id`` owns or is granted."""
        return [
            (str(r[0]), str(r[1]), int(r[2]))
            for r in self._q(
                "SELECT name, owner, created_at_us FROM am_namespace WHERE org_id = ?1"
                " AND (owner = ?2 OR name IN (SELECT namespace FROM am_grant WHERE org_id = ?1"
                " AND agent_id = ?2)) ORDER BY name",
                (self.org_id, agent_id),
            )
        ]

    # ------------------------------------------------------------------ pins, core facts
    def set_pin(self, memory_id: str, at_us: int, pinned: bool) -> None:
        """Pin (or unpin) a memory of this scope."""
        with self.transaction() as tx:
            if pinned:
                tx.execute(
                    "INSERT OR IGNORE INTO am_pin (memory_id, org_id, agent_id, at_us)"
                    " VALUES (?,?,?,?)",
                    (memory_id, *self._scope, at_us),
                )
            else:
                tx.execute(
                    "DELETE FROM am_pin WHERE memory_id = ? AND org_id = ? AND agent_id = ?",
                    (memory_id, *self._scope),
                )

    def pinned_labels(self) -> list[int]:
        """Labels of the live pinned memories of this scope, oldest pin first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT a.label FROM am_pin p JOIN am_memory a ON a.id = p.memory_id"
                " WHERE p.org_id = ? AND p.agent_id = ? AND +a.org_id = p.org_id"
                " AND +a.agent_id = p.agent_id ORDER BY p.at_us, p.memory_id",
                self._scope,
            )
        ]

    def set_core(self, ids: Sequence[str], at_us: int, reason: str | None) -> None:
        """Mark semantic memories core (``reason``) or, with None, archival again."""
        with self.transaction() as tx:
            if reason is None:
                tx.executemany(
                    "DELETE FROM am_core WHERE memory_id = ? AND org_id = ? AND agent_id = ?",
                    [(i, *self._scope) for i in ids],
                )
            else:
                tx.executemany(
                    "INSERT OR IGNORE INTO am_core (memory_id, org_id, agent_id, since_us,"
                    " reason) VALUES (?,?,?,?,?)",
                    [(i, *self._scope, at_us, reason) for i in ids],
                )

    def core_labels(self) -> list[int]:
        """Labels of the live core memories of this scope (current facts only: a
        superseded or retracted fact is history), oldest first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT a.label FROM am_core c JOIN am_memory a ON a.id = c.memory_id"
                " WHERE c.org_id = ? AND c.agent_id = ? AND +a.org_id = c.org_id"
                " AND +a.agent_id = c.agent_id AND a.archived_at_us IS NULL"
                " AND a.id NOT IN (SELECT id FROM am_fact WHERE valid_to_us IS NOT NULL)"
                " ORDER BY c.since_us, c.memory_id",
                self._scope,
            )
        ]

    def core_candidates(self, min_accesses: int) -> list[str]:
        """Archival semantic memories of this scope accessed at least ``min_accesses``
        times (promotion to core)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT id FROM am_memory WHERE org_id = ? AND agent_id = ? AND type = 'semantic'"
                " AND access_count >= ? AND archived_at_us IS NULL"
                " AND id NOT IN (SELECT memory_id FROM am_core)"
                " AND id NOT IN (SELECT id FROM am_fact WHERE valid_to_us IS NOT NULL)"
                " ORDER BY id",
                (*self._scope, min_accesses),
            )
        ]

    def core_idle(self, before_us: int) -> list[str]:
        """Core memories promoted by access whose last access (or promotion) is older
        than ``before_us``, or that are no longer current (demotion)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT c.memory_id FROM am_core c LEFT JOIN am_memory a ON a.id = c.memory_id"
                " WHERE c.org_id = ? AND c.agent_id = ? AND (a.id IS NULL"
                " OR a.archived_at_us IS NOT NULL"
                " OR c.memory_id IN (SELECT id FROM am_fact WHERE valid_to_us IS NOT NULL)"
                " OR (c.reason = 'accessed'"
                " AND max(coalesce(a.last_access_us, 0), c.since_us) < ?))"
                " ORDER BY c.memory_id",
                (*self._scope, before_us),
            )
        ]

    # ------------------------------------------------------------------ hot and warm tiers
    def last_turns(self, conversation_id: str, n: int) -> list[int]:
        """Labels of the last ``n`` turns (episodic memories) of a conversation, oldest
        first (one backwards range of the conversation index)."""
        rows = self._q(
            "SELECT label FROM am_memory WHERE org_id = ? AND agent_id = ?"
            " AND conversation_id = ? AND +type = 'episodic'"
            " ORDER BY created_at_us DESC, label DESC LIMIT ?",
            (*self._scope, conversation_id, n),
        )
        return [int(r[0]) for r in reversed(rows)]

    def latest_tool_turn(self, conversation_id: str) -> int | None:
        """Label of a conversation's newest live turn of role ``tool``, if any (walks the
        conversation backwards from its end to that turn)."""
        rows = self._q(
            "SELECT a.label FROM am_memory a JOIN memory m ON m.label = a.label"
            " WHERE a.org_id = ? AND a.agent_id = ? AND a.conversation_id = ?"
            " AND +a.type = 'episodic' AND m.role = 'tool'"
            " ORDER BY a.created_at_us DESC, a.label DESC LIMIT 1",
            (*self._scope, conversation_id),
        )
        return int(rows[0][0]) if rows else None

    def turns_before(self, conversation_id: str, label: int | None) -> list[tuple[int, str]]:
        """(label, id) of a conversation's turns before the turn ``label`` (all of them
        with None), oldest first: what warm summaries cover."""
        params: tuple[int, ...] = ()
        cond = ""
        if label is not None:
            cond = (
                " AND (created_at_us, label) < (SELECT created_at_us, label FROM am_memory"
                " WHERE label = ?)"
            )
            params = (label,)
        rows = self._q(
            "SELECT label, id FROM am_memory WHERE org_id = ? AND agent_id = ?"
            f" AND conversation_id = ? AND +type = 'episodic'{cond}"
            " ORDER BY created_at_us, label",
            (*self._scope, conversation_id, *params),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def put_summary(
        self,
        summary_id: str,
        conversation_id: str,
        text: str | None,
        sources: Sequence[str],
        at_us: int,
        expires_us: int,
    ) -> None:
        """Store a warm summary of a conversation, replacing its previous ones."""
        with self.transaction() as tx:
            old = (
                "SELECT id FROM am_summary WHERE org_id = ? AND agent_id = ?"
                " AND conversation_id = ?"
            )
            args = (*self._scope, conversation_id)
            tx.execute(f"DELETE FROM am_summary_source WHERE summary_id IN ({old})", args)
            tx.execute(f"DELETE FROM am_summary WHERE id IN ({old})", args)
            tx.execute(
                "INSERT INTO am_summary (id, org_id, agent_id, conversation_id, text,"
                " created_at_us, expires_at_us) VALUES (?,?,?,?,?,?,?)",
                (summary_id, *args, text, at_us, expires_us),
            )
            tx.executemany(
                "INSERT INTO am_summary_source (summary_id, memory_id, position) VALUES (?,?,?)",
                [(summary_id, mid, i) for i, mid in enumerate(sources)],
            )

    def summary(self, conversation_id: str, now_us: int) -> tuple[str | None, list[int]] | None:
        """The live warm summary of a conversation: its text (None: extractive) and the
        labels of its sources, in order. None if there is none, it expired, or one of its
        sources is no longer live (forgotten: its text must not come back through it)."""
        rows = self._q(
            "SELECT id, text FROM am_summary WHERE org_id = ? AND agent_id = ?"
            " AND conversation_id = ? AND expires_at_us > ? ORDER BY created_at_us DESC LIMIT 1",
            (*self._scope, conversation_id, now_us),
        )
        if not rows:
            return None
        sid, text = rows[0]
        srcs = self._q(
            "SELECT s.memory_id, a.label FROM am_summary_source s LEFT JOIN am_memory a"
            " ON a.id = s.memory_id AND +a.org_id = ? AND +a.agent_id = ?"
            " WHERE s.summary_id = ? ORDER BY s.position",
            (*self._scope, sid),
        )
        if any(r[1] is None for r in srcs):
            return None
        return (None if text is None else str(text)), [int(r[1]) for r in srcs]

    def evict_summaries(self, now_us: int) -> int:
        """Delete the warm summaries of this scope past their TTL; how many."""
        with self.transaction() as tx:
            old = (
                "SELECT id FROM am_summary WHERE org_id = ? AND agent_id = ? AND expires_at_us <= ?"
            )
            args = (*self._scope, now_us)
            n = len(tx.query(old, args))
            tx.execute(f"DELETE FROM am_summary_source WHERE summary_id IN ({old})", args)
            tx.execute(f"DELETE FROM am_summary WHERE id IN ({old})", args)
            return n

    def vectors_of(self, labels: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """(labels, float32 vector bytes) of those of ``labels`` that hold a vector."""
        rows = self._each("SELECT label, embedding FROM memory_vec WHERE label IN ({in})", labels)
        return [int(r[0]) for r in rows], [bytes(r[1]) for r in rows]

    def all_procedures(self) -> list[Procedure]:
        """Every procedure of this scope, by id."""
        return [
            Procedure(*r)
            for r in self._q(
                f"SELECT {self._PROC} FROM am_procedure WHERE org_id = ? AND agent_id = ?"
                " ORDER BY id",
                self._scope,
            )
        ]

    def set_outcomes(self, pid: str, successes: int, failures: int, at_us: int) -> None:
        """Set a procedure's outcome counts (a session inheriting them)."""
        with self.transaction() as tx:
            tx.execute(
                "UPDATE am_procedure SET successes = ?, failures = ?, updated_at_us = ?"
                " WHERE id = ? AND org_id = ? AND agent_id = ?",
                (successes, failures, at_us, pid, *self._scope),
            )

    # ------------------------------------------------------------------ sessions
    def session(self, name: str) -> tuple[list[str], int] | None:
        """(inherits, created_at_us) of a session of this scope."""
        rows = self._q(
            "SELECT inherits, created_at_us FROM am_session WHERE org_id = ? AND agent_id = ?"
            " AND name = ?",
            (*self._scope, name),
        )
        return (list(json.loads(rows[0][0])), int(rows[0][1])) if rows else None

    def put_session(self, name: str, inherits: Sequence[str], at_us: int) -> bool:
        """Record a session; False if it existed already (then nothing changes)."""
        with self.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO am_session (org_id, agent_id, name, inherits,"
                " created_at_us) VALUES (?,?,?,?,?)",
                (*self._scope, name, json.dumps(list(inherits)), at_us),
            )
            return bool(tx.query("SELECT changes()")[0][0])

    # ------------------------------------------------------------------ recall signals
    def turn_places(self, labels: Sequence[int]) -> list[tuple[int, str, int]]:
        """(label, conversation_id, created_at_us) of the episodic memories among
        ``labels`` (for ``turn_neighbours``)."""
        if not labels:
            return []
        return [
            (int(r[0]), str(r[1]), int(r[2]))
            for r in self._q(
                "SELECT label, conversation_id, created_at_us FROM am_memory WHERE label IN"
                f" ({placeholders(len(labels))}) AND +org_id = ? AND +agent_id = ?"
                " AND +type = 'episodic'",
                (*labels, *self._scope),
            )
        ]

    def turn_neighbours(
        self, places: Sequence[tuple[int, str, int]], window: int
    ) -> dict[int, list[tuple[int, int]]]:
        """For each episodic memory at ``places`` (``turn_places``): (label, distance) of
        the turns up to ``window`` before and after it in its conversation (the implicit
        temporal edges).

        One query whatever the number of places (one ``UNION ALL`` of index range scans,
        ``LIMIT window`` each), instead of a round trip per seed.
        """
        if not places:
            return {}
        parts: list[str] = []
        params: list[Any] = []
        for label, conv, at in places:
            for op, order in (("<", "DESC"), (">", "ASC")):
                parts.append(
                    f"SELECT * FROM (SELECT {int(label)}, label, {1 if op == '<' else 0}"
                    " FROM am_memory WHERE org_id = ? AND agent_id = ? AND conversation_id = ?"
                    # A row value, not "a < ? OR (a = ? AND b < ?)": SQLite turns it into
                    # a range of the conversation index instead of walking the conversation.
                    f" AND (created_at_us, label) {op} (?, ?)"
                    # +type: the conversation index, never the (org, agent, type) one that
                    # walks every episodic memory of the scope
                    f" AND +type = 'episodic' ORDER BY created_at_us {order}, label {order}"
                    " LIMIT ?)"
                )
                params.extend((*self._scope, conv, at, label, window))
        out: dict[int, list[tuple[int, int]]] = {int(p[0]): [] for p in places}
        distance: dict[tuple[int, int], int] = {}
        for seed, other, before in self._q(" UNION ALL ".join(parts), params):
            key = (int(seed), int(before))
            distance[key] = distance.get(key, 0) + 1  # rows come nearest first per side
            out[int(seed)].append((int(other), distance[key]))
        return out

    def known_entities(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` are entities some memory of this scope is about."""
        sql = (
            "SELECT DISTINCT key FROM am_about WHERE key IN ({in}) AND org_id = ? AND agent_id = ?"
        )
        return {str(r[0]) for r in self._each(sql, keys, self._scope)}

    def labels_about(self, labels: Sequence[int], keys: Sequence[str]) -> set[int]:
        """Which of ``labels`` are about any of the entity ``keys``."""
        out: set[int] = set()
        if not keys:
            return out
        for part in _batches(list(labels)):
            out.update(
                int(r[0])
                for r in self._q(
                    "SELECT DISTINCT a.label FROM am_memory a JOIN am_about b ON b.memory_id"
                    f" = a.id WHERE a.label IN ({placeholders(len(part))})"
                    f" AND b.key IN ({placeholders(len(keys))})",
                    (*part, *keys),
                )
            )
        return out

    def access_times(self, labels: Sequence[int]) -> dict[int, list[int]]:
        """The logged access times (µs) of each label that has any."""
        out: dict[int, list[int]] = {}
        sql = (
            "SELECT a.label, x.at_us FROM am_memory a JOIN am_access x ON x.memory_id = a.id"
            " WHERE a.label IN ({in}) AND a.access_count > 0"
        )
        for label, at in self._each(sql, labels):
            out.setdefault(int(label), []).append(int(at))
        return out

    # ------------------------------------------------------------------ listing
    def page(
        self,
        f: Filter,
        *,
        kind: str | None,
        conversation_id: str | None,
        archived_only: bool,
        limit: int,
        offset: int,
    ) -> list[Row]:
        """One page of this scope's live, unexpired memories that pass ``f`` (and
        ``kind``, ``conversation_id``; only archived ones with ``archived_only``), newest
        first (the label breaks ties: the order of one batch). Forgotten and erased
        memories have no ``am_memory`` row, so they never appear."""
        where, params = self._filter_sql(f)
        extra: list[str] = []
        if kind is not None:
            extra.append(" AND m.kind = ?")
            params.append(kind)
        if conversation_id is not None:
            extra.append(" AND a.conversation_id = ?")
            params.append(conversation_id)
        if archived_only:
            extra.append(" AND a.archived_at_us IS NOT NULL")
        rows = self._q(
            f"SELECT {_READ} FROM am_memory a JOIN memory m ON m.label = a.label"
            " WHERE a.org_id = ? AND a.agent_id = ? AND +m.org_id = ? AND +m.agent_id = ?"
            f" AND (m.expires_at_us IS NULL OR m.expires_at_us > ?) AND {where}{''.join(extra)}"
            " ORDER BY a.created_at_us DESC, a.label DESC LIMIT ? OFFSET ?",
            (*self._scope, *self._scope, f.now_us, *params, limit, offset),
        )
        about = self._about([r[1] for r in rows])
        return [Row(r[0], self._memory(r, about.get(r[1], ())), r[18]) for r in rows]


__all__ = ["Candidate", "Filter", "NewMemory", "Row", "SCHEMA_VERSION", "SqliteRepository"]
