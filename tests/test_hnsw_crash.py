"""kill -9 a process appending with the HNSW index enabled, at random instants.

After every kill the store reopens; every acknowledged entry is recalled (its own vector,
scoped to its conversation, comes back first; unscoped top-10 finds it); the index
replays at most 99 changes plus the batch in flight; no temp file survives.
"""

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
from agentzero_store.storage.fileio import TMP_MARKER
from tests.hnsw_support import FAST, KEY, ROOT, entry, vec

KILLS = 20
MAX_BATCH = 5

CHILD = f"""
import random, sys
from agentzero_store import SqliteMemoryStore
from tests.hnsw_support import FAST, KEY, entry, vec
s = SqliteMemoryStore.open(sys.argv[1], key=KEY, config=FAST, hnsw=True)
i = int(sys.argv[2])
rnd = random.Random(i)
print("ready", flush=True)
while True:
    n = rnd.randint(1, {MAX_BATCH})
    ids = s.append_many([entry(j) for j in range(i, i + n)],
                        vectors=[vec(j) for j in range(i, i + n)])
    # Printed only after append_many returned: the entries are acknowledged.
    print("\\n".join(f"{{j}} {{e}}" for j, e in zip(range(i, i + n), ids)), flush=True)
    i += n
"""


def run_and_kill(data: Path, start: int, rnd: random.Random) -> dict[int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data), str(start)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == b"ready", p.stderr.read() if p.stderr else ""
    time.sleep(rnd.uniform(0.05, 0.7))
    p.send_signal(signal.SIGKILL)
    out, err = p.communicate()
    assert p.returncode == -signal.SIGKILL, err.decode()
    acked: dict[int, str] = {}
    for line in out.decode().split("\n"):
        parts = line.split()
        if len(parts) == 2 and len(parts[1]) == 32:  # a torn last line is not an ack
            acked[int(parts[0])] = parts[1]
    return acked


@pytest.mark.crash
def test_kill_9_while_appending_loses_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True).close()
    rnd = random.Random(20240611)
    acked: dict[int, str] = {}
    start = 0
    t0 = time.monotonic()
    for kill in range(KILLS):
        new = run_and_kill(data, start, rnd)
        acked.update(new)
        start = max([start - 1, *acked, *new]) + MAX_BATCH + 1  # never reuse an index

        s = SqliteMemoryStore.open(data, key=KEY, config=FAST)  # index re-enabled by its dir
        try:
            h = s.hnsw_index
            assert h is not None and h.sidecar is not None
            r = h.open_report
            assert r is not None
            if r.rebuilt:  # only before the very first checkpoint existed
                assert "missing" in (r.reason or ""), r.reason
            else:
                assert r.replayed <= 99 + MAX_BATCH, (kill, r)
            assert h.sidecar.index.count() == s.count()  # every committed vector indexed
            check = list(new.items()) + rnd.sample(sorted(acked.items()), min(20, len(acked)))
            for i, entry_id in check:
                scoped = s.semantic_recall(
                    vec(i), 1, org_id="o", agent_id="a", conversation_id=entry(i).conversation_id
                )
                assert scoped and scoped[0].id == entry_id, (kill, i)
                top10 = [x.id for x in s.semantic_recall(vec(i), 10)]
                assert entry_id in top10, (kill, i)
        finally:
            s.close()
        leftovers = [p for p in data.rglob("*") if TMP_MARKER in p.name]
        assert not leftovers
    assert len(acked) > KILLS  # the children did get work acknowledged
    assert time.monotonic() - t0 < 90
