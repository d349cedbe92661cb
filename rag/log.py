"""The sealed, append-only document log (``rag/index.jsonl``): the document store's truth.

Line format, AAD and why only ``seq`` is in the clear: see ``rag.framing``.

Replay rules (on open):

* Every complete line (ending in ``\\n``) is checked: envelope + CRC, seq = previous + 1,
  AES-GCM authentication, and the op and id of its payload (all replay keeps). Any
  failure raises ``CorruptStoreError`` (``TamperedRecordError`` when the CRC is fine but
  authentication fails) naming the file, line and byte offset. Nothing is modified: fail
  closed, then ``rag.salvage`` on request. The rest of an authentic payload (text, dates,
  vectors) is decoded, and a bad one reported with its line and offset, when the record
  is read; ``agentzero store verify`` decodes every record whole.
* The replay catalog (``rag.catalog``, a disposable derived file) lets an open skip the
  lines it covers: it is trusted only if authentic, of this store and generation, and
  the sha256 of the covered bytes still matches, i.e. they are byte for byte the lines
  that were checked when it was written (and each is authenticated again when read).
  Any doubt → the whole file is replayed as above, so damage is still named precisely.
* Bytes after the last newline are a torn append (we write ``line + \\n`` in one write, and
  a crash loses a suffix of it). They were never acknowledged: they are cut off with a
  ``TornTailWarning`` and every record before them survives.
* A *complete* last line with a bad CRC is corruption, not a torn write (as in LevelDB):
  the newline is the last byte of the write, so a line that ends in one is a line we
  acknowledged or someone edited. Refusing to open is recoverable (salvage); silently
  dropping an acknowledged record is not.

Generations: the header (line 1) carries a random generation id that is bound into every
record's AAD. ``compact`` writes a new generation with renumbered seqs, so a derived index
must store ``(generation, covered seq)`` and rebuild when the generation differs;
``changes_since`` raises ``StaleFeedError`` for positions the generation cannot serve.

One writer at a time: a read-write open takes an exclusive ``flock`` on
``index.jsonl.lock``; ``readonly=True`` opens take no lock, never write, and read the file
as it was when opened (a torn tail is ignored, not cut). Within a process, writes are
serialised by a mutex and reads may run beside appends from other threads; ``compact``
swaps the file underneath readers, so do not run it concurrently with reads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from agentzero_store.base.errors import (
    CorruptStoreError,
    InvalidArgumentError,
    StoreIOError,
    StoreNotFoundError,
)
from agentzero_store.storage.ack_format import SourceState
from agentzero_store.storage.fileio import (
    DEFAULT_IO,
    AppendFile,
    FileIO,
    atomic_write,
    cleanup_temp_files,
    translate_os_errors,
)
from agentzero_store.storage.keys import StoreKeys
from agentzero_store.storage.sources import SourceGuard, judge_documents, loss_error

from . import catalog
from .catalog import CatalogFile
from .framing import LogCodec, new_generation
from .log_read import LogReader
from .log_write import acquire_writer_lock, encode_batch
from .migrate import is_legacy, log_kind, migrate_legacy_log
from .records import Change, Delete, LogHeader, Upsert, utcnow
from .replay import apply_change, replay

logger = logging.getLogger(__name__)


class TornTailWarning(UserWarning):
    """An unacknowledged, partially written last line was cut off on open."""


class DocumentLog(LogReader):
    """The open document log. Use ``DocumentLog.open``; close it (or use ``with``).

    Reads (ids, versions, the change feed) are ``LogReader``'s; this class opens, locks,
    replays, writes, compacts and closes.
    """

    def __init__(
        self, path: Path, keys: StoreKeys, io: FileIO, clock: Callable[[], datetime], readonly: bool
    ) -> None:
        super().__init__(path, LogCodec(keys))
        self.readonly = readonly
        self._io = io
        self._clock = clock
        self._mutex = threading.Lock()
        self._lock_fd: int | None = None
        self._file: AppendFile | None = None
        self._broken = False
        self._size = 0  # end of the last good line
        self._catalog = CatalogFile(path, keys, io)
        self._covered = 0  # records the catalog on disk covers
        self._acks: SourceGuard | None = None  # the ledger's view of this log, if any
        self.migrated: int | None = None  # documents sealed from a plaintext log by open

    @classmethod
    def open(
        cls,
        path: Path | str,
        keys: StoreKeys,
        *,
        io: FileIO = DEFAULT_IO,
        create: bool = True,
        readonly: bool = False,
        migrate_legacy: bool = True,
        clock: Callable[[], datetime] = utcnow,
        acks: SourceGuard | None = None,
    ) -> DocumentLog:
        """Open (creating, migrating or repairing a torn tail as needed) and replay the log.

        Raises ``StoreNotFoundError`` if it is missing and ``create`` is false (or
        ``readonly``), ``CorruptStoreError``/``TamperedRecordError`` for damage before the
        tail, ``SchemaVersionError`` for a newer format, ``StoreLockedError`` if another
        process holds the writer lock. ``migrate_legacy`` seals a plaintext legacy log in
        place (``rag.migrate``); turn it off where the data dir may be written by others.

        ``acks``: the data dir's acknowledgement ledger. The log is checked against it
        before anything is created, migrated or cut (``SourceLossError`` when it holds
        less than was acknowledged, is missing, emptied, replaced, or a plaintext log
        appears where a sealed one was), and every append is acknowledged in it.
        """
        log = cls(Path(path), keys, io, clock, readonly)
        log._acks = acks
        try:
            log._open(create=create, migrate_legacy=migrate_legacy)
        except BaseException:
            log.close()
            raise
        return log

    # ----------------------------------------------------------------- open / replay

    def _open(self, *, create: bool, migrate_legacy: bool) -> None:
        kind = log_kind(self.path)
        if self._acks is not None and kind != "sealed":
            # Before anything is created or migrated over it.
            problem = judge_documents(self._acks.state(), kind=kind)
            if problem is not None:
                raise loss_error(problem, self.path)
        if kind == "missing" and (self.readonly or not create):
            raise StoreNotFoundError(f"no document log at {self.path}")
        if not self.readonly:
            with translate_os_errors("creating", self.path.parent):
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._lock_fd = acquire_writer_lock(self.path, self._io)
            # Only the lock holder may do this: a crash inside atomic_write can leave a
            # (sealed) temp file beside the log; no other writer can be mid-rename now.
            cleanup_temp_files(self.path.parent)
        if not self.path.exists():
            if self._acks is not None:
                self._acks.will_create()  # so an emptied or planted file is never "new"
            header = LogHeader(new_generation(), self._clock(), "new")
            # Created whole by atomic_write, so a log never exists without its header.
            atomic_write(self.path, self._codec.encode_log(header, []), io=self._io)
        elif is_legacy(self.path):
            if self.readonly or not migrate_legacy:
                raise CorruptStoreError(
                    "the document log is a plaintext legacy log",
                    path=self.path,
                    hint="open it read-write with migrate_legacy=True to seal it",
                )
            self.migrated = migrate_legacy_log(
                self.path, self._codec, io=self._io, clock=self._clock
            )
        self._load()

    def _load(self) -> None:
        """Replay the whole file into memory (ids and offsets only; texts stay on disk)."""
        # The ledger is read BEFORE the file: whatever it says was acknowledged had been
        # fsynced into the file first, so a writer appending meanwhile cannot make this
        # reader see fewer records than the ledger it read.
        acked = self._acks.state() if self._acks is not None else None
        with translate_os_errors("opening", self.path):
            self._rfd = os.open(self.path, os.O_RDONLY)
        fd = self._rfd
        with open(fd, "rb", closefd=False) as f:
            # The catalog (if valid for these exact bytes) spares replaying what it covers.
            state = replay(f, self._checker, resume=lambda gen, at: self._catalog.load(fd, gen, at))
        # Checked against the ledger before the torn tail is cut: a log that holds less
        # than was acknowledged is refused untouched.
        self._check_acks(acked, state.header.generation, len(state.slots))
        if not self.readonly:
            self._file = AppendFile(self.path, io=self._io)
            if state.torn is not None:
                # Cut only after every earlier line verified: on damage we fail closed
                # with the file untouched. The torn bytes were never acknowledged (the
                # fsync of their append did not return), so dropping them loses nothing.
                msg = (
                    f"{self.path}: dropping a torn last line ({len(state.torn.data)} bytes "
                    f"at offset {state.torn.offset}) left by an interrupted append"
                )
                logger.warning(msg)
                warnings.warn(msg, TornTailWarning, stacklevel=4)
                self._file.truncate(state.size)
        self._header, self._slots, self._live = state.header, state.slots, state.live
        self._prev, self._prev_last = [], {}
        self._size = state.size
        self._covered = state.covered

    def _check_acks(self, state: SourceState | None, generation: str, seq: int) -> None:
        acks = self._acks
        if acks is None or state is None:
            return
        problem = judge_documents(state, kind="sealed", generation=generation, seq=seq)
        if problem is not None and self.readonly:
            # A reader takes no lock: a compaction may have moved the ledger on between
            # our read of it and of the file. Read it once more before crying loss.
            state = acks.state()
            problem = judge_documents(state, kind="sealed", generation=generation, seq=seq)
        if problem is not None:
            raise loss_error(problem, self.path)
        if not state.created:
            acks.adopt(seq, generation)  # a store from before the ledger (any open records it)
        elif self.readonly:
            return
        elif state.pending is not None and generation == state.pending[0]:
            acks.end_generation(generation, seq)  # a compaction (maybe interrupted) landed
        elif state.generation != generation:
            acks.acknowledge(seq, generation)  # a log created since the ledger was written

    # ----------------------------------------------------------------- writes

    def upsert(
        self,
        doc_id: str,
        text: str,
        *,
        title: str | None = None,
        source_path: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Change:
        """Durably store a document version; returns its change (seq and sealed record)."""
        op = Upsert(doc_id, text, title=title, source_path=source_path, metadata=metadata or {})
        change = self.append_many([op])[0]
        assert change is not None
        return change

    def delete(self, doc_id: str) -> Change | None:
        """Durably delete ``doc_id`` (a tombstone with its own seq); None if it is not live."""
        return self.append_many([Delete(doc_id)])[0]

    def append_many(self, ops: Iterable[Upsert | Delete]) -> list[Change | None]:
        """Apply ``ops`` in order with ONE write and ONE fsync (group commit).

        Returns one entry per op: its ``Change``, or None for a delete of an id that is
        not live (nothing written). Durable when it returns. Not a transaction: after a
        crash *during* the call, a prefix of the batch may survive (never acknowledged).
        """
        ops = list(ops)
        with self._mutex:
            self._check_writable()
            assert self._file is not None
            batch = encode_batch(
                ops,
                self._codec,
                now=self._clock(),
                generation=self.generation,
                seq=self.seq,
                offset=self._size,
                live=self._live,
                stored_created_at=self._stored_created_at,
            )
            if batch.slots:
                self._append(batch.data)
                # Acknowledged (fsynced): only now does memory reflect the new records.
                for slot in batch.slots:
                    self._slots.append(slot)
                    apply_change(self._live, slot.op, slot.doc_id, len(self._slots))
                self._size = batch.end
                if self._acks is not None:
                    # After the fsync: the ledger never claims more than the file holds.
                    self._acks.acknowledge(self.seq, self.generation)
            return batch.changes

    def _stored_created_at(self, doc_id: str) -> datetime | None:
        current = self.get(doc_id)
        return current.created_at if current is not None else None

    def _append(self, data: bytes) -> None:
        assert self._file is not None
        try:
            # One write + one fsync for the whole batch: durable before we acknowledge.
            self._file.append(data)
        except StoreIOError:
            try:
                # Cut back whatever part of the batch reached the file, so the next
                # append does not follow a half line or reuse a seq that is on disk.
                self._file.truncate(self._size)
            except StoreIOError:
                # Unknown tail: refuse further writes; reopening replays and repairs it.
                self._broken = True
            raise

    def compact(self) -> str:
        """Rewrite the log with only the live documents (seqs 1..N) as a new generation.

        Atomic (``atomic_write``): a crash leaves the old log or the new one. Returns the
        new generation id; derived indexes built on the old one must rebuild.
        """
        with self._mutex:
            self._check_writable()
            # Read (and fully decode) EVERY record, not only the live ones: replay decoded
            # just the op and id, and a record that compaction drops must not take an
            # undecodable payload with it unreported.
            live = set(self._live.values())
            entries = []
            for seq in range(1, self.seq + 1):
                entry = self._read_entry(seq)
                if seq in live:
                    entries.append(entry)
            header = LogHeader(new_generation(), self._clock(), "compact")
            if self._acks is not None:
                # Durable before the file is replaced: an open after a crash on either
                # side of the rename finds the log it expects (the old or the new one).
                self._acks.begin_generation(header.generation, len(entries))
            atomic_write(self.path, self._codec.encode_log(header, entries), io=self._io)
            # Our descriptors point at the replaced file: reopen and replay the new one.
            self._close_files()
            try:
                self._load()
            except BaseException:
                self._broken = True
                raise
            return header.generation

    # ----------------------------------------------------------------- lifecycle

    def _check_writable(self) -> None:
        self._check_open()
        if self.readonly:
            raise InvalidArgumentError("the document log was opened read-only")
        if self._broken:
            raise StoreIOError(
                "an earlier write failed and could not be rolled back",
                hint="close and reopen the document log; acknowledged writes are intact",
            )

    def _close_files(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._rfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._rfd)
            self._rfd = None

    def _save_catalog(self) -> None:
        # Only a healthy read-write log that still holds its lock (no other writer can
        # append meanwhile), and only when enough is new: else replaying is cheaper.
        if self.readonly or self._broken or self._closed or self._header is None:
            return
        if self._rfd is None or self.seq - self._covered < catalog.MIN_NEW_RECORDS:
            return
        try:
            self._catalog.save(self._rfd, self.generation, self._slots, self._size)
        except Exception as exc:  # a derived file: failing to write it loses nothing
            logger.warning("could not write the replay catalog of %s: %s", self.path, exc)
        else:
            self._covered = self.seq

    def close(self) -> None:
        """Save the replay catalog if worth it, close the files and release the writer
        lock. Idempotent."""
        with self._mutex:
            self._save_catalog()
        self._close_files()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                self._io.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None
        self._closed = True

    def __enter__(self) -> DocumentLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DocumentLog({str(self.path)!r}, seq={self.seq}, live={len(self._live)})"


__all__ = ["DocumentLog", "TornTailWarning"]
