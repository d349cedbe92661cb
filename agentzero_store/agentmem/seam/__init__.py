"""The agent memory's declared backend seam: what the layer above its backends may use.

One module per concern, as each backend's files: ``store`` (``LayerStore``, ``LayerTx``),
``memory``, ``beliefs``, ``lifecycle``, ``scopes`` (the repository's Protocols); here the
whole repository, the archive and the side, and every name re-exported.

``AgentMemory`` and the services over its parts (recall, lifecycle, consolidation,
provenance, namespaces, context, chat, extract, transfer, and ``ops`` / ``cli``) hold an
``AgentRepository``, an ``Archive`` and a ``StoreSide``, never a backend's class. Each
is small Protocols split by concern; both backends implement every one under the same
file names (``sqlite/`` and ``postgres/``), and mypy checks each against them where its
side hands them out (``sqlite/side.py``, ``postgres/side.py``: ``repository`` and
``archive`` are typed to return these Protocols), so a missing method or a drifted
signature fails the type check, not a caller.

- the repository (one (org, agent) scope's rows): ``MemoryRows``, ``MemoryReads``,
  ``ConversationRows``, ``BeliefRows``, ``ProcedureRows``, ``ForgetRows``,
  ``ArchiveRows``, ``SourceRows``, ``TierRows``, ``NamespaceRows``;
- ``Archive``: where archived texts live; ``StoreSide``: what else differs between the
  stores below (the vector index, checkpoints, what an erase must still purge);
- ``LayerTx``: the write transaction the repository hands out and takes back;
- ``LayerStore``: what the layer uses of the memory store below it (the memory store's
  own seam, ``memory.seam.MemoryStore``, and ``prepare``). What only some stores have
  is a capability of that seam (``memory.seam.supports``), never an ``isinstance``.

The records that cross it are in ``rows`` (``Filter``, ``Row``, ``ForgetPayload`` ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...memory.records import Scope
from .beliefs import BeliefRows, ProcedureRows
from .lifecycle import ArchiveRows, ForgetRows, SourceRows
from .memory import ConversationRows, MemoryReads, MemoryRows
from .scopes import NamespaceRows, TierRows
from .store import DataDirLayerStore, LayerStore, LayerTx, PreparedRows, in_data_dir

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class AgentRepository(
    MemoryRows,
    MemoryReads,
    ConversationRows,
    BeliefRows,
    ProcedureRows,
    ForgetRows,
    ArchiveRows,
    SourceRows,
    TierRows,
    NamespaceRows,
    Protocol,
):
    """Every table of the agent memory for one (org, agent) scope: what a backend's
    repository implements (``sqlite.repository.SqliteRepository``,
    ``postgres.repository.PgRepository``)."""

    org_id: str
    agent_id: str


class Archive(Protocol):
    """Where archived memories' texts live (a data dir's ``memory.archive.db``, or a
    PostgreSQL table), checked against the digest the memory row recorded."""

    @property
    def path(self) -> Path | str:
        """What errors name: the archive's file, or its table."""
        ...

    def digest(self, content: str, metadata: str) -> str:
        """What a memory row records of an archived text."""
        ...

    def exists(self) -> bool:
        """True if the archive exists (it may be created on first write)."""
        ...

    def put(self, rows: Sequence[tuple[str, str, str]], now_us: int) -> None:
        """Store (id, content, metadata JSON) rows, replacing earlier copies."""
        ...

    def get(self, digests: dict[str, str]) -> dict[str, tuple[str, str]]:
        """(content, metadata JSON) of each id, checked against its digest (a missing or
        different text is a ``CorruptStoreError``)."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Delete these ids' texts; how many there were."""
        ...

    def truncate_wal(self) -> bool:
        """Leave no old page with a deleted text behind; False if a reader kept it."""
        ...

    def ids(self) -> set[str]:
        """Every id the archive holds a text for (to find spare copies)."""
        ...

    def close(self) -> None:
        """Close the archive (idempotent)."""
        ...


class StoreSide(Protocol):
    """What differs between the stores below the layer (``backends``)."""

    def repository(self, org_id: str, agent_id: str) -> AgentRepository:
        """The repository of one (org, agent) scope."""
        ...

    def archive(self, org_id: str, agent_id: str) -> Archive:
        """The archive of one (org, agent) scope."""
        ...

    def nearest(
        self, qv: npt.NDArray[np.float32], pool: int, scope: Scope, now_us: int
    ) -> list[tuple[int, float]] | None:
        """Semantic candidates from the store's vector index; None where there is none."""
        ...

    def deferred_checkpoints(self) -> AbstractContextManager[Any]:
        """A bulk write's index checkpoints held back to the end of the block."""
        ...

    def purge(self) -> None:
        """What an erase must still remove after its commit (old index segments ...)."""
        ...

    def settle(self) -> bool:
        """Leave no old page image behind; False if a reader of an older snapshot kept it."""
        ...

    def change_seq(self) -> int:
        """A value that moves with every committed write (the hot tier's cache key)."""
        ...

    def refresh_statistics(self) -> None:
        """After a consolidation: the planner's statistics, where there are any."""
        ...


__all__ = [
    "AgentRepository",
    "Archive",
    "ArchiveRows",
    "BeliefRows",
    "ConversationRows",
    "DataDirLayerStore",
    "ForgetRows",
    "LayerStore",
    "LayerTx",
    "MemoryReads",
    "MemoryRows",
    "NamespaceRows",
    "PreparedRows",
    "ProcedureRows",
    "SourceRows",
    "StoreSide",
    "TierRows",
    "in_data_dir",
]
