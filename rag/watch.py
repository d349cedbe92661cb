"""Keep a document store in step with a folder: a full sync, then every change it sees.

The watcher is level-triggered: file-system events only say *which paths* to look at
again; what happens is decided by what is on disk when a path has been quiet for the
debounce period. That makes editors' save dances harmless (vim's ``4913`` probe and
``~`` backups, ``.#file`` locks, write-to-temp + ``os.replace`` arriving as a move, a
file created and deleted within a burst) and makes replaying an event twice a no-op.

Ownership: a document belongs to the watched folder when its ``source_path`` is the file
``ROOT/<id>`` (exactly what ``ingest_dir`` of ROOT writes). Only such documents are ever
deleted; documents ingested by other means (``--text``, another folder, another id) are
left alone even when their id collides with a path here.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from agentzero_store.base.errors import AgentZeroStoreError

from .debounce import DEBOUNCE, MAX_DELAY, Debouncer
from .documents import DocInput
from .files import BATCH, doc_id_for, document_of
from .folder import (
    DEFAULT_SOURCE_IO,
    MAX_FILE_BYTES,
    FileIssue,
    Scanner,
    SourceFile,
    SourceIO,
    is_document,
)
from .store import DocumentStore

log = logging.getLogger(__name__)

POLL = 0.2  # seconds: longest sleep of the loop, so a stop request is seen promptly

# Events that can change what a path holds. Opened / closed-without-write are left out
# on purpose: the watcher's own reads produce them, and they would re-trigger forever.
WATCHED_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileAttribEvent,  # chmod can make an unreadable file readable
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]

# skipped: left out by policy (symlink out of the folder, FIFO, device, empty file);
# failed: an error to look at (too large, not UTF-8, unreadable, refused by the store).
Kind = Literal["ingested", "deleted", "unchanged", "skipped", "failed"]
KINDS: tuple[Kind, ...] = ("ingested", "deleted", "unchanged", "skipped", "failed")


@dataclass(frozen=True)
class Change:
    """One thing the watcher did (or declined to do) for one document file."""

    event: Kind
    id: str | None
    path: str
    reason: str | None = None  # why a file was skipped or failed
    code: str | None = None  # the same, as a stable name (see rag.folder)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``reason`` and ``code`` only when there is one)."""
        d: dict[str, Any] = {"event": self.event, "id": self.id, "path": self.path}
        if self.reason is not None:
            d["reason"] = self.reason
        if self.code is not None:
            d["code"] = self.code
        return d

    def __str__(self) -> str:
        return f"{self.event} {self.id}" + (f" ({self.reason})" if self.reason else "")


