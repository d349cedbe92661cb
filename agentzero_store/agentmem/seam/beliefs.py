"""The seam's beliefs: history, facts and edges (``BeliefRows``), procedures
(``ProcedureRows``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..records import Fact, HistoryEntry, Procedure

if TYPE_CHECKING:
    from .store import LayerTx


class BeliefRows(Protocol):
    """Beliefs: the change history, facts (bi-temporal) and typed edges."""

    def append_history(
        self, tx: LayerTx, at_us: int, entries: Sequence[tuple[str, str, dict[str, Any]]]
    ) -> None:
        """Append (op, target, detail) lines to the belief history."""
        ...

    def history(self, target: str | None, limit: int) -> list[HistoryEntry]:
        """The belief history (of one target, or all), oldest first."""
        ...

    def lock_belief(self, tx: LayerTx, subject_key: str, predicate_key: str) -> None:
        """Serialise writers of one (subject, predicate) until ``tx`` ends."""
        ...

    def current_facts(
        self, subject_key: str, predicate_key: str, tx: LayerTx | None = None
    ) -> list[Fact]:
        """Facts of (subject, predicate) still believed, oldest first."""
        ...

    def facts(
        self,
        subject_key: str | None,
        predicate_key: str | None,
        as_of_us: int | None,
        history: bool,
    ) -> list[Fact]:
        """Facts believed now, at ``as_of_us``, or (``history``) ever."""
        ...

    def fact(self, fact_id: str) -> Fact | None:
        """One fact of this scope by id."""
        ...

    def insert_fact(
        self,
        tx: LayerTx,
        fact_id: str,
        parts: tuple[str, str, str],
        keys: tuple[str, str, str],
        confidence: float,
        single_valued: bool,
        valid_from_us: int,
    ) -> None:
        """A new fact, stored under the id of the semantic memory holding its text."""
        ...

    def close_fact(self, tx: LayerTx, fact_id: str, at_us: int, superseded_by: str | None) -> None:
        """End a fact's validity (superseded by another, or retracted)."""
        ...

    def set_confidence(self, tx: LayerTx, fact_id: str, confidence: float) -> None:
        """Change a fact's (and its memory's) confidence."""
        ...

    def add_edges(
        self, tx: LayerTx, edges: Sequence[tuple[str, str, str, float]], at_us: int
    ) -> None:
        """Add (src, dst, type, confidence) edges (an existing one is kept)."""
        ...

    def edges(self, node: str) -> list[tuple[str, str, str, float, int]]:
        """Stored edges touching ``node``."""
        ...


class ProcedureRows(Protocol):
    """Procedures: actions in a context with their outcome counts."""

    def procedure_by_key(
        self, action_key: str, context_key: str, tx: LayerTx | None = None
    ) -> Procedure | None:
        """The procedure recorded for this action (in this context), if any."""
        ...

    def procedures(self, ids: Sequence[str]) -> dict[str, Procedure]:
        """Procedures by id."""
        ...

    def all_procedures(self) -> list[Procedure]:
        """Every procedure of this scope, by id."""
        ...

    def insert_procedure(
        self,
        tx: LayerTx,
        pid: str,
        action: str,
        context: str | None,
        keys: tuple[str, str],
        success: bool,
        at_us: int,
    ) -> None:
        """A new procedure with its first outcome."""
        ...

    def count_outcome(self, tx: LayerTx, pid: str, success: bool, at_us: int) -> None:
        """One more success or failure."""
        ...

    def set_outcomes(self, pid: str, successes: int, failures: int, at_us: int) -> None:
        """Set a procedure's outcome counts (a session inheriting them)."""
        ...


__all__ = ["BeliefRows", "ProcedureRows"]
