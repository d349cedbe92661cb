"""Benchmark of the memory store's HNSW sidecar. Prints a markdown table.

    .venv/bin/python benchmarks/bench_hnsw.py            # 100k × 384
    .venv/bin/python benchmarks/bench_hnsw.py --quick    # 10k × 384

Measures, in one run on the same clustered, normalised 384-d vectors (real embeddings are
clustered; isotropic Gaussians give misleading HNSW recall):

- rebuild of the sidecar from the encrypted store vs raw ``hnswlib.add_items`` (goal ≤ 1.15×)
- checkpoint write and verified checkpoint load
- ``semantic_recall`` latency p50/p95: unscoped, scoped to an org (10% of rows, the
  post-filtered HNSW path) and to a conversation (small scope, exact path) (goal p50 ≤ 1 ms)
- recall@10 of ``semantic_recall`` against exact (numpy) search
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

import hnswlib
import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig  # noqa: E402
from agentzero_store.config import FAST_KDF_FOR_TESTS  # noqa: E402

DIM = 384


def clustered(n: int, seed: int, clusters: int = 1_000) -> npt.NDArray[np.float32]:
    """``n`` unit vectors around ``clusters`` random centroids (same centroids every seed)."""
    cent = np.random.default_rng(0).normal(size=(clusters, DIM)).astype(np.float32)
    rng = np.random.default_rng(seed)
    x = cent[rng.integers(0, clusters, n)] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.array(xs), p))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="vectors in the store")
    ap.add_argument("--quick", action="store_true", help="10k vectors")
    ap.add_argument("--queries", type=int, default=1_000)
    args = ap.parse_args()
    n = 10_000 if args.quick else args.n
    cfg = StoreConfig(kdf=FAST_KDF_FOR_TESTS)
    x = clustered(n, seed=1)
    queries = clustered(args.queries, seed=2)
    rows: list[tuple[str, str, str]] = []

    def raw_add() -> float:
        """Raw hnswlib, same parameters and threads, vectors already in memory."""
        t = time.perf_counter()
        raw = hnswlib.Index(space="cosine", dim=DIM)
        raw.init_index(max_elements=n, M=cfg.hnsw_m, ef_construction=cfg.hnsw_ef_construction)
        raw.add_items(x, np.arange(n))
        return time.perf_counter() - t

    t_raw_before = raw_add()

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        key = secrets.token_bytes(32)
        s = SqliteMemoryStore.open(data, key=key, config=cfg, hnsw=False)
        t = time.perf_counter()
        for b in range(0, n, 5_000):
            m = min(5_000, n - b)
            s.append_many([MemoryEntry(f"memory {i}", org_id=f"org{i // 100 % 10}", agent_id="a",
                                       conversation_id=f"c{i // 100}")
                           for i in range(b, b + m)], vectors=list(x[b:b + m]))
        t_fill = time.perf_counter() - t
        s.close()

        s = SqliteMemoryStore.open(data, key=key, config=cfg, hnsw=False)
        s.enable_hnsw_index(watch=False)  # first build (no checkpoint yet)
        t = time.perf_counter()
        s.rebuild_index("hnsw")  # read SQLCipher + build + sealed checkpoint
        t_rebuild = time.perf_counter() - t
        # Raw again, right after: on a shared 2-core machine timings drift; the ratio uses
        # the raw run nearest in time as well as the best one.
        t_raw = min(t_raw_before, raw_add())
        h = s.hnsw_index
        assert h is not None and h.sidecar is not None
        t = time.perf_counter()
        h.sidecar.checkpoint()
        t_ckpt = time.perf_counter() - t
        size = h.sidecar.status().size_bytes
        s.close()

        t = time.perf_counter()
        s = SqliteMemoryStore.open(data, key=key, config=cfg, hnsw=True)
        t_open = time.perf_counter() - t
        h = s.hnsw_index
        assert h is not None and h.open_report is not None and h.open_report.loaded

        exact = np.argsort(-(queries @ x.T), axis=1)[:, :10]
        ids = {int(lab): i for lab, i in s._live().query("SELECT label, id FROM memory")}
        label_of = {v: k for k, v in ids.items()}
        lat: dict[str, list[float]] = {
            "unscoped": [], "org (10%)": [], "conversation (100 rows)": []}
        found = 0
        for qi, q in enumerate(queries):
            t = time.perf_counter()
            hits = s.semantic_recall(q, 10)
            lat["unscoped"].append(time.perf_counter() - t)
            want = {label_of_i for label_of_i in exact[qi] + 1}  # labels are 1-based rowids
            found += len({label_of[h_.id] for h_ in hits} & want)
            t = time.perf_counter()
            s.semantic_recall(q, 10, org_id=f"org{qi % 10}", agent_id="a")
            lat["org (10%)"].append(time.perf_counter() - t)
            t = time.perf_counter()
            conv = (qi * 7919 % n) // 100  # a conversation: 100 consecutive appends
            s.semantic_recall(q, 10, org_id=f"org{conv % 10}", agent_id="a",
                              conversation_id=f"c{conv}")
            lat["conversation (100 rows)"].append(time.perf_counter() - t)
        recall = found / (10 * len(queries))
        answers = dict(h.answers)
        s.close()

    rows += [
        ("vectors", f"{n:,} × {DIM}", "clustered, normalised"),
        ("append to SQLCipher", f"{t_fill:.1f} s", "append_many, 5k per transaction"),
        ("raw hnswlib add_items", f"{t_raw:.1f} s",
         f"M={cfg.hnsw_m}, ef_c={cfg.hnsw_ef_construction}; best of a run before and after"),
        ("sidecar rebuild", f"{t_rebuild:.1f} s",
         f"{t_rebuild / t_raw:.2f}× raw (goal ≤ 1.15×); reads + build + sealed checkpoint"),
        ("checkpoint write", f"{t_ckpt:.2f} s", f"{size / 2**20:.0f} MiB sealed"),
        ("open (verify + load)", f"{t_open:.2f} s", "MAC + sha256 + AES-GCM + hnswlib state"),
    ]
    for name, xs in lat.items():
        rows.append((f"semantic_recall k=10, {name}",
                     f"p50 {pct(xs, 50) * 1e3:.2f} ms / p95 {pct(xs, 95) * 1e3:.2f} ms",
                     f"mean {statistics.fmean(xs) * 1e3:.2f} ms"))
    rows.append(("recall@10 vs exact (unscoped)", f"{recall:.4f}", f"{len(queries)} queries"))
    rows.append(("answered by index / exact", f"{answers['index']} / {answers['exact']}",
                 "conversation scopes are small: exact by design"))
    print("| measure | value | notes |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")


if __name__ == "__main__":
    main()
