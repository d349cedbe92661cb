"""The seam's lifecycle: forget, undo and erase (``ForgetRows``), archive, consolidation
and adoption (``ArchiveRows``), provenance (``SourceRows``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..rows import ForgetPayload, Forgotten, NewMemory

if TYPE_CHECKING:
    from .store import LayerTx, PreparedRows


class ForgetRows(Protocol):
    """Forget and undo, erase and its pending purge, expiry and orphans."""

    def forget(
        self, tx: LayerTx, chosen: Sequence[tuple[str, int]], token: str, at_us: int, until_us: int
    ) -> None:
        """Move memories into the undo area."""
        ...

    def forgotten(self, token: str, now_us: int) -> list[Forgotten]:
        """(id, payload, vector) of a forget still within its undo window."""
        ...

    def reinsert(self, tx: LayerTx, prepared: PreparedRows) -> dict[str, int]:
        """Insert forgotten memories' rows again (``unforget`` then puts the layer's
        columns back); id -> label of the rows written."""
        ...

    def unforget(
        self, tx: LayerTx, payloads: Sequence[ForgetPayload], labels: Sequence[int]
    ) -> None:
        """Put the layer's rows of forgotten memories back (their memory rows were just re-inserted
        through ``tx`` under ``labels``) and empty their undo entries."""
        ...

    def forgotten_select(self, selector: str, value: str) -> list[str]:
        """Ids in the undo area chosen like ``select`` (erase reaches them too)."""
        ...

    def purgeable(self, now_us: int) -> list[str]:
        """Ids in the undo area whose window has passed."""
        ...

    def erase(
        self,
        tx: LayerTx,
        chosen: Sequence[tuple[str, int]],
        forgotten: Sequence[str],
        selector: str,
        at_us: int,
        derived: Sequence[str] = (),
    ) -> None:
        """Delete every row holding these memories, in every table, with their history, access log
        and undo entries."""
        ...

    def prune_speakers(self, tx: LayerTx) -> None:
        """Forget the speakers of this scope no live memory has any more (after erase or a purge."""
        ...

    def schedule_purge(self, tx: LayerTx, ids: Sequence[str]) -> None:
        """Empty undo entries whose window passed, leaving their cleanup pending exactly like an
        erase's."""
        ...

    def pending_purge(self) -> list[str]:
        """Ids erased whose cleanup after the commit has not finished (any scope)."""
        ...

    def clear_purge(self, tx: LayerTx, ids: Sequence[str]) -> None:
        """The cleanup of these erased ids finished."""
        ...

    def tombstones(self) -> list[dict[str, Any]]:
        """What erase removed in this scope."""
        ...

    def drop(self, tx: LayerTx, chosen: Sequence[tuple[str, int]]) -> None:
        """Delete memories for good (expired, or orphaned), with their layer rows."""
        ...

    def expired(self, now_us: int) -> list[tuple[str, int]]:
        """(id, label) of memories past their TTL, not yet deleted."""
        ...

    def orphans(self) -> list[str]:
        """Ids with layer rows (entities, a fact, a procedure) whose memory row is gone."""
        ...


class ArchiveRows(Protocol):
    """Archiving texts, consolidation's selections and adopting rows written below the layer."""

    def texts(self, ids: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(id, label, content, metadata JSON) of live, not yet archived memories."""
        ...

    def mark_archived(self, tx: LayerTx, rows: Sequence[tuple[str, int, str]], at_us: int) -> None:
        """The text of (id, label, digest) rows is now in the archive."""
        ...

    def unarchive(self, tx: LayerTx, mid: str, label: int, content: str, metadata: str) -> None:
        """Put an archived memory's text back into its row."""
        ...

    def all_archived(self) -> dict[str, str]:
        """Every archived id of the data dir (all scopes."""
        ...

    def archived_payload_ids(self) -> set[str]:
        """Ids in the undo area that were archived when forgotten (their text stays in the archive
        until undone or purged)."""
        ...

    def texts_of_type(self, type_: str) -> list[tuple[str, int, str, int, str | None]]:
        """(id, label, content, created_at_us, promoted_to) of live, unarchived memories of one type
        that are not facts, by creation time then id."""
        ...

    def set_promoted(self, tx: LayerTx, ids: Sequence[str], to: str) -> None:
        """These episodes made (or joined) the semantic memory ``to``."""
        ...

    def add_access_counts(self, tx: LayerTx, into: str, from_ids: Sequence[str]) -> None:
        """Fold the access counts of merged twins into the one kept."""
        ...

    def unadopted(
        self, limit: int = 5000, tx: LayerTx | None = None
    ) -> tuple[list[tuple[int, str, str, str, int]], int, int]:
        """Up to ``limit`` (label, id, conversation_id, content, created_at_us) of memory rows of
        this scope without a layer row yet (written by ``SqliteMemoryStore`` or the CLI's ``memory
        append``), above the label adoption last reached."""
        ...

    def adopt(
        self,
        rows: Sequence[tuple[int, str, str, str, int]],
        metas: Sequence[NewMemory],
        reached: int,
    ) -> None:
        """Give memory rows their layer rows (``unadopted``), and remember the label adoption
        reached, so the next open looks only above it."""
        ...


class SourceRows(Protocol):
    """Provenance: the memories each derived memory came from."""

    def add_sources(self, tx: LayerTx, memory_id: str, sources: Sequence[str]) -> None:
        """Record that ``memory_id`` was derived from ``sources`` (more may follow)."""
        ...

    def sources_of(
        self, ids: Sequence[str], tx: LayerTx | None = None
    ) -> dict[str, tuple[str, ...]]:
        """The sources of each of ``ids`` that is derived, in id order."""
        ...

    def derived_from(self, ids: Sequence[str], tx: LayerTx | None = None) -> set[str]:
        """Ids of the memories derived directly from any of ``ids`` (live, forgotten or archived."""
        ...

    def live_of(self, ids: Sequence[str], tx: LayerTx | None = None) -> list[tuple[str, int]]:
        """(id, label) of those of ``ids`` that are live memories of this scope."""
        ...

    def forgotten_of(
        self, ids: Sequence[str], tx: LayerTx | None = None
    ) -> dict[str, tuple[str, int]]:
        """The (token, until_us) of those of ``ids`` in this scope's undo area."""
        ...

    def move_forgotten(self, tx: LayerTx, ids: Sequence[str], token: str, until_us: int) -> None:
        """Put undo entries under another forget (its token and window)."""
        ...


__all__ = ["ArchiveRows", "ForgetRows", "SourceRows"]
