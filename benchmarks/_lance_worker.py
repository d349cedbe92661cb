"""LanceDB side of the peer comparison. Runs in ``benchmarks/.peers-venv`` only.

    .peers-venv/bin/python _lance_worker.py IN_DIR OUT_JSON

Reads ``vectors.npy``, ``queries.npy`` and ``meta.json`` (row orgs and texts, query orgs,
k) from IN_DIR, the same files the Chroma worker reads. Ingest, timed until indexed:
one ``create_table`` of every row (LanceDB wants large batches; each write is a
fragment), then what a user builds for fast scoped ANN queries: an ``IVF_PQ`` index with
the cosine metric (the index LanceDB's docs recommend when queries carry ``where``
filters; the HNSW variants show more latency variance there) and a ``BITMAP`` index on
``org`` (the docs' choice for a column with under 1,000 distinct values). Then, per
(``nprobes``, ``refine_factor``) setting, runs the scoped queries with the filter applied
before the vector search (prefilter). Writes ingest seconds and, per setting, each
query's latency and result ids. Imports nothing from agentzero_store.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import Bitmap, IvfPq

# (minimum nprobes, refine_factor): the accuracy knobs, cheapest first. nprobes is the
# floor of IVF partitions scanned (LanceDB scans more when the filter leaves fewer than k
# rows); refine_factor re-ranks refine × k PQ candidates on the full vectors (1 = none).
# With the default PQ (dim / 16 sub-vectors) recall is bounded by the refine factor, not
# nprobes: at 20k, recall@10 was 0.38 / 0.66 / 0.91 / 0.985 / 0.999 at refine 1 / 5 / 20 /
# 50 / 100 for every nprobes tried, so the sweep reaches refine 100.
SETTINGS = ((10, 1), (10, 5), (10, 20), (20, 20), (10, 50), (20, 50), (10, 100), (40, 100))


def main(in_dir: Path, out: Path) -> None:
    x = np.load(in_dir / "vectors.npy")
    queries = np.load(in_dir / "queries.npy")
    meta = json.loads((in_dir / "meta.json").read_text(encoding="utf-8"))
    k, n, dim = meta["k"], len(x), x.shape[1]
    result: dict[str, Any] = {"version": lancedb.__version__, "settings": {}}
    with tempfile.TemporaryDirectory(dir=in_dir) as d:
        db = lancedb.connect(d)
        t = time.perf_counter()
        rows = pa.table({
            "row": pa.array(np.arange(n, dtype=np.int64)),
            "org": pa.array(meta["orgs"], pa.string()),
            "text": pa.array(meta["texts"], pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(x.astype(np.float32, copy=False).ravel()), dim),
        })
        tbl = db.create_table("bench", data=rows)
        # Defaults otherwise: sqrt(n) partitions, dim / 16 sub-vectors of 8 bits.
        tbl.create_index("vector", config=IvfPq(distance_type="cosine"))
        tbl.create_index("org", config=Bitmap())
        tbl.wait_for_index([i.name for i in tbl.list_indices()])
        result["ingest_s"] = time.perf_counter() - t
        result["count"] = tbl.count_rows()
        result["index"] = {i.name: i.index_type for i in tbl.list_indices()}

        def query(qi: int, nprobes: int, refine: int) -> list[int]:
            q = (tbl.search(queries[qi], vector_column_name="vector")
                 .distance_type("cosine")
                 .where(f"org = '{meta['query_orgs'][qi]}'", prefilter=True)
                 .minimum_nprobes(nprobes).maximum_nprobes(0)  # 0: more if the filter needs it
                 .limit(k).select(["row", "_distance"]))
            if refine > 1:
                q = q.refine_factor(refine)
            return [int(r) for r in q.to_arrow().column("row").to_pylist()]

        for nprobes, refine in SETTINGS:
            query(0, nprobes, refine)  # warm the setting
            lat, ids = [], []
            for qi in range(len(queries)):
                t = time.perf_counter()
                ids.append(query(qi, nprobes, refine))
                lat.append(time.perf_counter() - t)
            result["settings"][f"nprobes {nprobes}, refine {refine}"] = {
                "latency_s": lat, "ids": ids}
    out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
