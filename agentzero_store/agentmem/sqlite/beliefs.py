"""The agent-memory repository's beliefs: the append-only belief history, facts that
supersede, typed edges and procedures with their outcomes (``repository`` assembles the
whole repository)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.records import from_us
from ...memory.sqlite.rows import placeholders
from ..records import Fact, HistoryEntry, Procedure
from .core import RepositoryCore, batches

if TYPE_CHECKING:
    from ...memory.sqlite.tx import WriteTx


class BeliefRows(RepositoryCore):
    """History, facts, edges and procedures (see the module)."""

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
    def lock_belief(self, tx: WriteTx, subject_key: str, predicate_key: str) -> None:
        """Serialise writers of one (subject, predicate) until ``tx`` ends: nothing to do,
        the store's write lock (held by ``tx``) already does (see ``postgres.beliefs``)."""

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


__all__ = ["BeliefRows"]
