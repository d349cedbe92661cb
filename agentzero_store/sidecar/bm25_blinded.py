"""The default BM25 adapter: Tantivy on disk, over blinded terms (see ``bm25_terms``).

Every term in the index is a keyed hash, and no field stores text: the files hold term
statistics and chunk keys, never a word. So the index may live on disk as Tantivy's own
files, and opening a store maps them instead of re-indexing every text.

Files (inside the sidecar directory, beside ``manifest.json``)::

    bm25-<gen>.tree/       a checkpoint: Tantivy's files + ``keys`` (the live keys, u64),
                           immutable once written, named with each file's sha256 in the
                           authenticated manifest (``Sidecar`` checks them all before
                           Tantivy reads a byte)
    work-<id>/             this process's working index: hard links to a checkpoint's
                           files, plus what Tantivy writes after it
    work-<id>.lock         held (flock) while the process lives; a crash leaves it
                           unlocked and the next open removes both

Tantivy never rewrites a file in place (new segments, new delete files, ``meta.json``
replaced by rename), so a working index built from hard links never changes the
checkpoint it started from, and a checkpoint is hard links to the files of the last
commit: cheap, whatever the index size, and it never waits for Tantivy's merges. Only
new files are hashed and fsynced. The searcher is pinned (``bm25.pin_searcher``) and
moved, by ``save``, to exactly the commit the checkpoint holds: BM25 statistics count
deleted documents until a merge drops them, so a searcher on another commit of the same
documents scores differently, and a reopened checkpoint answers as the index did.

Losing the files under a running process (the sidecar directory deleted, a disk that
fills up) never fails a query with Tantivy's raw error: ``lost`` (one ``stat`` of the
working dir, or a failure Tantivy reported) tells the sidecar mechanism to rebuild from
the source. When the disk cannot take the index's writes (ENOSPC, EIO, a read-only
mount), the rebuilt index is held in RAM instead: queries are still answered, checkpoints
fail (logged, nothing is lost: the source has every change) and, at most every
``DISK_RETRY_S`` seconds, a checkpoint attempt moves the index back to disk.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

from ..base.errors import AgentZeroStoreError, SidecarCorruptError, StoreIOError
from ..storage.fileio import translate_os_errors
from .bm25 import HEAP_BYTES, TantivyBm25, pin_searcher, schema
from .bm25_terms import ANALYZER, BLIND_HASH, BlindTerms, whitespace_analyzer

try:  # liveness of working indexes between processes (POSIX only)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

SCHEMA_VERSION = 2
TOKENIZER = "blinded"  # whitespace: terms arrive analysed and hashed
KEYS = "keys"  # the live keys of a checkpoint, little-endian u64, sorted
WORK = "work-"
_SAVE_TRIES = 20
_NO_LINKS = {errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}
DISK_RETRY_S = 60.0  # an index held in RAM tries the disk again at most this often

log = logging.getLogger(__name__)


def _link(src: Path, dst: Path) -> None:
    """Hard-link ``src`` as ``dst``; copy it where the file system has no hard links
    (FAT, exFAT, some network shares): slower checkpoints, same result."""
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise  # FileNotFoundError above all: a merge removed it (see _link_commit)
        shutil.copyfile(src, dst)


class BlindedBm25Index(TantivyBm25):
    """A ``SidecarIndex[str]`` that keeps its files itself (``types.KeepsFiles``)."""

    def __init__(self, directory: Path, key: bytes, *, heap_bytes: int = HEAP_BYTES) -> None:
        super().__init__(schema(TOKENIZER), heap_bytes=heap_bytes)
        self._root = Path(directory)
        self._terms = BlindTerms(key)
        self._work: Path | None = None
        self._lock_fd: int | None = None
        self._disk_error: str | None = None  # the disk failed us: the next reset uses RAM
        self._ram_since: float | None = None  # monotonic time the index moved to RAM
        self._retry_disk = False  # time to rebuild on disk (see ``save``)

    def __repr__(self) -> str:
        where = "RAM" if self._ram_since is not None else str(self._work)
        return f"BlindedBm25Index(work={where!r})"

    def _where(self) -> str:
        return str(self._work) if self._work is not None else "memory"

    def _failed(self, error: AgentZeroStoreError) -> None:
        if isinstance(error, StoreIOError) and self._work is not None:
            self._disk_error = error.message

    def params(self) -> Mapping[str, Any]:
        """Schema, analyzer and hash: a checkpoint built with others is rebuilt."""
        return {
            "schema": SCHEMA_VERSION,
            "terms": "blinded",
            "analyzer": ANALYZER,
            "hash": BLIND_HASH,
        }

    def _body(self, text: str) -> str:
        return self._terms.text(text)

    def _query_terms(self, text: str) -> list[str]:
        return self._terms.query_terms(text)

    # ------------------------------------------------------------------ SidecarIndex
    def reset(self) -> None:
        """An empty index in a fresh working directory; in RAM if the disk failed us."""
        if self._disk_error is None or self._retry_disk:
            try:
                self._open_work(None, set())
                return
            except StoreIOError as exc:
                self._disk_error = exc.message
        self._open_ram()

    def lost(self) -> str | None:
        """Why the index must be rebuilt before it answers again, or None.

        Called before every query, so it costs one ``stat``: the working dir deleted
        under us (with the sidecar dir, say), a Tantivy call that failed, or an index
        held in RAM whose time to try the disk again has come.
        """
        if self._broken is not None:
            return self._broken
        if self._retry_disk:
            return "trying to keep the bm25 index on disk again"
        if self._work is not None:
            try:
                os.stat(self._work)
            except OSError:
                return f"its working directory {self._work} was removed"
        return None

    def insert(self, items: Sequence[tuple[int, str]]) -> None:
        """Add or replace the text of each key."""
        self._index_items(items)

    def delete(self, keys: Sequence[int]) -> None:
        """Remove keys (unknown keys are ignored)."""
        self._delete_keys(keys)

    # ------------------------------------------------------------------ KeepsFiles
    def save(self, target: Path) -> None:
        """Fill the empty dir ``target`` with a complete copy of the index as it is now."""
        if self._ram_since is not None:
            if time.monotonic() - self._ram_since >= DISK_RETRY_S:
                self._retry_disk = True  # ``lost`` asks for a rebuild, which tries the disk
            raise StoreIOError(
                "the bm25 index is held in memory since its files could not be written; "
                "it is checkpointed again once the disk takes writes"
            )
        if (why := self.lost()) is not None:
            raise SidecarCorruptError(why)
        self._commit()
        work = self._require_work()
        with translate_os_errors("writing", target):
            for _ in range(_SAVE_TRIES):
                if self._link_commit(work, target, self._reload):
                    break
            else:
                # Merges do not finish faster than a few links, over and over: files of
                # the commit are gone (removed under us). Rebuild, never save a copy
                # that misses a segment.
                self._broken = f"files of the bm25 index in {work} vanished under it"
                raise SidecarCorruptError(self._broken)
            keys = np.fromiter(self._keys, dtype="<u8", count=len(self._keys))
            keys.sort()
            (target / KEYS).write_bytes(keys.tobytes())
        self._disk_error = None

    def _reload(self) -> None:
        with self._native("reloading"):
            self._index.reload()

    @staticmethod
    def _link_commit(work: Path, target: Path, reload: Callable[[], None]) -> bool:
        """Hard-link the files of the commit ``work/meta.json`` names into ``target``,
        and ``reload`` the searcher onto that same commit.

        Merges run in Tantivy's threads meanwhile: one that finishes replaces meta.json
        (never with the same bytes: the merged segment has a new id, though the opstamp
        stays) and then deletes the files it merged away. So the meta.json read here is
        the one written to ``target``, and if it changed while the files were linked or
        the searcher reloaded, or a file or a whole segment vanished, the copy may be
        incomplete or the searcher on another commit: "try again" (False), never a
        mixed copy. Tantivy's list of the files it manages is left out: a working index
        opened from the copy never deletes its files, which the checkpoint still needs.
        """
        for p in target.iterdir():
            p.unlink()
        linked: set[str] = set()
        try:
            meta_raw = (work / "meta.json").read_bytes()
            segments = {s["segment_id"].replace("-", "") for s in json.loads(meta_raw)["segments"]}
            for p in work.iterdir():
                segment = p.name.split(".", 1)[0]
                if segment in segments:
                    _link(p, target / p.name)
                    linked.add(segment)
            if linked != segments or (work / "meta.json").read_bytes() != meta_raw:
                return False
            # The reload reads meta.json; unchanged after it, it read this commit (its
            # bytes never come back once replaced): the searcher is the checkpoint.
            reload()
            if (work / "meta.json").read_bytes() != meta_raw:
                return False
        except FileNotFoundError:
            return False
        (target / "meta.json").write_bytes(meta_raw)
        return True

    def open_saved(self, source: Path) -> None:
        """Open the verified checkpoint in ``source`` (never written to: it is linked)."""
        raw = (source / KEYS).read_bytes()
        if len(raw) % 8:
            raise SidecarCorruptError("the bm25 keys file is truncated")
        keys = np.frombuffer(raw, dtype="<u8")
        live = set(keys.tolist())
        if len(live) != len(keys):
            raise SidecarCorruptError("the bm25 keys file repeats a key")
        self._open_work(source, live)
        with self._native("opening"):
            docs = self._index.searcher().num_docs
        if docs != len(live):
            raise SidecarCorruptError("the bm25 index and its keys file disagree")

    def close(self) -> None:
        """Drop the working index (checkpoints stay)."""
        self._index = self._writer = None
        self._ram_since = None
        work, self._work = self._work, None
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
            with contextlib.suppress(OSError):
                work.with_name(work.name + ".lock").unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # ------------------------------------------------------------------ working dirs
    def _require_work(self) -> Path:
        if self._work is None:
            raise RuntimeError("the blinded BM25 index is closed")
        return self._work

    def _open_work(self, source: Path | None, keys: set[int]) -> None:
        """A new working index: empty, or hard links to the checkpoint in ``source``."""
        self.close()
        self._remove_abandoned()
        try:
            work = self._new_work()
            if source is not None:
                with translate_os_errors("linking", work):
                    for p in source.iterdir():
                        if p.name != KEYS:
                            _link(p, work / p.name)
            with self._native("opening"):
                self._index = tantivy.Index(self._schema, path=str(work), reuse=source is not None)
                pin_searcher(self._index)
                self._index.register_tokenizer(TOKENIZER, whitespace_analyzer())
                self._writer = self._index.writer(heap_size=self._heap, num_threads=1)
                self._index.reload()
        except AgentZeroStoreError as exc:
            if isinstance(exc, StoreIOError):
                self._disk_error = exc.message
            self.close()  # no half-made working dir stays behind
            raise
        self._keys = keys
        self._dirty = False
        self._broken = None
        self._retry_disk = False

    def _open_ram(self) -> None:
        """A new, empty working index in RAM: the disk cannot take the index's writes."""
        self.close()
        with self._native("creating"):
            self._index = tantivy.Index(self._schema)
            pin_searcher(self._index)
            self._index.register_tokenizer(TOKENIZER, whitespace_analyzer())
            self._writer = self._index.writer(heap_size=self._heap, num_threads=1)
        log.warning(
            "keeping the bm25 index in memory: its files cannot be written (%s)",
            self._disk_error,
        )
        self._keys = set()
        self._dirty = False
        self._broken = None
        self._retry_disk = False
        self._ram_since = time.monotonic()

    def _new_work(self) -> Path:
        """Create ``work-<id>/`` and hold ``work-<id>.lock`` for this process's life."""
        name = f"{WORK}{os.getpid()}-{secrets.token_hex(4)}"
        with translate_os_errors("creating", self._root):
            self._root.mkdir(parents=True, exist_ok=True, mode=0o700)
            # Lock a temp name first, then rename: no other process can ever find the
            # lock file of a live index unlocked.
            tmp = self._root / f".{name}.lock.tmp"
            self._lock_fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                if fcntl is not None:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
                os.replace(tmp, self._root / f"{name}.lock")
            except OSError:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                raise
            # Known before it exists: if mkdir fails, ``close`` removes the lock file.
            work = self._work = self._root / name
            work.mkdir(mode=0o700)
        return work

    def _remove_abandoned(self) -> None:
        """Remove working dirs of processes that are gone (their lock is free)."""
        if fcntl is None or not self._root.is_dir():
            return
        for lock in self._root.glob(f"{WORK}*.lock"):
            try:
                fd = os.open(lock, os.O_RDWR)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # alive
            try:
                shutil.rmtree(lock.with_suffix(""), ignore_errors=True)
                lock.unlink()
            except OSError:
                pass
            finally:
                os.close(fd)
