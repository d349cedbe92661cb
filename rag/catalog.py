"""The replay catalog (``rag/index.jsonl.catalog``): a sealed snapshot of replay's state.

Opening a log replays every line (``rag.replay``). The catalog lets an open skip the
lines it covers: it holds the slots (offset, op, id) of records ``1..seq`` and the byte
size they end at, sealed with AES-256-GCM under its own subkey, with associated data
binding the store id and the log generation. An open then replays only the tail.

It is a disposable, derived file, like every index: missing, unreadable, not
authentic, from another store, generation (a compaction, a salvage) or key (a
rotation), or not matching the log's bytes → ignored, and the log is replayed whole.
Never an error. Before it is trusted, the covered bytes ``[0, size)`` of the log are
hashed and compared with the sha256 sealed inside: a log that was truncated, rewritten
or edited anywhere in the covered part (even a line that would fail authentication) is
replayed whole, so the strict replay reports the damage with its line and offset as
before. Hashing reads the file once, without decrypting or parsing it.

Written (``atomic_write``) by a read-write log on close, and only when enough records
are not yet covered (``MIN_NEW_RECORDS``): for a small tail, replaying is cheaper than
rewriting the file. Read-only opens never write it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag

from agentzero_store.storage.crypto import Sealer
from agentzero_store.storage.fileio import DEFAULT_IO, FileIO, atomic_write
from agentzero_store.storage.keys import StoreKeys

from .records import Op
from .replay import Slot

FORMAT = "agentzero-doclog-catalog/1"
MIN_NEW_RECORDS = 1000  # records not yet covered before close rewrites the catalog
_HASH_CHUNK = 1 << 20  # bytes per read while hashing the covered prefix


def catalog_path(log_path: Path) -> Path:
    """Where the catalog of the log at ``log_path`` lives."""
    return log_path.with_name(log_path.name + ".catalog")


def _aad(store_id: str, generation: str) -> bytes:
    return f"{FORMAT}|{store_id}|{generation}".encode()


@dataclass(frozen=True)
class Catalog:
    """Replay state of records ``1..len(slots)``, which end at byte ``size``."""

    slots: list[Slot]
    size: int


def prefix_sha256(fd: int, size: int) -> str | None:
    """sha256 (hex) of bytes ``[0, size)`` of ``fd``; None if the file is shorter."""
    h = hashlib.sha256()
    done = 0
    while done < size:
        chunk = os.pread(fd, min(_HASH_CHUNK, size - done), done)
        if not chunk:
            return None
        h.update(chunk)
        done += len(chunk)
    return h.hexdigest()


class CatalogFile:
    """Reads and writes the catalog of one log (with its own subkey)."""

    def __init__(self, log_path: Path, keys: StoreKeys, io: FileIO = DEFAULT_IO) -> None:
        self.path = catalog_path(log_path)
        self.store_id = keys.store_id
        self._sealer = Sealer(keys.subkey("doclog-catalog"))
        self._io = io

    def load(self, fd: int, generation: str, header_end: int) -> Catalog | None:
        """The catalog, if it is authentic, of this generation and matches the bytes of
        the log open at ``fd``; None otherwise (the caller replays the whole log)."""
        try:
            blob = self.path.read_bytes()
            obj = json.loads(self._sealer.open(blob, _aad(self.store_id, generation)))
            return self._check(obj, fd, header_end)
        except (OSError, InvalidTag, ValueError, KeyError, TypeError):
            return None  # disposable: any problem means "replay everything"

    def _check(self, obj: dict[str, Any], fd: int, header_end: int) -> Catalog | None:
        if obj["format"] != FORMAT:
            return None
        size, offsets, ops, ids = obj["size"], obj["offsets"], obj["ops"], obj["ids"]
        n = len(offsets)
        if not (
            isinstance(size, int)
            and len(ops) == n == len(ids)
            and (offsets[0] == header_end if n else size == header_end)
        ):
            return None
        # The covered bytes must be exactly the ones the catalog was made from.
        if prefix_sha256(fd, size) != obj["sha256"]:
            return None
        ends = [*offsets[1:], size]
        slots = []
        for offset, end, op, doc_id in zip(offsets, ends, ops, ids, strict=True):
            if end <= offset or not isinstance(doc_id, str) or op not in "UD":
                return None
            kind: Op = "upsert" if op == "U" else "delete"
            slots.append(Slot(offset, end - offset - 1, kind, doc_id))
        return Catalog(slots, size)

    def save(self, fd: int, generation: str, slots: list[Slot], size: int) -> None:
        """Write the catalog of records ``1..len(slots)`` (ending at ``size``), durably."""
        digest = prefix_sha256(fd, size)
        if digest is None:
            return
        obj = {
            "format": FORMAT,
            "size": size,
            "sha256": digest,
            "offsets": [s.offset for s in slots],
            "ops": "".join("U" if s.op == "upsert" else "D" for s in slots),
            "ids": [s.doc_id for s in slots],
        }
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        # Replaced whole (temp, fsync, rename): a crash leaves the old catalog or the new.
        atomic_write(
            self.path, self._sealer.seal(data, _aad(self.store_id, generation)), io=self._io
        )


__all__ = ["MIN_NEW_RECORDS", "Catalog", "CatalogFile", "catalog_path", "prefix_sha256"]
