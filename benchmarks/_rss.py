"""Peak RSS at n memories: our store (opened with its sidecar, queried) vs raw hnswlib.

Each side runs in a fresh child process (peak RSS is per process and never goes down):

- ours: ``SqliteMemoryStore.open(..., hnsw=True)`` (verify + decrypt + load the sealed
  checkpoint), then semantic and hybrid recalls;
- anchor: ``hnswlib.Index.load_index`` of the same vectors and graph from a plain file
  (the raw vectors + index, nothing encrypted), then ``knn_query`` calls.

Also run as a script: ``_rss.py ours DATA_DIR`` / ``_rss.py raw INDEX N`` prints JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

DIM = 384
QUERIES = 100


def _rss_mib() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MiB, from /proc (VmRSS, VmHWM).

    Not ``getrusage``: Linux carries ``ru_maxrss`` across fork + exec, so a child would
    report its parent's peak.
    """
    status = Path("/proc/self/status").read_text().splitlines()
    kib = {line.split(":")[0]: int(line.split()[1]) for line in status
           if line.startswith(("VmRSS:", "VmHWM:"))}
    return kib["VmRSS"] / 1024, kib["VmHWM"] / 1024


def _child_ours(data: str) -> dict[str, Any]:
    import numpy as np

    from agentzero_store import SqliteMemoryStore

    base = _rss_mib()[0]
    rng = np.random.default_rng(7)
    s = SqliteMemoryStore.open(data, passphrase=os.environ["AGENTZERO_BENCH_PASSPHRASE"],
                               hnsw=True)
    opened = _rss_mib()
    for i in range(QUERIES):
        q = rng.normal(size=DIM).astype(np.float32)
        s.semantic_recall(q / np.linalg.norm(q), 10, org_id=f"org{i % 10}")
        s.hybrid_recall("stea grou", q / np.linalg.norm(q), 10, org_id=f"org{i % 10}")
    cur, peak = _rss_mib()
    s.close()
    return {"after_imports": base, "after_open": opened[0], "peak_open": opened[1],
            "steady": cur, "peak": peak}


def _child_raw(index: str, n: int) -> dict[str, Any]:
    import hnswlib
    import numpy as np

    base = _rss_mib()[0]
    rng = np.random.default_rng(7)
    raw = hnswlib.Index(space="cosine", dim=DIM)
    raw.load_index(index, max_elements=n)
    opened = _rss_mib()
    for _ in range(QUERIES):
        raw.knn_query(rng.normal(size=DIM).astype(np.float32), k=10)
    cur, peak = _rss_mib()
    return {"after_imports": base, "after_open": opened[0], "peak_open": opened[1],
            "steady": cur, "peak": peak}


def _child_docs(data: str, terms: str, key_hex: str) -> dict[str, Any]:
    """A document store opened read-only (as ``agentzero rag query`` does), 3 queries."""
    from agentzero_store import StoreConfig
    from agentzero_store.base.config import FAST_KDF_FOR_TESTS
    from rag import DocumentStore

    base = _rss_mib()[0]
    cfg = StoreConfig(kdf=FAST_KDF_FOR_TESTS, bm25_terms=terms)
    with DocumentStore.open(data, key=bytes.fromhex(key_hex), config=cfg, readonly=True) as s:
        for q in ("stea", "grou stea", "alpha"):
            s.query(q, 5)
        cur, peak = _rss_mib()
    return {"after_imports": base, "steady": cur, "peak": peak}


def docs_rss(data: Path, terms: str, key: bytes) -> dict[str, Any]:
    """``_child_docs`` in a fresh process: its RSS figures in MiB."""
    return _spawn(["docs", str(data), terms, key.hex()])


def _spawn(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                         text=True, env={**os.environ, **(env or {})})
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(ctx: Any) -> list[Any]:
    """The peak-RSS figure (ctx: the memory group's ``MemoryContext``, store closed)."""
    from _harness import Figure

    ours = _spawn(["ours", str(ctx.data)], {"AGENTZERO_BENCH_PASSPHRASE": ctx.passphrase})
    raw = _spawn(["raw", str(ctx.raw_index_path), str(ctx.n)])
    vectors = ctx.n * DIM * 4 / 2**20
    ratio = ours["peak"] / raw["peak"]
    return [Figure(
        "rss", "peak_rss", f"peak RSS at {ctx.n:,} memories (open + {QUERIES} recalls)",
        ours["peak"], "MiB", raw["peak"], "hnswlib load_index + knn_query", ratio,
        "≤ 1.5× raw vectors + index", ratio <= 1.5, 1,
        note=f"steady ours {ours['steady']:.0f} / raw {raw['steady']:.0f} MiB; imports ours "
             f"{ours['after_imports']:.0f} / raw {raw['after_imports']:.0f} MiB; raw vectors "
             f"alone {vectors:.0f} MiB",
        extra={"ours": ours, "raw": raw})]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    if sys.argv[1] == "ours":
        print(json.dumps(_child_ours(sys.argv[2])))
    elif sys.argv[1] == "docs":
        print(json.dumps(_child_docs(sys.argv[2], sys.argv[3], sys.argv[4])))
    else:
        print(json.dumps(_child_raw(sys.argv[2], int(sys.argv[3]))))
