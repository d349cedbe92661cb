"""kill -9 a child that appends to the document log; every acknowledged record survives."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from agentzero_store.storage.keys import StoreKeys
from rag.log import DocumentLog

CHILD = r"""
import sys
from agentzero_store.storage.keys import StoreKeys
from rag.log import DocumentLog
from rag.records import Delete, Upsert
keys = StoreKeys(store_id=sys.argv[2], master=bytes.fromhex(sys.argv[3]))
log = DocumentLog.open(sys.argv[1], keys)
i = 0
while True:
    if i % 3 == 2:
        log.append_many([Upsert(f"d{i}", "x" * 3000), Delete(f"d{i - 1}"), Upsert(f"d{i}b", "y")])
    else:
        log.upsert(f"d{i}", "z" * (i % 700))
    # Printed only after the fsync returned: a printed step is acknowledged.
    sys.stdout.write(f"{i}\n")
    sys.stdout.flush()
    i += 1
"""


def _step(i: int) -> list[tuple[str, str]]:
    """The records the child writes in step ``i`` (mirrors CHILD)."""
    if i % 3 == 2:
        return [("+", f"d{i}"), ("-", f"d{i - 1}"), ("+", f"d{i}b")]
    return [("+", f"d{i}")]


def _apply(state: set[str], ops: list[tuple[str, str]]) -> set[str]:
    state = set(state)
    for op, doc_id in ops:
        (state.add if op == "+" else state.discard)(doc_id)
    return state


@pytest.mark.crash
@pytest.mark.parametrize("run", range(10))
def test_kill9_during_appends_loses_no_acknowledged_record(tmp_path: Path, run: int) -> None:
    path = tmp_path / "rag" / "index.jsonl"
    keys = StoreKeys(store_id=f"store-{run}", master=os.urandom(32))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), keys.store_id, keys.master.hex()],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    lines = [child.stdout.readline()]  # wait until it is really appending
    time.sleep(random.uniform(0.0, 0.3))
    os.kill(child.pid, signal.SIGKILL)
    lines += child.stdout.read().splitlines(keepends=True)
    child.wait()
    acked = max(int(line) for line in lines if line.endswith("\n"))
    state: set[str] = set()
    for i in range(acked + 1):
        state = _apply(state, _step(i))
    # Every acknowledged step is there; of the step in flight, any prefix may be.
    nxt = _step(acked + 1)
    allowed = [_apply(state, nxt[:k]) for k in range(len(nxt) + 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the kill may leave a torn tail: repaired on open
        log = DocumentLog.open(path, keys)
    with log:
        assert set(log.ids()) in allowed
        assert sum(1 for _ in log.changes_since(0)) == log.seq
