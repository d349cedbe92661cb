"""kill -9 a process appending with the HNSW index enabled, at random instants.

After every kill the store reopens; the index replays at most 99 changes plus the batch
in flight and then holds exactly the store's rows (no row lost, none twice, no vector
replaced); every acknowledged entry is recalled exactly (its own vector, scoped to its
conversation, comes back first) and is reachable in the graph (an exhaustive beam finds
it first); no temp file survives. At the end, the recovered graph answers the unscoped
top 10 of every row's own vector as well as a clean rebuild of the same rows does.

Why not "the unscoped top 10 of each acknowledged vector holds it": that asks an
approximate index for an exact answer. With these clustered vectors a clean build of
7,500 rows misses 3 rows from their own top 10 (recall 0.9996) — 7227 among them, the
row that failed this test once — whether built in one batch or in the child's batches
of 1–5, with or without crashes.

A child killed before its first commit leaves an empty store, which has no index yet (it
is made with the first vector); the kills go on until work was acknowledged.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentzero_store import SqliteMemoryStore
from agentzero_store.memory.records import Scope
from agentzero_store.memory.sqlite.feed import MemoryItem
from agentzero_store.memory.sqlite.index import MemoryIndex
from agentzero_store.sidecar.mechanism import Sidecar
from agentzero_store.storage.fileio import TMP_MARKER
from tests.support.hnsw import FAST, KEY, ROOT, entry, vec

KILLS = 20
MAX_BATCH = 5

CHILD = f"""
import random, sys
from agentzero_store import SqliteMemoryStore
from agentzero_store.memory.sqlite.feed import MemoryItem
from agentzero_store.memory.sqlite.index import MemoryIndex
from agentzero_store.memory.records import Scope
from agentzero_store.sidecar.mechanism import Sidecar
from tests.support.hnsw import FAST, KEY, entry, vec
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


def holds_exactly_the_store(s: SqliteMemoryStore, index: MemoryIndex) -> dict[int, bytes]:
    """The index holds each row of the store once, with its vector; returns the rows."""
    rows = dict(s.vectors_after(0, 1 << 30))
    assert sorted(index.map.live_labels().tolist()) == sorted(rows)
    assert index.hnsw.count() == len(rows)
    # One hnswlib element per label: a label added twice or lost would show here.
    native: Any = index.hnsw._index
    assert native.element_count == len(index.hnsw._labels) == len(rows) + len(index.hnsw._deleted)
    return rows


def label_of(s: SqliteMemoryStore, entry_id: str) -> int:
    return int(s._db.query("SELECT label FROM memory WHERE id = ?", (entry_id,))[0][0])


def misses_own_top10(index: MemoryIndex, rows: dict[int, bytes]) -> set[int]:
    """Rows missing from the unscoped top 10 of their own vector (the recall path)."""
    now_us = time.time_ns() // 1_000
    missed = set()
    for label, blob in rows.items():
        hits, how = index.top_k(np.frombuffer(blob, np.float32), 10, Scope(), now_us)
        assert how == "index"
        if label not in [lab for lab, _ in hits]:
            missed.add(label)
    return missed


def check_recovered(
    s: SqliteMemoryStore,
    sidecar: Sidecar[MemoryItem],
    new: dict[int, str],
    acked: dict[int, str],
    rnd: random.Random,
    kill: int,
) -> None:
    """After a kill and reopen: a bounded replay, the store's rows exactly, and each
    acknowledged entry checked (the new ones and 20 sampled) recalled exactly and linked."""
    r = sidecar.opened
    assert r is not None
    if r.rebuilt:  # only before the very first checkpoint existed
        assert "missing" in (r.reason or ""), r.reason
    else:
        assert r.replayed <= 99 + MAX_BATCH, (kill, r)
    index = sidecar.index
    assert isinstance(index, MemoryIndex)
    rows = holds_exactly_the_store(s, index)
    assert len(rows) == s.count()
    check = list(new.items()) + rnd.sample(sorted(acked.items()), min(20, len(acked)))
    for i, entry_id in check:
        label = label_of(s, entry_id)
        stored = np.frombuffer(rows[label], np.float32)  # normalised on write
        assert np.allclose(stored, vec(i), atol=1e-6), (kill, i)
        scoped = s.semantic_recall(
            vec(i), 1, org_id="o", agent_id="a", conversation_id=entry(i).conversation_id
        )
        assert scoped and scoped[0].id == entry_id, (kill, i)
        # In the graph, linked and with its own vector: a beam as wide as the index
        # visits every node reachable from the entry point, so it is found first.
        found = index.hnsw.search(vec(i), 1, ef=index.count())
        assert found and found[0][0] == label, (kill, i, found)
        assert found[0][1] > 0.9999, (kill, i, found)  # not a replaced vector


@pytest.mark.crash
def test_kill_9_while_appending_loses_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True).close()
    rnd = random.Random(20240611)
    acked: dict[int, str] = {}
    start = 0
    kill = 0
    # Kills land at random instants, some before a child's first commit on a loaded
    # machine: kill on until the children did get work acknowledged (20 kills normally).
    while kill < KILLS or len(acked) <= KILLS:
        assert kill < 3 * KILLS, f"{len(acked)} entries acknowledged in {kill} runs"
        new = run_and_kill(data, start, rnd)
        acked.update(new)
        start = max([start - 1, *acked, *new]) + MAX_BATCH + 1  # never reuse an index

        s = SqliteMemoryStore.open(data, key=KEY, config=FAST)  # index re-enabled by its dir
        try:
            h = s.hnsw_index
            assert h is not None
            if s.count() == 0:
                # No append committed yet: the index is made with the first vector.
                assert h.sidecar is None and not acked, (kill, acked)
            else:
                assert h.sidecar is not None, kill
                check_recovered(s, h.sidecar, new, acked, rnd, kill)
        finally:
            s.close()
        leftovers = [p for p in data.rglob("*") if TMP_MARKER in p.name]
        assert not leftovers
        kill += 1

    # Recovery leaves the graph as good as a clean build: recall@10 of every row's own
    # vector, compared with a rebuild of the same rows (both miss the same few rows).
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST)
    try:
        h = s.hnsw_index
        assert h is not None and h.sidecar is not None
        index = h.sidecar.index
        assert isinstance(index, MemoryIndex)
        rows = holds_exactly_the_store(s, index)
        recovered = misses_own_top10(index, rows)
        assert h.rebuild()
        clean = h.sidecar.index
        assert isinstance(clean, MemoryIndex) and clean is not index
        assert holds_exactly_the_store(s, clean) == rows
        rebuilt = misses_own_top10(clean, rows)
        # Two graphs of the same rows differ in which few hard rows they miss; a recovery
        # that lost or broke the links of replayed rows (up to ~100 per kill) misses more.
        assert len(recovered) <= len(rebuilt) + max(2, len(rows) // 500), (recovered, rebuilt)
    finally:
        s.close()
