"""The HNSW sidecar over conversation memory: lifecycle, recall entry point, self-healing.

``SqliteMemoryStore`` stays the truth. Writes commit to SQLCipher first and then reach
the index through the change feed (``Sidecar.catch_up``), the same path that replays
after a crash or picks up another process's writes, so there is one way in. The index
is a ``MemoryIndex``: the HNSW graph plus an in-memory scope map (see
``index``), so recall picks and filters rows without reading SQLCipher; the
caller reads and re-checks only the final ``k`` rows.

If anything about the index fails — a native error, the directory deleted under a
running process (watched with watchdog) — recall switches to exact search in SQL at
once and the index is rebuilt in a background thread. A sidecar problem never fails a
recall or an acknowledged write.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ...base.config import Layout, StoreConfig
from ...base.errors import AgentZeroStoreError, DimensionMismatchError
from ...sidecar.hnsw import HnswIndex
from ...sidecar.mechanism import Sidecar
from ...sidecar.types import EmbedderInfo, OpenReport, Progress, SidecarStatus
from ...storage.fileio import DEFAULT_IO, FileIO, translate_os_errors
from ...storage.keys import StoreKeys
from ..records import Scope
from .feed import FeedStore, MemoryItem, MemoryItemSource, MemoryVectorSource
from .index import MAX_CANDIDATES, Answer, MemoryIndex, exact_scope_limit

log = logging.getLogger(__name__)


class IndexedStore(FeedStore, Protocol):
    """What the HNSW sidecar needs of its memory store (``SqliteMemoryStore`` is one)."""

    @property
    def data_dir(self) -> Path:
        """The data dir (``memory.hnsw/`` is in it by default)."""
        ...

    @property
    def config(self) -> StoreConfig:
        """HNSW parameters and the checkpoint interval."""
        ...

    @property
    def keys(self) -> StoreKeys:
        """The store's keys (the sidecar subkey seals the checkpoints)."""
        ...

    def embedding_info(self) -> tuple[str | None, int | None]:
        """(model id, dimension) of the stored vectors, or (None, None)."""
        ...


