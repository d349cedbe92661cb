"""Explicit recovery of a damaged document log into a fresh one. Never modifies the source.

``DocumentLog.open`` fails closed on damage; ``salvage`` is the deliberate next step. It
reads every line of the source, keeps each record that is intact (CRC) and authentic
(AES-GCM with this store's key, the source's generation and the seq written on the
line), orders them by that seq (which undoes swaps and drops duplicates), and writes them
as a new generation with seqs renumbered 1..N. Everything it could not use is reported
with its line and byte offset, and so are the seqs that are missing: a lost *delete* can
bring a document back, so read the report before replacing the original.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cryptography.exceptions import InvalidTag

from agentzero_store.base.errors import CorruptStoreError, SchemaVersionError, StoreExistsError
from agentzero_store.storage.fileio import DEFAULT_IO, FileIO, atomic_write, translate_os_errors
from agentzero_store.storage.keys import StoreKeys

from .framing import (
    DamagedLine,
    LogCodec,
    RawLine,
    find_generation,
    iter_raw_lines,
    new_generation,
    parse_frame,
)
from .records import DocumentRecord, Entry, LogHeader, PayloadError, utcnow


@dataclass(frozen=True)
class SkippedLine:
    """A line salvage could not use, and why."""

    lineno: int
    offset: int
    reason: str


@dataclass(frozen=True)
class SalvageReport:
    """What ``salvage`` recovered into ``destination`` and what it left behind."""

    source: Path
    destination: Path
    source_generation: str
    generation: str  # of the new log
    recovered: int  # records written (upserts and deletes)
    live: int  # documents live in the new log
    skipped: tuple[SkippedLine, ...]
    missing_seqs: tuple[int, ...]  # seqs of the source that no intact record carried

    @property
    def clean(self) -> bool:
        """True if nothing was skipped or missing."""
        return not self.skipped and not self.missing_seqs


def salvage(
    src_path: Path | str,
    dst_path: Path | str,
    keys: StoreKeys,
    *,
    io: FileIO = DEFAULT_IO,
    clock: Callable[[], datetime] = utcnow,
) -> SalvageReport:
    """Copy every readable, authentic record of ``src_path`` into a new log at ``dst_path``.

    ``dst_path`` must not exist (it is written atomically). Raises ``CorruptStoreError``
    if the source's generation cannot be found (its header line is destroyed), since no
    record can be authenticated without it.
    """
    src, dst = Path(src_path).expanduser(), Path(dst_path).expanduser()
    if dst.exists() or dst.resolve() == src.resolve():
        raise StoreExistsError(f"{dst} exists; salvage writes a new file and never overwrites")
    codec = LogCodec(keys)
    skipped: list[SkippedLine] = []
    found: dict[int, Entry] = {}
    generation: str | None = None
    with translate_os_errors("reading", src), open(src, "rb") as f:
        for raw in iter_raw_lines(f):
            if raw.lineno == 1:
                generation = _header_generation(raw, codec, skipped)
                if generation is None:
                    raise CorruptStoreError(
                        "the header's generation id is unreadable, so no record can be "
                        "authenticated",
                        path=src,
                        record=1,
                        offset=0,
                        hint="restore the log from a backup",
                    )
                continue
            assert generation is not None
            _take(raw, codec, generation, found, skipped)
    if generation is None:
        raise CorruptStoreError("the log is empty (no header)", path=src, record=1, offset=0)
    seqs = sorted(found)
    last = seqs[-1] if seqs else 0
    missing = tuple(sorted(set(range(1, last + 1)) - set(seqs)))
    entries = [found[s] for s in seqs]
    header = LogHeader(new_generation(), clock(), "salvage")
    atomic_write(dst, codec.encode_log(header, entries), io=io)
    live: set[str] = set()
    for e in entries:
        if isinstance(e, DocumentRecord):
            live.add(e.id)
        else:
            live.discard(e.id)
    return SalvageReport(
        src, dst, generation, header.generation, len(entries), len(live), tuple(skipped), missing
    )


def _header_generation(raw: RawLine, codec: LogCodec, skipped: list[SkippedLine]) -> str | None:
    try:
        frame = parse_frame(raw.data)
        if not raw.complete or not frame.is_header:
            raise DamagedLine("not a complete header")
        return codec.open_header(frame).generation
    except (DamagedLine, InvalidTag, PayloadError, SchemaVersionError) as exc:
        reason = "fails authentication" if isinstance(exc, InvalidTag) else str(exc)
        skipped.append(SkippedLine(raw.lineno, raw.offset, f"header: {reason}"))
        # The generation is in the clear; records still authenticate against it (and a
        # wrong guess just makes every record fail, which the report shows).
        return find_generation(raw.data)


def _take(
    raw: RawLine,
    codec: LogCodec,
    generation: str,
    found: dict[int, Entry],
    skipped: list[SkippedLine],
) -> None:
    def skip(reason: str) -> None:
        skipped.append(SkippedLine(raw.lineno, raw.offset, reason))

    try:
        frame = parse_frame(raw.data)
    except DamagedLine as exc:
        return skip(("torn last line: " if not raw.complete else "damaged: ") + str(exc))
    if frame.is_header:
        return skip("a second header")
    if frame.seq in found:
        return skip(f"duplicate of seq {frame.seq}")
    try:
        found[frame.seq] = codec.open_record(generation, frame)
    except InvalidTag:
        skip(f"seq {frame.seq} fails authentication (tampered or from another store)")
    except (PayloadError, SchemaVersionError) as exc:
        skip(f"seq {frame.seq} undecodable: {exc}")


__all__ = ["SalvageReport", "SkippedLine", "salvage"]
