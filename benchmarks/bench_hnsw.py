"""Benchmark of the memory store's HNSW sidecar. Prints a markdown table.

    .venv/bin/python benchmarks/bench_hnsw.py            # 100k × 384
    .venv/bin/python benchmarks/bench_hnsw.py --quick    # 10k × 384

Measures, in one run on the same clustered, normalised 384-d vectors (real embeddings are
clustered; isotropic Gaussians give misleading HNSW recall):

- rebuild of the sidecar from the encrypted store vs raw ``hnswlib.add_items`` (goal ≤ 1.15×)
- checkpoint write and verified checkpoint load
- ``semantic_recall`` latency p50/p95: unscoped; scoped to an agent across orgs (25%),
  an org (10%) — both the filtered HNSW path —, an agent within an org (2.5%) and a
  conversation (100 rows) — both exact over the in-memory scope (goal p50 ≤ 1 ms)
- recall@10 of ``semantic_recall`` against exact (numpy) search, unscoped and per scope

Latency is wall time per call; "cpu" is the calling thread's CPU time per call
(``time.thread_time``), which a busy shared machine inflates far less than wall time.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path

import hnswlib
import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig  # noqa: E402
from agentzero_store.base.config import FAST_KDF_FOR_TESTS  # noqa: E402

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
            s.append_many(
                [
                    MemoryEntry(
                        f"memory {i}",
                        org_id=f"org{i // 100 % 10}",
                        agent_id=f"a{i % 4}",
                        conversation_id=f"c{i // 100}",
                    )
                    for i in range(b, b + m)
                ],
                vectors=list(x[b : b + m]),
            )
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

        sims = queries @ x.T
        ids = {int(lab): i for lab, i in s._live().query("SELECT label, id FROM memory")}
        org = np.arange(n) // 100 % 10
        agent, conv = np.arange(n) % 4, np.arange(n) // 100
        scopes = {  # name -> (kwargs for query qi, row mask for query qi)
            "unscoped": lambda qi: ({}, slice(None)),
            "agent (25%)": lambda qi: ({"agent_id": f"a{qi % 4}"}, agent == qi % 4),
            "org (10%)": lambda qi: ({"org_id": f"org{qi % 10}"}, org == qi % 10),
            "org+agent (2.5%)": lambda qi: (
                {"org_id": f"org{qi % 10}", "agent_id": f"a{qi % 4}"},
                (org == qi % 10) & (agent == qi % 4),
            ),
            "conversation (100 rows)": lambda qi: (
                {
                    "org_id": f"org{qi * 7919 % n // 100 % 10}",
                    "conversation_id": f"c{qi * 7919 % n // 100}",
                },
                conv == qi * 7919 % n // 100,
            ),
        }
        lat: dict[str, list[float]] = {name: [] for name in scopes}
        cpu: dict[str, list[float]] = {name: [] for name in scopes}
        found = dict.fromkeys(scopes, 0)
        for qi, q in enumerate(queries):
            for name, scope in scopes.items():
                kw, mask = scope(qi)
                w, c = time.perf_counter(), time.thread_time()
                hits = s.semantic_recall(q, 10, **kw)
                cpu[name].append(time.thread_time() - c)
                lat[name].append(time.perf_counter() - w)
                rows_in = np.flatnonzero(np.ones(n, bool)[mask] if name == "unscoped" else mask)
                top = rows_in[np.argsort(-sims[qi, rows_in])[:10]]
                found[name] += len({h_.id for h_ in hits} & {ids[int(j) + 1] for j in top})
        answers = dict(h.answers)
        s.close()

    rows += [
        ("vectors", f"{n:,} × {DIM}", "clustered, normalised"),
        ("append to SQLCipher", f"{t_fill:.1f} s", "append_many, 5k per transaction"),
        (
            "raw hnswlib add_items",
            f"{t_raw:.1f} s",
            f"M={cfg.hnsw_m}, ef_c={cfg.hnsw_ef_construction}; best of a run before and after",
        ),
        (
            "sidecar rebuild",
            f"{t_rebuild:.1f} s",
            f"{t_rebuild / t_raw:.2f}× raw (goal ≤ 1.15×); reads + build + sealed checkpoint",
        ),
        ("checkpoint write", f"{t_ckpt:.2f} s", f"{size / 2**20:.0f} MiB sealed"),
        ("open (verify + load)", f"{t_open:.2f} s", "MAC + sha256 + AES-GCM + hnswlib state"),
    ]
    for name, xs in lat.items():
        rows.append(
            (
                f"semantic_recall k=10, {name}",
                f"p50 {pct(xs, 50) * 1e3:.2f} ms / p95 {pct(xs, 95) * 1e3:.2f} ms",
                f"cpu p50 {pct(cpu[name], 50) * 1e3:.2f} ms / p95 "
                f"{pct(cpu[name], 95) * 1e3:.2f} ms; recall@10 "
                f"{found[name] / (10 * len(queries)):.4f}",
            )
        )
    rows.append(
        (
            "answered by graph / in-memory exact / SQL",
            f"{answers['index']} / {answers['exact']} / {answers['sql']}",
            "scopes ≤ sqrt(40·k·N) rows are searched exactly in memory",
        )
    )
    t = time.thread_time()
    acc = 0
    for i in range(3_000_000):
        acc += i
    rows.append(
        (
            "calibration: 3M-iteration Python loop",
            f"{time.thread_time() - t:.2f} s cpu",
            "~0.12–0.15 s on an idle core; larger means a busy machine inflates every row",
        )
    )
    print("| measure | value | notes |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")


if __name__ == "__main__":
    main()
