"""Memory-store figures: batched and single durable appends, HNSW rebuild, scoped semantic
recall (latency and recall@10), hybrid recall, open with valid sidecars.

One store of ``n`` clustered 384-d vectors is filled once and reused by every figure here
and by the RSS and Chroma groups (``MemoryContext``). Anchors: raw SQLCipher bulk insert,
``os.fsync`` of an appended line, raw ``hnswlib`` ``add_items``/``knn_query``, raw FTS5
``MATCH`` on the same database, and scrypt with the store's parameters.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
import numpy.typing as npt
import sqlcipher3
from _data import DIM, ORGS, clustered, conversation_of, org_of, texts, vocabulary
from _harness import Figure, median, paired, pct, timed
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig
from agentzero_store.base.ranking import fts5_query

GROUP = "memory"
BATCH = 1_000  # entries per append_many (one transaction)
K = 10


@dataclass(frozen=True)
class MemorySizes:
    """How much work each figure does (--quick shrinks it)."""

    n: int
    queries: int
    fill_trials: int
    rebuild_trials: int
    singles: int
    open_trials: int


QUICK = MemorySizes(n=5_000, queries=200, fill_trials=2, rebuild_trials=1, singles=60,
                    open_trials=3)
FULL = MemorySizes(n=100_000, queries=1_000, fill_trials=2, rebuild_trials=2, singles=300,
                   open_trials=7)


@dataclass
class MemoryContext:
    """The filled store and everything measured on it that later groups reuse."""

    tmp: Path
    sizes: MemorySizes
    passphrase: str
    x: npt.NDArray[np.float32]
    contents: list[str]
    queries: npt.NDArray[np.float32]
    query_texts: list[str]
    query_orgs: list[str]
    exact: npt.NDArray[np.int64]  # (queries, K) row indices, exact top-K in the query's org
    data: Path = field(init=False)
    raw_index_path: Path = field(init=False)
    row_of: dict[str, int] = field(default_factory=dict)  # memory id -> row index
    raw: Any = None  # the anchor's hnswlib index over the same vectors (label = row)
    store: SqliteMemoryStore | None = None
    fill_s: float = 0.0  # median seconds to append all n (batched)
    rebuild_s: float = 0.0  # median seconds of a sidecar rebuild
    recall_p50_ms: float = 0.0
    recall_at_10: float = 0.0

    def __post_init__(self) -> None:
        self.data = self.tmp / "memory-store"
        self.raw_index_path = self.tmp / "raw.hnsw"

    @property
    def n(self) -> int:
        return len(self.x)

    def open_store(self) -> SqliteMemoryStore:
        """The filled store with its HNSW sidecar (kept open for the recall figures)."""
        if self.store is None:
            self.store = SqliteMemoryStore.open(self.data, passphrase=self.passphrase,
                                                hnsw=True)
        return self.store

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def recall_ours(self, qi: int, k: int = K) -> list[int]:
        """Row indices our scoped semantic recall returns for query ``qi``."""
        hits = self.open_store().semantic_recall(self.queries[qi], k, org_id=self.query_orgs[qi])
        return [self.row_of[h.id] for h in hits]


def make_context(tmp: Path, sizes: MemorySizes) -> MemoryContext:
    """Vectors, texts, queries and the exact scoped ground truth."""
    n, nq = sizes.n, sizes.queries
    x = clustered(n, seed=1)
    vocab = vocabulary(20_000)
    contents = texts(n, 12, vocab, seed=3)
    queries = clustered(nq, seed=2)
    # Query words skip the 50 commonest (stop-word-like: each is in most memories).
    query_texts = texts(nq, 3, vocab[50:5_000], seed=4)
    query_orgs = [f"org{qi % ORGS}" for qi in range(nq)]
    org_idx = np.array([i // 100 % ORGS for i in range(n)])
    exact = np.zeros((nq, K), dtype=np.int64)
    for o in range(ORGS):
        rows = np.flatnonzero(org_idx == o)
        qs = np.arange(o, nq, ORGS)
        sims = queries[qs] @ x[rows].T
        exact[qs] = rows[np.argsort(-sims, axis=1)[:, :K]]
    return MemoryContext(tmp, sizes, secrets.token_hex(16), x, contents, queries, query_texts,
                         query_orgs, exact)


def _entries(ctx: MemoryContext) -> list[MemoryEntry]:
    return [MemoryEntry(c, org_id=org_of(i), agent_id="a", conversation_id=conversation_of(i))
            for i, c in enumerate(ctx.contents)]


# ------------------------------------------------------------------- raw SQLCipher anchor
_RAW_SCHEMA = """
CREATE TABLE memory (label INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
  content TEXT NOT NULL, created_at_us INTEGER NOT NULL, conversation_id TEXT NOT NULL,
  org_id TEXT NOT NULL, agent_id TEXT NOT NULL, metadata TEXT NOT NULL, embedding BLOB);
