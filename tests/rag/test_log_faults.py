"""ENOSPC / EIO injected into appends, compaction and creation: typed errors, nothing lost."""

from __future__ import annotations

import errno
import warnings
from pathlib import Path

import pytest

from agentzero_store.base.errors import StoreIOError
from agentzero_store.storage.fileio import TMP_MARKER
from agentzero_store.storage.keys import StoreKeys
from rag.log import DocumentLog
from rag.records import Upsert

from .conftest import FakeFaultyIO, state_of

TEXT = "k" * 1024


def _reopen_state(path: Path, keys: StoreKeys) -> dict[str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn tail may be repaired: that is the point
        with DocumentLog.open(path, keys) as log:
            return state_of(log)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
@pytest.mark.parametrize(("op", "partial"), [("write", False), ("write", True), ("fsync", False)])
@pytest.mark.parametrize("nth", [1, 2, 3])
def test_fault_on_nth_append_rolls_back(
    log_path: Path, keys: StoreKeys, op: str, partial: bool, err: int, nth: int
) -> None:
    io = FakeFaultyIO()
    acked: dict[str, str] = {}
    with DocumentLog.open(log_path, keys, io=io) as log:
        log.upsert("base", TEXT)
        acked["base"] = TEXT
        io.arm(op, nth, err, partial=partial)
        failed = 0
        for i in range(4):
            try:
                if i % 2:
                    log.append_many([Upsert(f"b{i}", TEXT), Upsert(f"c{i}", TEXT)])
                    acked.update({f"b{i}": TEXT, f"c{i}": TEXT})
                else:
                    log.upsert(f"d{i}", TEXT)
                    acked[f"d{i}"] = TEXT
            except StoreIOError as exc:
                failed += 1
                assert errno.errorcode[err] in str(exc)
        assert failed == 1
        # The failed append was cut back: the log is still usable and consistent.
        assert state_of(log) == acked
        log.upsert("after", "still works")
        acked["after"] = "still works"
    assert _reopen_state(log_path, keys) == acked


@pytest.mark.parametrize("partial", [False, True])
def test_failed_rollback_poisons_until_reopen(
    log_path: Path, keys: StoreKeys, partial: bool
) -> None:
    io = FakeFaultyIO()
    with DocumentLog.open(log_path, keys, io=io) as log:
        log.upsert("a", TEXT)
        if partial:
            io.arm("write", 1, errno.ENOSPC, partial=True)
        else:
            io.arm("fsync", 1, errno.EIO)
        io._plan["truncate"] = (1, errno.EIO, False)  # the rollback fails too
        io.calls["truncate"] = 0
        with pytest.raises(StoreIOError):
            log.upsert("b", TEXT)
        io.disarm()
        with pytest.raises(StoreIOError, match="could not be rolled back"):
            log.upsert("c", TEXT)  # would follow an unknown tail: refused
    state = _reopen_state(log_path, keys)
    # Acknowledged writes survive; the unacknowledged one may or may not (never half).
    assert state in ({"a": TEXT}, {"a": TEXT, "b": TEXT})
    assert "c" not in state


@pytest.mark.parametrize("op", ["write", "fsync", "replace"])
def test_fault_during_compaction_keeps_old_log(log_path: Path, keys: StoreKeys, op: str) -> None:
    io = FakeFaultyIO()
    with DocumentLog.open(log_path, keys, io=io) as log:
        for i in range(5):
            log.upsert(f"d{i}", TEXT)
        log.delete("d0")
        before, gen = log_path.read_bytes(), log.generation
        io.arm(op, 1, errno.ENOSPC)
        with pytest.raises(StoreIOError):
            log.compact()
        io.disarm()
        assert log_path.read_bytes() == before and log.generation == gen
        assert not [p for p in log_path.parent.iterdir() if TMP_MARKER in p.name]
        log.upsert("d9", "x")  # still usable
        assert log.seq == 7
    assert set(_reopen_state(log_path, keys)) == {"d1", "d2", "d3", "d4", "d9"}


def test_fault_while_creating_leaves_no_log(log_path: Path, keys: StoreKeys) -> None:
    io = FakeFaultyIO()
    io.arm("fsync", 1, errno.EIO)
    with pytest.raises(StoreIOError):
        DocumentLog.open(log_path, keys, io=io)
    assert not log_path.exists()
    with DocumentLog.open(log_path, keys) as log:
        assert log.seq == 0
