"""The one source → sidecar mechanism shared by every derived index (see docs/design.md).

A *source* (the SQLCipher memory table, the sealed document log) is the truth: it has a
monotonically increasing seq and a feed of changes (inserts and deletes) after any seq.
A *sidecar* is a directory holding an index derived from it::

    <dir>/manifest.json          format, kind, store id, covered_seq, entries, embedder,
                                 params, sha256 of each data file, HMAC over all of it
    <dir>/<kind>-<gen>-<name>    data files, each sealed with AES-256-GCM (sidecar subkey)
    <dir>/<kind>-<gen>.tree/     or, for an adapter that keeps its own files (blinded
                                 Tantivy), a directory of them, each with its sha256

``Sidecar`` opens it (verifying the manifest's HMAC and every checksum and tag BEFORE the
index library sees a byte), replays the source's changes after ``covered_seq``,
checkpoints every ``checkpoint_every`` changes, and rebuilds from the source whenever
anything is missing, damaged, stale or from another store, format or embedder. An index
that fails while the process runs (its files deleted under it, a native error, a disk
that cannot take its writes) is rebuilt the same way: ``catch_up`` reports it,
``heal`` rebuilds, and ``read`` runs a query with both. The index
library is behind ``SidecarIndex``: a small, library-agnostic adapter that turns items
into an in-memory index and the index into named byte strings and back. What a
checkpoint holds, and how one is written, loaded and verified, is ``checkpoints``; the
files on disk (manifest, MAC, sealed data files) are read and verified in ``manifest``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..base.errors import SidecarCorruptError, StoreIOError
from ..storage.fileio import DEFAULT_IO, FileIO, translate_os_errors
from . import checkpoints
from .failures import IndexFailed, index_failure, is_fatal, is_store_error
from .manifest import LOCK, CheckpointFiles
from .types import (
    EmbedderInfo,
    KeepsFiles,
    OpenReport,
    Progress,
    Scrubs,
    SidecarIndex,
    SidecarStatus,
    Source,
)

log = logging.getLogger(__name__)

P = TypeVar("P")
R = TypeVar("R")
READ_TRIES = 3  # a query, then at most two rebuilds (e.g. on disk, then in RAM)


class Sidecar(Generic[P]):
    """A derived index kept in step with its source, checkpointed and self-healing.

    Thread-safe: one lock serialises replay, checkpoints, rebuilds and ``locked`` reads.
    """

    def __init__(
        self,
        directory: Path,
        index: SidecarIndex[P],
        source: Source[P],
        *,
        key: bytes,
        embedder: EmbedderInfo | None = None,
        checkpoint_every: int = 100,
        io: FileIO = DEFAULT_IO,
        batch: int = 10_000,
        checkpoint_growth: float = 0.0,
        checkpoint_growth_above: int = 0,
    ) -> None:
        self.directory = Path(directory)
        self.index = index
        self.source = source
        self.embedder = embedder
        self.checkpoint_every = checkpoint_every
        self.checkpoint_growth = checkpoint_growth
        self.checkpoint_growth_above = checkpoint_growth_above
        self._io = io
        self._batch = batch
        self._files = CheckpointFiles(self.directory, key, io=io)
        self.lock = threading.RLock()
        self.applied_seq = 0  # the in-memory index reflects every change up to here
        self.covered_seq = 0  # the checkpoint on disk covers changes up to here
        self._pending = 0  # changes applied since the last checkpoint
        self._last_checkpoint: str | None = None
        self.opened: OpenReport | None = None  # what the last ``open`` did
        # Asked once: a runtime Protocol check costs microseconds, ``lost`` runs per query.
        self._keeps_files = isinstance(index, KeepsFiles)

    def __repr__(self) -> str:
        return f"Sidecar(kind={self.index.kind!r}, dir={str(self.directory)!r})"

    # ------------------------------------------------------------------ open / rebuild
    def open(self, progress: Progress | None = None) -> OpenReport:
        """Load the checkpoint (verified) and replay, or rebuild from the source."""
        t0 = time.perf_counter()
        with self.lock:
            reason: str | None = None
            try:
                self._load_checkpoint()
            except SidecarCorruptError as exc:
                reason = exc.message
            except BaseException as exc:
                if is_fatal(exc):
                    raise
                reason = f"{self.index.kind} loader failed: {type(exc).__name__}: {exc}"
            replayed = 0
            if reason is None:
                try:
                    replayed = self._replay()
                except BaseException as exc:
                    # Source errors (damaged database, I/O) are the caller's to see; an
                    # index that chokes on replay is rebuilt.
                    if is_fatal(exc) or is_store_error(exc):
                        raise
                    reason = f"replay failed: {type(exc).__name__}: {exc}"
            if reason is not None:
                self._rebuild(progress, reason)
                self._checkpoint_quietly()
            elif self._checkpoint_due():
                self._checkpoint_quietly()
            self.opened = OpenReport(
                loaded=reason is None,
                rebuilt=reason is not None,
                reason=reason,
                replayed=replayed,
                covered_seq=self.covered_seq,
                seconds=time.perf_counter() - t0,
            )
            return self.opened

    def rebuild(self, progress: Progress | None = None, *, reason: str = "requested") -> None:
        """Rebuild the index from the source, then checkpoint it (I/O errors raise). Asked
        for (``agentzero store rebuild``, a compaction), so logged as information."""
        with self.lock:
            self._rebuild(progress, reason, asked=True)
            self.checkpoint(force=True)

    def _rebuild(
        self, progress: Progress | None, reason: str, *, warn: bool = False, asked: bool = False
    ) -> None:
        with self.lock:
            # A first build, or one the caller asked for, is routine; replacing a
            # checkpoint that exists on our own, or an index that broke under a running
            # process (``warn``), is worth a warning.
            try:
                fresh = all(p.name == LOCK for p in self.directory.iterdir())
            except OSError:
                fresh = True  # no directory (yet, or deleted under us)
            level = logging.INFO if (fresh or asked) and not warn else logging.WARNING
            log.log(
                level, "rebuilding the %s index in %s: %s", self.index.kind, self.directory, reason
            )
            try:
                self._apply(self.index.reset)
                # Read the seq BEFORE the snapshot: replaying from it afterwards covers
                # every change the (non-transactional) snapshot may have missed.
                seq = self.source.source_seq()
                total, done = self.source.item_count(), 0
                if progress:
                    progress(0, total)
                for items in self.source.snapshot(self._batch):
                    self._apply(self.index.insert, items)
                    done += len(items)
                    if progress:
                        progress(done, max(total, done))
                self.applied_seq, self.covered_seq, self._pending = seq, 0, 0
                self._replay()
            except IndexFailed as failed:
                raise failed.public(self.index.kind) from failed.cause
            self._pending = max(self._pending, 1)  # nothing of this index is on disk yet

    def heal(self, reason: str) -> None:
        """Rebuild a failed index from the source; a failed checkpoint is only logged.

        For a running process whose index broke (see ``lost``): it answers again once
        this returns. Errors of the source itself propagate.
        """
        with self.lock:
            self._rebuild(None, reason, warn=True)
            self._checkpoint_quietly()

    def lost(self) -> str | None:
        """Why the index must be rebuilt before it answers again (its files removed
        under it, a native failure), or None. Cheap: at most one ``stat``."""
        if self._keeps_files:
            why: str | None = self.index.lost()  # type: ignore[attr-defined]
            return why
        return None

    def read(self, query: Callable[[SidecarIndex[P]], R]) -> R:
        """Run ``query`` on the index under the lock, healing the index if it is lost or
        fails (at most ``READ_TRIES - 1`` rebuilds); never a raw native error.

        The last failure is raised typed: ``StoreIOError`` when the disk fails, else
        ``SidecarCorruptError``; errors of the source propagate as they are.
        """
        with self.lock:
            if (why := self.lost()) is not None:
                self.heal(why)
            attempt = 1
            while True:
                try:
                    return query(self.index)
                except BaseException as exc:
                    if not index_failure(exc):
                        raise
                    failed = IndexFailed(exc)
                    if attempt == READ_TRIES:
                        raise failed.public(self.index.kind) from exc
                attempt += 1
                self.heal(f"a query failed: {failed}")

    # ------------------------------------------------------------------ replay
    def catch_up(self, *, checkpoint: bool = True) -> int:
        """Apply the source's changes after ``applied_seq``; checkpoint when due (unless
        ``checkpoint`` is False: a caller batching many writes checkpoints once after).

        Returns how many changes were applied. Cheap when nothing changed (one seq read).
        Raises ``SidecarCorruptError`` when the index itself is lost or fails (its files
        removed under it, a native error): ``heal`` rebuilds it. Errors of the source
        propagate as they are.
        """
        with self.lock:
            if (why := self.lost()) is not None:
                raise SidecarCorruptError(f"the {self.index.kind} index is lost: {why}")
            if self.source.source_seq() <= self.applied_seq:
                return 0
            try:
                n = self._replay()
            except IndexFailed as failed:
                raise SidecarCorruptError(
                    f"the {self.index.kind} index failed applying changes: {failed}"
                ) from failed.cause
            if checkpoint and self._checkpoint_due():
                self._checkpoint_quietly()
            return n

    def checkpoint_if_due(self) -> None:
        """Write a checkpoint if enough changes are pending (a failure is only logged)."""
        with self.lock:
            if self._checkpoint_due():
                self._checkpoint_quietly()

    def purge_deleted(self) -> int:
        """Apply the source's changes, drop what the index still holds of deleted entries
        (if it ``Scrubs``), then write a checkpoint now, replacing whatever is on disk:
        afterwards neither holds the data of a row the source deleted (an erase), at the
        cost of one checkpoint, not a rebuild.

        An index that is lost, or fails applying the changes or scrubbing, is rebuilt
        from the source (its deletes after the snapshot are then scrubbed too); a second
        failure raises. Errors of the source, and I/O errors writing the checkpoint,
        raise. Returns the entries scrubbed.
        """
        with self.lock:
            why = self.lost()
            if why is None:
                try:
                    self._replay()
                except IndexFailed as failed:
                    why = f"applying changes failed: {failed}"
            for attempt in (1, 2):
                if why is not None:
                    self._rebuild(None, why, warn=True)
                try:
                    scrubbed = self.index.scrub() if isinstance(self.index, Scrubs) else 0
                    break
                except BaseException as exc:
                    if not index_failure(exc):
                        raise
                    if attempt == 2:
                        raise IndexFailed(exc).public(self.index.kind) from exc
                    why = f"scrubbing failed: {IndexFailed(exc)}"
            self.checkpoint(force=True)
            return scrubbed

    def _checkpoint_due(self) -> bool:
        # A checkpoint rewrites the whole index. With checkpoint_growth > 0, an index of
        # more than checkpoint_growth_above entries also waits for that fraction of the
        # entries beyond that size, so the cost per change stays flat instead of growing
        # with the index; a crash then replays at most that many changes from the
        # source (which has them all: nothing is lost). Smaller indexes are cheap to
        # write and keep the plain every-checkpoint_every-changes schedule.
        if self._pending < self.checkpoint_every:
            return False
        if not self.checkpoint_growth:
            return True
        beyond = self.index.count() - self.checkpoint_growth_above
        return self._pending >= self.checkpoint_growth * beyond

    def _replay(self) -> int:
        n = 0
        while changes := self.source.changes_since(self.applied_seq, self._batch):
            inserts: list[tuple[int, P]] = []
            deletes: list[int] = []
            for ch in changes:
                # Keep feed order: flush pending inserts before a delete and vice versa.
                if ch.op == "insert":
                    if deletes:
                        self._apply(self.index.delete, deletes)
                        deletes = []
                    if ch.payload is not None:  # None: the row is gone, a delete follows
                        inserts.append((ch.key, ch.payload))
                else:
                    if inserts:
                        self._apply(self.index.insert, inserts)
                        inserts = []
                    deletes.append(ch.key)
            if inserts:
                self._apply(self.index.insert, inserts)
            if deletes:
                self._apply(self.index.delete, deletes)
            self.applied_seq = changes[-1].seq
            self._pending += len(changes)
            n += len(changes)
        return n

    def _apply(self, op: Callable[..., None], *args: Sequence[Any]) -> None:
        """Call the index; its failure raises ``IndexFailed`` (see there)."""
        try:
            op(*args)
        except BaseException as exc:
            if not index_failure(exc):
                raise
            raise IndexFailed(exc) from exc

    # ------------------------------------------------------------------ checkpoint
    def checkpoint(self, *, force: bool = False) -> None:
        """Durably write the index: sealed data files first, then the manifest.

        A checkpoint another process wrote further along the same source is kept (unless
        ``force``: an explicit rebuild always leaves its own), but never one that claims
        more than the source holds.

        The manifest is the commit point. Data files get fresh names, so until the new
        manifest is renamed into place the old manifest still names the old, intact
        files: a crash at any instant leaves the old checkpoint or the new one.
        """
        with translate_os_errors("creating", self.directory):
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self.lock, self._files.lock():
            on_disk = self._files.read_manifest_quietly()
            if (
                not force
                and on_disk is not None
                and self._mismatch(on_disk) is None
                and self.applied_seq < on_disk.get("covered_seq", 0) <= self.source.source_seq()
            ):
                # Another process sharing this data dir checkpointed further; keep its.
                self._pending = 0
                return
            try:
                self._write_checkpoint()
            except BaseException:
                # Files of a checkpoint whose manifest was never committed are garbage:
                # without this, every failed attempt (disk full, index lost) left a
                # tree or sealed files behind, holding space, until a later success.
                self._files.collect_garbage(self.index.kind)
                raise

    def _write_checkpoint(self) -> None:
        """``checkpoint``'s writes, under its locks: data files, then the manifest."""
        seq = self.applied_seq
        now, keep = checkpoints.write(
            self._files, self.index, self.source, self.embedder, seq, io=self._io
        )
        self.covered_seq, self._pending, self._last_checkpoint = seq, 0, now
        self._files.remove_unreferenced(self.index.kind, keep)

    def close(self) -> None:
        """Release the index's working files, if it keeps any (checkpoints stay)."""
        with self.lock:
            if isinstance(self.index, KeepsFiles):
                self.index.close()

    def _checkpoint_quietly(self) -> None:
        # A failed checkpoint loses nothing (the source has every change): log it and
        # try again after the next batch. An index that failed while saving says so
        # through ``lost``, and the next query rebuilds it.
        try:
            self.checkpoint()
        except (StoreIOError, SidecarCorruptError) as exc:
            log.warning("could not checkpoint the %s index: %s", self.index.kind, exc.message)

    # ------------------------------------------------------------------ status
    def status(self) -> SidecarStatus:
        """Seqs, entries, size on disk, last checkpoint time and embedder."""
        with self.lock:
            size = self._files.size_bytes()
            last = self._last_checkpoint
            if last is None and (m := self._files.read_manifest_quietly()) is not None:
                last = m.get("created_at")
            return SidecarStatus(
                kind=self.index.kind,
                path=str(self.directory),
                covered_seq=self.covered_seq,
                applied_seq=self.applied_seq,
                source_seq=self.source.source_seq(),
                entries=self.index.count(),
                size_bytes=size,
                last_checkpoint=last,
                embedder=self.embedder.model_id if self.embedder else None,
                dimension=self.embedder.dimension if self.embedder else None,
            )

    @property
    def pending(self) -> int:
        """Changes applied in memory but not yet checkpointed."""
        return self._pending

    def verify_checkpoint(self) -> tuple[dict[str, Any], str | None]:
        """Check the checkpoint on disk without loading it (for ``agentzero store verify``).

        Returns ``(manifest, stale)``: ``stale`` names the first field that does not fit
        this sidecar's source (another store id or log generation: the next open rebuilds
        it), else None after the manifest's MAC and every data file's checksum and AES-GCM
        tag were checked. Raises ``SidecarCorruptError`` naming what is damaged.
        """
        with self.lock:
            return checkpoints.verify(self._files, self.index, self.source)

    # ------------------------------------------------------------------ internals
    def _load_checkpoint(self) -> None:
        seq, created_at = checkpoints.load(self._files, self.index, self.source, self.embedder)
        self.applied_seq = self.covered_seq = seq
        self._pending = 0
        self._last_checkpoint = created_at

    def _mismatch(self, m: Mapping[str, Any]) -> str | None:
        """The first manifest field that does not fit this sidecar, or None."""
        return checkpoints.mismatch(m, self.index, self.source, self.embedder)


__all__ = ["READ_TRIES", "Sidecar"]
