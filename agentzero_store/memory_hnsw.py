"""The HNSW sidecar over conversation memory: source adapter, recall strategy, self-healing.

``SqliteMemoryStore`` stays the truth. Writes commit to SQLCipher first and then reach
the index through the change feed (``Sidecar.catch_up``), the same path that replays
after a crash or picks up another process's writes, so there is one way in.

Recall asks HNSW for ``3k`` candidates, keeps those the database says are live and in
scope (in HNSW order), and widens ×4 until it has ``k``. Small scopes and exhausted
searches fall back to exact search over the scoped rows, which is authoritative.

If anything about the index fails — a native error, the directory deleted under a
running process (watched with watchdog) — recall switches to exact search at once and
the index is rebuilt in a background thread. A sidecar problem never fails a recall or
an acknowledged write.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .errors import AgentZeroStoreError, DimensionMismatchError
from .fileio import DEFAULT_IO, FileIO
from .hnsw_index import HnswIndex
from .sidecar import Change, EmbedderInfo, OpenReport, Progress, Sidecar, SidecarStatus

if TYPE_CHECKING:
    from .memory import SqliteMemoryStore

log = logging.getLogger(__name__)

# Exact or HNSW for a scoped query? Both pay mostly for reading rows from SQLCipher
# (~5-10 µs per row: each row is on its own encrypted page). Exact search reads the s rows
# of the scope; post-filtered HNSW reads about 3k·N/s candidates to find k in scope. They
# cost the same at s = sqrt(3·k·N) (1,700 rows for k=10 in 100k): below it exact is
# cheaper, and it is exactly right, so small scopes always return the exact top-k.
EXACT_SCOPE_MIN = 64  # always exact at or below this many rows
EXACT_SCOPE_MAX = 4_096  # never count further than this before choosing HNSW
# Widening stops here; past it exact search over the scope is cheaper than a huge beam.
MAX_CANDIDATES = 4_096
WIDEN = 4


def exact_scope_limit(k: int, live: int) -> int:
    """Scopes of at most this many rows are searched exactly (see above)."""
    return int(min(EXACT_SCOPE_MAX, max(EXACT_SCOPE_MIN, math.sqrt(3 * k * live))))


class MemoryVectorSource:
    """``Source[bytes]`` over the memory table: float32 embedding bytes keyed by label."""

    def __init__(self, store: SqliteMemoryStore) -> None:
        self._store = store

    @property
    def store_id(self) -> str:
        """The store's id."""
        return self._store.store_id

    def source_seq(self) -> int:
        """Newest change seq."""
        return self._store.source_seq()

    def changes_since(self, seq: int, limit: int) -> Sequence[Change[bytes]]:
        """The memory change feed, as generic changes."""
        return [Change(c.seq, c.op, c.label, c.embedding)
                for c in self._store.changes_since(seq, limit)]

    def item_count(self) -> int:
        """Rows holding a vector."""
        return self._store.vector_count()

    def snapshot(self, batch: int) -> Iterator[Sequence[tuple[int, bytes]]]:
        """Every stored vector, paged by label (each page its own short read, so a long
        rebuild never holds the database lock between pages)."""
        after = 0
        while rows := self._store.vectors_after(after, batch):
            yield rows
            after = rows[-1][0]


AllowedFn = Callable[[list[int]], Mapping[int, Any]]
"""Given candidate labels, the live in-scope ones (mapped to their rows, for the caller)."""
ScopeSizeFn = Callable[[int], int]


