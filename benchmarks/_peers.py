"""Peer comparison: Chroma on the same precomputed vectors, texts and scopes.

Chroma is a benchmark-only peer, never a dependency of the store: it lives in its own
venv (``benchmarks/.peers-venv``, made by ``run.py --setup-peers`` from
``requirements-peers.txt``) and runs in a child process (``_chroma_worker.py``). The
group is skipped, saying so, when that venv is missing.

Ingest compares the time until the n vectors are stored *and* indexed: for us the
batched appends plus a sidecar rebuild (the memory group's medians), for Chroma its
batched ``add``. Queries compare p50 at equal recall@10: Chroma runs at several
``ef_search`` values and the cheapest one reaching our recall (−0.005) is used.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _harness import Figure, Skipped, median, pct

HERE = Path(__file__).resolve().parent
VENV = HERE / ".peers-venv"
PYTHON = VENV / "bin" / "python"
EFS = (10, 40, 100, 200)


def setup() -> int:
    """Create the peers venv and install the pinned peers (PyPI only)."""
    if not PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    return subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", "-r",
                           str(HERE / "requirements-peers.txt")]).returncode


def chroma_available() -> str | None:
    """None if Chroma runs in the peers venv, else why not."""
    if not PYTHON.exists():
        return "no benchmarks/.peers-venv (run: python benchmarks/run.py --setup-peers)"
    r = subprocess.run([str(PYTHON), "-c", "import chromadb"], capture_output=True, text=True)
    return None if r.returncode == 0 else "chromadb does not import in benchmarks/.peers-venv"


def _recall(ids: list[list[int]], exact: np.ndarray[Any, Any]) -> float:
    found = sum(len(set(got) & set(want.tolist())) for got, want in zip(ids, exact, strict=True))
    return found / exact.size


def run_chroma(ctx: Any, progress: Callable[[str], None]) -> list[Figure] | Skipped:
    """Chroma ingest and scoped query vs ours (ctx: the memory group's ``MemoryContext``)."""
    from _memory import K

    from agentzero_store import StoreConfig

    why = chroma_available()
    if why is not None:
        return Skipped("chroma", why)
    cfg = StoreConfig()
    d = ctx.tmp / "chroma"
    d.mkdir()
    np.save(d / "vectors.npy", ctx.x)
    np.save(d / "queries.npy", ctx.queries)
    orgs = [f"org{i // 100 % 10}" for i in range(ctx.n)]
    (d / "meta.json").write_text(json.dumps({
        "k": K, "m": cfg.hnsw_m, "ef_construction": cfg.hnsw_ef_construction, "efs": EFS,
        "orgs": orgs, "texts": ctx.contents, "query_orgs": ctx.query_orgs}), encoding="utf-8")

    def ours_latencies() -> list[float]:
        lat = []
        for qi in range(len(ctx.queries)):
            t = time.perf_counter()
            ctx.recall_ours(qi)
            lat.append(time.perf_counter() - t)
        return lat

    before = ours_latencies()
    ctx.close()  # Chroma gets the machine to itself
    out = d / "result.json"
    t = time.perf_counter()
    r = subprocess.run([str(PYTHON), str(HERE / "_chroma_worker.py"), str(d), str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return Skipped("chroma", f"the Chroma worker failed: {r.stderr.strip()[-300:]}")
    progress(f"chroma: worker done in {time.perf_counter() - t:.0f} s")
    res = json.loads(out.read_text(encoding="utf-8"))
    after = ours_latencies()
    ours_p50 = median([median(before), median(after)]) * 1e3
    by_ef = {int(ef): (_recall(v["ids"], ctx.exact), median(v["latency_s"]) * 1e3,
                       pct(v["latency_s"], 95) * 1e3) for ef, v in res["ef"].items()}
    reaching = [ef for ef, (rec, _, _) in sorted(by_ef.items())
                if rec >= ctx.recall_at_10 - 0.005]
    ef = reaching[0] if reaching else max(by_ef, key=lambda e: by_ef[e][0])
    c_recall, c_p50, c_p95 = by_ef[ef]
    sweep = ", ".join(f"ef {e}: {rec:.3f} @ {p50:.2f} ms" for e, (rec, p50, _) in
                      sorted(by_ef.items()))
    ours_ingest = ctx.fill_s + ctx.rebuild_s
    ingest_ratio = res["ingest_s"] / ours_ingest
    q_ratio = ours_p50 / c_p50
    return [
        Figure("chroma", "chroma_query_p50", f"vs Chroma {res['chromadb']}: scoped top-{K} "
               f"query p50 at equal recall@10 ({ctx.n:,})", ours_p50, "ms", c_p50,
               f"Chroma where=org, ef_search={ef}", q_ratio, "≤ 0.5× Chroma", q_ratio <= 0.5,
               len(ctx.queries),
               note=f"recall@10 ours {ctx.recall_at_10:.3f}, Chroma {c_recall:.3f}; Chroma p95 "
                    f"{c_p95:.2f} ms; sweep {sweep}",
               extra={"sweep": {str(e): v for e, v in by_ef.items()}}),
        Figure("chroma", "chroma_ingest", f"vs Chroma: ingest {ctx.n:,} vectors + texts until "
               "indexed", ctx.n / ours_ingest, "/s", ctx.n / res["ingest_s"],
               "Chroma PersistentClient.add, 5k per batch", ingest_ratio,
               "≥ 2× Chroma throughput", ingest_ratio >= 2.0, 1,
               note=f"ours = append_many {ctx.fill_s:.1f} s + rebuild {ctx.rebuild_s:.1f} s; "
                    f"Chroma {res['ingest_s']:.1f} s"),
    ]
