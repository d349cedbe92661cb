"""Fixtures for the document log tests: real keys, real files, a fault-injecting FileIO."""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
from collections import Counter
from pathlib import Path

import pytest

from agentzero_store.storage.fileio import FileIO
from agentzero_store.storage.keys import StoreKeys
from rag.log import DocumentLog


def make_keys() -> StoreKeys:
    """Fresh keys for a new store (random store id and master key)."""
    return StoreKeys(store_id=secrets.token_hex(16), master=os.urandom(32))


@pytest.fixture
def keys() -> StoreKeys:
    return make_keys()


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "rag" / "index.jsonl"


def file_state(path: Path) -> tuple[int, str]:
    """(size, sha256) of a file: compared before/after to prove nothing changed."""
    data = path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def line_spans(path: Path) -> list[tuple[int, int]]:
    """[start, end) byte span of every line (end includes the newline)."""
    spans, offset = [], 0
    for line in path.read_bytes().splitlines(keepends=True):
        spans.append((offset, offset + len(line)))
        offset += len(line)
    return spans


def state_of(log: DocumentLog) -> dict[str, str]:
    """id -> text of every live document."""
    return {rec.id: rec.text for _, rec in log.iter_live()}


class FakeFaultyIO(FileIO):
    """A FileIO that fails the N-th call of an operation with a chosen errno.

    ``arm("write", 1, errno.ENOSPC, partial=True)`` makes the next write put half its
    bytes on disk and then fail, like a disk filling up mid-write.
    """

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._plan: dict[str, tuple[int, int, bool]] = {}

    def arm(self, op: str, nth: int = 1, err: int = errno.ENOSPC, *, partial: bool = False) -> None:
        self.calls[op] = 0
        self._plan[op] = (nth, err, partial)

    def disarm(self) -> None:
        self._plan.clear()

    def _hit(self, op: str) -> tuple[bool, int, bool]:
        self.calls[op] += 1
        plan = self._plan.get(op)
        if plan is not None and self.calls[op] == plan[0]:
            return True, plan[1], plan[2]
        return False, 0, False

    def write(self, fd: int, data: bytes) -> None:
        hit, err, partial = self._hit("write")
        if hit:
            if partial:
                super().write(fd, data[: len(data) // 2])
            raise OSError(err, os.strerror(err))
        super().write(fd, data)

    def fsync(self, fd: int) -> None:
        hit, err, _ = self._hit("fsync")
        if hit:
            raise OSError(err, os.strerror(err))
        super().fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        hit, err, _ = self._hit("truncate")
        if hit:
            raise OSError(err, os.strerror(err))
        super().truncate(fd, size)

    def replace(self, src: Path, dst: Path) -> None:
        hit, err, _ = self._hit("replace")
        if hit:
            raise OSError(err, os.strerror(err))
        super().replace(src, dst)