class MemoryHnsw:
    """The memory store's HNSW sidecar, with exact-search fallback and background rebuild."""

    def __init__(
        self,
        store: SqliteMemoryStore,
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
        self.sidecar: Sidecar[bytes] | None = None
        self.ready = False  # False: recall uses exact search
        self.open_report: OpenReport | None = None
        self._rebuilder: threading.Thread | None = None
        self._closed = False
        self._observer: Any = None
        self.answers = {"index": 0, "exact": 0}  # how recalls were answered (diagnostics)
        if watch:
            self._watch()

    def __repr__(self) -> str:
        return f"MemoryHnsw(dir={str(self.directory)!r}, ready={self.ready})"

    # ---------------------------------------------------------------- lifecycle
    def open(self, progress: Progress | None = None) -> OpenReport | None:
        """Load or rebuild the index (no-op until the store holds its first vector)."""
        with self._lock:
            # Create the directory even before the first vector: its presence is what
            # re-enables the index on the next open (``open(hnsw=None)``).
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            sc = self._new_sidecar()
            if sc is None:
                return None
            self.open_report = sc.open(progress)
            self.sidecar, self.ready = sc, True
            return self.open_report

    def _new_sidecar(self) -> Sidecar[bytes] | None:
        model, dim = self._store.embedding_info()
        if dim is None:
            return None  # no vector stored yet: the index is created with the first one
        if self._want_dim is not None and self._want_dim != dim:
            raise DimensionMismatchError(
                f"the store holds {dim}-d vectors; an index of {self._want_dim} was asked for")
        c = self._store.config
        index = HnswIndex(dim, m=c.hnsw_m, ef_construction=c.hnsw_ef_construction,
                          ef_search_min=c.hnsw_ef_search_min,
                          initial_capacity=c.hnsw_initial_capacity)
        return Sidecar(self.directory, index, MemoryVectorSource(self._store),
                       key=self._store.keys.sidecar_key, embedder=EmbedderInfo(model, dim),
                       checkpoint_every=c.checkpoint_every, io=self._io)

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
                self._guard("catch-up", self.sidecar.catch_up)
            elif self.sidecar is None and self._rebuilder is None:
                self._guard("open", self.open)  # the first vector just arrived
            # else: a background rebuild replays everything when it finishes

    # ---------------------------------------------------------------- reads
    def recall(
        self, q: npt.NDArray[np.float32], k: int, *, scoped: bool,
        allowed: AllowedFn, scope_size: ScopeSizeFn,
    ) -> list[tuple[int, float]] | None:
        """Top-``k`` (label, cosine) via HNSW, or None: the caller must search exactly."""
        hits = self._recall(q, k, scoped=scoped, allowed=allowed, scope_size=scope_size)
        self.answers["exact" if hits is None else "index"] += 1
        return hits

    def _recall(
        self, q: npt.NDArray[np.float32], k: int, *, scoped: bool,
        allowed: AllowedFn, scope_size: ScopeSizeFn,
    ) -> list[tuple[int, float]] | None:
        with self._lock:
            if self._closed:
                return None
            if self.sidecar is None and not self.ready and self._rebuilder is None:
                self._guard("open", self.open)
            sc = self.sidecar
            if not self.ready or sc is None:
                return None
            # Another process may have written since (WAL): one cheap seq read decides.
            if not self._guard("catch-up", sc.catch_up):
                return None
        index = sc.index
        assert isinstance(index, HnswIndex)
        if scoped:
            limit = exact_scope_limit(k, index.count())
            if scope_size(limit + 1) <= limit:
                return None  # small scope: exact search, identical to the exact top-k
        n = min(3 * k, MAX_CANDIDATES)
        checked: dict[int, bool] = {}  # label -> live and in scope (asked of the database)
        while True:
            # ef >= max(4k, 16) for the k asked, and never below the candidates wanted.
            search = functools.partial(index.search, q, n, ef=max(4 * k, n))
            with sc.lock:
                live = index.count()
                cands = self._guard_value("search", search)
            if cands is None:
                return None
            hits = self._filter(cands, k, checked, allowed)
            if len(hits) >= k:
                return hits[:k]
            if n >= live or n >= MAX_CANDIDATES:
                return None  # scope or index exhausted: exact search is authoritative
            n = min(n * WIDEN, MAX_CANDIDATES)

    @staticmethod
    def _filter(
        cands: list[tuple[int, float]], k: int, checked: dict[int, bool], allowed: AllowedFn
    ) -> list[tuple[int, float]]:
        """The candidates the database confirms, in HNSW order, stopping at ``k``.

        Rows are checked in HNSW order and in growing chunks: every row costs a page
        decrypt, and an unscoped query usually needs only the first ``k``.
        """
        hits: list[tuple[int, float]] = []
        pos = 0
        while pos < len(cands) and len(hits) < k:
            todo = [lab for lab, _ in cands[pos:] if lab not in checked]
            # Ask for what is missing, scaled by the hit rate seen so far.
            seen = max(1, sum(checked.values()))
            want = max(k - len(hits), 1) * max(1, len(checked) // seen)
            batch = todo[:want]
            if batch:
                ok = allowed(batch)
                checked.update((lab, lab in ok) for lab in batch)
            end = pos
            for lab, _ in cands[pos:]:
                if lab not in checked:
                    break
                end += 1
            hits = [(lab, sc) for lab, sc in cands[:end] if checked[lab]]
            pos = end
        return hits

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
            t = threading.Thread(target=self._rebuild_worker, args=(reason,),
                                 name="agentzero-hnsw-rebuild", daemon=True)
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
            if isinstance(exc, AgentZeroStoreError) and exc.code != "sidecar_corrupt" \
                    and exc.code != "io_error":
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


__all__ = ["MAX_CANDIDATES", "MemoryHnsw", "MemoryVectorSource", "exact_scope_limit"]
