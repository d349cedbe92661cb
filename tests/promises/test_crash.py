"""kill -9 a child that appends in a loop; every acknowledged entry survives the reopen."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentzero_store import SqliteMemoryStore

from ..conftest import FAST

CHILD = r"""
import sys, numpy as np
from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
s = SqliteMemoryStore.open(sys.argv[1], key=bytes.fromhex(sys.argv[2]),
                           config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
rng = np.random.default_rng(int(sys.argv[3]))
i = 0
while True:
    batch = int(rng.integers(1, 4))
    entries = [MemoryEntry(content=f"crash entry {sys.argv[3]}-{i + j}", conversation_id=f"c{i}")
               for j in range(batch)]
    ids = s.append_many(entries, rng.normal(size=(batch, 384)).astype("float32"))
    # Printed only after the commit returned: a printed id is an acknowledged write.
    sys.stdout.write(" ".join(ids) + "\n")
    sys.stdout.flush()
    i += batch
"""


@pytest.mark.crash
@pytest.mark.parametrize("run", range(20))
def test_kill9_during_append_loses_no_acknowledged_entry(tmp_path: Path, run: int) -> None:
    data_dir = tmp_path / "d"
    key = os.urandom(32)
    SqliteMemoryStore.open(data_dir, key=key, config=FAST).close()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir), key.hex(), str(run)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acked: list[str] = []
    first = child.stdout.readline()  # wait until it is really appending
    acked += first.split()
    time.sleep(random.uniform(0.0, 0.4))
    os.kill(child.pid, signal.SIGKILL)
    rest = child.stdout.read()
    child.wait()
    acked += [
        i for line in rest.splitlines(keepends=True) if line.endswith("\n") for i in line.split()
    ]
    assert acked
    s = SqliteMemoryStore.open(data_dir, key=key, config=FAST)
    missing = [i for i in acked if s.get(i) is None]
    assert missing == [], f"{len(missing)} acknowledged entries lost of {len(acked)}"
    # The feed is consistent with the table: one insert per live row (no deletes here).
    assert s.count() == sum(1 for c in s.changes_since(0) if c.op == "insert") >= len(acked)
    s.close()
