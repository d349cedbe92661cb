"""One writer per data dir: an advisory lock file that names its holder.

``<data dir>/writer.lock`` is locked with ``flock`` while a process writes. The kernel
lock is the truth: it is released when the holder exits, however it dies (kill -9
included), so a lock left behind by a dead process is free at once and simply taken
over — that is the stale-lock recovery, with no pid guessing. The file's *content* (pid,
host, command, since when) only serves to name the holder in the error a waiting writer
gets after its timeout.

Readers take no lock: SQLCipher (WAL) and the append-only document log serve readers
beside a writer. Long-running processes (``rag watch``, ``mcp``) hold the role only
while they write: ``with writer_lock(root): ...`` around each batch.

Within one process the lock is re-entrant (a count per data dir), so a CLI command that
takes it and a store that takes it again on open do not deadlock on themselves.

The file stays open between writes (a few data dirs' worth, per process): a release
clears the name and unlocks (``LOCK_UN``), the next acquisition locks the same open
file again, which saves opening and closing it around every write. A kept descriptor
is used again only by the process that opened it (a forked child opens its own: a
``flock`` on the parent's open file would share the parent's lock) and only while the
path still names the same file (a data dir deleted and made anew gets a new one).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.config import Layout, StoreConfig
from ..base.errors import StoreLockedError, StoreNotFoundError
from .fileio import translate_os_errors

log = logging.getLogger(__name__)

ENV_LOCK_TIMEOUT = "AGENTZERO_LOCK_TIMEOUT"  # seconds; overrides the config default


@dataclass
class _Held:
    fd: int
    depth: int
    pid: int  # the process that locked it


_HELD: dict[str, _Held] = {}
# Unlocked descriptors kept for the next acquisition, by key, oldest first, with the
# pid that opened them (see the module). Bounded: a process that writes to many data
# dirs in turn (a test suite) holds at most this many open.
_IDLE: dict[str, tuple[int, int]] = {}
_IDLE_MAX = 8
_MUTEX = threading.Lock()


def default_timeout() -> float:
    """Seconds a second writer waits: env ``AGENTZERO_LOCK_TIMEOUT``, else the config."""
    env = os.environ.get(ENV_LOCK_TIMEOUT)
    if env:
        with contextlib.suppress(ValueError):
            return max(0.0, float(env))
    return _config_timeout()


@functools.cache
def _config_timeout() -> float:
    # The default config's value: fixed for the process (building a StoreConfig cost
    # a seventh of an uncontended acquisition).
    return StoreConfig().writer_lock_timeout_s


def lock_holder(root: Path | str) -> dict[str, Any] | None:
    """What the lock file says about its holder (pid, host, command, since), if anything."""
    try:
        raw = Layout(Path(root)).writer_lock.read_bytes()
        info = json.loads(raw) if raw.strip() else None
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _describe(info: dict[str, Any] | None) -> str:
    if not info:
        return "another process (it has not written its name yet)"
    return (
        f"pid {info.get('pid')} on {info.get('host')} ({info.get('command')}), "
        f"since {info.get('since')}"
    )


class WriterLock:
    """The writer role on one data dir, held by this process until ``release``."""

    def __init__(self, key: str, path: Path) -> None:
        self._key = key
        self.path = path
        self._released = False

    def release(self) -> None:
        """Give the role up (idempotent). The last release in a process unlocks the file."""
        if self._released:
            return
        self._released = True
        with _MUTEX:
            held = _HELD[self._key]
            held.depth -= 1
            if held.depth:
                return
            del _HELD[self._key]
            # Clear our name first so a waiter never reports a holder that has left.
            # The file itself is never unlinked: a process that opened the old inode
            # could then lock it while a third locks a new file — two writers.
            if held.pid != os.getpid():
                # Inherited across fork: the lock is the parent's; closing our copy
                # leaves it alone, where unlocking the shared open file would not.
                os.close(held.fd)
                return
            with contextlib.suppress(OSError):
                os.ftruncate(held.fd, 0)
            try:
                fcntl.flock(held.fd, fcntl.LOCK_UN)
            except OSError:
                os.close(held.fd)  # closing releases the flock in any case
                return
            _keep_idle(self._key, held.fd)

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"WriterLock({str(self.path)!r}, released={self._released})"


def acquire_writer(
    root: Path | str, *, timeout: float | None = None, purpose: str | None = None
) -> WriterLock:
    """Take the writer role on ``root``, waiting up to ``timeout`` seconds.

    Raises ``StoreLockedError`` naming the holder when the wait runs out.
    """
    path, keys = _paths(root)
    if not os.path.isfile(keys):
        # Never create a data dir, nor a lock file in a directory that holds no store
        # (someone's documents folder given as --data-dir by mistake), as a side effect
        # of locking it.
        raise StoreNotFoundError(f"no store in {path.parent}")
    key = os.path.realpath(path)
    with _MUTEX:
        if (held := _HELD.get(key)) is not None:
            held.depth += 1
            return WriterLock(key, path)
    fd = _idle_fd(key, path)
    if fd is None:
        with translate_os_errors("opening", path):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _wait_for(fd, path, default_timeout() if timeout is None else timeout)
        _claim(fd, path, purpose)
    except BaseException:
        os.close(fd)
        raise
    with _MUTEX:
        _HELD[key] = _Held(fd, 1, os.getpid())
    return WriterLock(key, path)


@contextlib.contextmanager
def writer_lock(
    root: Path | str, *, timeout: float | None = None, purpose: str | None = None
) -> Iterator[WriterLock]:
    """``with writer_lock(root): ...`` — hold the writer role for the block."""
    lock = acquire_writer(root, timeout=timeout, purpose=purpose)
    try:
        yield lock
    finally:
        lock.release()


@functools.lru_cache(maxsize=64)
def _paths(root: Path | str) -> tuple[Path, Path]:
    """The lock file and the key file of ``root`` (pure path arithmetic, memoized: it
    cost a fifth of an uncontended acquisition)."""
    layout = Layout(Path(root).expanduser())
    return layout.writer_lock, layout.keys


def _keep_idle(key: str, fd: int) -> None:
    """Keep ``fd`` (unlocked) for the next acquisition; close the oldest past the bound.
    Called with ``_MUTEX`` held."""
    _IDLE[key] = (fd, os.getpid())
    while len(_IDLE) > _IDLE_MAX:
        oldest = next(iter(_IDLE))
        old_fd, pid = _IDLE.pop(oldest)
        if pid == os.getpid():
            os.close(old_fd)


def _idle_fd(key: str, path: Path) -> int | None:
    """The kept descriptor of ``key``, if this process opened it and ``path`` still
    names its file; else None (a stale one is closed)."""
    with _MUTEX:
        kept = _IDLE.pop(key, None)
    if kept is None:
        return None
    fd, pid = kept
    if pid != os.getpid():
        # Inherited across fork: the open file (and any flock on it) is the parent's.
        # Closing our copy leaves the parent's lock alone; unlocking it would not.
        with contextlib.suppress(OSError):
            os.close(fd)
        return None
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        same = False
    if not same:
        os.close(fd)
        return None
    return fd


def _forget_inherited() -> None:
    """In a forked child: forget the parent's kept descriptors, closing our copies."""
    for fd, _ in _IDLE.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _IDLE.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited)


