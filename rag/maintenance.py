"""Operations on the document log as a file: verify, snapshot (backup), re-seal (rotation).

These are the document-log halves of ``agentzero store verify|backup`` and ``agentzero
key rotate``; the engine's ops layer (``agentzero_store.ops``) calls them lazily, so the
engine never depends on ``rag`` at import time and the log format stays known only here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentzero_store.base.config import Layout
from agentzero_store.base.errors import CorruptStoreError
from agentzero_store.storage.fileio import DEFAULT_IO, FileIO, atomic_write, translate_os_errors
from agentzero_store.storage.keys import StoreKeys
from agentzero_store.storage.sources import SourceGuard, open_ledger

from .framing import DamagedLine, LogCodec, iter_raw_lines, new_generation, parse_frame
from .log import DocumentLog
from .migrate import log_kind, read_legacy_log
from .records import LogHeader, utcnow
from .replay import LineChecker, Replayed, replay


@dataclass(frozen=True)
class LogCheck:
    """The result of reading a whole log strictly (every record authenticated, seqs 1..N)."""

    path: Path
    seq: int  # last good seq
    live: int  # live documents
    generation: str | None
    size: int  # bytes up to the end of the last good line
    torn_bytes: int  # an unacknowledged torn tail (cut on the next read-write open)
    error: CorruptStoreError | None  # the first damaged, foreign or out-of-order line


def _replay_fd(fd: int, path: Path, keys: StoreKeys) -> Replayed:
    # full=True: verify and backup decode every record whole, not just what an open keeps.
    with open(fd, "rb", closefd=False) as f:
        return replay(f, LineChecker(path, LogCodec(keys)), full=True)


def check_log(path: Path, keys: StoreKeys) -> LogCheck:
    """Authenticate every record of the log at ``path``; never modifies it."""
    with translate_os_errors("opening", path):
        fd = os.open(path, os.O_RDONLY)
    try:
        state = _replay_fd(fd, path, keys)
    except CorruptStoreError as exc:
        return LogCheck(path, 0, 0, None, 0, 0, exc)
    finally:
        os.close(fd)
    torn = len(state.torn.data) if state.torn is not None else 0
    return LogCheck(
        path, len(state.slots), len(state.live), state.header.generation, state.size, torn, None
    )


def snapshot_log(path: Path, keys: StoreKeys, dest: Path, *, io: FileIO = DEFAULT_IO) -> LogCheck:
    """Copy the log up to its last acknowledged record into ``dest`` (durably).

    Consistent while a writer appends or compacts: one descriptor is opened, verified and
    copied, so a compaction (which renames a new file over the path) cannot mix two
    generations, and appends after the replay lie beyond the copied size. A torn tail is
    left out: it was never acknowledged. Raises ``CorruptStoreError`` on damage.
    """
    with translate_os_errors("opening", path):
        fd = os.open(path, os.O_RDONLY)
    try:
        state = _replay_fd(fd, path, keys)
        with translate_os_errors("reading", path):
            data = os.pread(fd, state.size, 0)
    finally:
        os.close(fd)
    atomic_write(dest, data, io=io)
    return LogCheck(
        path, len(state.slots), len(state.live), state.header.generation, state.size, 0, None
    )


def start_log(path: Path, keys: StoreKeys, *, io: FileIO = DEFAULT_IO) -> str:
    """Write a new, empty sealed log (a new generation) at ``path``; returns its generation.

    Only for ``store accept-loss``, which has recorded that whatever was there is lost.
    """
    header = LogHeader(new_generation(), utcnow(), "new")
    atomic_write(path, LogCodec(keys).encode_log(header, []), io=io)
    return header.generation


def sealed_with(path: Path, candidates: list[StoreKeys]) -> StoreKeys | None:
    """Which of ``candidates`` the log's header authenticates with (None: none of them)."""
    with translate_os_errors("reading", path), open(path, "rb") as f:
        first = next(iter_raw_lines(f), None)
    if first is None:
        return None
    try:
        frame = parse_frame(first.data)
    except DamagedLine:
        return None
    for keys in candidates:
        try:
            LogCodec(keys).open_header(frame)
        except Exception:  # InvalidTag or an undecodable payload: not this key
            continue
        return keys
    return None


def reseal_log(path: Path, old: StoreKeys, new: StoreKeys, *, io: FileIO = DEFAULT_IO) -> bool:
    """Re-seal every record of the log under ``new`` (same generation, same seqs).

    Idempotent, for a resumable key rotation: returns False when the log is already
    sealed with ``new``. One ``atomic_write`` of the whole file, so a crash leaves the
    old-key log or the new-key log, never a mix. The read-write open takes the log's
    writer lock and cuts an unacknowledged torn tail first.
    """
    current = sealed_with(path, [new, old])
    if current is new:
        return False
    if current is None:
        raise CorruptStoreError(
            "the document log's header fits neither the old nor the new key",
            path=path,
            hint="run `agentzero store verify`; restore from a backup if needed",
        )
    with DocumentLog.open(path, old, io=io, create=False) as doclog:
        entries = [doclog.read(seq) for seq in range(1, doclog.seq + 1)]
        data = LogCodec(new).encode_log(doclog.header, entries)
        # The commit point of this file: temp, fsync, rename, fsync(dir).
        atomic_write(path, data, io=io)
    return True


def legacy_documents(path: Path) -> int:
    """How many documents the plaintext legacy log at ``path`` holds; reads only, and
    raises ``CorruptStoreError`` naming a line that is not a document."""
    return len(read_legacy_log(path, utcnow()))


def adopt_legacy_log(
    layout: Layout, keys: StoreKeys, *, io: FileIO = DEFAULT_IO
) -> tuple[int, bool]:
    """Seal the plaintext legacy log of a data dir being adopted (``ops.create``).

    Returns (documents in the sealed log, whether this call sealed it). The log is
    checked against the ledger like at any open, so a plaintext file where the ledger
    knew a sealed log is refused, never sealed. The caller holds the writer role.
    """
    ledger = open_ledger(layout, keys, writable=True)
    try:
        guard = SourceGuard(ledger, "documents", layout.rag_log)
        with DocumentLog.open(layout.rag_log, keys, io=io, create=False, acks=guard) as doclog:
            return len(doclog), doclog.migrated is not None
    finally:
        ledger.close()


__all__ = [
    "LogCheck",
    "adopt_legacy_log",
    "check_log",
    "legacy_documents",
    "log_kind",
    "reseal_log",
    "sealed_with",
    "snapshot_log",
    "start_log",
]
