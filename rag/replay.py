"""Replaying a document log: check every line, in order, and name the first bad one.

Shared by ``DocumentLog`` (on open, after compaction, and on every lazy read). Strict by
design: the first line that is damaged (CRC), out of sequence, or not authentic raises a
``CorruptStoreError`` / ``TamperedRecordError`` naming the file, line and byte offset.
``rag.salvage`` is the lenient reader.

Light by default: replay keeps only ``Slot(offset, length, op, doc_id)`` and the live map,
so it authenticates every line but decodes only the op and id of each payload
(``LogCodec.open_record_head``); building whole ``DocumentRecord`` objects was most of
the cost of an open. Reads decode the whole payload (``LineChecker.entry``), and
``replay(..., full=True)`` (verify, backup) decodes every record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple, Protocol

from cryptography.exceptions import InvalidTag

from agentzero_store.base.errors import CorruptStoreError, TamperedRecordError

from .framing import DamagedLine, LogCodec, RawLine, check_format, parse_frame
from .records import DocumentRecord, Entry, LogHeader, Op, PayloadError

SALVAGE_HINT = (
    "the log was not modified; copy every readable record into a new log with "
    "rag.salvage.salvage(src, dst, keys), or restore from a backup"
)


class Slot(NamedTuple):
    """Where record ``seq`` lives in the file (kept in memory instead of its text)."""

    offset: int
    length: int  # without the newline
    op: Op
    doc_id: str


class LineChecker:
    """Turns raw lines into authenticated entries, or into errors that say where."""

    def __init__(self, path: Path, codec: LogCodec) -> None:
        self.path = path
        self.codec = codec

    def error(self, cls: type[CorruptStoreError], what: str, raw: RawLine) -> CorruptStoreError:
        """A typed error naming this file, the line (1-based, header = 1) and its offset."""
        return cls(
            f"document log line {raw.lineno}: {what}",
            path=self.path,
            record=raw.lineno,
            offset=raw.offset,
            hint=SALVAGE_HINT,
        )

    def header(self, raw: RawLine) -> LogHeader:
        """Check and open line 1."""
        check_format(raw.data)
        if not raw.complete:
            # The header is only ever written whole (atomic_write), never appended.
            raise self.error(CorruptStoreError, "the header line is incomplete", raw)
        try:
            frame = parse_frame(raw.data)
        except DamagedLine as exc:
            raise self.error(CorruptStoreError, f"damaged header ({exc})", raw) from None
        if not frame.is_header:
            raise self.error(CorruptStoreError, "the first line is not a header", raw)
        try:
            return self.codec.open_header(frame)
        except InvalidTag:
            what = "the header fails authentication (modified, or from another store)"
            raise self.error(TamperedRecordError, what, raw) from None
        except PayloadError as exc:
            raise self.error(CorruptStoreError, f"undecodable header ({exc})", raw) from None

    def record_head(
        self, line: bytes, offset: int, generation: str, *, expected_seq: int
    ) -> tuple[Op, str]:
        """``(op, doc id)`` of one complete record line (``line`` ends in its newline,
        starts at byte ``offset``): authenticated, but only the head of the payload is
        decoded. Any line the fast path does not take is checked by ``entry`` instead,
        which opens it whole or raises the precise error."""
        got = self.codec.open_record_head(generation, line, expected_seq)
        if got is not None:
            return got
        entry = self.entry(_raw(expected_seq + 1, offset, line), generation, expected_seq)
        return op_of(entry), entry.id

    def record(
        self, line: bytes, offset: int, generation: str, *, expected_seq: int
    ) -> tuple[Op, str]:
        """``record_head``, but the whole payload is decoded (``store verify``)."""
        entry = self.entry(_raw(expected_seq + 1, offset, line), generation, expected_seq)
        return op_of(entry), entry.id

    def entry(self, raw: RawLine, generation: str, expected_seq: int) -> Entry:
        """Check and open one record line that must carry ``expected_seq``."""
        try:
            frame = parse_frame(raw.data)
        except DamagedLine as exc:
            raise self.error(CorruptStoreError, f"damaged record ({exc})", raw) from None
        if frame.is_header or frame.seq != expected_seq:
            # Continuous seqs make a gap (lost record), a repeat (duplicated line) or a
            # swap visible before we even decrypt.
            got = "a header" if frame.is_header else f"seq {frame.seq}"
            what = f"expected seq {expected_seq}, found {got} (missing, repeated or reordered)"
            raise self.error(CorruptStoreError, what, raw)
        try:
            return self.codec.open_record(generation, frame)
        except InvalidTag:
            what = (
                f"record seq {frame.seq} fails authentication "
                "(modified, swapped, or copied from another store or generation)"
            )
            raise self.error(TamperedRecordError, what, raw) from None
        except PayloadError as exc:
            raise self.error(CorruptStoreError, f"undecodable record ({exc})", raw) from None


@dataclass
class Replayed:
    """The state rebuilt from a file."""

    header: LogHeader
    slots: list[Slot]  # index = seq - 1
    live: dict[str, int]  # doc id -> seq of its live version, in last-write order
    size: int  # end of the last good line: where the next append goes
    torn: RawLine | None  # bytes after the last newline (an interrupted append)
    covered: int = 0  # records taken from a catalog (rag.catalog) instead of replayed


class Resumable(Protocol):
    """What ``replay`` may resume from: slots of records 1..N and the byte they end at."""

    @property
    def slots(self) -> list[Slot]: ...

    @property
    def size(self) -> int: ...


def op_of(entry: Entry) -> Op:
    """The op of the record that holds ``entry``."""
    return "upsert" if isinstance(entry, DocumentRecord) else "delete"


def apply_change(live: dict[str, int], op: Op, doc_id: str, seq: int) -> None:
    """Apply one change to the id -> seq map of live documents."""
    live.pop(doc_id, None)  # re-insert on upsert so dict order = last-write order
    if op == "upsert":
        live[doc_id] = seq


def replay(
    f: BinaryIO,
    checker: LineChecker,
    *,
    full: bool = False,
    resume: Callable[[str, int], Resumable | None] | None = None,
) -> Replayed:
    """Read a whole log; raises on any damaged, foreign or out-of-order complete line.

    Every complete line is checked as strictly either way (envelope, CRC, seq, AES-GCM
    with its AAD). ``full=False`` (opening a log) decodes only the op and the id of each
    payload, which is all replay keeps; the rest of a record is decoded, and checked,
    whenever it is read. ``full=True`` (``store verify``) decodes every record whole.

    ``resume(generation, header_end)`` may return a verified catalog of the first N
    records (``rag.catalog``, which checks they are these bytes of this generation);
    then only the lines after it are read. The header is always read and authenticated.
    """
    first_line = f.readline()
    if not first_line:
        raise CorruptStoreError(
            "the document log is empty (no header)",
            path=checker.path,
            record=1,
            offset=0,
            hint=SALVAGE_HINT,
        )
    first = _raw(1, 0, first_line)
    header = checker.header(first)
    state = Replayed(header, [], {}, first.end, None)
    check = checker.record if full else checker.record_head
    slots, live, generation = state.slots, state.live, header.generation
    offset = state.size
    start = resume(generation, offset) if resume is not None else None
    if start is not None:
        slots.extend(start.slots)
        for seq, slot in enumerate(slots, 1):
            apply_change(live, slot.op, slot.doc_id, seq)
        state.covered, offset = len(slots), start.size
        f.seek(offset)
    for line in f:
        seq = len(slots) + 1
        if line[-1:] != b"\n":
            state.torn = _raw(seq + 1, offset, line)  # necessarily the last line
            break
        op, doc_id = check(line, offset, generation, expected_seq=seq)
        slots.append(Slot(offset, len(line) - 1, op, doc_id))
        apply_change(live, op, doc_id, seq)
        offset += len(line)
    state.size = offset
    return state


def _raw(lineno: int, offset: int, line: bytes) -> RawLine:
    complete = line.endswith(b"\n")
    return RawLine(lineno, offset, line[:-1] if complete else line, complete)