CREATE INDEX memory_scope ON memory (org_id, agent_id, conversation_id, created_at_us);
CREATE VIRTUAL TABLE memory_fts USING fts5 (content,
  tokenize = 'porter unicode61 remove_diacritics 2');
"""


def _raw_sqlcipher_conn(path: Path) -> Any:
    """A raw sqlcipher3 connection with the anchor schema and the store's pragmas."""
    conn = sqlcipher3.connect(str(path), isolation_level=None)
    conn.execute(f"PRAGMA key = \"x'{secrets.token_hex(32)}'\"")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA secure_delete = ON")
    conn.executescript(_RAW_SCHEMA)
    return conn


def _raw_sqlcipher_fill(path: Path, ctx: MemoryContext) -> float:
    """Seconds for raw sqlcipher3 to insert the same rows + FTS5, same pragmas and batches."""
    conn = _raw_sqlcipher_conn(path)
    now = int(time.time() * 1e6)
    rows = [(secrets.token_hex(16), c, now, conversation_of(i), org_of(i), "a", "{}",
             ctx.x[i].tobytes()) for i, c in enumerate(ctx.contents)]
    t = time.perf_counter()
    for b in range(0, len(rows), BATCH):
        batch = rows[b:b + BATCH]
        conn.execute("BEGIN")
        first = None
        for r in batch:
            cur = conn.execute("INSERT INTO memory (id, content, created_at_us, conversation_id,"
                               " org_id, agent_id, metadata, embedding) VALUES (?,?,?,?,?,?,?,?)",
                               r)
            first = first or cur.lastrowid
        conn.executemany("INSERT INTO memory_fts (rowid, content) VALUES (?, ?)",
                         [(first + j, r[1]) for j, r in enumerate(batch)])
        conn.execute("COMMIT")
    seconds = time.perf_counter() - t
    conn.close()
    return seconds


def fill(ctx: MemoryContext) -> Figure:
    """Memory append, batched: the first trial's store is the one every later figure uses."""
    entries = _entries(ctx)
    n = ctx.n

    def ours(trial: int) -> float:
        path = ctx.data if trial == 0 else ctx.tmp / f"fill-{trial}"
        s = SqliteMemoryStore.open(path, passphrase=ctx.passphrase, hnsw=False)
        ids: list[str] = []
        t = time.perf_counter()
        for b in range(0, n, BATCH):
            ids += s.append_many(entries[b:b + BATCH], vectors=ctx.x[b:b + BATCH])
        seconds = time.perf_counter() - t
        s.close()
        if trial == 0:
            ctx.row_of = {eid: i for i, eid in enumerate(ids)}
        else:
            shutil.rmtree(path)
        return seconds

    def anchor(trial: int) -> float:
        path = ctx.tmp / f"raw-{trial}.db"
        try:
            return _raw_sqlcipher_fill(path, ctx)
        finally:
            for p in path.parent.glob(path.name + "*"):
                p.unlink()

    p = paired(ours, anchor, ctx.sizes.fill_trials)
    ctx.fill_s = median(p.ours)
    rate, raw_rate = n / ctx.fill_s, n / median(p.anchor)
    return Figure(GROUP, "memory_append_batched", f"memory append {n:,} × {DIM}-d, batched",
                  rate, "/s", raw_rate, f"raw SQLCipher insert + FTS5, {BATCH}/tx",
                  1 / p.ratio, "≥ 10k/s", rate >= 10_000, p.trials,
                  note=f"append_many, {BATCH} per transaction; ratio = ours/raw throughput; "
                       "ours generates time-ordered ids, the anchor random ones")


