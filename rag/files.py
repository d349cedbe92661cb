"""Documents from files: which files count, their ids, titles, and directory ingest."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentzero_store.errors import InvalidArgumentError
from agentzero_store.fileio import TMP_MARKER

if TYPE_CHECKING:
    from .store import DocInput, DocumentStore

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
BATCH = 64  # documents per group commit


def is_document(path: Path) -> bool:
    """A .txt/.md file that is not hidden, a temp file or an editor's backup."""
    name = path.name
    return (
        path.suffix.lower() in TEXT_SUFFIXES
        and not name.startswith((".", "~", "#"))
        and not name.endswith(("~", ".swp", ".tmp"))
        and TMP_MARKER not in name
    )


def iter_documents(root: Path) -> Iterator[Path]:
    """Every document file under ``root`` (recursive, sorted, hidden dirs skipped)."""
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts[:-1]):
            continue
        if p.is_file() and is_document(p):
            yield p


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


def read_document(path: Path, root: Path | None = None, doc_id: str | None = None) -> DocInput:
    """A file as a ``DocInput`` (UTF-8; undecodable bytes are a clear error)."""
    from .store import DocInput

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"{path} is not UTF-8 text") from exc
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read {path}: {exc.strerror}") from exc
    return DocInput(
        id=doc_id or doc_id_for(path, root),
        text=text,
        title=title_of(text, path),
        source_path=str(path.resolve()),
    )


@dataclass(frozen=True)
class DirReport:
    """What ingesting a directory did."""

    added: int
    updated: int
    unchanged: int
    skipped: list[str]  # files that could not be read (empty, not UTF-8, ...)

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
            "skipped": self.skipped,
        }


def ingest_dir(
    store: DocumentStore, root: Path, progress: Callable[[int], None] | None = None
) -> DirReport:
    """Ingest every .txt/.md file under ``root`` (ids = relative paths), in group commits."""
    if not root.is_dir():
        raise InvalidArgumentError(f"{root} is not a directory")
    files = list(iter_documents(root))
    added = updated = unchanged = 0
    skipped: list[str] = []
    for i in range(0, len(files), BATCH):
        batch = []
        for p in files[i : i + BATCH]:
            try:
                doc = read_document(p, root)
            except InvalidArgumentError:
                skipped.append(str(p))
                continue
            if doc.text.strip():
                batch.append(doc)
            else:
                skipped.append(str(p))
        existed = {d.id for d in batch if store.get(d.id) is not None}
        for r in store.ingest_many(batch):
            if not r.changed:
                unchanged += 1
            elif r.id in existed:
                updated += 1
            else:
                added += 1
        if progress:
            progress(len(files[i : i + BATCH]))
    return DirReport(added, updated, unchanged, skipped)