class FolderSync:
    """Syncs the documents of ``root`` into ``store``: ``initial_sync``, then ``run``.

    ``apply(events)`` is the synchronous core (no threads, no timing) that tests drive;
    ``start`` adds the inotify observer feeding a ``Debouncer``; ``run`` applies due paths
    on the calling thread (the only thread that touches the store) until ``stop``.
    Paths are found and read as ``ingest_dir`` does (``rag.folder``): never outside the
    folder, never a FIFO, device or /proc, never more than ``max_bytes``.
    """

    def __init__(
        self,
        store: DocumentStore,
        root: Path | str,
        *,
        debounce: float = DEBOUNCE,
        on_change: Callable[[Change], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = MAX_FILE_BYTES,
        io: SourceIO = DEFAULT_SOURCE_IO,
    ) -> None:
        self.scanner = Scanner(Path(root).expanduser(), max_bytes=max_bytes, io=io)
        self.store = store
        # Resolved once: source paths are stored resolved, and events arrive under it.
        assert self.scanner.root is not None
        self.root = self.scanner.root
        self.on_change = on_change
        self.events_seen = 0  # watchdog events noticed so far (what a test can wait on)
        self.pending = Debouncer(debounce, max(MAX_DELAY, debounce), clock)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._observer: Any = None  # watchdog's Observer (untyped)

    # ------------------------------------------------------------------ the core
    def initial_sync(self) -> list[Change]:
        """Ingest every document file; delete owned documents whose file is gone."""
        return self.reconcile({self.root: True})

    def apply(self, events: Iterable[FileSystemEvent]) -> list[Change]:
        """Apply watchdog events at once (no debounce): the deterministic path for tests."""
        marks: dict[Path, bool] = {}
        for event in events:
            for path, is_dir in self._paths_of(event):
                marks[path] = marks.get(path, False) or is_dir
        return self.reconcile(marks)

    def reconcile(self, marks: Mapping[Path, bool]) -> list[Change]:
        """Make the store match the disk for these paths (path → was a directory)."""
        files: dict[str, SourceFile] = {}  # id → file to (re-)ingest
        issues: dict[str, FileIssue] = {}  # path → why it is left out
        gone: set[str] = set()  # ids whose file is no longer there
        for path, is_dir in marks.items():
            if not os.path.lexists(path):
                if is_document(path):
                    gone.add(self._id(path))
            else:
                found = self.scanner.scan(path)
                files.update((f.id, f) for f in found.files)
                issues.update((i.path, i) for i in found.issues)
            # (os.path.isdir, not Path.is_dir: it answers False on any OSError, never raises)
            if is_dir or os.path.isdir(path):  # a folder came, went or moved: sweep below it
                gone |= self._vanished_under(path)
        docs, changes, vanished = self._read(files, issues.values())
        for i in range(0, len(docs), BATCH):
            changes += self._ingest(docs[i : i + BATCH])
        changes += self._delete(sorted((gone - files.keys()) | vanished))
        for change in changes:
            if self.on_change is not None:
                self.on_change(change)
        return changes

    def _id(self, path: Path) -> str:
        return doc_id_for(path, self.root)

    def _owned(self, doc_id: str) -> bool:
        record = self.store.get(doc_id)
        return (
            record is not None
            and record.source_path is not None
            and Path(record.source_path) == self.root / doc_id
        )

    def _vanished_under(self, folder: Path) -> set[str]:
        prefix = "" if folder == self.root else self._id(folder) + "/"
        return {
            i
            for i in self.store.log.ids()
            if i.startswith(prefix) and not os.path.lexists(self.root / i) and self._owned(i)
        }

    def _read(
        self, files: Mapping[str, SourceFile], issues: Iterable[FileIssue]
    ) -> tuple[list[DocInput], list[Change], set[str]]:
        """(documents to ingest, files left out, ids whose file vanished before reading).

        A file left out keeps the version the store holds (as an empty file does): the
        watcher deletes a document only when its file is gone.
        """
        docs: list[DocInput] = []
        left_out: list[Change] = []
        vanished: set[str] = set()
        texts = {doc_id: self.scanner.read(f) for doc_id, f in sorted(files.items())}
        for issue in [*issues, *(t for t in texts.values() if isinstance(t, FileIssue))]:
            doc_id = self._id(Path(issue.path))
            if issue.code == "vanished":  # renamed away or deleted in a burst: a deletion
                vanished.add(doc_id)
            else:
                left_out.append(self._left_out(doc_id, issue))
        for doc_id, text in texts.items():
            if isinstance(text, FileIssue):
                continue
            if not text or text.isspace():  # the store holds no empty text
                issue = FileIssue(str(files[doc_id].path), "empty", "empty file")
                left_out.append(self._left_out(doc_id, issue))
            else:
                docs.append(document_of(files[doc_id], text))
        return docs, left_out, vanished

    def _left_out(self, doc_id: str, issue: FileIssue) -> Change:
        event: Kind = "failed" if issue.failed else "skipped"
        return Change(event, doc_id, issue.path, issue.reason, issue.code)

    def _ingest(self, docs: list[DocInput]) -> list[Change]:
        try:
            results = self.store.ingest_many(docs)  # one group commit for a burst
        except AgentZeroStoreError as exc:
            if len(docs) > 1:  # find the one document at fault; the others still go in
                return [c for d in docs for c in self._ingest([d])]
            return [self._failed(docs[0].id, docs[0].source_path or "", exc)]
        return [
            Change("ingested" if r.changed else "unchanged", r.id, d.source_path or "")
            for d, r in zip(docs, results, strict=True)
        ]

    def _delete(self, ids: Iterable[str]) -> list[Change]:
        changes: list[Change] = []
        for doc_id in ids:
            path = str(self.root / doc_id)
            if not self._owned(doc_id):
                continue  # not ours (or never ingested, e.g. an empty file): leave it
            try:
                if self.store.delete(doc_id):
                    changes.append(Change("deleted", doc_id, path))
            except AgentZeroStoreError as exc:
                changes.append(self._failed(doc_id, path, exc))
        return changes

    def _failed(self, doc_id: str, path: str, exc: AgentZeroStoreError) -> Change:
        # str(exc) carries the hint; the next event on the file retries it.
        log.warning("%s: %s", path, exc)
        return Change("failed", doc_id, path, str(exc), exc.code)

    def _paths_of(self, event: FileSystemEvent) -> Iterator[tuple[Path, bool]]:
        """The paths under root an event asks to look at again (hidden parts ignored)."""
        if not isinstance(event, tuple(WATCHED_EVENTS)):
            return
        for raw in (event.src_path, event.dest_path):
            if not raw:
                continue
            path = Path(raw.decode() if isinstance(raw, bytes) else raw)
            try:
                rel = path.relative_to(self.root)
            except ValueError:
                continue  # moved out of (or in from outside) the folder: the other side counts
            if any(part.startswith(".") for part in rel.parts):
                continue
            if event.is_directory or is_document(path):
                yield path, event.is_directory

    # ------------------------------------------------------------------ live watching
    def notice(self, event: FileSystemEvent) -> None:
        """Queue an event's paths for the next quiet period (called on watchdog's thread)."""
        for path, is_dir in self._paths_of(event):
            self.pending.add(path, is_dir)
            self._wake.set()
        self.events_seen += 1

    def wake(self) -> None:
        """Have ``run`` look at the pending paths now (after a clock moved, or a signal)."""
        self._wake.set()

    def start(self) -> None:
        """Start the inotify observer (watches are in place when this returns)."""
        sync = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                sync.notice(event)

        self._observer = Observer()
        self._observer.schedule(
            Handler(), str(self.root), recursive=True, event_filter=WATCHED_EVENTS
        )
        self._observer.start()

    def stop(self) -> None:
        """Ask ``run`` to return; safe from a signal handler or another thread."""
        # Only an Event.set: the loop never blocks on _stop, so this cannot deadlock
        # against the thread it interrupts.
        self._stop.set()

    def step(self) -> list[Change]:
        """Apply every path whose quiet period is over."""
        due = self.pending.pop_due()
        return self.reconcile(due) if due else []

    def run(self) -> None:
        """Apply due paths until ``stop``; errors are logged, never end the loop."""
        try:
            while not self._stop.is_set():
                wait = self.pending.next_due_in()
                self._wake.wait(POLL if wait is None else min(wait, POLL))
                self._wake.clear()
                try:
                    self.step()
                except Exception:  # never crash the watcher: log it, keep watching
                    log.exception("could not apply changes under %s", self.root)
        finally:
            if self._observer is not None:
                self._observer.stop()
                self._observer.join()
                self._observer = None


@dataclass(frozen=True)
class SyncSummary:
    """How the initial sync went: how many document files got each outcome."""

    path: str
    counts: Mapping[str, int]
    event: str = "synced"

    @classmethod
    def of(cls, root: Path, changes: Iterable[Change]) -> SyncSummary:
        """Count ``changes`` by outcome."""
        counts = Counter(c.event for c in changes)
        return cls(str(root), {k: counts[k] for k in KINDS})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``{"event": "synced", "path": ..., "ingested": n, ...}``."""
        return {"event": self.event, "path": self.path, **self.counts}

    def __str__(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in self.counts.items())
        return f"synced {self.path}: {counts}; watching (Ctrl-C stops)"


@contextmanager
def stop_on_signals(sync: FolderSync) -> Iterator[None]:
    """SIGINT and SIGTERM make ``sync.run`` return (so the store closes cleanly)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        sync.stop()

    saved = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, old in saved.items():
            signal.signal(s, old)
