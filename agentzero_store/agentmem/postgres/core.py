"""The agent-memory repository on PostgreSQL: its core and its reads.

The same methods as ``sqlite.core.RepositoryCore`` and ``sqlite.reads.ReadRows`` (the SQLite
repository), over the tables of ``postgres.schema``: a memory's text is opened from its
sealed ``az_memory`` row on the client (``pg.rows.RowCodec``), its speaker and entities
from their sealed spellings (``codec.LayerCodec``), and every lookup by an entity key
goes through its blinded form. What a caller gets back is exactly what the SQLite
repository returns, so the layer above (``AgentMemory``) runs unchanged on either.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.postgres.write import Batch
from ...memory.records import Scope, from_us
from ..fsrs import text_salience
from ..records import Memory, entity_key
from ..sqlite.core import Candidate, Filter, NewMemory, Row, entities
from . import schema
from .codec import LayerCodec

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ...memory.postgres.store import PgMemoryStore
    from ...memory.postgres.tx import PgWriteTx
    from ...memory.sqlite.write import Prepared

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

    def feed_seq(self, tx: PgWriteTx) -> int:
        """A value no earlier call returned: PostgreSQL has many writers and no change
        feed, so a handle's hot-tier cache is never trusted past one call (the hot turns
        are read again; ``context.HotTier``)."""
        return unrepeated_seq()

    def transaction(self) -> Any:
        """The memory store's write transaction (a ``PgWriteTx`` context manager)."""
        return self._store.transaction()

    def _q(self, sql: str, params: Sequence[Any] = (), tx: PgWriteTx | None = None) -> list[Any]:
        # Inside a write transaction, reads go through it and see its writes.
        if tx is not None:
            return tx.query(sql, params)
        return self._store.query(sql, params)

    def _blind(self, keys: Sequence[str]) -> list[str]:
        return [self.codec.blind(k) for k in keys]

    def _lock(self, tx: PgWriteTx, cls: int, *keys: str) -> None:
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
        self, tx: PgWriteTx, prepared: Batch | Prepared, metas: Sequence[NewMemory]
    ) -> list[tuple[str, int]]:
        """Insert memory rows with the layer's columns through ``tx`` (``metas`` in the
        order of ``prepared``'s entries); the (id, label) of the rows written."""
        assert isinstance(prepared, Batch), "prepared by the PostgreSQL store"
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

    def _add_speakers(self, tx: PgWriteTx, keys: set[str]) -> None:
        """Note speakers of this scope (once each: the entity signal's list of them)."""
        if keys:
            tx.execute(
                "INSERT INTO az_am_speaker (org_id, agent_id, key)"
                " SELECT %s, %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                (*self._scope, sorted(self._blind(sorted(keys)))),
            )

    def find_duplicate(
        self, fingerprint: str, type_: str, tx: PgWriteTx | None = None
    ) -> str | None:
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
    def log_access(self, tx: PgWriteTx, accesses: Sequence[tuple[str, int]]) -> None:
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
        self, tx: PgWriteTx, memory_id: str, stability: float, difficulty: float, at_us: int
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
        self, ids: Sequence[str] | None = None, tx: PgWriteTx | None = None
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

    def fill_salience(self, tx: PgWriteTx, ids: Sequence[str] | None = None) -> dict[str, float]:
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

    def set_retrievability(self, tx: PgWriteTx, values: Sequence[tuple[float, str]]) -> None:
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

    def sources_of(
        self, ids: Sequence[str], tx: PgWriteTx | None = None
    ) -> dict[str, tuple[str, ...]]:
        """The sources of each of ``ids`` that is derived (``az_am_source``), in id order."""
        out: dict[str, list[str]] = {}
        if ids:
            for mid, src in self._q(
                "SELECT memory_id, source_id FROM az_am_source WHERE memory_id = ANY(%s)"
                ' AND org_id = %s AND agent_id = %s ORDER BY memory_id COLLATE "C",'
                ' source_id COLLATE "C"',
                (list(ids), *self._scope),
                tx,
            ):
                out.setdefault(str(mid), []).append(str(src))
        return {k: tuple(v) for k, v in out.items()}

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


__all__ = ["MEMORY_COLUMNS", "PgRepositoryCore", "READ_COLUMNS"]
