"""The agent memory of a data dir in and out of the plain form (``transfer``).

Reading: the layer's columns of the ``memory`` rows, ``am_*`` tables and the archived
texts of ``memory.archive.db`` (each checked against the digest ``memory.db`` recorded,
``Archive.get``: a missing or damaged archive stops the move, it is never copied as
empty). Writing: the statements the repository's own writes use, each one idempotent
(``INSERT OR IGNORE``, an upsert, or set-to-the-same-values), so a move run again after
a crash doubles nothing. An archived memory's text goes into the archive file first and
its row is marked after, the order ``Lifecycle.archive`` keeps: a crash between leaves a
spare copy (written again by the next run), never a row pointing at no text.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ...memory.records import text_fingerprint
from ...memory.sqlite.rows import placeholders
from ..transfer.plain import (
    COLUMNS,
    STATE_COLUMNS,
    FactState,
    GrantState,
    HistoryState,
    MemoryState,
    Namespaces,
    NamespaceState,
    ProcedureState,
    ScopeRows,
    SummaryState,
    canonical,
    column_values,
    memory_state,
    scope_rows,
)
from ..transfer.side import (
    CLEAR_KINDS,
    GRANT_COLUMNS,
    NAMESPACE_COLUMNS,
    clear_tables,
    namespace_tables,
)
from .archive import Archive, text_digest
from .repository import SqliteRepository
from .schema import SCHEMA_KEY
from .side import SqliteSide

if TYPE_CHECKING:
    from ...memory.sqlite.store import SqliteMemoryStore

_LIVE = "(expires_at_us IS NULL OR expires_at_us > ?)"
_SCOPED_TABLES = (
    "am_fact",
    "am_procedure",
    "am_edge",
    "am_history",
    "am_tombstone",
    "am_pin",
    "am_core",
    "am_summary",
    "am_session",
    "am_source",
)


def _live(column: str) -> str:
    """The memory ``column`` names is live (one lookup of the id index; one ``?``)."""
    return (
        f"EXISTS (SELECT 1 FROM memory m WHERE m.id = {column}"
        " AND (m.expires_at_us IS NULL OR m.expires_at_us > ?))"
    )


def _parts(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SqliteLayer:
    """The agent memory of one data dir, as ``transfer.LayerTransfer``."""

    def __init__(self, store: SqliteMemoryStore) -> None:
        self._store = store
        self._archive: Archive | None = None

    def __repr__(self) -> str:
        return f"SqliteLayer({self._store!r})"

    def _q(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._store.database.query(sql, params)

    def _each(self, sql: str, values: Sequence[Any], after: Sequence[Any] = ()) -> list[Any]:
        """``sql`` (its ``{in}`` a placeholder list) over ``values`` in batches."""
        out: list[Any] = []
        for part in _parts(list(values)):
            out += self._q(sql.format(**{"in": placeholders(len(part))}), (*part, *after))
        return out

    def _tables(self) -> set[str]:
        return {str(r[0]) for r in self._q("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def archive(self) -> Archive:
        """The data dir's archive file (opened on first use; ``close`` closes it)."""
        if self._archive is None:
            self._archive = SqliteSide(self._store).archive("", "")
        return self._archive

    def close(self) -> None:
        """Close the archive file if it was opened."""
        if self._archive is not None:
            self._archive.close()
            self._archive = None

    # ------------------------------------------------------------------ what is there
    def present(self) -> bool:
        """Whether the agent memory ever opened this store (its schema is recorded)."""
        return bool(self._q("SELECT 1 FROM meta WHERE key = ?", (SCHEMA_KEY,)))

    def prepare(self) -> None:
        """Create or upgrade the layer's tables (``schema.migrate_chain``)."""
        SqliteRepository(self._store, "", "").migrate()

    def pending_forgets(self) -> dict[tuple[str, str], int]:
        """Rows of the undo area (``am_forgotten``), by scope."""
        if "am_forgotten" not in self._tables():
            return {}
        rows = self._q("SELECT org_id, agent_id, count(*) FROM am_forgotten GROUP BY 1, 2")
        return {(str(o), str(a)): int(n) for o, a, n in rows}

    def skills(self) -> int:
        """Skills stored in this data dir (``am_skill``)."""
        if "am_skill" not in self._tables():
            return 0
        return int(self._q("SELECT count(*) FROM am_skill")[0][0])

    def layer_counts(self, now_us: int) -> dict[tuple[str, str], int]:
        """Live memories with layer state, by (org, agent)."""
        rows = self._q(
            f"SELECT org_id, agent_id, count(*) FROM memory WHERE type IS NOT NULL AND {_LIVE}"
            " GROUP BY 1, 2",
            (now_us,),
        )
        return {(str(o), str(a)): int(n) for o, a, n in rows}

    # ------------------------------------------------------------------ reading
    def memories_after(self, label: int, limit: int, now_us: int) -> list[tuple[int, MemoryState]]:
        """Up to ``limit`` (label, state) of live memories with layer state after
        ``label``, in label order."""
        rows = self._q(
            f"SELECT label, {STATE_COLUMNS}, archive_digest FROM memory WHERE label > ?"
            f" AND type IS NOT NULL AND {_LIVE} ORDER BY label LIMIT ?",
            (label, now_us, limit),
        )
        states = self._states([r[1:] for r in rows])
        return [(int(r[0]), s) for r, s in zip(rows, states, strict=True)]

    def memory_states(self, ids: Sequence[str], now_us: int) -> dict[str, MemoryState]:
        """The states of those of ``ids`` that are live memories with layer state."""
        rows = self._each(
            f"SELECT {STATE_COLUMNS}, archive_digest FROM memory WHERE id IN ({{in}})"
            f" AND type IS NOT NULL AND {_LIVE}",
            ids,
            (now_us,),
        )
        return {s.id: s for s in self._states(rows)}

    def _states(self, rows: Sequence[Sequence[Any]]) -> list[MemoryState]:
        """States of rows of ``STATE_COLUMNS`` and the archive digest."""
        ids = [str(r[0]) for r in rows]
        about: dict[str, list[str]] = {}
        for mid, entity in self._each(
            "SELECT memory_id, entity FROM am_about WHERE memory_id IN ({in})", ids
        ):
            about.setdefault(str(mid), []).append(str(entity))
        accesses: dict[str, list[int]] = {}
        for mid, at in self._each(
            "SELECT memory_id, at_us FROM am_access WHERE memory_id IN ({in})", ids
        ):
            accesses.setdefault(str(mid), []).append(int(at))
        digests = {str(r[0]): str(r[16]) for r in rows if r[14] is not None}
        texts = self.archive().get(digests) if digests else {}
        return [
            memory_state(
                r[:16], about.get(str(r[0]), ()), accesses.get(str(r[0]), ()), texts.get(str(r[0]))
            )
            for r in rows
        ]

    def scopes(self) -> list[tuple[str, str]]:
        """Every (org, agent) holding rows of ``ScopeRows``."""
        have = self._tables()
        union = " UNION ".join(
            f"SELECT org_id, agent_id FROM {t}" for t in _SCOPED_TABLES if t in have
        )
        return sorted((str(o), str(a)) for o, a in self._q(union)) if union else []

    def scope_rows(self, org_id: str, agent_id: str, now_us: int) -> ScopeRows:
        """One scope's rows; those pointing at a memory that is not live left out."""
        s = (org_id, agent_id)
        where = "org_id = ? AND agent_id = ?"
        summaries = self._q(
            "SELECT id, conversation_id, text, created_at_us, expires_at_us FROM am_summary t"
            f" WHERE {where} AND NOT EXISTS (SELECT 1 FROM am_summary_source x"
            f" WHERE x.summary_id = t.id AND NOT {_live('x.memory_id')})",
            (*s, now_us),
        )
        sources: dict[str, list[str]] = {}
        for sid, mid in self._each(
            "SELECT summary_id, memory_id FROM am_summary_source WHERE summary_id IN ({in})"
            " ORDER BY summary_id, position",
            [r[0] for r in summaries],
        ):
            sources.setdefault(str(sid), []).append(str(mid))
        clear = {
            k.kind: [
                k.read(r)
                for r in self._q(
                    f"SELECT {', '.join(k.columns)} FROM am_{k.table} t WHERE {where}"
                    + "".join(f" AND {_live(f't.{c}')}" for c in k.live),
                    (*s, *[now_us] * len(k.live)),
                )
            ]
            for k in CLEAR_KINDS
        }
        return scope_rows(
            org_id,
            agent_id,
            facts=[
                FactState(
                    r[0], r[1], r[2], r[3], float(r[4]), bool(r[5]), r[6], r[7], r[8], bool(r[9])
                )
                for r in self._q(
                    "SELECT id, subject, predicate, object, confidence, single_valued,"
                    " valid_from_us, valid_to_us, superseded_by, retracted FROM am_fact t"
                    f" WHERE {where} AND {_live('t.id')}",
                    (*s, now_us),
                )
            ],
            procedures=[
                ProcedureState(*r)
                for r in self._q(
                    "SELECT id, action, context, successes, failures, updated_at_us"
                    f" FROM am_procedure t WHERE {where} AND {_live('t.id')}",
                    (*s, now_us),
                )
            ],
            history=[
                HistoryState(int(r[0]), int(r[1]), r[2], r[3], canonical(r[4]))
                for r in self._q(
                    f"SELECT seq, at_us, op, target, detail FROM am_history WHERE {where}", s
                )
            ],
            summaries=[
                SummaryState(r[0], r[1], r[2], r[3], r[4], tuple(sources.get(r[0], ())))
                for r in summaries
            ],
            **clear,
        )

    def namespaces(self) -> Namespaces:
        """Every namespace and grant of the data dir."""
        return Namespaces(
            tuple(
                NamespaceState(*r)
                for r in self._q(f"SELECT {', '.join(NAMESPACE_COLUMNS)} FROM am_namespace")
            ),
            tuple(
                GrantState(*r) for r in self._q(f"SELECT {', '.join(GRANT_COLUMNS)} FROM am_grant")
            ),
        ).ordered()

    # ------------------------------------------------------------------ writing
    def _here(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        """(label, org, agent, conversation) of those of ``ids`` this store holds."""
        return {
            str(r[0]): (int(r[1]), str(r[2]), str(r[3]), str(r[4]))
            for r in self._each(
                "SELECT id, label, org_id, agent_id, conversation_id FROM memory"
                " WHERE id IN ({in})",
                ids,
            )
        }

    def put_memories(self, states: Sequence[MemoryState]) -> int:
        """Write the states of the memories this data dir holds; how many."""
        here = self._here([s.id for s in states])
        keep = [s for s in states if s.id in here and here[s.id][1:3] == (s.org_id, s.agent_id)]
        if not keep:
            return 0
        archived = [s for s in keep if s.archived is not None]
        by_time = sorted(archived, key=lambda s: s.archived_at_us or 0)
        for at, group in itertools.groupby(by_time, key=lambda s: s.archived_at_us or 0):
            # The text first (see the module): its row is marked archived below.
            self.archive().put([(s.id, *s.archived) for s in group if s.archived], at)
        ids = [s.id for s in keep]
        with self._store.transaction() as tx:
            sets = ", ".join(f"{c} = ?" for c in (*COLUMNS, "speaker", "speaker_key"))
            tx.executemany(
                f"UPDATE memory SET {sets} WHERE id = ?",
                [(*column_values(s), s.speaker, s.speaker_key, s.id) for s in keep],
            )
            tx.executemany(
                "INSERT OR IGNORE INTO am_about (memory_id, org_id, agent_id, entity, key)"
                " VALUES (?,?,?,?,?)",
                [(s.id, s.org_id, s.agent_id, n, k) for s in keep for n, k in s.about_keyed()],
            )
            tx.executemany(
                "INSERT OR IGNORE INTO am_speaker (org_id, agent_id, key) VALUES (?,?,?)",
                sorted({(s.org_id, s.agent_id, s.speaker_key) for s in keep if s.speaker_key}),
            )
            # The access log has no key: this page's is replaced whole (a re-run writes it
            # again, not twice).
            for part in _parts(ids):
                tx.execute(
                    f"DELETE FROM am_access WHERE memory_id IN ({placeholders(len(part))})", part
                )
            tx.executemany(
                "INSERT INTO am_access (memory_id, at_us) VALUES (?, ?)",
                [(s.id, at) for s in keep for at in s.accesses],
            )
            for s in archived:
                assert s.archived is not None
                content, meta = s.archived
                label, org, agent, conv = here[s.id]
                tx.execute(
                    "UPDATE memory SET archived_at_us = ?, archive_digest = ?, fingerprint = ?"
                    " WHERE id = ?",
                    (s.archived_at_us, text_digest(content, meta), text_fingerprint(content), s.id),
                )
                # The row holds a pointer: its keywords are the archived text's, as an
                # archived memory's stay searchable where it was archived.
                tx.replace_keywords(label, content, (org, agent, conv))
        return len(keep)

    def put_scope_rows(self, rows: ScopeRows) -> int:
        """Write one scope's rows (those pointing at a memory this data dir does not
        hold left out); how many."""
        here = self._here(sorted(rows.memory_ids()))
        r = rows.only_moved({i for i, v in here.items() if v[1:3] == (rows.org_id, rows.agent_id)})
        s = (r.org_id, r.agent_id)
        with self._store.transaction() as tx:
            tx.executemany(
                "INSERT INTO am_fact (id, org_id, agent_id, subject, predicate, object,"
                " subject_key, predicate_key, object_key, confidence, single_valued,"
                " valid_from_us, valid_to_us, superseded_by, retracted)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO UPDATE SET"
                " confidence = excluded.confidence, valid_to_us = excluded.valid_to_us,"
                " superseded_by = excluded.superseded_by, retracted = excluded.retracted",
                [
                    (
                        f.id,
                        *s,
                        f.subject,
                        f.predicate,
                        f.object,
                        *f.lookup_keys(),
                        f.confidence,
                        int(f.single_valued),
                        f.valid_from_us,
                        f.valid_to_us,
                        f.superseded_by,
                        int(f.retracted),
                    )
                    for f in r.facts
                ],
            )
            tx.executemany(
                "INSERT INTO am_procedure (id, org_id, agent_id, action, context, action_key,"
                " context_key, successes, failures, updated_at_us) VALUES (?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (id) DO UPDATE SET successes = excluded.successes,"
                " failures = excluded.failures, updated_at_us = excluded.updated_at_us",
                [
                    (
                        p.id,
                        *s,
                        p.action,
                        p.context,
                        *p.lookup_keys(),
                        p.successes,
                        p.failures,
                        p.updated_at_us,
                    )
                    for p in r.procedures
                ],
            )
            self._ignore(
                tx,
                "am_summary",
                (
                    "id",
                    "org_id",
                    "agent_id",
                    "conversation_id",
                    "text",
                    "created_at_us",
                    "expires_at_us",
                ),
                [
                    (x.id, *s, x.conversation_id, x.text, x.created_at_us, x.expires_at_us)
                    for x in r.summaries
                ],
            )
            # Sequence numbers are kept (``history()`` shows them); AUTOINCREMENT moves
            # past the largest one written.
            self._ignore(
                tx,
                "am_history",
                ("seq", "org_id", "agent_id", "at_us", "op", "target", "detail"),
                [
                    (
                        h.seq,
                        *s,
                        h.at_us,
                        h.op,
                        h.target,
                        json.dumps(h.detail_value(), sort_keys=True),
                    )
                    for h in r.history
                ],
            )
            for name, cols, values in clear_tables(r):
                self._ignore(tx, f"am_{name}", cols, values)
        return sum(r.counts().values())

    @staticmethod
    def _ignore(tx: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """``INSERT OR IGNORE`` each row (a row already there stays)."""
        if rows:
            tx.executemany(
                f"INSERT OR IGNORE INTO {table} ({', '.join(cols)})"
                f" VALUES ({placeholders(len(cols))})",
                rows,
            )

    def put_namespaces(self, ns: Namespaces) -> None:
        """Write namespaces and grants (one already there stays)."""
        with self._store.transaction() as tx:
            for name, cols, values in namespace_tables(ns):
                self._ignore(tx, f"am_{name}", cols, values)

    def finish(self) -> None:
        """Nothing: SQLite's AUTOINCREMENT follows the largest sequence number written."""


__all__ = ["SqliteLayer"]
