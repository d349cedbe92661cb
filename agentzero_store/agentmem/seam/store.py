"""The seam's store side: what the layer uses of the memory store below it (``LayerStore``,
``DataDirLayerStore``), the write transaction it shares (``LayerTx``) and the entries it
prepares for an insert (``PreparedRows``)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeGuard

from ...memory.records import MemoryEntry
from ...memory.seam import DataDirOps, MemoryStore, supports


class LayerTx(Protocol):
    """One open write transaction of the memory store, shared with the layer's tables:
    memory rows go in and out through it, and the layer's own statements run in it."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; the cursor."""
        ...

    def executemany(self, sql: str, rows: Any) -> Any:
        """Run one statement over many parameter rows."""
        ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """A read inside the transaction (sees its own writes)."""
        ...

    def delete_labels(self, labels: Sequence[int]) -> None:
        """Delete memory rows (with their vectors and keyword entries) by label."""
        ...

    def replace_keywords(self, label: int, text: str, scope: tuple[str, str, str]) -> None:
        """Index ``text`` as the keywords of row ``label`` (whose stored content is not
        that text: an archived memory put back by an undo keeps its words searchable)."""
        ...


class PreparedRows(Protocol):
    """Entries the memory store made ready to insert (ids chosen, vectors computed,
    outside any transaction): what ``MemoryRows.insert`` takes."""

    @property
    def ids(self) -> list[str]:
        """The ids chosen, in the entries' order."""
        ...

    @property
    def entries(self) -> list[MemoryEntry]:
        """The entries."""
        ...

    @property
    def now_us(self) -> int:
        """When they were prepared (µs): the creation time of an entry without one."""
        ...


class LayerStore(MemoryStore, Protocol):
    """What the layer uses of the memory store below it: the memory store's seam, and
    preparing entries for an insert in the layer's transaction."""

    def prepare(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> PreparedRows:
        """Entries made ready for ``MemoryRows.insert`` (validated, ids chosen, vectors
        computed by the store's embedder unless given); call outside a transaction."""
        ...

    def transaction(self) -> AbstractContextManager[LayerTx]:
        """One write transaction for the layer's tables and the memory rows."""
        ...


class DataDirLayerStore(LayerStore, DataDirOps, Protocol):
    """A ``LayerStore`` in a data dir (capability ``"data_dir"``)."""


def in_data_dir(store: LayerStore) -> TypeGuard[DataDirLayerStore]:
    """True if ``store`` lives in a data dir (``memory.seam.supports(store, "data_dir")``:
    one writer at a time, the database and archive files beside it)."""
    return supports(store, "data_dir")


__all__ = ["DataDirLayerStore", "LayerStore", "LayerTx", "PreparedRows", "in_data_dir"]
