"""The read side of the document log: ids, versions and the change feed.

Replay (``rag.replay``) keeps only ids and offsets in memory; a text is read back with one
``pread`` and authenticated again on every read. ``DocumentLog`` opens the file, fills
this state from replay and extends it after each acknowledged append; ``LogReader`` only
reads it. Reads may run beside appends from other threads: a slot is published only
after its line is durable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from agentzero_store.base.errors import InvalidArgumentError, StoreClosedError, TamperedRecordError
from agentzero_store.storage.fileio import translate_os_errors

from .framing import LogCodec, RawLine
from .records import Change, DocumentRecord, Entry, LogHeader, StaleFeedError
from .replay import LineChecker, Slot, op_of


class LogReader:
    """Reads of an open document log, from its replayed slots and its read descriptor."""

    def __init__(self, path: Path, codec: LogCodec) -> None:
        self.path = path
        self._codec = codec
        self._checker = LineChecker(path, codec)
        self._rfd: int | None = None
        self._closed = False
        self._header: LogHeader | None = None
        self._slots: list[Slot] = []  # index seq-1
        self._live: dict[str, int] = {}  # doc id -> seq of its latest upsert
        # previous_version() index, extended lazily: seq-1 -> seq of the version it replaced
        self._prev: list[int | None] = []
        self._prev_last: dict[str, int | None] = {}

    @property
    def header(self) -> LogHeader:
        """The header of the current generation."""
        self._check_open()
        assert self._header is not None
        return self._header

    @property
    def generation(self) -> str:
        """Random id of this log file; changes on compact. Sidecars store it with their seq."""
        return self.header.generation

    @property
    def store_id(self) -> str:
        """The store id bound into every record."""
        return self._codec.store_id

    @property
    def seq(self) -> int:
        """The last seq written (0 for an empty log)."""
        return len(self._slots)

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._live

    def ids(self) -> list[str]:
        """Ids of the live documents, in the order they were last written."""
        return list(self._live)

    def seq_of(self, doc_id: str) -> int | None:
        """The seq of the upsert that wrote the live version of ``doc_id``, or None."""
        return self._live.get(doc_id)

    def get(self, doc_id: str) -> DocumentRecord | None:
        """The live version of ``doc_id`` (read and authenticated from disk), or None."""
        seq = self._live.get(doc_id)
        if seq is None:
            return None
        entry = self._read_entry(seq)
        assert isinstance(entry, DocumentRecord)
        return entry

    def previous_version(self, seq: int) -> int | None:
        """The seq of the upsert that was live for this record's document just before
        ``seq`` (None if it was new or deleted). Derived indexes use it to drop the
        chunks of the version an upsert or delete replaces."""
        self._check_open()
        if not 1 <= seq <= self.seq:
            raise InvalidArgumentError(f"seq {seq} is not in the log (1..{self.seq})")
        for i in range(len(self._prev), len(self._slots)):
            slot = self._slots[i]
            self._prev.append(self._prev_last.get(slot.doc_id))
            self._prev_last[slot.doc_id] = i + 1 if slot.op == "upsert" else None
        return self._prev[seq - 1]

    def iter_live(self) -> Iterator[tuple[int, DocumentRecord]]:
        """``(seq, record)`` of every live document, oldest write first (for rebuilds)."""
        self._check_open()
        generation = self.generation
        for seq in list(self._live.values()):  # dict order is last-write order
            self._check_generation(generation)
            entry = self._read_entry(seq)
            assert isinstance(entry, DocumentRecord)
            yield seq, entry

    def changes_since(
        self, seq: int, known: Callable[[int], DocumentRecord | None] | None = None
    ) -> Iterator[Change]:
        """Every change with a seq greater than ``seq``, oldest first.

        Yields ``Change(seq, op, doc_id, record)``: ``op`` is ``"upsert"`` (``record`` is
        that version, even if a later change replaced it) or ``"delete"`` (``record`` is
        None). ``known(seq)`` may supply records this process has just written (a
        write-through: no re-read and re-decrypt of what ``append_many`` sealed a moment
        ago); any other record is read from disk and authenticated. Raises
        ``StaleFeedError`` if ``seq`` is beyond the log (the caller's position came from
        another generation or a lost log) or if the log is compacted while iterating.
        """
        self._check_open()
        if not isinstance(seq, int) or seq < 0:
            raise InvalidArgumentError("seq must be a non-negative integer")
        if seq > self.seq:
            raise StaleFeedError(f"position {seq} is beyond the end of the log (seq {self.seq})")
        return self._changes(seq, self.generation, self._slots[seq:], known)

    def _changes(
        self,
        start: int,
        generation: str,
        slots: list[Slot],
        known: Callable[[int], DocumentRecord | None] | None,
    ) -> Iterator[Change]:
        for seq, slot in enumerate(slots, start + 1):
            self._check_generation(generation)
            record = None
            if slot.op == "upsert":
                record = known(seq) if known is not None else None
                if record is None or record.id != slot.doc_id:
                    entry = self._read_entry(seq)
                    assert isinstance(entry, DocumentRecord)
                    record = entry
            yield Change(seq, slot.op, slot.doc_id, record)

    def read(self, seq: int) -> Entry:
        """The record written at ``seq`` (any version, live or not), authenticated."""
        if not isinstance(seq, int) or not 1 <= seq <= self.seq:
            raise InvalidArgumentError(f"seq {seq!r} is not in the log (1..{self.seq})")
        return self._read_entry(seq)

    def doc_id_at(self, seq: int) -> str:
        """The document id of the record at ``seq`` (from memory, no disk read)."""
        self._check_open()
        return self._slots[seq - 1].doc_id

    def _read_entry(self, seq: int) -> Entry:
        # Re-read and re-authenticate: the file may have changed since replay, and
        # keeping every text in memory would cost as much RAM as the log.
        self._check_open()
        slot = self._slots[seq - 1]
        with translate_os_errors("reading", self.path):
            assert self._rfd is not None
            data = os.pread(self._rfd, slot.length + 1, slot.offset)
        raw = RawLine(seq + 1, slot.offset, data[:-1], data.endswith(b"\n"))
        entry = self._checker.entry(raw, self.generation, seq)
        if entry.id != slot.doc_id or op_of(entry) != slot.op:
            # Authentic but not what replay read from it: the file was replaced since
            # (e.g. restored from a backup), or a payload whose head says something else
            # than its whole (a repeated "id" or "op" key: only a writer with the key
            # can make one, and ours never does).
            what = "record changed on disk since it was replayed, or its payload is ambiguous"
            raise self._checker.error(TamperedRecordError, what, raw)
        return entry

    def _check_generation(self, generation: str) -> None:
        if self._header is None or self._header.generation != generation:
            raise StaleFeedError("the log was compacted during iteration; restart from seq 0")

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the document log is closed")


__all__ = ["LogReader"]
