"""The acknowledgement ledger: authenticated evidence of what each source holds.

A store must know what it acknowledged. A source file that is missing, emptied,
truncated at a record boundary, rolled back (a lost ``memory.db-wal``) or swapped for an
older copy looks, on its own, like a valid smaller store. So ``sources.ledger`` records,
per source, whether it was created and how far it was acknowledged:

- ``memory``: the newest acknowledged seq of ``memory.db``'s change feed (never shrinks:
  every insert and delete takes a new seq);
- ``documents``: the log generation and its last acknowledged record seq, and during a
  compaction the generation being written.

Every open compares the source with it and refuses (``SourceLossError``) when the source
holds less than was acknowledged; ``agentzero store verify`` reports the same, and
``agentzero store accept-loss`` records a loss the user accepts and starts from what is
there. Nothing is created or rewritten over a source that fails the check.

File format (two sealed slots per source, a torn write destroys at most the slot being
written): see ``ack_format``.

Durability and cost: an update is one ``pwrite`` of a 2 KiB slot, made after the source's
own fsync or commit returned, so the ledger on disk is never ahead of its source. It is
flushed (``fdatasync``) every ``flush_every`` updates, on close, and at once for rare
state changes (creation, a new generation, an accepted loss). A process crash (kill -9)
loses nothing of it (the page cache survives the process); a power loss can roll it back
to its last flush, which can only make it claim *less* than was acknowledged: such a
ledger never reports a false loss, but a loss of records acknowledged after its last
flush that coincides with the power loss goes unnoticed.

Callers hold the data dir's writer lock around ``acknowledge`` and every other update
(read-modify-write of a region); the object also serialises its own threads.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..base.config import Layout
from ..base.errors import CorruptStoreError
from .ack_format import (
    HEADER_BYTES,
    LEDGER_BYTES,
    MAGIC,
    SLOT_BYTES,
    SOURCES,
    RegionRead,
    Source,
    SourceState,
    initial_bytes,
    open_slot,
    seal_slot,
    slot_offset,
)
from .fileio import DEFAULT_IO, FileIO, atomic_write, io_error, translate_os_errors

FIX_LOSS = (
    "restore the file from a backup (`agentzero store restore BACKUP --data-dir NEW_DIR`), "
    "or recover what is readable (`agentzero rag salvage`), or record the loss and go on "
    "with what is there (`agentzero store accept-loss`)"
)


class SourceLossError(CorruptStoreError):
    """A source holds less than the store acknowledged (missing, empty, truncated,
    rolled back, replaced). Reads and writes refuse it; nothing was changed."""

    code = "source_loss"
    default_hint = FIX_LOSS


def ledger_path(root: Path) -> Path:
    """Where a data dir keeps its ledger."""
    return Layout(Path(root)).ledger


def create_ledger(
    root: Path,
    key: bytes,
    store_id: str,
    states: Mapping[Source, SourceState] | None = None,
    *,
    io: FileIO = DEFAULT_IO,
) -> None:
    """Write a fresh ledger (atomically, 0600): no source created yet, unless ``states``
    says otherwise (a restore records what it restored)."""
    atomic_write(ledger_path(root), initial_bytes(key, store_id, states), io=io, mode=0o600)


class Ledger:
    """The open ledger of one data dir (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        key: bytes,
        store_id: str,
        *,
        writable: bool,
        flush_every: int = 100,
        io: FileIO = DEFAULT_IO,
    ) -> None:
        self.path = ledger_path(root)
        self.store_id = store_id
        self._aead = AESGCM(key)
        self._io = io
        self._writable = writable
        self._flush_every = max(1, flush_every)
        self._unflushed = 0
        self._mutex = threading.Lock()
        self._fd: int | None = None
        # Per source: the region's bytes as last read or written here, and their meaning.
        self._seen: dict[Source, tuple[bytes, RegionRead]] = {}
        with translate_os_errors("opening", self.path):
            try:
                self._fd = io.open(self.path, os.O_RDWR if writable else os.O_RDONLY)
            except FileNotFoundError as exc:
                raise SourceLossError(
                    "the acknowledgement ledger is missing: the store cannot tell whether "
                    "its sources are whole",
                    path=self.path,
                    hint="restore the data dir from a backup, or run `agentzero store verify` "
                    "and then `agentzero store accept-loss` to start a new ledger from what "
                    "is there",
                ) from exc
        try:
            with translate_os_errors("reading", self.path):
                head = os.pread(self._fd, HEADER_BYTES, 0)
                size = os.fstat(self._fd).st_size
        except BaseException:
            self.close()
            raise
        if head[: len(MAGIC)] != MAGIC or size != LEDGER_BYTES:
            self.close()
            raise CorruptStoreError(
                f"the acknowledgement ledger is damaged (expected {LEDGER_BYTES} bytes "
                f"starting with {MAGIC.decode()}; found {size} bytes)",
                path=self.path,
                hint="run `agentzero store verify`, then `agentzero store accept-loss` to "
                "start a new ledger from what is there",
            )

    # ------------------------------------------------------------------ reading
    def read(self, source: Source) -> RegionRead:
        """Both slots of ``source``; never raises for damage (see ``state``)."""
        assert self._fd is not None
        try:
            both = os.pread(self._fd, 2 * SLOT_BYTES, slot_offset(source, 0))
        except OSError as exc:
            raise io_error("reading", self.path, exc) from exc
        cached = self._seen.get(source)
        if cached is not None and cached[0] == both:
            # The same bytes as last time (read or written by us): the same state, without
            # authenticating both slots again. Another process's update changes the bytes.
            return cached[1]
        got = self._parse(source, both)
        self._seen[source] = (both, got)
        return got

    def _parse(self, source: Source, both: bytes) -> RegionRead:
        best: SourceState | None = None
        best_slot: int | None = None
        damaged: list[int] = []
        for slot in (0, 1):
            raw = both[slot * SLOT_BYTES : (slot + 1) * SLOT_BYTES]
            st = open_slot(self._aead, self.store_id, source, raw)
            if st is None:
                if raw.strip(b"\0"):
                    damaged.append(slot)
                continue
            if best is None or st.version > best.version:
                best, best_slot = st, slot
        return RegionRead(best, tuple(damaged), best_slot)

    def state(self, source: Source) -> SourceState:
        """The newest authentic state of ``source``; raises if neither slot authenticates."""
        got = self.read(source)
        if got.state is None:
            raise CorruptStoreError(
                f"no slot of the {source} entry of the acknowledgement ledger authenticates "
                f"(damaged slots: {list(got.damaged) or 'none, both empty'})",
                path=self.path,
                record=SOURCES.index(source),
                offset=slot_offset(source, 0),
                hint="run `agentzero store verify`, then `agentzero store accept-loss` to "
                "start a new ledger from what is there",
            )
        return got.state

    # ------------------------------------------------------------------ writing
    def update(self, source: Source, state: SourceState, *, sync: bool) -> SourceState:
        """Write ``state`` (its version set to the current one + 1) into the slot that does
        not hold the current state; ``sync`` flushes at once. Returns what was written."""
        with self._mutex:
            return self._update(source, state, self.read(source), sync=sync)

    def _update(
        self, source: Source, state: SourceState, got: RegionRead, *, sync: bool
    ) -> SourceState:
        """Write ``state`` over the region whose current content is ``got``."""
        version = (got.state.version if got.state else 0) + 1
        return self._write(source, replace(state, version=version), got, sync=sync)

    def _write(
        self, source: Source, new: SourceState, got: RegionRead, *, sync: bool
    ) -> SourceState:
        if not self._writable or self._fd is None:
            raise AssertionError("the ledger was opened read-only")
        # Overwrite the slot that does NOT hold the current state: a torn write can only
        # destroy the slot being written, and the current state survives it.
        target = 1 - got.slot if got.slot is not None else 0
        data = seal_slot(self._aead, self.store_id, source, new)
        try:
            self._io.pwrite(self._fd, data, slot_offset(source, target))
        except OSError as exc:
            self._seen.pop(source, None)
            raise io_error("writing", self.path, exc) from exc
        cached = self._seen.get(source)
        if cached is not None and got.slot is not None:
            # What the region now holds: our slot beside the one we did not touch.
            old = cached[0]
            both = data + old[SLOT_BYTES:] if target == 0 else old[:SLOT_BYTES] + data
            damaged = tuple(d for d in got.damaged if d != target)
            self._seen[source] = (both, RegionRead(new, damaged, target))
        else:
            self._seen.pop(source, None)
        self._unflushed += 1
        if sync or self._unflushed >= self._flush_every:
            self._flush()
        return new

    def acknowledge(self, source: Source, seq: int, generation: str | None = None) -> None:
        """Record that ``source`` durably holds everything up to ``seq`` (of
        ``generation``). Call only after the source's fsync or commit returned. Cheap: a
        no-op when the ledger already says as much, else one sealed 2 KiB ``pwrite``
        (about 20 µs here)."""
        with self._mutex:
            got = self.read(source)
            cur = got.state or SourceState()
            if cur.created and cur.seq >= seq and cur.generation == generation:
                return
            if cur.seq and generation is not None and cur.generation not in (None, generation):
                raise CorruptStoreError(
                    f"the {source} source changed generation under the ledger "
                    f"({cur.generation} → {generation}) without a recorded compaction",
                    path=self.path,
                )
            new = SourceState(
                cur.version + 1, True, max(seq, cur.seq), generation, cur.pending, cur.losses
            )
            self._write(source, new, got, sync=False)

    def flush(self) -> None:
        """Make every update so far durable."""
        with self._mutex:
            self._flush()

    def _flush(self) -> None:
        if self._fd is not None and self._unflushed:
            with translate_os_errors("syncing", self.path):
                self._io.fsync(self._fd)
            self._unflushed = 0

    def close(self) -> None:
        """Flush and close. Idempotent."""
        with self._mutex:
            if self._fd is None:
                return
            with contextlib.suppress(Exception):
                self._flush()
            with contextlib.suppress(OSError):
                self._io.close(self._fd)
            self._fd = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def count(n: int) -> str:
    """``1,200``: counts in messages read like the issue tracker's."""
    return f"{n:,}"


def missing_range(found: int, expected: int) -> str:
    """``seq 601–1,200``."""
    if expected == found + 1:
        return f"seq {count(expected)}"
    return f"seq {count(found + 1)}–{count(expected)}"


__all__ = [
    "FIX_LOSS",
    "Ledger",
    "SourceLossError",
    "count",
    "create_ledger",
    "ledger_path",
    "missing_range",
]
