"""Sealing a plaintext legacy ``index.jsonl`` (lines of ``{"id": ..., "text": ...}``).

Older versions kept documents in the clear, one JSON object per line, optionally with
``title``, ``metadata``, ``source_path``/``source``/``path``, ``created_at``/``updated_at``.
On open, such a file is migrated: every line is parsed (a later line with the same id
replaces an earlier one), the documents are sealed into a new log (origin ``migrate``)
and the file is replaced with ``atomic_write`` — a crash leaves the plaintext file or
the sealed one, never a mix. Fields we do not know are kept under
``metadata["legacy_fields"]``, so migration loses nothing.

What this cannot promise: the old plaintext blocks are freed, not erased. We overwrite the
old file's contents with zeros after the replace (only when no other hard link still
names it), but on SSDs (wear levelling), copy-on-write file systems (btrfs, ZFS, APFS),
journals, snapshots and backups the plaintext can survive. Rotate anything sensitive, or
use full-disk encryption. No backup copy is kept: a plaintext ``.bak`` would defeat the
purpose; copy the file yourself before upgrading if you want one.

Security note: migration trusts the file. Whoever can write the data dir can plant a
plaintext log and have it sealed as if it were ours; ``DocumentLog.open(...,
migrate_legacy=False)`` refuses legacy logs instead.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from agentzero_store.base.errors import CorruptStoreError
from agentzero_store.storage.fileio import FileIO, atomic_write, translate_os_errors
from agentzero_store.storage.sources import LogKind

from .framing import LogCodec, iter_raw_lines, new_generation
from .records import DocumentRecord, Entry, LogHeader, content_hash

logger = logging.getLogger(__name__)

_KNOWN = {
    "id",
    "text",
    "title",
    "metadata",
    "source_path",
    "source",
    "path",
    "created_at",
    "updated_at",
    "content_hash",
}
_SEALED_KEYS = {"format", "ct", "seq", "crc"}


def is_legacy(path: Path) -> bool:
    """True if ``path`` holds a plaintext legacy log (or is empty: nothing to protect)."""
    with translate_os_errors("reading", path), open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                return False  # not legacy: a damaged sealed log must fail, not "migrate"
            return (
                isinstance(obj, dict)
                and "id" in obj
                and isinstance(obj.get("text"), str)
                and not (_SEALED_KEYS & obj.keys())
            )
    return True


def log_kind(path: Path) -> LogKind:
    """What is at ``path``: no file, an empty one, a plaintext legacy log, or a sealed log
    (or something that will fail as one)."""
    with translate_os_errors("reading", path):
        if not path.exists():
            return "missing"
        if path.stat().st_size == 0:
            return "empty"
    return "plaintext" if is_legacy(path) else "sealed"


def _when(obj: Mapping[str, Any], key: str, default: datetime) -> datetime:
    value = obj.get(key)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return default
        if dt.tzinfo is not None:
            return dt
    return default


def legacy_record(obj: object, now: datetime) -> DocumentRecord:
    """One legacy line's object as a sealed-log record. Raises ``ValueError``."""
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    doc_id, text = obj.get("id"), obj.get("text")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id or not isinstance(text, str):
        raise ValueError("needs a non-empty string 'id' and a string 'text'")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("'metadata' is not an object")
    extras = {k: v for k, v in obj.items() if k not in _KNOWN}
    if extras:
        metadata = {**metadata, "legacy_fields": extras}
    source = next(
        (obj[k] for k in ("source_path", "source", "path") if isinstance(obj.get(k), str)), None
    )
    title = obj.get("title")
    created = _when(obj, "created_at", now)
    return DocumentRecord(
        id=doc_id,
        text=text,
        content_hash=content_hash(text),
        created_at=created,
        updated_at=_when(obj, "updated_at", created),
        title=title if isinstance(title, str) else None,
        source_path=source,
        metadata=metadata,
    )


def read_legacy_log(path: Path, now: datetime) -> list[DocumentRecord]:
    """Every document of the plaintext log at ``path``, in last-write order (a later line
    with the same id replaces an earlier one). Reads only.

    A line that is not a document raises ``CorruptStoreError``; only an unparsable last
    line without a newline (a torn legacy write) is skipped, with a warning.
    """
    docs: dict[str, DocumentRecord] = {}
    with translate_os_errors("reading", path), open(path, "rb") as f:
        for raw in iter_raw_lines(f):
            if not raw.data.strip():
                continue
            try:
                rec = legacy_record(json.loads(raw.data), now)
            except ValueError as exc:
                if not raw.complete:
                    msg = f"{path}: skipping a torn last legacy line at offset {raw.offset}"
                    logger.warning(msg)
                    warnings.warn(msg, UserWarning, stacklevel=4)
                    break
                raise CorruptStoreError(
                    f"legacy document log line {raw.lineno} is not a document ({exc})",
                    path=path,
                    record=raw.lineno,
                    offset=raw.offset,
                    hint="fix or remove that line, then try again; the file was not modified",
                ) from None
            docs.pop(rec.id, None)  # keep last-write order
            docs[rec.id] = rec
    return list(docs.values())


def migrate_legacy_log(
    path: Path, codec: LogCodec, *, io: FileIO, clock: Callable[[], datetime]
) -> int:
    """Replace the plaintext log at ``path`` by a sealed one; returns the documents kept.

    A line that is not a document raises ``CorruptStoreError`` and the file is left as
    it was (see ``read_legacy_log``).
    """
    now = clock()
    entries: list[Entry] = list(read_legacy_log(path, now))
    data = codec.encode_log(LogHeader(new_generation(), now, "migrate"), entries)
    # Hold the old inode open across the replace so its plaintext can be overwritten.
    with translate_os_errors("opening", path):
        old_fd = io.open(path, os.O_WRONLY)
    try:
        # The commit point: before the rename the plaintext log is whole, after it the
        # sealed one is; a crash in between leaves only a sealed temp file, removed by
        # the next writer (``cleanup_temp_files``).
        atomic_write(path, data, io=io)
        _scrub(old_fd, path, io)
    finally:
        io.close(old_fd)
    logger.info("%s: sealed %d legacy documents", path, len(entries))
    return len(entries)


def _scrub(fd: int, path: Path, io: FileIO) -> None:
    """Best effort: zero the replaced plaintext file's blocks (see the module docstring)."""
    try:
        st = os.fstat(fd)
        if st.st_nlink != 0:
            # Another hard link (a user's backup?) still names it: not ours to destroy.
            logger.warning("%s: the old plaintext file has another link; not overwritten", path)
            return
        zeros = bytes(1 << 20)
        remaining = st.st_size
        while remaining > 0:
            n = min(remaining, len(zeros))
            io.write(fd, zeros[:n])
            remaining -= n
        io.fsync(fd)  # so the zeros, not the plaintext, are what the freed blocks hold
    except OSError as exc:
        logger.warning("%s: could not overwrite the old plaintext file: %s", path, exc.strerror)
