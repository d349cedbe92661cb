"""The document log's write path: the writer lock and the sealed lines of a group commit.

``DocumentLog`` holds the lock for as long as it is open read-write, and turns every
``append_many`` call into ONE batch of sealed lines (``encode_batch``) that it appends
with one write and one fsync. Nothing here writes to the log itself: the append, its
rollback and the point where memory starts to reflect the batch stay in ``rag.log``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agentzero_store.base.errors import InvalidArgumentError, StoreLockedError
from agentzero_store.storage.fileio import FileIO, translate_os_errors

from .framing import LogCodec
from .records import Change, Delete, DocumentRecord, Entry, Tombstone, Upsert, content_hash
from .replay import Slot


def acquire_writer_lock(path: Path, io: FileIO) -> int:
    """Take the exclusive, non-blocking ``flock`` on ``<log>.lock``; returns its descriptor.

    Closing the descriptor releases the lock. Raises ``StoreLockedError`` if another
    process has the log open for writing.
    """
    lock_path = path.with_name(path.name + ".lock")
    with translate_os_errors("locking", lock_path):
        fd = io.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        io.close(fd)
        raise StoreLockedError(
            f"the document log {path} is open for writing by another process "
            "(e.g. `agentzero rag watch`)",
            hint="stop the other document writer, or query read-only beside it",
        ) from exc
    return fd


@dataclass(frozen=True)
class EncodedBatch:
    """The sealed lines of one group commit, and what they will mean once durable."""

    data: bytes  # every line of the batch, appended with one write and one fsync
    slots: list[Slot]  # where each written record lands, in seq order
    changes: list[Change | None]  # one per op; None: a delete of an id that is not live
    end: int  # the file's size once the batch is on disk


def encode_batch(
    ops: Iterable[Upsert | Delete],
    codec: LogCodec,
    *,
    generation: str,
    seq: int,
    offset: int,
    now: datetime,
    live: Container[str],
    stored_created_at: Callable[[str], datetime | None],
) -> EncodedBatch:
    """Seal ``ops`` as records ``seq + 1``, ``seq + 2``, ... appended at byte ``offset``.

    ``live`` answers whether a document is live before the batch; ``stored_created_at``
    gives the creation time of its live version, which an upsert keeps. Later ops see
    the effect of earlier ones in the same batch.
    """
    batch: dict[str, datetime | None] = {}  # id -> created_at, None = deleted
    entries: list[Entry] = []
    written: list[Change] = []  # the change of each entry, in seq order
    out: list[Change | None] = []
    for op in ops:
        change: Change
        if isinstance(op, Upsert):
            doc_id = op.id
            if doc_id in batch:
                created = batch[doc_id] or now
            elif doc_id in live:
                created = stored_created_at(doc_id) or now
            else:
                created = now  # a new document (skips a lookup per record)
            record = DocumentRecord.of_upsert(op, content_hash(op.text), created, now)
            batch[doc_id] = created
            entries.append(record)
            change = Change(seq + len(entries), "upsert", doc_id, record)
        elif isinstance(op, Delete):
            doc_id = op.id
            if not (batch[doc_id] is not None if doc_id in batch else doc_id in live):
                out.append(None)
                continue
            batch[doc_id] = None
            entries.append(Tombstone(doc_id, now))
            change = Change(seq + len(entries), "delete", doc_id, None)
        else:
            raise InvalidArgumentError(f"not an Upsert or Delete: {type(op).__name__}")
        written.append(change)
        out.append(change)
    lines = codec.record_lines(generation, seq + 1, entries) if entries else []
    slots: list[Slot] = []
    for line, change in zip(lines, written, strict=True):
        slots.append(Slot(offset, len(line) - 1, change.op, change.doc_id))
        offset += len(line)
    return EncodedBatch(b"".join(lines), slots, out, offset)


__all__ = ["EncodedBatch", "acquire_writer_lock", "encode_batch"]
