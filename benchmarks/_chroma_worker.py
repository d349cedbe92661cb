"""Chroma side of the peer comparison. Runs in ``benchmarks/.peers-venv`` only.

    .peers-venv/bin/python _chroma_worker.py IN_DIR OUT_JSON

Reads ``vectors.npy``, ``queries.npy`` and ``meta.json`` (row orgs and texts, query orgs,
k, our HNSW build settings) from IN_DIR; adds everything to a ``PersistentClient``
collection with the precomputed vectors (no embedding function), then, per
``ef_search``, runs the scoped queries. Writes ingest seconds and, per setting, each
query's latency and result ids (the format ``_peers.run`` reads from every worker).
Imports nothing from agentzero_store: this venv holds Chroma and its own dependencies.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import chromadb
import numpy as np

EFS = (10, 40, 100, 200)  # ef_search values swept, cheapest first


def main(in_dir: Path, out: Path) -> None:
    x = np.load(in_dir / "vectors.npy")
    queries = np.load(in_dir / "queries.npy")
    meta = json.loads((in_dir / "meta.json").read_text(encoding="utf-8"))
    k, m, ef_c = meta["k"], meta["m"], meta["ef_construction"]
    result: dict[str, Any] = {"version": chromadb.__version__, "settings": {}}
    with tempfile.TemporaryDirectory(dir=in_dir) as d:
        client = chromadb.PersistentClient(path=d)
        col = client.create_collection(
            "bench", embedding_function=None,
            metadata={"hnsw:space": "cosine", "hnsw:M": m, "hnsw:construction_ef": ef_c})
        batch = min(5_000, client.get_max_batch_size())
        t = time.perf_counter()
        for b in range(0, len(x), batch):
            e = min(b + batch, len(x))
            col.add(ids=[str(i) for i in range(b, e)], embeddings=x[b:e],
                    documents=meta["texts"][b:e],
                    metadatas=[{"org_id": o, "agent_id": "a"} for o in meta["orgs"][b:e]])
        result["ingest_s"] = time.perf_counter() - t
        result["count"] = col.count()
        for ef in EFS:
            col.modify(configuration={"hnsw": {"ef_search": ef}})
            col.query(query_embeddings=queries[:1], n_results=k,
                      where={"org_id": meta["query_orgs"][0]})  # warm the new setting
            lat, ids = [], []
            for qi in range(len(queries)):
                t = time.perf_counter()
                r = col.query(query_embeddings=queries[qi:qi + 1], n_results=k,
                              where={"org_id": meta["query_orgs"][qi]}, include=["distances"])
                lat.append(time.perf_counter() - t)
                ids.append([int(i) for i in r["ids"][0]])
            result["settings"][f"ef_search {ef}"] = {"latency_s": lat, "ids": ids}
    out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
