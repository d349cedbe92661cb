"""What every memory store backend offers the same way: the calls written in terms of
the backend's own (the seam's ``append_many``, three recalls and ``embed_query``; ``close``;
``_forget_scope``).

``SqliteMemoryStore`` (sqlite/store.py) and ``PgMemoryStore`` (postgres/store.py) both build
on it, so a text recall dispatches, and a single append is durable, identically.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, Self

from ..base.errors import InvalidArgumentError
from ..base.modes import plain_mode
from ..embed.vectors import Embedder
from .records import MemoryEntry, MemoryHit, Scope, to_us
from .seam import MemoryRecall, MemoryWrites, RecallMode


class StoreFront(MemoryWrites, MemoryRecall):
    """The backend-independent part of a memory store's public API: the calls of the
    seam's ``MemoryWrites`` and ``MemoryRecall`` written in terms of the backend's own."""

    _clock: Callable[[], datetime]
    embedder: Embedder | None
    _erase_all_hint: ClassVar[str]  # how to erase a whole store (forget never does)

    # The backend's own calls, which everything here is written in, are the seam's
    # (append_many, semantic_recall, keyword_recall, hybrid_recall, embed_query).
    def close(self) -> None:
        raise NotImplementedError

    def _forget_scope(self, scope: Scope) -> int:
        """Delete every entry in ``scope`` (not empty) in one transaction; how many."""
        raise NotImplementedError

    # What every backend shares.
    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def append(self, entry: MemoryEntry) -> str:
        """Store one memory; durable when it returns (the backend's commit: SQLite
        fsyncs its WAL).

        Args:
            entry: The memory: its text, role, scope (org, agent, conversation), kind,
                source, metadata and optional expiry. Embedded when the store has an
                embedder.

        Returns:
            The new memory's id.

        Raises:
            InvalidArgumentError: Empty or oversized text, an invalid scope name or a
                naive datetime.
            EmbedderError: The embedder failed (nothing is written).
            StoreLockedError: Another writer held the store past the timeout.
        """
        return self.append_many([entry])[0]

    def append_with_embedding(self, entry: MemoryEntry, vector: Any) -> str:
        """Store one memory with a vector the caller computed.

        Args:
            entry: The memory (as for ``append``).
            vector: Its embedding, of the store's dimension.

        Returns:
            The new memory's id.

        Raises:
            DimensionMismatchError: The vector's dimension is not the store's.
            InvalidArgumentError: As for ``append``, or a non-finite vector.
        """
        return self.append_many([entry], vectors=[vector])[0]

    def forget(
        self,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Delete every memory in a scope, in one transaction.

        Args:
            org_id: The organisation (at least one of the three is required).
            agent_id: The agent.
            conversation_id: The conversation.

        Returns:
            How many memories were deleted.

        Raises:
            InvalidArgumentError: No scope field given (the hint says how to erase all).
        """
        scope = Scope(org_id, agent_id, conversation_id)
        if scope.is_empty():
            raise InvalidArgumentError(
                "forget needs org_id, agent_id or conversation_id", hint=self._erase_all_hint
            )
        return self._forget_scope(scope)

    def recall(
        self,
        query_text: str,
        limit: int = 5,
        *,
        mode: RecallMode = "auto",
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """Recall memories for a text query, in any mode of ``base.modes``.

        Args:
            query_text: The query.
            limit: How many memories at most.
            mode: ``keyword`` (``bm25`` is an alias), ``semantic``, ``hybrid`` or
                ``auto``, the default: hybrid with an embedder and keyword without one.
                Semantic and hybrid embed the query with the store's embedder.
            org_id: Only this organisation's memories.
            agent_id: Only this agent's.
            conversation_id: Only this conversation's.

        Returns:
            Hits, best first, each with the memory, its score and its rank in each
            list fused.

        Raises:
            InvalidArgumentError: An empty query, an unknown mode or a limit out of
                range.
            NoEmbedderError: ``semantic`` or ``hybrid`` on a store without an embedder.
        """
        scope = dict(org_id=org_id, agent_id=agent_id, conversation_id=conversation_id)
        how = plain_mode(mode, has_embedder=self.embedder is not None)
        if how == "keyword":
            return self.keyword_recall(query_text, limit, **scope)
        if how == "hybrid":
            return self.hybrid_recall(query_text, None, limit, **scope)
        return self.semantic_recall(self.embed_query(query_text), limit, **scope)

    @property
    def clock(self) -> Callable[[], datetime]:
        """The store's clock: "now" for expiry and for every read."""
        return self._clock

    def _now_us(self) -> int:
        return to_us(self._clock())


def result_count(limit: int, k: int | None, call: str) -> int:
    """The number of results a recall was asked for: ``limit``, or the deprecated ``k=``
    keyword of ``semantic_recall`` and ``keyword_recall`` (one name, ``limit``, across
    every recall of the memory store; ``k`` still works, with a warning)."""
    if k is None:
        return limit
    warnings.warn(
        f"{call}(k=...) is deprecated: the number of results is limit= (as in hybrid_recall "
        "and recall)",
        DeprecationWarning,
        stacklevel=3,
    )
    return k


__all__ = ["RecallMode", "StoreFront", "result_count"]
