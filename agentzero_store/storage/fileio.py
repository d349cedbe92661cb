"""The durable-file seam: every byte the store writes outside SQLite goes through here.

``FileIO`` wraps the handful of OS calls we need (open, write, fsync, rename, truncate)
so tests can inject faults (ENOSPC, EIO on the N-th call) and simulated power loss.
``atomic_write`` is the ONE helper that replaces a file; nothing else renames.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from ..base.errors import StoreIOError


class FileIO:
    """Thin wrapper over the OS calls the store uses. Subclass to inject faults."""

    def open(self, path: Path, flags: int, mode: int = 0o600) -> int:
        """Open ``path`` and return a file descriptor."""
        return os.open(path, flags, mode)

    def write(self, fd: int, data: bytes) -> None:
        """Write all of ``data`` (looping over short writes)."""
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        """Write all of ``data`` at ``offset`` (the file position is not used)."""
        view = memoryview(data)
        while view:
            n = os.pwrite(fd, view, offset)
            view, offset = view[n:], offset + n

    def fsync(self, fd: int) -> None:
        """Flush a file's data and metadata to stable storage."""
        os.fsync(fd)

    def close(self, fd: int) -> None:
        """Close a file descriptor."""
        os.close(fd)

    def replace(self, src: Path, dst: Path) -> None:
        """Atomically rename ``src`` over ``dst`` (same directory)."""
        os.replace(src, dst)

    def truncate(self, fd: int, size: int) -> None:
        """Cut a file to ``size`` bytes."""
        os.ftruncate(fd, size)

    def unlink(self, path: Path) -> None:
        """Remove a file."""
        os.unlink(path)

    def fsync_dir(self, path: Path) -> None:
        """fsync a directory so a rename or create inside it is durable."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


DEFAULT_IO = FileIO()

TMP_MARKER = ".tmp-"


def io_error(what: str, path: Path, exc: OSError) -> StoreIOError:
    """The ``StoreIOError`` for an OS error while doing ``what`` to ``path``."""
    reason = errno.errorcode.get(exc.errno or 0, "") or type(exc).__name__
    return StoreIOError(f"{what} {path} failed: {reason} ({exc.strerror or exc})")


def tmp_path_for(path: Path) -> Path:
    """A unique temp name beside ``path`` (same directory, so rename is atomic)."""
    return path.with_name(f".{path.name}{TMP_MARKER}{os.getpid()}-{secrets.token_hex(4)}")


def atomic_write(path: Path, data: bytes, *, io: FileIO = DEFAULT_IO, mode: int = 0o600) -> None:
    """Durably replace ``path`` with ``data``: temp file, fsync, rename, fsync(dir).

    A crash at any instant leaves either the old file or the new one, never a mix, and
    no temp file survives a failed call (a crash can leave one; ``cleanup_temp_files``
    removes those on the next open).
    """
    path = Path(path)
    tmp = tmp_path_for(path)
    try:
        fd = io.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            io.write(fd, data)
            # fsync before rename: otherwise the rename can reach disk before the data
            # and a power loss leaves an empty file under the real name.
            io.fsync(fd)
        finally:
            io.close(fd)
        io.replace(tmp, path)
        # fsync the directory so the rename itself is durable.
        io.fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise io_error("writing", path, exc) from exc


def cleanup_temp_files(directory: Path) -> list[Path]:
    """Remove temp files a crash left in ``directory`` by ``atomic_write``."""
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    for p in directory.iterdir():
        if p.name.startswith(".") and TMP_MARKER in p.name and p.is_file():
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
    return removed


class AppendFile:
    """An append-only file whose every ``append`` is durable before it returns."""

    def __init__(self, path: Path, *, io: FileIO = DEFAULT_IO) -> None:
        self.path = Path(path)
        self._io = io
        existed = self.path.exists()
        try:
            self._fd = io.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            if not existed:
                io.fsync_dir(self.path.parent)  # make the new file's name durable
        except OSError as exc:
            raise io_error("opening", self.path, exc) from exc

    def append(self, data: bytes) -> None:
        """Append ``data`` and fsync: when this returns the bytes survive a crash."""
        try:
            self._io.write(self._fd, data)
            self._io.fsync(self._fd)
        except OSError as exc:
            raise io_error("appending to", self.path, exc) from exc

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (used to drop a torn tail), durably."""
        try:
            self._io.truncate(self._fd, size)
            self._io.fsync(self._fd)
        except OSError as exc:
            raise io_error("truncating", self.path, exc) from exc

    def close(self) -> None:
        """Close the file."""
        with contextlib.suppress(OSError):
            self._io.close(self._fd)


def fsync_path(path: Path, *, io: FileIO = DEFAULT_IO) -> None:
    """fsync an existing file by path (e.g. files written by a native library)."""
    try:
        fd = io.open(path, os.O_RDONLY)
        try:
            io.fsync(fd)
        finally:
            io.close(fd)
    except OSError as exc:
        raise io_error("syncing", path, exc) from exc


@contextlib.contextmanager
def translate_os_errors(what: str, path: Path) -> Iterator[None]:
    """Turn an ``OSError`` inside the block into a ``StoreIOError`` naming ``path``."""
    try:
        yield
    except OSError as exc:
        raise io_error(what, path, exc) from exc
