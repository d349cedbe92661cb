"""The interface of the sidecar mechanism: what a source and an index adapter provide.

``Source`` is the truth a sidecar is derived from; ``SidecarIndex`` adapts one index
library (hnswlib, tantivy, ...). ``mechanism.Sidecar`` drives both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

P = TypeVar("P")
P_contra = TypeVar("P_contra", contravariant=True)

Progress = Callable[[int, int], None]
"""Progress callback: ``(items done, items total)``; total is an estimate (may be 0)."""


@dataclass(frozen=True)
class Change(Generic[P]):
    """One entry of a source's change feed. ``payload`` is None when the row is gone."""

    seq: int
    op: Literal["insert", "delete"]
    key: int
    payload: P | None


class Source(Protocol[P]):
    """What a sidecar is derived from. Keys are ints that are never reused after a delete.

    ``snapshot`` need not be transactional: the mechanism reads ``source_seq()`` first,
    then the snapshot, then replays every change after that seq. Adapters apply inserts as
    upserts and deletes idempotently, so rows changed while the snapshot was read end up
    right, and no long read transaction blocks writers during a rebuild.
    """

    @property
    def store_id(self) -> str:
        """Random id of the store the source belongs to (bound into every checkpoint)."""
        ...

    def source_seq(self) -> int:
        """The seq of the newest change (0 when empty)."""
        ...

    def changes_since(self, seq: int, limit: int) -> Sequence[Change[P]]:
        """Changes with seq > ``seq``, oldest first, at most ``limit``."""
        ...

    def item_count(self) -> int:
        """Approximate number of items a snapshot yields (for progress bars)."""
        ...

    def snapshot(self, batch: int) -> Iterator[Sequence[tuple[int, P]]]:
        """Every live item as ``(key, payload)``, in batches of at most ``batch``."""
        ...


class SidecarIndex(Protocol[P_contra]):
    """The adapter between the mechanism and one index library (hnswlib, tantivy, ...).

    An adapter checkpoints one of two ways: ``SealsBytes`` (the index as named byte
    strings that the mechanism seals and writes: the adapter never touches disk) or
    ``KeepsFiles`` (its library keeps files of no plaintext, checked by sha256).
    ``insert`` must upsert and ``delete`` must ignore unknown or deleted keys (replay is
    idempotent). Any exception (native ones included) from loading a checkpoint makes
    the mechanism rebuild; from ``insert``/``delete`` during replay it also rebuilds.
    """

    kind: str  # short name, used in file names and bound into the AAD ("hnsw", "bm25")

    def params(self) -> Mapping[str, Any]:
        """JSON-able build parameters; a checkpoint with different params is rebuilt."""
        ...

    def reset(self) -> None:
        """Drop everything: an empty index (the start of a rebuild)."""
        ...

    def insert(self, items: Sequence[tuple[int, P_contra]]) -> None:
        """Add or replace items."""
        ...

    def delete(self, keys: Sequence[int]) -> None:
        """Remove keys; unknown or already-deleted keys are ignored."""
        ...

    def count(self) -> int:
        """Number of live entries."""
        ...


@runtime_checkable
class SealsBytes(Protocol):
    """An adapter whose checkpoint is named byte strings, sealed by the mechanism."""

    def dump(self) -> dict[str, bytes]:
        """The whole index as named plaintext byte strings (names: ``[a-z0-9_]+``)."""
        ...

    def load(self, files: Mapping[str, bytes]) -> None:
        """Replace the index with one read from ``dump``'s output (already authenticated)."""
        ...


@runtime_checkable
class LoadsBuffers(Protocol):
    """An adapter that can load its checkpoint from mutable buffers it may keep.

    The mechanism then decrypts each data file straight into a ``bytearray`` (no
    intermediate copies) and hands it over: the adapter may keep views into it instead
    of copying (the memory index reads its vectors in place). Used instead of ``load``.
    """

    def load_buffers(self, files: dict[str, bytearray]) -> None:
        """Like ``SidecarIndex.load``; the buffers are the adapter's from now on."""
        ...


@runtime_checkable
class KeepsFiles(Protocol):
    """An adapter whose index library reads its own files in place (Tantivy on disk).

    Its checkpoint is a directory of files, not sealed byte strings: ``save`` fills a
    new empty directory with a complete, durable copy of the index (hard links are
    fine), the mechanism records every file's sha256 in the authenticated manifest, and
    hands ``open_saved`` a directory only after every file passed. ``open_saved`` must
    never write into it. The files are NOT encrypted: such an adapter may only write
    files that hold no plaintext (blinded terms, keys). The alternative to ``SealsBytes``;
    ``close`` drops whatever working files the adapter keeps. Files can vanish under a
    running process: ``lost`` says so, cheaply, and the mechanism rebuilds.
    """

    def save(self, directory: Path) -> None:
        """Fill the empty ``directory`` with the index as it is now."""
        ...

    def open_saved(self, directory: Path) -> None:
        """Replace the index with the verified checkpoint in ``directory``."""
        ...

    def close(self) -> None:
        """Release the index and its working files."""
        ...

    def lost(self) -> str | None:
        """Why the index can no longer answer from its files (removed under it, a native
        call that failed), or None. Called before every query: one ``stat`` at most."""
        ...


@runtime_checkable
class Scrubs(Protocol):
    """An adapter whose deleted entries still hold data (hnswlib's ``mark_deleted`` keeps
    the vector and its links), which ``scrub`` drops in memory, so the next checkpoint
    holds none of it (what an erase needs, without a rebuild)."""

    def scrub(self) -> int:
        """Drop what deleted entries still hold; returns how many entries changed."""
        ...


@dataclass(frozen=True)
class EmbedderInfo:
    """Which embedder produced a vector index's vectors; a mismatch forces a rebuild."""

    model_id: str | None
    dimension: int


@dataclass(frozen=True)
class OpenReport:
    """What ``Sidecar.open`` did: loaded a checkpoint or rebuilt, and how much it replayed."""

    loaded: bool
    rebuilt: bool
    reason: str | None
    replayed: int
    covered_seq: int
    seconds: float


@dataclass(frozen=True)
class SidecarStatus:
    """A sidecar's state for ``agentzero store status``."""

    kind: str
    path: str
    covered_seq: int  # seq of the checkpoint on disk
    applied_seq: int  # seq the in-memory index reflects
    source_seq: int
    entries: int
    size_bytes: int
    last_checkpoint: str | None
    embedder: str | None
    dimension: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)
