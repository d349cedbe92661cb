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
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
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


_HELD: dict[str, _Held] = {}
_MUTEX = threading.Lock()


def default_timeout() -> float:
    """Seconds a second writer waits: env ``AGENTZERO_LOCK_TIMEOUT``, else the config."""
    env = os.environ.get(ENV_LOCK_TIMEOUT)
    if env:
        with contextlib.suppress(ValueError):
            return max(0.0, float(env))
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
            with contextlib.suppress(OSError):
                os.ftruncate(held.fd, 0)
            os.close(held.fd)  # closing releases the flock

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
    layout = Layout(Path(root).expanduser())
    path = layout.writer_lock
    if not layout.keys.is_file():
        # Never create a data dir, nor a lock file in a directory that holds no store
        # (someone's documents folder given as --data-dir by mistake), as a side effect
        # of locking it.
        raise StoreNotFoundError(f"no store in {path.parent}")
    key = os.path.realpath(path)
    with _MUTEX:
        if (held := _HELD.get(key)) is not None:
            held.depth += 1
            return WriterLock(key, path)
    with translate_os_errors("opening", path):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _wait_for(fd, path, default_timeout() if timeout is None else timeout)
        _claim(fd, path, purpose)
    except BaseException:
        os.close(fd)
        raise
    with _MUTEX:
        _HELD[key] = _Held(fd, 1)
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
    previous = lock_holder(path.parent)
    if previous and previous.get("pid") not in (None, os.getpid()):
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
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode() + b"\n", 0)


__all__ = ["WriterLock", "acquire_writer", "default_timeout", "lock_holder", "writer_lock"]
