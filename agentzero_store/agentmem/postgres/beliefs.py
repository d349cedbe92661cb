"""The agent-memory repository's beliefs on PostgreSQL: the append-only belief history,
facts that supersede, typed edges and procedures with their outcomes.

The same methods as ``sqlite.beliefs.BeliefRows`` (SQLite), over ``az_am_history``,
``az_am_fact``, ``az_am_edge`` and ``az_am_procedure`` (``postgres.schema``):

- a history line's detail, a fact's subject, predicate and object, a procedure's action
  and context are sealed (``codec.LayerCodec``) and opened on the client; a fact's or a
  procedure's row id is its own id, a history line (whose sequence number the server
  assigns on insert) is sealed under (op, target, at_us), so a detail copied to another
  line does not open;
- the keys a fact or a procedure is looked up by are blinded (``codec.blind``): the
  callers pass the plain keys the SQLite repository stores, and equal keys still match;
- ids, ops, edge types, numbers and times stay in the clear; where SQLite orders by an
  id (``BINARY``), the order here is ``COLLATE "C"``, the same byte order.

Many writers: SQLite's single write lock made "read the current facts, then close and
insert" one step; here ``lock_belief`` (a transaction-scoped advisory lock on the
blinded (subject, predicate)) and ``current_facts(..., tx)`` (which takes it, then the
rows ``FOR UPDATE``) make it one again; ``procedure_by_key(..., tx)`` does the same for
"count an outcome or insert the procedure".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.records import from_us
from ..records import Fact, HistoryEntry, Procedure
from .core import PgRepositoryCore

if TYPE_CHECKING:
    from ...memory.postgres.tx import PgWriteTx

# The first key of the two-key advisory locks (``pg_advisory_xact_lock(int4, int4)``):
# a key space apart from the store's one-key schema lock, one class per kind of row.
BELIEF_LOCK = 0x617A_6266  # "azbf": one (scope, subject, predicate)
PROCEDURE_LOCK = 0x617A_7072  # "azpr": one (scope, action, context)

_HISTORY = "az_am_history"
_FACT_TABLE = "az_am_fact"
_PROC_TABLE = "az_am_procedure"


def history_row_id(op: str, target: str, at_us: int) -> str:
    """What a history line's detail is sealed under: the line's number is the server's
    (an identity column) and unknown before the insert, so (op, target, time) stands in."""
    return f"{op}\x00{target}\x00{at_us}"


class PgBeliefRows(PgRepositoryCore):
    """History, facts, edges and procedures (see the module)."""

    # ------------------------------------------------------------------ locks
    def lock_belief(self, tx: PgWriteTx, subject_key: str, predicate_key: str) -> None:
        """Serialise writers of one (subject, predicate) until ``tx`` ends: SQLite's write
        lock did this; here two ``fact()`` calls could otherwise both find no current fact
        and both insert one. (A hash collision only makes two pairs wait for each other.)"""
        self._lock(tx, BELIEF_LOCK, subject_key, predicate_key)

    # ------------------------------------------------------------------ history
    def append_history(
        self, tx: PgWriteTx, at_us: int, entries: Sequence[tuple[str, str, dict[str, Any]]]
    ) -> None:
        """Append (op, target, detail) lines to the belief history."""
        tx.executemany(
            "INSERT INTO az_am_history (org_id, agent_id, at_us, op, target, detail)"
            " VALUES (%s,%s,%s,%s,%s,%s)",
            [
                (
                    *self._scope,
                    at_us,
                    op,
                    target,
                    # Through JSON as SQLite stores it (sorted keys, tuples as lists), so
                    # the detail read back is the same.
                    self.codec.seal(
                        _HISTORY,
                        history_row_id(op, target, at_us),
                        json.loads(json.dumps(detail, sort_keys=True)),
                    ),
                )
                for op, target, detail in entries
            ],
        )

    def history(self, target: str | None, limit: int) -> list[HistoryEntry]:
        """The belief history (of one target, or all), oldest first."""
        cond, params = ("AND target = %s", [target]) if target else ("", [])
        rows = self._q(
            "SELECT seq, at_us, op, target, detail FROM az_am_history WHERE org_id = %s"
            f" AND agent_id = %s {cond} ORDER BY seq LIMIT %s",
            (*self._scope, *params, limit),
        )
        return [
            HistoryEntry(
                int(r[0]),
                from_us(int(r[1])),
                str(r[2]),
                str(r[3]),
                self.codec.open(_HISTORY, history_row_id(r[2], r[3], int(r[1])), r[4]),
            )
            for r in rows
        ]

    # ------------------------------------------------------------------ facts
    _FACT = (
        "id, sealed, confidence, single_valued, valid_from_us, valid_to_us, superseded_by,"
        " retracted"
    )

    def _fact(self, r: Sequence[Any]) -> Fact:
        subject, predicate, obj = self.codec.open(_FACT_TABLE, r[0], r[1])
        return Fact(
            str(r[0]),
            str(subject),
            str(predicate),
            str(obj),
            float(r[2]),
            bool(r[3]),
            from_us(int(r[4])),
            from_us(int(r[5])) if r[5] is not None else None,
            r[6],
            bool(r[7]),
        )

    def current_facts(
        self, subject_key: str, predicate_key: str, tx: PgWriteTx | None = None
    ) -> list[Fact]:
        """Facts of (subject, predicate) still believed, oldest first. Inside ``tx`` the
        pair is locked first (``lock_belief``) and the rows ``FOR UPDATE``: what the caller
        decides from them (supersede, update, or nothing) stays true until it commits,
        as under SQLite's write lock (a concurrent retract of one of them waits, or
        is seen)."""
        lock = ""
        if tx is not None:
            self.lock_belief(tx, subject_key, predicate_key)
            lock = " FOR UPDATE"
        rows = self._q(
            f"SELECT {self._FACT} FROM az_am_fact WHERE org_id = %s AND agent_id = %s"
            " AND subject_key = %s AND predicate_key = %s AND valid_to_us IS NULL"
            f' ORDER BY valid_from_us, id COLLATE "C"{lock}',
            (*self._scope, *self._blind((subject_key, predicate_key))),
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
        clauses = ["org_id = %s", "agent_id = %s"]
        params: list[Any] = [*self._scope]
        if subject_key is not None:
            clauses.append("subject_key = %s")
            params.append(self.codec.blind(subject_key))
        if predicate_key is not None:
            clauses.append("predicate_key = %s")
            params.append(self.codec.blind(predicate_key))
        if not history:
            if as_of_us is None:
                clauses.append("valid_to_us IS NULL")
            else:
                clauses.append("valid_from_us <= %s AND (valid_to_us IS NULL OR valid_to_us > %s)")
                params.extend((as_of_us, as_of_us))
        rows = self._q(
            f"SELECT {self._FACT} FROM az_am_fact WHERE {' AND '.join(clauses)}"
            ' ORDER BY valid_from_us, id COLLATE "C"',
            params,
        )
        return [self._fact(r) for r in rows]

    def fact(self, fact_id: str) -> Fact | None:
        """One fact of this scope by id."""
        rows = self._q(
            f"SELECT {self._FACT} FROM az_am_fact WHERE id = %s AND org_id = %s AND agent_id = %s",
            (fact_id, *self._scope),
        )
        return self._fact(rows[0]) if rows else None

    def insert_fact(
        self,
        tx: PgWriteTx,
        fact_id: str,
        parts: tuple[str, str, str],
        keys: tuple[str, str, str],
        confidence: float,
        single_valued: bool,
        valid_from_us: int,
    ) -> None:
        """A new fact, stored under the id of the semantic memory holding its text."""
        tx.execute(
            "INSERT INTO az_am_fact (id, org_id, agent_id, sealed, subject_key, predicate_key,"
            " object_key, confidence, single_valued, valid_from_us)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            (
                fact_id,
                *self._scope,
                self.codec.seal(_FACT_TABLE, fact_id, list(parts)),
                *self._blind(keys),
                confidence,
                single_valued,
                valid_from_us,
            ),
        )

    def close_fact(
        self, tx: PgWriteTx, fact_id: str, at_us: int, superseded_by: str | None
    ) -> None:
        """End a fact's validity (superseded by another, or retracted)."""
        # Only a still-open fact: of two concurrent closes, the second (re-checking the
        # row after the first commits) changes nothing.
        tx.execute(
            "UPDATE az_am_fact SET valid_to_us = %s, superseded_by = %s, retracted = %s"
            " WHERE id = %s AND org_id = %s AND agent_id = %s AND valid_to_us IS NULL",
            (at_us, superseded_by, superseded_by is None, fact_id, *self._scope),
        )

    def set_confidence(self, tx: PgWriteTx, fact_id: str, confidence: float) -> None:
        """Change a fact's (and its memory's) confidence."""
        for table in ("az_am_fact", "az_memory"):
            tx.execute(
                f"UPDATE {table} SET confidence = %s WHERE id = %s AND org_id = %s"
                " AND agent_id = %s",
                (confidence, fact_id, *self._scope),
            )

    # ------------------------------------------------------------------ edges
    def add_edges(
        self, tx: PgWriteTx, edges: Sequence[tuple[str, str, str, float]], at_us: int
    ) -> None:
        """Add (src, dst, type, confidence) edges (an existing one is kept)."""
        tx.executemany(
            "INSERT INTO az_am_edge (src, dst, type, org_id, agent_id, confidence,"
            " created_at_us) VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
            [(s, d, t, *self._scope, c, at_us) for s, d, t, c in edges],
        )

    def edges(self, node: str) -> list[tuple[str, str, str, float, int]]:
        """Stored edges touching ``node``: (src, dst, type, confidence, created_at_us)."""
        return [
            (str(r[0]), str(r[1]), str(r[2]), float(r[3]), int(r[4]))
            for r in self._q(
                "SELECT src, dst, type, confidence, created_at_us FROM az_am_edge"
                " WHERE org_id = %s AND agent_id = %s AND (src = %s OR dst = %s)"
                ' ORDER BY created_at_us, src COLLATE "C", dst COLLATE "C", type COLLATE "C"',
                (*self._scope, node, node),
            )
        ]

    # ------------------------------------------------------------------ procedures
    _PROC = "id, sealed, successes, failures"

    def _procedure(self, r: Sequence[Any]) -> Procedure:
        action, context = self.codec.open(_PROC_TABLE, r[0], r[1])
        return Procedure(
            str(r[0]),
            str(action),
            None if context is None else str(context),
            int(r[2]),
            int(r[3]),
        )

    def procedure_by_key(
        self, action_key: str, context_key: str, tx: PgWriteTx | None = None
    ) -> Procedure | None:
        """The procedure recorded for this action (in this context), if any. Inside
        ``tx`` the (action, context) is locked first, until ``tx`` ends: SQLite's write
        lock kept two writers from both finding none and both inserting it (the second
        would fail on the unique key); here the second waits, then finds the first's."""
        if tx is not None:
            self._lock(tx, PROCEDURE_LOCK, action_key, context_key)
        rows = self._q(
            f"SELECT {self._PROC} FROM az_am_procedure WHERE org_id = %s AND agent_id = %s"
            " AND action_key = %s AND context_key = %s",
            (*self._scope, *self._blind((action_key, context_key))),
            tx,
        )
        return self._procedure(rows[0]) if rows else None

    def procedures(self, ids: Sequence[str]) -> dict[str, Procedure]:
        """Procedures by id."""
        if not ids:
            return {}
        return {
            str(r[0]): self._procedure(r)
            for r in self._q(
                f"SELECT {self._PROC} FROM az_am_procedure WHERE id = ANY(%s)"
                " AND org_id = %s AND agent_id = %s",
                (list(ids), *self._scope),
            )
        }

    def all_procedures(self) -> list[Procedure]:
        """Every procedure of this scope, by id (``SqliteRepository.all_procedures``)."""
        return [
            self._procedure(r)
            for r in self._q(
                f"SELECT {self._PROC} FROM az_am_procedure WHERE org_id = %s AND agent_id = %s"
                ' ORDER BY id COLLATE "C"',
                self._scope,
            )
        ]

    def insert_procedure(
        self,
        tx: PgWriteTx,
        pid: str,
        action: str,
        context: str | None,
        keys: tuple[str, str],
        success: bool,
        at_us: int,
    ) -> None:
        """A new procedure with its first outcome."""
        tx.execute(
            "INSERT INTO az_am_procedure (id, org_id, agent_id, sealed, action_key,"
            " context_key, successes, failures, updated_at_us)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            (
                pid,
                *self._scope,
                self.codec.seal(_PROC_TABLE, pid, [action, context]),
                *self._blind(keys),
                int(success),
                int(not success),
                at_us,
            ),
        )

    def count_outcome(self, tx: PgWriteTx, pid: str, success: bool, at_us: int) -> None:
        """One more success or failure."""
        # Incremented in the statement (the row's lock orders concurrent writers), never
        # read and written back: no outcome is lost to a concurrent count.
        col = "successes" if success else "failures"
        tx.execute(
            f"UPDATE az_am_procedure SET {col} = {col} + 1, updated_at_us = %s"
            " WHERE id = %s AND org_id = %s AND agent_id = %s",
            (at_us, pid, *self._scope),
        )

    def set_outcomes(self, pid: str, successes: int, failures: int, at_us: int) -> None:
        """Set a procedure's outcome counts (a session inheriting them;
        ``SqliteRepository.set_outcomes``): one statement, its own transaction."""
        with self.transaction() as tx:
            tx.execute(
                "UPDATE az_am_procedure SET successes = %s, failures = %s, updated_at_us = %s"
                " WHERE id = %s AND org_id = %s AND agent_id = %s",
                (successes, failures, at_us, pid, *self._scope),
            )


__all__ = ["BELIEF_LOCK", "PROCEDURE_LOCK", "PgBeliefRows", "history_row_id"]
