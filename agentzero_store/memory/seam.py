"""The memory store's declared seam: what the layers above may use of a memory store.

``SqliteMemoryStore`` (``sqlite/store.py``) and ``PgMemoryStore`` (``postgres/store.py``) both
implement ``MemoryStore``, which is small Protocols split by concern: ``StoreHandle``
(identity, keys, clock, closing), ``MemoryWrites``, ``MemoryReads`` and
``MemoryRecall``. Code above the stores is written against them, never against a union
of the concrete backends, so a third backend implements these and edits nothing else.
mypy checks each backend against every Protocol it claims (``choose.py``). The seam
imports neither backend (import-linter's ``memory-backends`` contract).

What only some backends have is a capability: its own Protocol, named in the store's
``capabilities`` and tested with ``supports`` (a type guard), not with ``isinstance`` of
a backend class:

- ``"data_dir"`` (``DataDirOps``): a data dir and its ``memory.db`` connection, where one
  writer at a time holds the writer role (SQLite);
- ``"sidecars"`` (``SidecarOps``): derived indexes beside the database (SQLite's HNSW);
- ``"change_feed"`` (``ChangeFeedOps``): the ``changes`` table the sidecars replay;
- ``"bulk_load"`` (``BulkLoadOps``): build the vector index once after a large load
  (PostgreSQL's pgvector index).

The capability is declared, not probed: the PostgreSQL store answers the SQLite store's
calls with a typed refusal (``postgres/sqlite_only.py``: ``UnsupportedByBackendError`` and a
hint, for a caller holding it by its class), so the presence of a method says nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeGuard, overload

from ..base.config import StoreConfig
from ..base.modes import Mode
from ..embed.vectors import Embedder, Vector
from ..storage.keys import StoreKeys
from .records import Change, MemoryEntry, MemoryHit, Scope

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..sidecar.types import OpenReport, Progress, SidecarStatus
    from ..storage.sqlcipher import Database

RecallMode = Mode  # the one vocabulary of every search (``base.modes``)
Capability = Literal["data_dir", "sidecars", "change_feed", "bulk_load"]
Clock = Callable[[], datetime]


class StoreHandle(Protocol):
    """An open memory store: its identity, keys, settings and clock, and closing it."""

    embedder: Embedder | None
    config: StoreConfig

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What this backend has beyond ``MemoryStore`` (see ``supports``)."""
        ...

    @property
    def store_id(self) -> str:
        """The store's random id (from its key header)."""
        ...

    @property
    def keys(self) -> StoreKeys:
        """The unlocked keys."""
        ...

    @property
    def clock(self) -> Clock:
        """The store's clock (expiry and "now" of every read are its time)."""
        ...

    def key_header(self) -> dict[str, Any]:
        """The key header (the keys.json format: wrapped keys, no secret)."""
        ...

    def embedding_info(self) -> tuple[str | None, int | None]:
        """(model id, dimension) of the vectors stored so far, or (None, None)."""
        ...

    def close(self) -> None:
        """Close the store (idempotent)."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class MemoryWrites(Protocol):
    """Appending and deleting memories; each call is one durable transaction."""

    def append(self, entry: MemoryEntry) -> str:
        """Store one entry (embedded by the store's embedder, if any); its id."""
        ...

    def append_with_embedding(self, entry: MemoryEntry, vector: Any) -> str:
        """Store one entry with a caller-computed vector; its id."""
        ...

    def append_many(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> list[str]:
        """Store many entries in one transaction (all or none); their ids."""
        ...

    def delete(self, entry_id: str) -> bool:
        """Delete one entry; True if it existed."""
        ...

    def forget(
        self,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Delete every entry in a scope (at least one field); how many."""
        ...

    def gc_expired(self) -> int:
        """Delete entries whose expiry has passed; how many."""
        ...


class MemoryReads(Protocol):
    """Reading live memories by id, by scope, or the whole store page by page."""

    def get(self, entry_id: str) -> MemoryEntry | None:
        """The live entry with this id, or None."""
        ...

    def recent(
        self,
        limit: int = 20,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryEntry]:
        """The newest live entries in a scope, newest first."""
        ...

    def count(
        self,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Number of live entries in a scope."""
        ...

    def scopes(self) -> list[tuple[str, str, int]]:
        """Every (org_id, agent_id) holding live memories, with how many, in order."""
        ...

    def entries_after(
        self, label: int, limit: int
    ) -> list[tuple[int, MemoryEntry, npt.NDArray[np.float32] | None]]:
        """Up to ``limit`` live entries stored after ``label`` (the store's own labels),
        each with its vector or None."""
        ...


class MemoryRecall(Protocol):
    """Scoped recall; ``limit`` is the number of results everywhere."""

    def semantic_recall(
        self,
        query_vector: Any,
        limit: int = 5,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """The ``limit`` live entries in scope nearest (cosine) to ``query_vector``."""
        ...

    def keyword_recall(
        self,
        query_text: str,
        limit: int = 5,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """The ``limit`` best BM25 matches of ``query_text`` in scope."""
        ...

    def hybrid_recall(
        self,
        query_text: str,
        query_vector: Any = None,
        limit: int = 5,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """Semantic and keyword recall fused (weighted RRF)."""
        ...

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
        """Text-only recall in any mode of ``base.modes`` (the store's embedder embeds
        the query; ``auto`` is hybrid with an embedder and keyword without one)."""
        ...

    def embed_query(self, text: str) -> Vector:
        """Embed one query text with the store's embedder."""
        ...


class MemoryStore(StoreHandle, MemoryWrites, MemoryReads, MemoryRecall, Protocol):
    """Everything every memory store backend offers: what the layers above hold."""


# ----------------------------------------------------------------- capabilities
class DataDirOps(Protocol):
    """``"data_dir"``: the store lives in a data dir, one writer at a time."""

    @property
    def data_dir(self) -> Path:
        """The data dir."""
        ...

    @property
    def database(self) -> Database:
        """The ``memory.db`` connection (for a layer's own reads of its tables)."""
        ...


class NearestIndex(Protocol):
    """What a layer above reads of a store's own vector index (SQLite's HNSW sidecar,
    ``sqlite.hnsw.MemoryHnsw``): the nearest rows of a scope."""

    def recall(
        self, q: npt.NDArray[np.float32], k: int, scope: Scope, now_us: int
    ) -> list[tuple[int, float]] | None:
        """Top-``k`` (label, cosine) of live rows in scope, or None (not ready: the caller
        searches in SQL)."""
        ...


class SidecarOps(Protocol):
    """``"sidecars"``: derived indexes beside the database, listed and rebuilt."""

    @property
    def hnsw_index(self) -> NearestIndex | None:
        """The HNSW sidecar, if enabled."""
        ...

    def enable_hnsw_index(
        self,
        dir: Path | str | None = None,
        dim: int | None = None,
        *,
        watch: bool = True,
        progress: Progress | None = None,
    ) -> OpenReport | None:
        """Serve semantic recall from an HNSW sidecar."""
        ...

    def index_status(self) -> list[SidecarStatus]:
        """Status of each sidecar."""
        ...

    def rebuild_index(self, name: str | None = None, progress: Progress | None = None) -> list[str]:
        """Rebuild all sidecars, or the one named; the names rebuilt."""
        ...

    def purge_index(self) -> bool:
        """Drop deleted rows from the HNSW sidecar; True if it did."""
        ...

    def deferred_index_checkpoints(self) -> AbstractContextManager[None]:
        """No sidecar checkpoint inside the block; one at its end if due."""
        ...


class ChangeFeedOps(Protocol):
    """``"change_feed"``: every insert and delete, in order, for the sidecars (what the
    sidecar adapters read, ``sqlite.feed.FeedStore``, and every vector at once)."""

    def source_seq(self) -> int:
        """The seq of the newest change."""
        ...

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with seq > ``seq``, oldest first, at most ``limit``."""
        ...

    def vector_count(self) -> int:
        """An upper bound on the rows holding a vector."""
        ...

    def vectors_after(self, label: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (label, float32 bytes) with label > ``label``, by label."""
        ...

    def iter_vectors(self, batch: int = 10_000) -> Iterable[tuple[int, list[int], bytes]]:
        """Every vector, in batches."""
        ...


class BulkLoadOps(Protocol):
    """``"bulk_load"``: a large load builds the vector index once, at its end."""

    def bulk_load(self) -> AbstractContextManager[None]:
        """Defer building the vector index to the end of the block."""
        ...


class DataDirStore(MemoryStore, DataDirOps, Protocol):
    """A memory store in a data dir."""


class SidecarStore(MemoryStore, SidecarOps, ChangeFeedOps, Protocol):
    """A memory store with sidecars fed by its change feed."""


class BulkLoadStore(MemoryStore, BulkLoadOps, Protocol):
    """A memory store that builds its vector index after a bulk load."""


@overload
def supports(store: MemoryStore, capability: Literal["data_dir"]) -> TypeGuard[DataDirStore]: ...
@overload
def supports(
    store: MemoryStore, capability: Literal["sidecars", "change_feed"]
) -> TypeGuard[SidecarStore]: ...
@overload
def supports(store: MemoryStore, capability: Literal["bulk_load"]) -> TypeGuard[BulkLoadStore]: ...
def supports(store: MemoryStore, capability: Capability) -> bool:
    """True if ``store`` has ``capability`` (then typed as the store with it)."""
    return capability in store.capabilities


__all__ = [
    "BulkLoadOps",
    "BulkLoadStore",
    "Capability",
    "ChangeFeedOps",
    "Clock",
    "DataDirOps",
    "DataDirStore",
    "MemoryReads",
    "MemoryRecall",
    "MemoryStore",
    "MemoryWrites",
    "NearestIndex",
    "RecallMode",
    "SidecarOps",
    "SidecarStore",
    "StoreHandle",
    "supports",
]