def _raw_sqlcipher_insert(conn: Any, i: int, ctx: MemoryContext) -> None:
    """One row + its FTS5 row, one committed transaction (the floor of a SQLite design)."""
    conn.execute("BEGIN IMMEDIATE")
    cur = conn.execute("INSERT INTO memory (id, content, created_at_us, conversation_id, org_id,"
                       " agent_id, metadata, embedding) VALUES (?,?,?,?,?,?,?,?)",
                       (secrets.token_hex(16), ctx.contents[i], int(time.time() * 1e6),
                        conversation_of(i), org_of(i), "a", "{}", ctx.x[i].tobytes()))
    conn.execute("INSERT INTO memory_fts (rowid, content) VALUES (?, ?)",
                 (cur.lastrowid, ctx.contents[i]))
    conn.execute("COMMIT")


def single_append(ctx: MemoryContext) -> list[Figure]:
    """One durable append (append_with_embedding) vs one line appended + fsync'd, and vs a
    raw SQLCipher one-row WAL commit (row + FTS5, same pragmas): the floor for any design
    built on SQLite, which writes several 4 KiB WAL frames before its one fsync."""
    path = ctx.tmp / "single"
    s = SqliteMemoryStore.open(path, passphrase=ctx.passphrase, hnsw=False)
    s.append_many(_entries(ctx)[:100], vectors=ctx.x[:100])  # not an empty database
    conn = _raw_sqlcipher_conn(path / "raw-anchor.db")
    for i in range(100):
        _raw_sqlcipher_insert(conn, i, ctx)
    fd = os.open(path / "fsync-anchor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b"x" * 400 + b"\n"
    ours_t: list[float] = []
    raw_t: list[float] = []
    sql_t: list[float] = []

    def one_ours(i: int) -> None:
        e = MemoryEntry(ctx.contents[i], org_id=org_of(i), agent_id="a",
                        conversation_id=conversation_of(i))
        t = time.perf_counter()
        s.append_with_embedding(e, ctx.x[i])
        ours_t.append(time.perf_counter() - t)

    def one_raw(_: int) -> None:
        t = time.perf_counter()
        os.write(fd, line)
        os.fsync(fd)
        raw_t.append(time.perf_counter() - t)

    def one_sql(i: int) -> None:
        t = time.perf_counter()
        _raw_sqlcipher_insert(conn, i, ctx)
        sql_t.append(time.perf_counter() - t)

    order = (one_ours, one_raw, one_sql)
    try:
        for i in range(ctx.sizes.singles):
            for k in range(3):  # rotate who goes first: disk state drifts
                order[(i + k) % 3](i)
    finally:
        os.close(fd)
        conn.close()
        s.close()
        shutil.rmtree(path)
    o, a, q = median(ours_t) * 1e3, median(raw_t) * 1e3, median(sql_t) * 1e3
    return [
        Figure(GROUP, "memory_append_single", "single durable append (p50)", o, "ms", a,
               "write + os.fsync of a line, same disk", o / a, "≤ 1.5× one fsync",
               o / a <= 1.5, len(ours_t),
               note=f"p95 ours {pct(ours_t, 95) * 1e3:.2f} ms, "
                    f"fsync {pct(raw_t, 95) * 1e3:.2f} ms"),
        Figure(GROUP, "memory_append_single_vs_sqlite", "single durable append vs a raw "
               "SQLCipher one-row WAL commit (p50)", o, "ms", q,
               "raw sqlcipher3 row + FTS5 insert, one commit, same pragmas", o / q, "", None,
               len(ours_t),
               note=f"raw commit = {q / a:.2f}× one fsync; p95 raw commit "
                    f"{pct(sql_t, 95) * 1e3:.2f} ms"),
    ]


def rebuild(ctx: MemoryContext) -> Figure:
    """HNSW sidecar rebuild from the encrypted store vs raw hnswlib add_items."""
    cfg = StoreConfig()
    n = ctx.n

    def ours(trial: int) -> float:
        s = SqliteMemoryStore.open(ctx.data, passphrase=ctx.passphrase, hnsw=False)
        try:
            if trial == 0:  # no sidecar yet: enabling it rebuilds from the database
                return timed(lambda: s.enable_hnsw_index(watch=False))
            return timed(lambda: s.rebuild_index("hnsw"))
        finally:
            s.close()

    def anchor(trial: int) -> float:
        ctx.raw = None  # free the previous one first: two 100k graphs would be measured
        raw = hnswlib.Index(space="cosine", dim=DIM)
        t = time.perf_counter()
        raw.init_index(max_elements=n, M=cfg.hnsw_m, ef_construction=cfg.hnsw_ef_construction)
        raw.add_items(ctx.x, np.arange(n))
        seconds = time.perf_counter() - t
        ctx.raw = raw
        return seconds

    p = paired(ours, anchor, ctx.sizes.rebuild_trials)
    ctx.rebuild_s = median(p.ours)
    ctx.raw.save_index(str(ctx.raw_index_path))
    return Figure(GROUP, "hnsw_rebuild", f"HNSW rebuild {n:,}", ctx.rebuild_s, "s",
                  median(p.anchor), f"hnswlib add_items, M={cfg.hnsw_m}, "
                  f"ef_c={cfg.hnsw_ef_construction}", p.ratio, "≤ 1.15× raw",
                  p.ratio <= 1.15, p.trials,
                  note="read SQLCipher + decode + build + sealed checkpoint")


def open_store(ctx: MemoryContext) -> Figure:
    """Open with a passphrase (one scrypt) and a valid sidecar, vs scrypt alone."""
    kdf = StoreConfig().kdf
    salt = secrets.token_bytes(16)
    report: list[Any] = []

    def ours(_: int) -> float:
        t = time.perf_counter()
        s = SqliteMemoryStore.open(ctx.data, passphrase=ctx.passphrase, hnsw=True)
        seconds = time.perf_counter() - t
        h = s.hnsw_index
        report.append(h.open_report if h is not None else None)
        s.close()
        return seconds

    def anchor(_: int) -> float:
        return timed(lambda: Scrypt(salt=salt, length=32, n=kdf.n, r=kdf.r, p=kdf.p)
                     .derive(ctx.passphrase.encode()))

    ctx.close()
    p = paired(ours, anchor, ctx.sizes.open_trials)
    raw_load = timed(lambda: hnswlib.Index(space="cosine", dim=DIM).load_index(
        str(ctx.raw_index_path), max_elements=ctx.n))
    loaded = all(r is not None and r.loaded and not r.rebuilt for r in report)
    o, a = median(p.ours) * 1e3, median(p.anchor) * 1e3
    budget = median([x + 0.300 for x in p.anchor])
    ratio = median([x / (y + 0.300) for x, y in zip(p.ours, p.anchor, strict=True)])
    return Figure(GROUP, "open_store", f"open a {ctx.n:,} store with valid sidecars", o, "ms", a,
                  f"one scrypt n=2^{kdf.n.bit_length() - 1}", ratio,
                  "≤ 300 ms + one KDF (ratio ≤ 1)", ratio <= 1.0 and loaded, p.trials,
                  note=f"open − KDF = {o - a:.0f} ms; budget {budget * 1e3:.0f} ms; raw hnswlib "
                       f"load_index {raw_load * 1e3:.0f} ms"
                       + ("" if loaded else "; SIDECAR NOT LOADED (rebuilt)"))


def _raw_filter(ctx: MemoryContext) -> dict[str, Callable[[int], bool]]:
    sets = {f"org{o}": {i for i in range(ctx.n) if i // 100 % ORGS == o} for o in range(ORGS)}
    return {org: s.__contains__ for org, s in sets.items()}


def semantic(ctx: MemoryContext) -> list[Figure]:
    """Scoped (one org = 10% of rows) top-10: latency and recall@10 vs exact."""
    s = ctx.open_store()
    raw, allowed = ctx.raw, _raw_filter(ctx)
    ef = max(4 * K, StoreConfig().hnsw_ef_search_min)
    raw.set_ef(ef)
    ours_t: list[float] = []
    raw_t: list[float] = []
    found = raw_found = 0
    for qi in range(len(ctx.queries)):
        q, org = ctx.queries[qi], ctx.query_orgs[qi]
        for first in (qi % 2, 1 - qi % 2):
            t = time.perf_counter()
            if first:
                labels, _ = raw.knn_query(q, k=K, filter=allowed[org])
                raw_t.append(time.perf_counter() - t)
            else:
                hits = s.semantic_recall(q, K, org_id=org)
                ours_t.append(time.perf_counter() - t)
        want = set(ctx.exact[qi].tolist())
        found += len({ctx.row_of[h.id] for h in hits} & want)
        raw_found += len(set(labels[0].tolist()) & want)
    total = K * len(ctx.queries)
    ctx.recall_at_10, raw_recall = found / total, raw_found / total
    o, a = median(ours_t) * 1e3, median(raw_t) * 1e3
    ctx.recall_p50_ms = o
    return [
        Figure(GROUP, "semantic_recall_p50", f"semantic recall k={K} over {ctx.n:,}, scoped "
               "to an org (10%), p50", o, "ms", a, f"hnswlib knn_query + filter, ef={ef}",
               o / a, "p50 ≤ 1 ms", o <= 1.0, len(ours_t),
               note=f"p95 ours {pct(ours_t, 95) * 1e3:.2f} ms, raw {pct(raw_t, 95) * 1e3:.2f} ms"),
        Figure(GROUP, "semantic_recall_at_10", "recall@10 vs exact (same scoped queries)",
               ctx.recall_at_10, "", raw_recall, "raw hnswlib filtered", None,
               "≥ 0.95", ctx.recall_at_10 >= 0.95, len(ctx.queries)),
    ]


def hybrid(ctx: MemoryContext) -> Figure:
    """hybrid_recall (vector given) vs raw filtered knn_query + raw FTS5 MATCH + RRF."""
    s = ctx.open_store()
    raw, allowed = ctx.raw, _raw_filter(ctx)
    n_cand = K * StoreConfig().hybrid_candidates_factor
    raw.set_ef(max(n_cand, StoreConfig().hnsw_ef_search_min))
    conn = sqlcipher3.connect(str(ctx.data / "memory.db"), check_same_thread=False)
    conn.execute(f"PRAGMA key = \"x'{s.keys.sqlcipher_key.hex()}'\"")
    sql = ("SELECT m.label FROM memory_fts JOIN memory m ON m.label = memory_fts.rowid "
           "WHERE memory_fts MATCH ? AND m.org_id = ? ORDER BY bm25(memory_fts) LIMIT ?")

    def raw_hybrid(qi: int) -> None:
        labels, _ = raw.knn_query(ctx.queries[qi], k=n_cand, filter=allowed[ctx.query_orgs[qi]])
        kw = [r[0] - 1 for r in conn.execute(
            sql, (fts5_query(ctx.query_texts[qi]), ctx.query_orgs[qi], n_cand))]
        score: dict[int, float] = {}
        for ranked in (labels[0].tolist(), kw):
            for rank, key in enumerate(ranked, start=1):
                score[key] = score.get(key, 0.0) + 1.0 / (60 + rank)
        sorted(score, key=score.__getitem__, reverse=True)[:K]

    ours_t: list[float] = []
    raw_t: list[float] = []
    for qi in range(len(ctx.queries)):
        for first in (qi % 2, 1 - qi % 2):
            t = time.perf_counter()
            if first:
                raw_hybrid(qi)
                raw_t.append(time.perf_counter() - t)
            else:
                s.hybrid_recall(ctx.query_texts[qi], ctx.queries[qi], K,
                                org_id=ctx.query_orgs[qi])
                ours_t.append(time.perf_counter() - t)
    conn.close()
    o, a = median(ours_t) * 1e3, median(raw_t) * 1e3
    return Figure(GROUP, "hybrid_recall_p50", f"hybrid recall k={K} over {ctx.n:,}, scoped "
                  "to an org, p50 (query embedding excluded)", o, "ms", a,
                  f"filtered knn_query + FTS5 MATCH ({n_cand} each) + RRF", o / a, "p50 ≤ 5 ms",
                  o <= 5.0, len(ours_t),
                  note=f"p95 ours {pct(ours_t, 95) * 1e3:.2f} ms, "
                       f"raw {pct(raw_t, 95) * 1e3:.2f} ms")


def run(ctx: MemoryContext, progress: Callable[[str], None]) -> list[Figure]:
    """Every memory figure, in the order that builds what the next one needs."""
    figures = [fill(ctx)]
    progress("memory: single durable appends")
    figures += single_append(ctx)
    progress("memory: HNSW rebuild vs raw add_items")
    figures.append(rebuild(ctx))
    progress("memory: open with valid sidecars")
    figures.append(open_store(ctx))
    progress("memory: scoped semantic recall")
    figures += semantic(ctx)
    progress("memory: hybrid recall")
    figures.append(hybrid(ctx))
    return figures
