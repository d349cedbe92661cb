"""The agent-memory repository's core on PostgreSQL: its scope, the schema, inserts, decay
and access, and selection (the same methods as ``sqlite.core.RepositoryCore``; its reads
are ``reads``), over the tables of ``postgres.schema``. A memory's speaker and entities
are sealed (``codec.LayerCodec``) and every lookup by an entity key goes through its
blinded form; what a caller gets back is exactly what the SQLite repository returns, so
the layer above (``AgentMemory``) runs unchanged on either.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ...memory.postgres.tx import PgWriteTx
from ...memory.postgres.write import Batch
from ..fsrs import text_salience
from ..rows import NewMemory
from . import schema
from .codec import LayerCodec

if TYPE_CHECKING:
    from ...memory.postgres.store import PgMemoryStore
    from ..seam import LayerTx, PreparedRows

# The memory row's columns ``RowCodec.open`` reads, then the layer's, as ``_memory``
# reads them: [0..7] the sealed memory row, [8] type, [9] speaker (sealed),
# [10] confidence, [11] importance, [12] salience, [13] stability, [14] difficulty,
# [15] last review, [16] access count, [17] archived at, [18] archive digest.
READ_COLUMNS = (
    "m.label, m.id, m.org_id, m.agent_id, m.conversation_id, m.created_at_us,"
    " m.expires_at_us, m.sealed, m.type, m.speaker, m.confidence, m.importance, m.salience,"
    " m.stability, m.difficulty, coalesce(m.last_review_us, m.created_at_us),"
    " m.access_count, m.archived_at_us, m.archive_digest"
)
MEMORY_COLUMNS = (
    "m.label, m.id, m.org_id, m.agent_id, m.conversation_id, m.created_at_us,"
    " m.expires_at_us, m.sealed"
)  # what ``RowCodec.open`` reads
_SEQ = itertools.count(1)


def unrepeated_seq() -> int:
    """A value no earlier call returned: what stands in for a change feed's seq on
    PostgreSQL (many writers, no feed), so a hot-tier cache is never trusted past one
    call (``context.HotTier``; the hot turns are read again)."""
    return -next(_SEQ)


NOTE_LOCK = 0x617A_6E74  # "aznt": one (scope, text fingerprint): remember's duplicate check


class PgRepositoryCore:
    """The agent-memory tables of one (org, agent) scope in a PostgreSQL store."""

    def __init__(self, store: PgMemoryStore, org_id: str, agent_id: str) -> None:
        self._store = store
        self.org_id = org_id
        self.agent_id = agent_id
        self._scope = (org_id, agent_id)
        self.codec = LayerCodec(store.keys, org_id, agent_id, on_fail=store.check_key_version)
        self._rows = store.row_codec

    # ------------------------------------------------------------------ schema
    def migrate(self) -> None:
        """Create or upgrade the layer's tables (``postgres.schema.migrate``)."""
        schema.migrate(self._store.connection())

    def feed_seq(self, tx: LayerTx) -> int:
        """A value no earlier call returned: PostgreSQL has many writers and no change
        feed, so a handle's hot-tier cache is never trusted past one call (the hot turns
        are read again; ``context.HotTier``)."""
        return unrepeated_seq()

    def transaction(self) -> AbstractContextManager[PgWriteTx]:
        """The memory store's write transaction (a ``PgWriteTx`` context manager)."""
        return self._store.transaction()

    def _q(self, sql: str, params: Sequence[Any] = (), tx: LayerTx | None = None) -> list[Any]:
        # Inside a write transaction, reads go through it and see its writes.
        if tx is not None:
            return tx.query(sql, params)
        return self._store.query(sql, params)

    def _blind(self, keys: Sequence[str]) -> list[str]:
        return [self.codec.blind(k) for k in keys]

    def _lock(self, tx: LayerTx, cls: int, *keys: str) -> None:
        """Serialise writers of one (scope, ``keys``) until ``tx`` ends, where SQLite's
        one writer lock did: a read-then-write that must not run twice at once. Blinded
        keys only: the lock's argument is visible to the server (pg_locks). A hash
        collision only makes two keys wait for each other."""
        ident = json.dumps([*self._scope, *self._blind(keys)], separators=(",", ":"))
        tx.execute(f"SELECT pg_advisory_xact_lock({cls}, hashtext(%s))", (ident,))

    def _speaker(self, mid: str, blob: Any) -> str | None:
        return None if blob is None else str(self.codec.open("az_memory.speaker", mid, blob))

    # ------------------------------------------------------------------ inserts
    def insert(
        self, tx: LayerTx, prepared: PreparedRows, metas: Sequence[NewMemory]
    ) -> list[tuple[str, int]]:
        """Insert memory rows with the layer's columns through ``tx`` (``metas`` in the
        order of ``prepared``'s entries); the (id, label) of the rows written."""
        # The seam's transaction and rows are this backend's (its store made both).
        assert isinstance(tx, PgWriteTx) and isinstance(prepared, Batch), "a PostgreSQL store's"
        written = tx.insert(prepared)
        if not written:
            return written
        by_id = dict(zip(prepared.ids, metas, strict=True))
        cols: list[list[Any]] = [[] for _ in range(8)]
        about: list[tuple[Any, ...]] = []
        for mid, _ in written:
            m = by_id[mid]
            for col, v in zip(
                cols,
                (
                    mid,
                    m.type,
                    None
                    if m.speaker is None
                    else self.codec.seal("az_memory.speaker", mid, m.speaker),
                    None if m.speaker_key is None else self.codec.blind(m.speaker_key),
                    m.confidence,
                    m.importance,
                    m.stability,
                    m.difficulty,
                ),
                strict=True,
            ):
                col.append(v)
            about.extend(
                (mid, *self._scope, self.codec.seal("az_am_about", mid, n), self.codec.blind(k))
                for n, k in m.about
            )
        tx.execute(
            "UPDATE az_memory m SET type = t.ty, speaker = t.sp, speaker_key = t.sk,"
            " confidence = t.c, importance = t.i, stability = t.s, difficulty = t.d"
            " FROM unnest(%s::text[], %s::text[], %s::bytea[], %s::text[],"
            " %s::float8[], %s::float8[], %s::float8[], %s::float8[])"
            " AS t(id, ty, sp, sk, c, i, s, d) WHERE m.id = t.id",
            cols,
        )
        tx.executemany(
            "INSERT INTO az_am_about (memory_id, org_id, agent_id, entity, key)"
            " VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
            about,
        )
        self._add_speakers(tx, {m.speaker_key for m in metas if m.speaker_key})
        return written

    def _add_speakers(self, tx: LayerTx, keys: set[str]) -> None:
        """Note speakers of this scope (once each: the entity signal's list of them)."""
        if keys:
            tx.execute(
                "INSERT INTO az_am_speaker (org_id, agent_id, key)"
                " SELECT %s, %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                (*self._scope, sorted(self._blind(sorted(keys)))),
            )

    def find_duplicate(self, fingerprint: str, type_: str, tx: LayerTx | None = None) -> str | None:
        """The id of a memory of this type with the same text fingerprint, if any. Inside
        ``tx``, writers of the same text wait for each other first: two ``remember``
        calls of one note then store it once (the second finds the first's)."""
        if tx is not None:
            self._lock(tx, NOTE_LOCK, fingerprint, type_)
        notes = " AND type <> 'episodic'" if type_ != "episodic" else ""
        rows = self._q(
            "SELECT id FROM az_memory WHERE org_id = %s AND agent_id = %s AND fingerprint = %s"
            f" AND type = %s{notes} ORDER BY created_at_us, id LIMIT 1",
            (*self._scope, self.codec.fingerprint(fingerprint), type_),
            tx,
        )
        return str(rows[0][0]) if rows else None

    # ------------------------------------------------------------------ decay, access
    def log_access(self, tx: LayerTx, accesses: Sequence[tuple[str, int]]) -> None:
        """Append (memory id, time) accesses and bump each memory's counters."""
        if not accesses:
            return
        ids, times = [a[0] for a in accesses], [a[1] for a in accesses]
        tx.execute(
            "INSERT INTO az_am_access (memory_id, at_us)"
            " SELECT * FROM unnest(%s::text[], %s::bigint[])",
            (ids, times),
        )
        tx.execute(
            "UPDATE az_memory m SET access_count = access_count + t.n,"
            " last_access_us = greatest(coalesce(last_access_us, 0), t.at)"
            " FROM (SELECT id, count(*) AS n, max(at) AS at FROM unnest(%s::text[],"
            " %s::bigint[]) AS u(id, at) GROUP BY id) t WHERE m.id = t.id",
            (ids, times),
        )

    def accesses(self, memory_id: str) -> list[int]:
        """Times (µs) a recall returned this memory, oldest first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT at_us FROM az_am_access WHERE memory_id = %s ORDER BY at_us",
                (memory_id,),
            )
        ]

    def set_review(
        self, tx: LayerTx, memory_id: str, stability: float, difficulty: float, at_us: int
    ) -> None:
        """Store a memory's FSRS state after feedback."""
        tx.execute(
            "UPDATE az_memory SET stability = %s, difficulty = %s, last_review_us = %s"
            " WHERE id = %s",
            (stability, difficulty, at_us, memory_id),
        )

    def decay_rows(
        self,
    ) -> list[tuple[str, int, str, float, float | None, int, float | None, float, int | None]]:
        """(id, label, type, stability, salience, last_review_us, retrievability,
        importance, archived_at_us) of every memory in scope, by id."""
        return [
            tuple(r)
            for r in self._q(
                "SELECT id, label, type, stability, salience, last_review_us, retrievability,"
                " importance, archived_at_us FROM az_am_memory WHERE org_id = %s"
                " AND agent_id = %s ORDER BY id",
                self._scope,
            )
        ]

    def missing_salience(
        self, ids: Sequence[str] | None = None, tx: LayerTx | None = None
    ) -> dict[str, float]:
        """The salience of memories that have none stored yet (of ``ids``, or of the
        whole scope), computed from their text, by id."""
        sql = (
            f"SELECT {MEMORY_COLUMNS}, m.importance FROM az_memory m WHERE m.org_id = %s"
            " AND m.agent_id = %s AND m.type IS NOT NULL AND m.salience IS NULL"
            " AND m.archived_at_us IS NULL"
        )
        if ids is None:
            rows = self._q(sql, self._scope, tx)
        else:
            rows = self._q(f"{sql} AND m.id = ANY(%s)", (*self._scope, list(ids)), tx)
        return {str(r[1]): text_salience(self._rows.open(r[:8]).content, float(r[8])) for r in rows}

    def fill_salience(self, tx: LayerTx, ids: Sequence[str] | None = None) -> dict[str, float]:
        """Compute and store the salience of memories that have none yet."""
        filled = self.missing_salience(ids, tx)
        if filled:
            tx.execute(
                "UPDATE az_memory m SET salience = t.v FROM unnest(%s::text[], %s::float8[])"
                " AS t(id, v) WHERE m.id = t.id",
                (list(filled), list(filled.values())),
            )
        return filled

    def live_texts(self) -> list[tuple[str, str, int, int | None, int, float, float]]:
        """(id, content, created_at_us, last_access_us, access_count, salience,
        importance) of every live, unarchived memory of the scope, by id."""
        out = []
        for r in self._q(
            f"SELECT {MEMORY_COLUMNS}, m.last_access_us, m.access_count, m.salience,"
            " m.importance FROM az_memory m WHERE m.org_id = %s AND m.agent_id = %s"
            " AND m.type IS NOT NULL AND m.archived_at_us IS NULL ORDER BY m.id",
            self._scope,
        ):
            text = self._rows.open(r[:8]).content
            sal = r[10] if r[10] is not None else text_salience(text, r[11])
            out.append((str(r[1]), text, int(r[5]), r[8], int(r[9]), float(sal), float(r[11])))
        return out

    def set_retrievability(self, tx: LayerTx, values: Sequence[tuple[float, str]]) -> None:
        """Store each (R, id) snapshot."""
        if values:
            tx.execute(
                "UPDATE az_memory m SET retrievability = t.r FROM unnest(%s::float8[],"
                " %s::text[]) AS t(r, id) WHERE m.id = t.id",
                ([v[0] for v in values], [v[1] for v in values]),
            )

    # ------------------------------------------------------------------ selection
    def select(self, selector: str, value: str) -> list[tuple[str, int]]:
        """(id, label) of this scope's memories chosen by ``id``, ``conversation_id`` or
        ``about`` (an entity key), archived ones included."""
        if selector == "about":
            key = self.codec.blind(value)
            cond = (
                "(speaker_key = %s OR id IN (SELECT memory_id FROM az_am_about"
                " WHERE org_id = %s AND agent_id = %s AND key = %s))"
            )
            extra: tuple[Any, ...] = (key, *self._scope, key)
        else:
            cond = {"id": "id = %s", "conversation_id": "conversation_id = %s"}[selector]
            extra = (value,)
        rows = self._q(
            f"SELECT id, label FROM az_am_memory WHERE org_id = %s AND agent_id = %s"
            f" AND {cond} ORDER BY id",
            (*self._scope, *extra),
        )
        return [(str(r[0]), int(r[1])) for r in rows]


__all__ = ["MEMORY_COLUMNS", "PgRepositoryCore", "READ_COLUMNS"]
