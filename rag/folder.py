"""Document files on disk: which paths under a folder may be read, and reading them with a bound.

A folder given to ``rag ingest DIR`` or ``rag watch`` is untrusted input. It may hold a
symlink to anywhere (``env.txt -> /proc/self/environ`` would store the process
environment, passphrase included, as a document), FIFOs that block a reader forever,
devices, sockets, and files far larger than any document. So:

- Folders are walked without following symlinks, each real folder once: a walk never
  leaves the folder and never loops. Hidden names (``.git``, ``.#lock``) are not looked at.
- Every entry is resolved. A symlink is followed only to a regular file inside the
  folder; one that leads outside, to a folder, to nothing or round a loop is skipped, as
  is every FIFO, device, socket and anything under /proc or /sys. Each such entry is
  reported as a ``FileIssue`` (never silently dropped, never read).
- The size is checked (stat) before a file is opened. The open file must then be the
  same regular file (device and inode), and it is read with a bound of ``max_bytes + 1``
  bytes, so a file swapped or grown in between cannot smuggle in another file or blow
  up memory.

Every OS error becomes a ``FileIssue`` or a ``StoreIOError``, never a raw ``OSError``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentzero_store.base.errors import AgentZeroStoreError, InvalidArgumentError, StoreIOError
from agentzero_store.storage.fileio import TMP_MARKER

TEXT_SUFFIXES = (".txt", ".md", ".markdown")

# The largest file read as a document, in bytes (8 MiB; `--max-bytes` changes it).
# Sized against the chunk limit: a document may have at most 65,535 chunks
# (rag.feed.MAX_CHUNKS - 1). With the default chunking (180 words, 40 overlap, 1,200
# chars) a chunk covers ~900 bytes of prose and >= 280 bytes of one-letter words; the
# worst mix found by an adversarial search (64 one-letter words before a 1,199-letter
# word, whose overlap cascades) covers ~166 bytes. 8 MiB / 65,535 is 128 bytes, so a
# file under the limit stays under the chunk limit, and a file that would exceed it is
# refused before a byte of it is read (reading 120 MB took 3 GB of RSS to chunk). Cost
# at the limit, measured: `rag ingest` of one 8 MiB prose file peaks at 330 MiB RSS
# (110 MiB for a folder of small notes), --embedder none.
MAX_FILE_BYTES = 8 * 1024 * 1024
READ_BLOCK = 1024 * 1024  # bytes asked of one read() call
PSEUDO_FILE_SYSTEMS = (Path("/proc"), Path("/sys"))  # kernel state, not documents

# Why a file was not ingested. "Skipped" is policy (nothing the user must fix);
# "failed" is an error the user should look at (it makes `rag ingest DIR` exit 7).
SKIPPED_CODES = frozenset(
    {"symlink_outside", "symlink_to_folder", "bad_symlink", "special_file", "pseudo_fs",
     "folder_loop", "empty", "vanished"}
)  # fmt: skip
FAILED_CODES = frozenset({"too_large", "not_utf8", "io_error", "changed", "rejected"})

_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_NOFOLLOW  # the resolved path's last part must not have become a symlink
    | os.O_NONBLOCK  # a file swapped for a FIFO after the check must not block the open
    | os.O_NOCTTY
    | os.O_CLOEXEC
)


def is_document(path: Path) -> bool:
    """A .txt/.md file that is not hidden, a temp file or an editor's backup."""
    name = path.name
    return (
        path.suffix.lower() in TEXT_SUFFIXES
        and not name.startswith((".", "~", "#"))
        and not name.endswith(("~", ".swp", ".tmp"))
        and TMP_MARKER not in name
    )


