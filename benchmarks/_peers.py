"""Peer comparison: Chroma and LanceDB on the same precomputed vectors, texts and scopes.

The peers are benchmark-only, never dependencies of the store: they live in their own
venv (``benchmarks/.peers-venv``, made by ``run.py --setup-peers`` from
``requirements-peers.txt``) and each runs in a child process (``_chroma_worker.py``,
``_lance_worker.py``) that reads the same input files. A peer's group is skipped, saying
so, when that venv is missing or the peer does not import in it.

Ingest compares the time until the n vectors are stored *and* indexed: for us the
batched appends plus a sidecar rebuild (the memory group's medians), for a peer what its
worker does until its indexes are built. Queries compare p50 at equal recall@10: the
worker runs the scoped queries at each setting of its accuracy knobs, and the cheapest
setting (lowest p50) reaching our recall − 0.005 is used; if none does, the one with the
best recall, and the note says so. Our latencies are measured before and after the
worker (store closed while it runs, so the peer has the machine to itself) and the
median of the two medians is used.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _harness import Figure, Skipped, median, pct

HERE = Path(__file__).resolve().parent
VENV = HERE / ".peers-venv"
PYTHON = VENV / "bin" / "python"
RECALL_SLACK = 0.005  # a peer setting counts as equal recall within this of ours


@dataclass(frozen=True)
class Peer:
    """One peer: its ``--only`` group, how to check it is installed, its worker."""

    group: str  # the --only name; also the prefix of its figure names
    title: str  # as the table names it
    module: str  # what must import in the peers venv
    worker: str  # file beside this one, run with the peers venv's python
    query_anchor: str  # anchor label of the query figure; ``{setting}`` is filled in
    ingest_anchor: str  # anchor label of the ingest figure


CHROMA = Peer("chroma", "Chroma", "chromadb", "_chroma_worker.py",
              "Chroma where=org, {setting}", "Chroma PersistentClient.add, 5k per batch")
LANCEDB = Peer("lancedb", "LanceDB", "lancedb", "_lance_worker.py",
               "LanceDB IVF_PQ cosine, where org prefilter (BITMAP index), {setting}",
               "LanceDB create_table + IVF_PQ + BITMAP index")
PEERS = (CHROMA, LANCEDB)


def setup() -> int:
    """Create the peers venv and install the pinned peers (PyPI only)."""
    if not PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    return subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", "-r",
                           str(HERE / "requirements-peers.txt")]).returncode


def available(peer: Peer) -> str | None:
    """None if ``peer`` imports in the peers venv, else why not."""
    if not PYTHON.exists():
        return "no benchmarks/.peers-venv (run: python benchmarks/run.py --setup-peers)"
    r = subprocess.run([str(PYTHON), "-c", f"import {peer.module}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return (f"{peer.module} does not import in benchmarks/.peers-venv "
                "(run: python benchmarks/run.py --setup-peers)")
    return None


def _recall(ids: list[list[int]], exact: np.ndarray[Any, Any]) -> float:
    found = sum(len(set(got) & set(want.tolist())) for got, want in zip(ids, exact, strict=True))
    return found / exact.size


def _inputs(ctx: Any) -> Path:
    """The worker inputs (vectors, queries, meta.json), written once per run."""
    from _memory import K

    from agentzero_store import StoreConfig

    d = ctx.tmp / "peers-in"
    if d.exists():
        return d
    d.mkdir()
    cfg = StoreConfig()
    np.save(d / "vectors.npy", ctx.x)
    np.save(d / "queries.npy", ctx.queries)
    orgs = [f"org{i // 100 % 10}" for i in range(ctx.n)]
    # m / ef_construction: our HNSW build settings, for a peer that builds HNSW too.
    (d / "meta.json").write_text(json.dumps({
        "k": K, "m": cfg.hnsw_m, "ef_construction": cfg.hnsw_ef_construction,
        "orgs": orgs, "texts": ctx.contents, "query_orgs": ctx.query_orgs}), encoding="utf-8")
    return d


def _ours_latencies(ctx: Any) -> list[float]:
    ctx.open_store()  # opening is not part of a query
    lat = []
    for qi in range(len(ctx.queries)):
        t = time.perf_counter()
        ctx.recall_ours(qi)
        lat.append(time.perf_counter() - t)
    return lat


def run(peer: Peer, ctx: Any, progress: Callable[[str], None]) -> list[Figure] | Skipped:
    """``peer``'s ingest and scoped query vs ours (ctx: the memory group's ``MemoryContext``)."""
    from _memory import K

    why = available(peer)
    if why is not None:
        return Skipped(peer.group, why)
    d = _inputs(ctx)
    before = _ours_latencies(ctx)
    ctx.close()  # the peer gets the machine to itself
    out = ctx.tmp / f"{peer.group}-result.json"
    t = time.perf_counter()
    r = subprocess.run([str(PYTHON), str(HERE / peer.worker), str(d), str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return Skipped(peer.group, f"the {peer.title} worker failed: {r.stderr.strip()[-300:]}")
    progress(f"{peer.group}: worker done in {time.perf_counter() - t:.0f} s")
    res = json.loads(out.read_text(encoding="utf-8"))
    after = _ours_latencies(ctx)
    ours_p50 = median([median(before), median(after)]) * 1e3
    # Settings in the worker's order (cheapest knobs first): recall, p50 ms, p95 ms.
    sweep = {s: (_recall(v["ids"], ctx.exact), median(v["latency_s"]) * 1e3,
                 pct(v["latency_s"], 95) * 1e3) for s, v in res["settings"].items()}
    reaching = [s for s, (rec, _, _) in sweep.items() if rec >= ctx.recall_at_10 - RECALL_SLACK]
    if reaching:
        setting = min(reaching, key=lambda s: sweep[s][1])
        equal = ""
    else:
        setting = max(sweep, key=lambda s: sweep[s][0])
        equal = f"; no setting reaches our recall − {RECALL_SLACK}: its best recall is used"
    p_recall, p_p50, p_p95 = sweep[setting]
    swept = ", ".join(f"{s}: {rec:.3f} @ {p50:.2f} ms" for s, (rec, p50, _) in sweep.items())
    ours_ingest = ctx.fill_s + ctx.rebuild_s
    ingest_ratio = res["ingest_s"] / ours_ingest
    q_ratio = ours_p50 / p_p50
    g, title = peer.group, peer.title
    return [
        Figure(g, f"{g}_query_p50", f"vs {title} {res['version']}: scoped top-{K} query p50 "
               f"at equal recall@10 ({ctx.n:,})", ours_p50, "ms", p_p50,
               peer.query_anchor.format(setting=setting), q_ratio, f"≤ 0.5× {title}",
               q_ratio <= 0.5, len(ctx.queries),
               note=f"recall@10 ours {ctx.recall_at_10:.3f}, {title} {p_recall:.3f}{equal}; "
                    f"{title} p95 {p_p95:.2f} ms; sweep {swept}",
               extra={"sweep": sweep, "setting": setting}),
        Figure(g, f"{g}_ingest", f"vs {title}: ingest {ctx.n:,} vectors + texts until "
               "indexed", ctx.n / ours_ingest, "/s", ctx.n / res["ingest_s"],
               peer.ingest_anchor, ingest_ratio, f"≥ 2× {title} throughput",
               ingest_ratio >= 2.0, 1,
               note=f"ours = append_many {ctx.fill_s:.1f} s + rebuild {ctx.rebuild_s:.1f} s; "
                    f"{title} {res['ingest_s']:.1f} s"),
    ]
