"""Documents from files: ids, titles, one named file, and directory ingest.

Which paths may be read, and how, is ``rag.folder``: a directory ingest never leaves
the directory, never reads a FIFO, device or /proc, and never reads more than the size
limit. A bad file costs only itself: it is listed in the ``DirReport`` with a reason,
and the rest of the directory is ingested.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentzero_store.base.errors import InvalidArgumentError

from .documents import DocInput, IngestResult
from .folder import (
    DEFAULT_SOURCE_IO,
    MAX_FILE_BYTES,
    DirScan,
    FileIssue,
    Scanner,
    SourceFile,
    SourceIO,
    is_document,
)

__all__ = [
    "BATCH",
    "DirReport",
    "Ingests",
    "doc_id_for",
    "document_of",
    "ingest_dir",
    "ingest_scan",
    "is_document",
    "read_document",
    "scan_dir",
    "title_of",
]

BATCH = 64  # documents per group commit


class Ingests(Protocol):
    """What a directory ingest needs of a document store (``DocumentStore`` is one)."""

    @property
    def log(self) -> Container[str]:
        """The ids of the live documents (``doc_id in log``)."""
        ...

    def ingest_many(self, docs: Iterable[DocInput]) -> list[IngestResult]:
        """Ingest ``docs`` in one group commit."""
        ...


def doc_id_for(path: Path, root: Path | None) -> str:
    """The id of a file's document: its POSIX path relative to ``root`` (or its name)."""
    return path.relative_to(root).as_posix() if root is not None else path.name


def title_of(text: str, path: Path) -> str:
    """The first Markdown heading, else the file name without suffix."""
    for line in text.splitlines()[:20]:
        s = line.strip()
        if s.startswith("#"):
            return s.lstrip("#").strip() or path.stem
    return path.stem


def document_of(f: SourceFile, text: str, doc_id: str | None = None) -> DocInput:
    """The ``DocInput`` of a checked file's text (source: where the file was found)."""
    return DocInput(
        id=doc_id or f.id, text=text, title=title_of(text, f.path), source_path=str(f.path)
    )


def read_document(
    path: Path,
    doc_id: str | None = None,
    *,
    max_bytes: int = MAX_FILE_BYTES,
    io: SourceIO = DEFAULT_SOURCE_IO,
) -> DocInput:
    """One file a user named, as a ``DocInput`` (id: ``doc_id`` or the file name).

    Refused with ``InvalidArgumentError`` when it is not a regular file (FIFO, device,
    folder), is under /proc or /sys, is larger than ``max_bytes`` (checked before it is
    read) or is not UTF-8; ``StoreIOError`` when the OS fails to read it.
    """
    scanner = Scanner(None, max_bytes=max_bytes, io=io)
    checked = scanner.check(Path(path).expanduser())
    if not isinstance(checked, SourceFile):
        assert isinstance(checked, FileIssue)  # with no root, every path is decided
        if checked.code == "vanished":
            raise InvalidArgumentError(f"{path}: no such file")
        raise checked.error()
    text = scanner.read(checked)
    if isinstance(text, FileIssue):
        raise text.error()
    return document_of(checked, text, doc_id)


@dataclass(frozen=True)
class DirReport:
    """What ingesting a directory did, and every file it left out (each with a reason)."""

    added: int
    updated: int
    unchanged: int
    skipped: list[FileIssue]  # left out by policy: symlinks out, FIFOs, devices, empty files
    failed: list[FileIssue]  # errors: too large, not UTF-8, unreadable, refused by the store

    @property
    def total(self) -> int:
        """Documents ingested or confirmed unchanged."""
        return self.added + self.updated + self.unchanged

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": [i.to_dict() for i in self.skipped],
            "failed": [i.to_dict() for i in self.failed],
        }


def scan_dir(
    root: Path | str, *, max_bytes: int = MAX_FILE_BYTES, io: SourceIO = DEFAULT_SOURCE_IO
) -> DirScan:
    """Find the document files under ``root`` (nothing is read yet; see ``rag.folder``)."""
    scanner = Scanner(Path(root).expanduser(), max_bytes=max_bytes, io=io)
    assert scanner.root is not None
    return scanner.scan(scanner.root)


def ingest_scan(
    store: Ingests, scan: DirScan, progress: Callable[[int], None] | None = None
) -> DirReport:
    """Read and ingest the files of ``scan`` in group commits; a bad file costs only itself.

    Store-wide errors (disk full, lock timeout, a closed store) still raise: batches
    committed before stay committed.
    """
    added = updated = unchanged = 0
    issues = list(scan.issues)
    files = scan.files
    for i in range(0, len(files), BATCH):
        docs: list[DocInput] = []
        for f in files[i : i + BATCH]:
            text = scan.scanner.read(f)
            if isinstance(text, FileIssue):
                issues.append(text)
            elif not text or text.isspace():  # the store holds no empty text
                issues.append(FileIssue(str(f.path), "empty", "empty file"))
            else:
                docs.append(document_of(f, text))
        existed = {d.id for d in docs if d.id in store.log}
        results, refused = _ingest(store, docs)
        issues += refused
        for r in results:
            if not r.changed:
                unchanged += 1
            elif r.id in existed:
                updated += 1
            else:
                added += 1
        if progress:
            progress(len(files[i : i + BATCH]))
    issues.sort(key=lambda x: Path(x.path).parts)
    return DirReport(
        added,
        updated,
        unchanged,
        [x for x in issues if not x.failed],
        [x for x in issues if x.failed],
    )


def _ingest(store: Ingests, docs: list[DocInput]) -> tuple[list[IngestResult], list[FileIssue]]:
    """``ingest_many``; a batch the store refuses is halved until the refused files are found.

    The store checks every document of a batch (e.g. its chunk count) before it writes
    any, so a refused batch wrote nothing and its halves can be tried again.
    """
    if not docs:
        return [], []
    try:
        return store.ingest_many(docs), []
    except InvalidArgumentError as exc:
        if len(docs) == 1:
            return [], [FileIssue(docs[0].source_path or docs[0].id, "rejected", str(exc))]
    half = len(docs) // 2
    first, second = _ingest(store, docs[:half]), _ingest(store, docs[half:])
    return first[0] + second[0], first[1] + second[1]


def ingest_dir(
    store: Ingests,
    root: Path | str,
    progress: Callable[[int], None] | None = None,
    *,
    max_bytes: int = MAX_FILE_BYTES,
    io: SourceIO = DEFAULT_SOURCE_IO,
) -> DirReport:
    """Ingest every .txt/.md file under ``root`` (ids = relative paths), in group commits.

    Never leaves ``root`` (see ``rag.folder``); files larger than ``max_bytes`` are
    refused before they are read. Every file left out is in the report with a reason.
    """
    return ingest_scan(store, scan_dir(root, max_bytes=max_bytes, io=io), progress)