@dataclass(frozen=True)
class FileIssue:
    """A path that was not ingested, and why (``code`` is stable, ``reason`` is for people)."""

    path: str
    code: str
    reason: str

    @property
    def failed(self) -> bool:
        """True for an error (too large, not UTF-8, unreadable); False for a policy skip."""
        return self.code in FAILED_CODES

    def error(self) -> AgentZeroStoreError:
        """This issue as the typed error a single-file ingest raises."""
        message = f"{self.path}: {self.reason}"
        if self.code == "io_error":
            return StoreIOError(message)
        if self.code == "too_large":
            return InvalidArgumentError(message, hint="split the file, or raise --max-bytes")
        return InvalidArgumentError(message)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``{"path": ..., "code": ..., "reason": ...}``."""
        return {"path": self.path, "code": self.code, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class SourceFile:
    """A regular file that passed the checks and may be read (once, with ``Scanner.read``)."""

    path: Path  # where it was found: ROOT/<id> (for a symlink, the link itself)
    id: str  # POSIX path relative to the root: the document id
    real: Path  # what is read: the resolved path
    size: int  # bytes, when it was checked
    identity: tuple[int, int]  # (st_dev, st_ino): the file opened must be this one


class SourceIO:
    """The OS calls that find and read source files: the seam tests inject faults into."""

    def lstat(self, path: Path) -> os.stat_result:
        """Status of ``path`` itself (a symlink is not followed)."""
        return os.lstat(path)

    def stat(self, path: Path) -> os.stat_result:
        """Status of what ``path`` leads to."""
        return os.stat(path)

    def realpath(self, path: Path) -> Path:
        """``path`` with every symlink resolved (OSError if broken or looping)."""
        return Path(os.path.realpath(path, strict=True))

    def listdir(self, path: Path) -> list[str]:
        """The names in a folder."""
        return os.listdir(path)

    def open(self, path: Path) -> int:
        """Open a file for reading (see ``_OPEN_FLAGS``)."""
        return os.open(path, _OPEN_FLAGS)

    def fstat(self, fd: int) -> os.stat_result:
        """Status of an open file."""
        return os.fstat(fd)

    def read(self, fd: int, n: int) -> bytes:
        """Up to ``n`` bytes."""
        return os.read(fd, n)

    def close(self, fd: int) -> None:
        """Close a file descriptor."""
        os.close(fd)


DEFAULT_SOURCE_IO = SourceIO()


def _kind_of(mode: int) -> str:
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def _is_pseudo(real: Path) -> bool:
    return any(real.is_relative_to(p) for p in PSEUDO_FILE_SYSTEMS)


def _os_issue(path: Path, what: str, exc: OSError) -> FileIssue:
    if isinstance(exc, FileNotFoundError):
        return FileIssue(str(path), "vanished", "removed before it could be read")
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return FileIssue(str(path), "io_error", f"cannot {what}: {exc.strerror or exc} ({name})")


@dataclass(frozen=True)
class DirScan:
    """The outcome of walking a folder: files to read, and paths left out (with reasons)."""

    scanner: Scanner
    files: list[SourceFile] = field(default_factory=list)
    issues: list[FileIssue] = field(default_factory=list)


class Scanner:
    """Finds and reads the source files under one root, never leaving it.

    ``root=None`` checks one file a user named (no containment rule applies then, but
    the type, /proc, size and bounded-read rules do).
    """

    def __init__(
        self,
        root: Path | str | None,
        *,
        max_bytes: int = MAX_FILE_BYTES,
        io: SourceIO = DEFAULT_SOURCE_IO,
    ) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise InvalidArgumentError(f"max_bytes must be a positive integer, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.io = io
        self.root: Path | None = None
        if root is not None:
            try:
                real = io.realpath(Path(root))
                is_dir = stat.S_ISDIR(io.stat(real).st_mode)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    raise InvalidArgumentError(f"{root} is not a directory") from exc
                raise _os_issue(Path(root), "open the folder", exc).error() from exc  # EACCES...
            if not is_dir:
                raise InvalidArgumentError(f"{root} is not a directory")
            if _is_pseudo(real):
                raise InvalidArgumentError(f"{root} is {real}: kernel state, not documents")
            self.root = real

    # ------------------------------------------------------------------ finding
    def scan(self, path: Path) -> DirScan:
        """The files under ``path`` (a folder under the root, walked) or ``path`` itself."""
        out = DirScan(self)
        if path == self.root:
            try:
                st = self.io.lstat(path)
            except OSError as exc:
                raise StoreIOError(f"cannot read the folder {path}: {exc.strerror}") from exc
            self._walk(path, st, out)
        elif (folder := self._add(path, out)) is not None:
            self._walk(path, folder, out)
        out.files.sort(key=lambda f: Path(f.id).parts)
        out.issues.sort(key=lambda i: Path(i.path).parts)
        return out

    def _walk(self, start: Path, st: os.stat_result, out: DirScan) -> None:
        seen = {(st.st_dev, st.st_ino)}
        stack = [start]
        while stack:
            folder = stack.pop()
            try:
                names = self.io.listdir(folder)
            except OSError as exc:
                if folder == self.root:
                    raise StoreIOError(f"cannot list the folder {folder}: {exc.strerror}") from exc
                out.issues.append(_os_issue(folder, "list the folder", exc))
                continue
            for name in names:  # (in any order: the results are sorted)
                if name.startswith("."):
                    continue  # hidden: version control, editor locks and temp files
                path = folder / name
                sub = self._add(path, out)
                if sub is None:
                    continue
                if (sub.st_dev, sub.st_ino) in seen:  # a bind mount looping back
                    reason = "the same folder was already walked"
                    out.issues.append(FileIssue(str(path), "folder_loop", reason))
                    continue
                seen.add((sub.st_dev, sub.st_ino))
                stack.append(path)

    def _add(self, path: Path, out: DirScan) -> os.stat_result | None:
        """Check one entry into ``out``; a real folder to walk is returned instead."""
        got = self.check(path)
        if isinstance(got, SourceFile):
            out.files.append(got)
        elif isinstance(got, FileIssue):
            out.issues.append(got)
        else:
            return got
        return None

    def check(self, path: Path) -> SourceFile | FileIssue | os.stat_result | None:
        """What to do with one entry under the root (or the one file named, root=None).

        A ``SourceFile`` to read, a ``FileIssue`` saying why not, a real folder's stat
        (to walk), or None for a name that is not a document (``image.png``).
        """
        io, root = self.io, self.root
        doc = root is None or is_document(path)  # a file the user named counts, any name
        try:
            link = io.lstat(path)
        except OSError as exc:
            return _os_issue(path, "read it", exc) if doc else None
        try:
            # Every entry is resolved, not only symlinks: a symlinked folder higher up
            # the path (possible in a watcher's event) must not lead out either.
            real = io.realpath(path)
            st = link if real == path else io.stat(real)
        except OSError as exc:
            if not doc:
                return None
            if exc.errno == errno.ELOOP:
                return FileIssue(str(path), "bad_symlink", "symlink loop")
            if isinstance(exc, FileNotFoundError) and stat.S_ISLNK(link.st_mode):
                return FileIssue(str(path), "bad_symlink", "symlink to nothing")
            return _os_issue(path, "resolve it", exc)
        is_dir = stat.S_ISDIR(st.st_mode)
        if root is not None and not real.is_relative_to(root):
            if not (doc or is_dir):
                return None
            reason = f"symlink leads outside the folder, to {real}"
            return FileIssue(str(path), "symlink_outside", reason)
        if _is_pseudo(real) and (doc or is_dir):
            return FileIssue(str(path), "pseudo_fs", f"{real} is kernel state, not a document")
        if is_dir:
            if stat.S_ISLNK(link.st_mode):
                reason = "symlink to a folder: not followed (the files of a folder inside are "
                reason += "ingested under their own paths)"
                return FileIssue(str(path), "symlink_to_folder", reason)
            return st if root is not None else FileIssue(str(path), "special_file", "a folder")
        if not doc:
            return None
        if not stat.S_ISREG(st.st_mode):
            return FileIssue(str(path), "special_file", _kind_of(st.st_mode))
        if st.st_size > self.max_bytes:
            return self._too_large(path, f"{st.st_size:,} bytes")
        if root is None:  # one named file: its id is its name, its source the resolved path
            return SourceFile(real, path.name, real, st.st_size, (st.st_dev, st.st_ino))
        doc_id = path.relative_to(root).as_posix()
        return SourceFile(path, doc_id, real, st.st_size, (st.st_dev, st.st_ino))

    def _too_large(self, path: Path, size: str) -> FileIssue:
        return FileIssue(
            str(path), "too_large", f"{size}; the limit is {self.max_bytes:,} bytes (--max-bytes)"
        )

    # ------------------------------------------------------------------ reading
    def read(self, f: SourceFile) -> str | FileIssue:
        """The text of ``f``: at most ``max_bytes`` read, strict UTF-8, universal newlines."""
        io = self.io
        try:
            fd = io.open(f.real)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW: swapped for a symlink since the check
                return FileIssue(str(f.path), "changed", "replaced by a symlink after the check")
            return _os_issue(f.path, "open it", exc)
        try:
            st = io.fstat(fd)
            if (st.st_dev, st.st_ino) != f.identity or not stat.S_ISREG(st.st_mode):
                return FileIssue(str(f.path), "changed", "replaced by another file after the check")
            if st.st_size > self.max_bytes:
                return self._too_large(f.path, f"{st.st_size:,} bytes (it grew)")
            data = bytearray()
            for block in self._blocks(fd):
                data += block
            if len(data) > self.max_bytes:
                return self._too_large(f.path, "more bytes (it grew while being read)")
        except OSError as exc:
            return _os_issue(f.path, "read it", exc)
        finally:
            with contextlib.suppress(OSError):  # read-only: nothing written could be lost
                io.close(fd)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return FileIssue(str(f.path), "not_utf8", f"not UTF-8 text (bad byte at {exc.start})")
        # Universal newlines, as a text-mode read gives (and as earlier versions stored).
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text

    def _blocks(self, fd: int) -> Iterator[bytes]:
        """Blocks of the file, at most ``max_bytes + 1`` bytes in all (one more says "grew")."""
        left = self.max_bytes + 1
        while left > 0:
            block = self.io.read(fd, min(READ_BLOCK, left))
            if not block:
                return
            left -= len(block)
            yield block
