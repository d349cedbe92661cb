"""The agent-memory repository's core: its records, its scope, the schema, inserts,
decay and access, and selection (``repository`` assembles the whole repository from this
and the classes built on it: ``sqlite.reads``, ``sqlite.beliefs``, ``sqlite.lifecycle``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...memory.sqlite.rows import placeholders
from ...memory.sqlite.write import ExtraColumns, Prepared
from ..fsrs import text_salience
from ..records import Memory
from .schema import MIGRATIONS, SCHEMA_KEY, migrate_chain

if TYPE_CHECKING:
    from ...memory.postgres.write import Batch
    from ...memory.sqlite.store import SqliteMemoryStore
    from ...memory.sqlite.tx import WriteTx

# memory columns, then the layer's, as ``_memory`` reads them
READ_COLUMNS = (
    "m.label, m.id, m.role, m.content, m.created_at_us, m.conversation_id, m.expires_at_us,"
    " m.metadata, a.type, a.speaker, a.confidence, a.importance, a.salience, a.stability,"
    " a.difficulty, a.last_review_us, a.access_count, a.archived_at_us, a.archive_digest,"
    " a.speaker_key, m.kind"
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

    def _each(
        self,
        sql: str,
        values: Sequence[Any],
        after: Sequence[Any] = (),
        tx: WriteTx | None = None,
    ) -> list[Any]:
        """The rows of ``sql`` (its ``{in}`` a placeholder list) over ``values`` in
        batches below SQLite's bound-variable limit; ``after``: parameters that follow."""
        rows: list[Any] = []
        for part in batches(list(values)):
            sql_part = sql.format(**{"in": placeholders(len(part))})
            rows.extend(self._q(sql_part, (*part, *after), tx))
        return rows

    def _q(self, sql: str, params: Sequence[Any] = (), tx: WriteTx | None = None) -> list[Any]:
        # Inside a write transaction, reads go through it: they see its writes, and no
        # other writer can change what they saw before it commits.
        if tx is not None:
            return tx.query(sql, params)
        return self._store.database.query(sql, params)

    # ------------------------------------------------------------------ inserts
    def insert(
        self, tx: WriteTx, prepared: Prepared | Batch, metas: Sequence[NewMemory]
    ) -> list[tuple[str, int]]:
        """Insert memory rows with the layer's columns through ``tx``: ``metas`` in the
        order of ``prepared``'s entries. Returns the (id, label) of the rows written (an
        identical re-send is not). One INSERT per table: the memory row carries the
        layer's columns; only entities other than the speaker get ``am_about`` rows, and
        each speaker new to the scope one ``am_speaker`` row."""
        assert isinstance(prepared, Prepared), "prepared by the SQLite store"
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