class MemoryHnsw:
    """The memory store's HNSW sidecar, with exact-search fallback and background rebuild."""

    def __init__(
        self,
        store: IndexedStore,
        directory: Path,
        *,
        dim: int | None = None,
        watch: bool = True,
        io: FileIO = DEFAULT_IO,
    ) -> None:
        self._store = store
        self.directory = directory
        self._want_dim = dim
        self._io = io
        self._lock = threading.RLock()
        self.sidecar: Sidecar[MemoryItem] | None = None
        self.ready = False  # False: recall uses exact search
        self.open_report: OpenReport | None = None
        self._rebuilder: threading.Thread | None = None
        self._closed = False
        self._observer: Any = None
        self._deferred = 0  # open ``deferred_checkpoints`` blocks
        # How recalls were answered (diagnostics): HNSW graph, exact over the in-memory scope,
        # or exact in SQL because the index was not ready.
        self.answers = {"index": 0, "exact": 0, "sql": 0}
        if watch:
            self._watch()

    @classmethod
    def attach(
        cls,
        store: IndexedStore,
        dir: Path | str | None,
        dim: int | None,
        *,
        watch: bool,
        progress: Progress | None,
    ) -> MemoryHnsw:
        """Open the index of ``store`` in ``dir`` (default ``memory.hnsw/``): load the
        verified checkpoint and replay, or rebuild (see ``enable_hnsw_index``)."""
        _, stored = store.embedding_info()
        if dim is not None and stored is not None and dim != stored:
            raise DimensionMismatchError(f"the store holds {stored}-d vectors, not {dim}-d")
        path = Path(dir) if dir is not None else Layout(store.data_dir).memory_hnsw
        h = cls(store, path, dim=dim, watch=watch)
        try:
            h.open(progress)
        except BaseException:
            h.close()
            raise
        return h

    def __repr__(self) -> str:
        return f"MemoryHnsw(dir={str(self.directory)!r}, ready={self.ready})"

    # ---------------------------------------------------------------- lifecycle
    def open(self, progress: Progress | None = None) -> OpenReport | None:
        """Load or rebuild the index (no-op until the store holds its first vector)."""
        with self._lock:
            # Create the directory even before the first vector: its presence is what
            # re-enables the index on the next open (``open(hnsw=None)``).
            with translate_os_errors("creating", self.directory):
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            sc = self._new_sidecar()
            if sc is None:
                return None
            self.open_report = sc.open(progress)
            self.sidecar, self.ready = sc, True
            return self.open_report

    def _new_sidecar(self) -> Sidecar[MemoryItem] | None:
        model, dim = self._store.embedding_info()
        if dim is None:
            return None  # no vector stored yet: the index is created with the first one
        if self._want_dim is not None and self._want_dim != dim:
            raise DimensionMismatchError(
                f"the store holds {dim}-d vectors; an index of {self._want_dim} was asked for"
            )
        c = self._store.config
        index = MemoryIndex(
            HnswIndex(
                dim,
                m=c.hnsw_m,
                ef_construction=c.hnsw_ef_construction,
                ef_search_min=c.hnsw_ef_search_min,
                initial_capacity=c.hnsw_initial_capacity,
            )
        )
        return Sidecar(
            self.directory,
            index,
            MemoryItemSource(self._store),
            key=self._store.keys.sidecar_key,
            embedder=EmbedderInfo(model, dim),
            checkpoint_every=c.checkpoint_every,
            io=self._io,
        )

    def close(self) -> None:
        """Stop watching, checkpoint what is pending, let a background rebuild finish."""
        with self._lock:
            self._closed = True
            if self._observer is not None:
                self._observer.stop()
        if self._observer is not None:
            self._observer.join(timeout=2)
        if (t := self._rebuilder) is not None:
            # Bounded: after close the worker's reads fail and it stops, logging why.
            t.join(timeout=5)
        with self._lock:
            if self.ready and self.sidecar is not None and self.sidecar.pending:
                # Saves the next open a replay; a failure here loses nothing.
                self._guard("checkpoint", self.sidecar._checkpoint_quietly)

    # ---------------------------------------------------------------- writes
    def sync(self) -> None:
        """Apply committed changes to the index. Never raises for index trouble."""
        with self._lock:
            if self._closed:
                return
            if self.ready and self.sidecar is not None:
                sc = self.sidecar
                self._guard("catch-up", lambda: sc.catch_up(checkpoint=not self._deferred))
            elif self.sidecar is None and self._rebuilder is None:
                self._guard("open", self.open)  # the first vector just arrived
            # else: a background rebuild replays everything when it finishes

    @contextlib.contextmanager
    def deferred_checkpoints(self) -> Iterator[None]:
        """Within the block, writes reach the index as always but no checkpoint is
        written when one falls due; at its end one is, if due. For a batch of many
        transactions (consolidation): at 100k rows each checkpoint rewrites ~170 MB. A
        crash within loses nothing (the next open replays the changes from the source)."""
        with self._lock:
            self._deferred += 1
        try:
            yield
        finally:
            with self._lock:
                self._deferred -= 1
                if not self._deferred and self.ready and self.sidecar is not None:
                    self._guard("checkpoint", self.sidecar.checkpoint_if_due)

    # ---------------------------------------------------------------- reads
    def recall(
        self, q: npt.NDArray[np.float32], k: int, scope: Scope, now_us: int
    ) -> list[tuple[int, float]] | None:
        """Top-``k`` (label, cosine) of live rows in scope, or None: search in SQL."""
        answer = self._recall(q, k, scope, now_us)
        self.answers["sql" if answer is None else answer[1]] += 1
        return None if answer is None else answer[0]

    def _recall(
        self, q: npt.NDArray[np.float32], k: int, scope: Scope, now_us: int
    ) -> Answer | None:
        with self._lock:
            if self._closed:
                return None
            if self.sidecar is None and not self.ready and self._rebuilder is None:
                self._guard("open", self.open)
            sc = self.sidecar
            if not self.ready or sc is None:
                return None
            # Another process may have written since (WAL): one cheap seq read decides.
            if not self._guard("catch-up", lambda: sc.catch_up(checkpoint=not self._deferred)):
                return None
        index = sc.index
        assert isinstance(index, MemoryIndex)
        with sc.lock:  # the graph and the scope map change together under this lock
            answer: Answer | None = self._guard_value(
                "search", lambda: index.top_k(q, k, scope, now_us)
            )
        return answer

    # ---------------------------------------------------------------- maintenance
    def rebuild(self, progress: Progress | None = None) -> bool:
        """Rebuild now, in the calling thread (``agentzero store rebuild``).

        False if there is nothing to index yet (no vector stored).
        """
        with self._lock:
            sc = self._new_sidecar()
            if sc is None:
                return False
            sc.rebuild(progress, reason="requested")
            self.sidecar, self.ready = sc, True
            return True

    def purge_deleted(self) -> bool:
        """Drop deleted rows from the index and its checkpoint now, in the calling thread
        (``Sidecar.purge_deleted``: replay, scrub, one checkpoint); an index that is not
        ready is opened or rebuilt first. False if there is nothing to index yet."""
        if (t := self._rebuilder) is not None:
            t.join()  # it checkpoints when it finishes: ours must come after
        with self._lock:
            sc = self.sidecar if self.ready else None
            if sc is None:
                sc = self._new_sidecar()
                if sc is None:
                    return False
                sc.open()
            sc.purge_deleted()
            self.sidecar, self.ready = sc, True
            return True

    def status(self) -> SidecarStatus | None:
        """The sidecar's status, or None before the store has vectors."""
        with self._lock:
            sc = self.sidecar or self._new_sidecar()
        return sc.status() if sc is not None else None

    def rebuild_in_background(self, reason: str) -> None:
        """Switch recall to exact search and rebuild the index in a daemon thread."""
        with self._lock:
            self.ready = False
            if self._closed or (self._rebuilder is not None and self._rebuilder.is_alive()):
                return
            log.warning("memory HNSW index unavailable (%s): exact search until rebuilt", reason)
            t = threading.Thread(
                target=self._rebuild_worker,
                args=(reason,),
                name="agentzero-hnsw-rebuild",
                daemon=True,
            )
            self._rebuilder = t
            t.start()

    def _rebuild_worker(self, reason: str) -> None:
        try:
            sc = self._new_sidecar()
            if sc is None:
                return
            # Build in memory without our lock: queries keep using exact search meanwhile.
            sc._rebuild(None, reason)
            with self._lock:
                if self._closed:
                    return
                self.sidecar, self.ready = sc, True
                self._guard("checkpoint", sc._checkpoint_quietly)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            log.error("background rebuild of the memory HNSW index failed: %s", exc)
        finally:
            with self._lock:
                self._rebuilder = None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for a background rebuild; True if the index is ready."""
        t = self._rebuilder
        if t is not None:
            t.join(timeout)
        return self.ready

    # ---------------------------------------------------------------- internals
    def _guard(self, what: str, fn: Callable[[], Any]) -> bool:
        return self._guard_value(what, fn) is not None

    def _guard_value(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn``; a native or index error turns into exact search plus a rebuild."""
        try:
            r = fn()
            return True if r is None else r
        except DimensionMismatchError:
            raise
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            if (
                isinstance(exc, AgentZeroStoreError)
                and exc.code != "sidecar_corrupt"
                and exc.code != "io_error"
            ):
                raise  # the source itself failed: the caller must see it
            self.rebuild_in_background(f"{what} failed: {type(exc).__name__}: {exc}")
            return None

    def _watch(self) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        target = str(self.directory)
        outer = self

        class _Handler(FileSystemEventHandler):
            def on_deleted(self, event: FileSystemEvent) -> None:
                if str(event.src_path) == target:
                    outer.rebuild_in_background("its directory was deleted")

            def on_moved(self, event: FileSystemEvent) -> None:
                if str(event.src_path) == target:
                    outer.rebuild_in_background("its directory was moved away")

        parent = self.directory.parent
        if not parent.is_dir():
            return
        try:
            obs = Observer()
            # Non-recursive on the data dir: our own renames inside the sidecar dir are
            # not reported, only the sidecar dir itself disappearing.
            obs.schedule(_Handler(), str(parent), recursive=False)
            obs.daemon = True
            obs.start()
        except OSError as exc:  # e.g. inotify watch limit reached: run without watching
            log.warning("cannot watch %s: %s", parent, exc)
            return
        self._observer = obs


__all__ = [
    "MAX_CANDIDATES",
    "IndexedStore",
    "MemoryHnsw",
    "MemoryVectorSource",
    "exact_scope_limit",
]
