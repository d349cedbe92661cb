"""The seam's memory rows: writes, decay and access (``MemoryRows``), reads and recall's
signals (``MemoryReads``), conversations and their summaries (``ConversationRows``)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from ..rows import Candidate, Filter, NewMemory, Row

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .store import LayerTx, PreparedRows


class MemoryRows(Protocol):
    """The scope's memory rows: the schema, the write transaction, inserts, decay and access."""

    def migrate(self) -> None:
        """Create or upgrade the layer's tables (``schema.migrate_chain``)."""
        ...

    def transaction(self) -> AbstractContextManager[LayerTx]:
        """The memory store's write transaction: the layer's rows and the memory rows
        written through it commit together, or not at all."""
        ...

    def feed_seq(self, tx: LayerTx) -> int:
        """The change feed's newest seq, read inside ``tx`` (under the write lock)."""
        ...

    def insert(
        self, tx: LayerTx, prepared: PreparedRows, metas: Sequence[NewMemory]
    ) -> list[tuple[str, int]]:
        """Insert memory rows with the layer's columns through ``tx``."""
        ...

    def find_duplicate(self, fingerprint: str, type_: str, tx: LayerTx | None = None) -> str | None:
        """The id of a memory of this type with the same text fingerprint, if any."""
        ...

    def select(self, selector: str, value: str) -> list[tuple[str, int]]:
        """(id, label) of this scope's memories chosen by ``id``, ``conversation_id`` or ``about``
        (an entity key), archived ones included."""
        ...

    def log_access(self, tx: LayerTx, accesses: Sequence[tuple[str, int]]) -> None:
        """Append (memory id, time) accesses and bump each memory's counters."""
        ...

    def accesses(self, memory_id: str) -> list[int]:
        """Times (µs) a recall returned this memory, oldest first."""
        ...

    def set_review(
        self, tx: LayerTx, memory_id: str, stability: float, difficulty: float, at_us: int
    ) -> None:
        """Store a memory's FSRS state after feedback."""
        ...

    def decay_rows(
        self,
    ) -> list[tuple[str, int, str, float, float | None, int, float | None, float, int | None]]:
        """(id, label, type, stability, salience, last_review_us, retrievability, importance,
        archived_at_us) of every memory in scope, by id."""
        ...

    def missing_salience(
        self, ids: Sequence[str] | None = None, tx: LayerTx | None = None
    ) -> dict[str, float]:
        """The salience of memories that have none stored yet (of ``ids``, or of the whole scope),
        computed from their text, by id (``fill_salience`` stores it)."""
        ...

    def fill_salience(self, tx: LayerTx, ids: Sequence[str] | None = None) -> dict[str, float]:
        """Compute and store the salience of memories that have none yet (of ``ids``, or of the
        whole scope)."""
        ...

    def live_texts(self) -> list[tuple[str, str, int, int | None, int, float, float]]:
        """(id, content, created_at_us, last_access_us, access_count, salience, importance) of every
        live, unarchived memory of the scope, by id."""
        ...

    def set_retrievability(self, tx: LayerTx, values: Sequence[tuple[float, str]]) -> None:
        """Store each (R, id) snapshot."""
        ...


class MemoryReads(Protocol):
    """Reading memories and recall's candidates, signals and vectors (no write)."""

    def rows(self, labels: Sequence[int], f: Filter) -> dict[int, Row]:
        """The memories of ``labels`` that are live, unexpired, in scope and pass ``f``."""
        ...

    def candidates(self, labels: Sequence[int], f: Filter) -> dict[int, Candidate]:
        """Those of ``labels`` that are live, unexpired, in scope and pass ``f``, with what recall's
        signals read of them (no text)."""
        ...

    def roles_of(self, labels: Sequence[int]) -> dict[int, str]:
        """The role (``user``, ``assistant``, ``tool``, ``memory``, ...) of each of
        ``labels`` in this scope (recall's ``role`` signal)."""
        ...

    def by_id(self, memory_id: str, now_us: int) -> Row | None:
        """One live memory of this scope by id."""
        ...

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
        """One page of this scope's live, unexpired memories that pass ``f`` (and ``kind``,
        ``conversation_id``."""
        ...

    def keyword_ranked(self, query_text: str, k: int, f: Filter) -> list[int]:
        """Labels of up to ``k`` best BM25 matches of the scope, unexpired, best first, before the
        filter."""
        ...

    def keyword_filtered(self, query_text: str, k: int, f: Filter) -> list[int]:
        """The ``k`` best BM25 matches that pass ``f``, the filter applied inside the ranking (each
        match joined to its rows."""
        ...

    def keyword_scores(self, query_text: str, labels: Sequence[int]) -> dict[int, float]:
        """The BM25 score (lower is better) of each of ``labels`` that matches ``query_text`` in
        this scope (reads the keyword index alone)."""
        ...

    def nearest_exact(
        self, qv: npt.NDArray[np.float32], pool: int, f: Filter
    ) -> list[tuple[int, float]]:
        """Up to ``pool`` (label, cosine) nearest ``qv`` among every memory that passes ``f``,
        exactly (recall's fallback when a filter starves the index's candidates)."""
        ...

    def vectors_of(self, labels: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """(labels, float32 vector bytes) of those of ``labels`` that hold a vector."""
        ...

    def vector_of(self, label: int) -> bytes | None:
        """The stored float32 vector of a memory row, if it has one."""
        ...

    def about_of(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Entities of each memory (as written)."""
        ...

    def known_entities(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` are entities some memory of this scope is about."""
        ...

    def labels_about(self, labels: Sequence[int], keys: Sequence[str]) -> set[int]:
        """Which of ``labels`` are about any of the entity ``keys``."""
        ...

    def access_times(self, labels: Sequence[int]) -> dict[int, list[int]]:
        """The logged access times (µs) of each label that has any."""
        ...


class ConversationRows(Protocol):
    """A conversation's turns, their neighbours and its warm summaries."""

    def last_turns(self, conversation_id: str, n: int) -> list[int]:
        """Labels of the last ``n`` turns (episodic memories) of a conversation, oldest first (one
        backwards range of the conversation index)."""
        ...

    def latest_tool_turn(self, conversation_id: str) -> int | None:
        """Label of a conversation's newest live turn of role ``tool``, if any (walks the
        conversation backwards from its end to that turn)."""
        ...

    def turns_before(self, conversation_id: str, label: int | None) -> list[tuple[int, str]]:
        """(label, id) of a conversation's turns before the turn ``label`` (all of them with None),
        oldest first."""
        ...

    def turn_places(self, labels: Sequence[int]) -> list[tuple[int, str, int]]:
        """(label, conversation_id, created_at_us) of the episodic memories among ``labels`` (for
        ``turn_neighbours``)."""
        ...

    def turn_neighbours(
        self, places: Sequence[tuple[int, str, int]], window: int
    ) -> dict[int, list[tuple[int, int]]]:
        """For each episodic memory at ``places`` (``turn_places``)."""
        ...

    def neighbours_in_conversation(self, memory_id: str) -> list[tuple[str, int]]:
        """(id, created_at_us) of the turns just before and after a memory in its conversation
        (implicit temporal edges)."""
        ...

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
        ...

    def summary(self, conversation_id: str, now_us: int) -> tuple[str | None, list[int]] | None:
        """The live warm summary of a conversation."""
        ...

    def evict_summaries(self, now_us: int) -> int:
        """Delete the warm summaries of this scope past their TTL; how many."""
        ...


__all__ = ["ConversationRows", "MemoryReads", "MemoryRows"]