def _wait_for(fd: int, path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLockedError(f"cannot lock {path}: {exc.strerror}") from exc
        if time.monotonic() >= deadline:
            holder = _describe(lock_holder(path.parent))
            raise StoreLockedError(
                f"the data dir {path.parent} is being written by {holder}; "
                f"waited {timeout:g} s for it",
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _claim(fd: int, path: Path, purpose: str | None) -> None:
    # Read through our descriptor (the same file we locked), not by opening the path.
    raw = b"?"  # unknown: truncated below like a name left behind
    previous = None
    with contextlib.suppress(OSError, ValueError):
        raw = os.pread(fd, 4096, 0)
        previous = json.loads(raw) if raw.strip() else None
    if isinstance(previous, dict) and previous.get("pid") not in (None, os.getpid()):
        # The kernel released the lock, so that holder is gone (crashed or killed).
        log.info("taking over the writer lock of %s, left by %s", path.parent, _describe(previous))
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": purpose or " ".join(os.path.basename(a) for a in sys.argv[:3]) or "python",
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    # No fsync: the content is informational; after a crash the lock is free anyway.
    # On a full disk the write fails: a typed error (the caller closes the fd, which
    # releases the lock), since the write the lock was taken for would fail too.
    with translate_os_errors("writing", path):
        if raw:  # empty after a clean release: nothing to cut
            os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode() + b"\n", 0)


__all__ = ["WriterLock", "acquire_writer", "default_timeout", "lock_holder", "writer_lock"]
