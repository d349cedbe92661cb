"""The benchmark harness: every figure beside its raw-library anchor, in one run.

    .venv/bin/python benchmarks/run.py              # full sizes (100k), 1-1.5 h on 2 busy cores
    .venv/bin/python benchmarks/run.py --quick      # small sizes, ~2–3 min (what CI runs)
    .venv/bin/python benchmarks/run.py --only memory,bm25 --json out.json
    .venv/bin/python benchmarks/run.py --setup-peers   # Chroma, LanceDB in benchmarks/.peers-venv

Groups (``--only``): memory (append, rebuild, open, recall), rss, chroma, lancedb, bm25,
blinded, scifact, ledger (what the acknowledgement ledger adds to single writes), locomo
(LoCoMo dev evidence recall@10 per recall mode; ``--quick``: one conversation), agentmem
(AgentMemory beside the memory store: add_turn(s), consolidate, recall), coldstart (a
cold CLI semantic query with the ONNX embedder vs sentence-transformers; bulk embedding
throughput of both; also ``benchmarks/_coldstart.py`` alone), pg (the memory store on
PostgreSQL + pgvector beside the SQLCipher store: ingest, scoped semantic and hybrid
recall, 4 writer processes; skipped, saying why, when no server can start), pgagent
(AgentMemory on PostgreSQL beside a data dir: add_turns, recall, consolidate, 4 agents
writing at once; skipped like pg), recurrence (promotion's grouping of recurring episodes by
meaning beside today's word-set rule alone, 10k and 100k memories; ``benchmarks/_recurrence.py``),
frameworks (the LangGraph adapters beside LangGraph's
plaintext SqliteSaver and SqliteStore: checkpoint put and get_tuple, store put and a
text-query search over 10k items; ``benchmarks/_frameworks_langgraph.py``), sessions
(the Agents SDK session, AgentZeroSession, beside the SDK's plaintext SQLiteSession:
add_items, get_items; ``benchmarks/_frameworks_sessions.py``).
Prints a markdown table (figure, ours, anchor, ratio, goal, pass) and writes JSON
(default ``bench-out/results.json``). Speed figures are ratios against an anchor measured
in the same run, ours and anchor interleaved, median over trials: absolute numbers on a
shared machine drift. The peers (Chroma, LanceDB) run in their own venv, never a
dependency of the store; the SciFact and LoCoMo data are read in place from ``--scifact``
and ``--locomo`` (defaults under ``../shared/data/``). Each is skipped, saying so, when
absent.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

from _harness import Figure, Skipped, table  # noqa: E402

GROUPS = ("memory", "rss", "chroma", "lancedb", "bm25", "blinded", "scifact", "ledger",
          "locomo", "agentmem", "tiers", "recurrence", "coldstart", "pg", "pgagent", "frameworks",
          "sessions")
NEEDS_MEMORY = {"memory", "rss", "chroma", "lancedb"}  # groups that reuse the filled memory store


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, ~2-3 minutes (the CI smoke run)")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated groups: {', '.join(GROUPS)}")
    ap.add_argument("--json", type=Path, default=REPO / "bench-out" / "results.json",
                    help="where to write the JSON results")
    ap.add_argument("--scifact", type=Path, default=REPO.parent / "shared" / "data" / "scifact",
                    help="BEIR SciFact folder (read in place, never copied)")
    ap.add_argument("--locomo", type=Path,
                    default=REPO.parent / "shared" / "data" / "locomo-dev",
                    help="LoCoMo dev folder holding locomo-dev.json (read in place)")
    ap.add_argument("--n", type=int, default=None,
                    help="override the number of memories / BM25 docs (e.g. 20000 for a "
                         "medium run)")
    ap.add_argument("--tmp", type=Path, default=None, help="parent of the scratch directory")
    ap.add_argument("--setup-peers", action="store_true",
                    help="create benchmarks/.peers-venv with Chroma and LanceDB, then exit")
    args = ap.parse_args(argv)
    only = GROUPS if args.only is None else tuple(g.strip() for g in args.only.split(","))
    unknown = sorted(set(only) - set(GROUPS))
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
    args.groups = only
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the selected groups; print the table; write the JSON. Exit 0 unless a crash."""
    args = _args(argv)
    logging.basicConfig(level=logging.WARNING)
    import _peers

    if args.setup_peers:
        return _peers.setup()
    started = time.perf_counter()
    figures: list[Figure] = []
    skipped: list[Skipped] = []

    def progress(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {msg}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="agentzero-bench-", dir=args.tmp) as tmp:
        if NEEDS_MEMORY & set(args.groups):
            import _memory

            progress("memory: filling the store")
            sizes = _memory.QUICK if args.quick else _memory.FULL
            if args.n:
                sizes = dataclasses.replace(sizes, n=args.n)
            ctx = _memory.make_context(Path(tmp), sizes)
            try:
                figures += _memory.run(ctx, progress)
                if "rss" in args.groups:
                    import _rss

                    progress("rss: peak RSS of ours vs raw hnswlib, in child processes")
                    ctx.close()
                    figures += _rss.run(ctx)
                for peer in _peers.PEERS:
                    if peer.group not in args.groups:
                        continue
                    progress(f"{peer.group}: same vectors in {peer.title} (its own venv)")
                    got = _peers.run(peer, ctx, progress)
                    if isinstance(got, Skipped):
                        skipped.append(got)
                    else:
                        figures += got
            finally:
                ctx.close()
        if "bm25" in args.groups:
            import _rag

            progress("bm25: BM25-only ingest vs raw tantivy-py")
            figures += _rag.bm25_ingest(Path(tmp), quick=args.quick, n=args.n)
        if "blinded" in args.groups:
            import _rag

            progress(f"blinded: BM25 terms blinded vs plain on SciFact ({args.scifact})")
            got_bl = _rag.blinded(Path(tmp), args.scifact, quick=args.quick)
            if isinstance(got_bl, Skipped):
                skipped.append(got_bl)
            else:
                figures += got_bl
        if "ledger" in args.groups:
            import _ledger

            progress("ledger: single append and ingest with the acknowledgement ledger on/off")
            figures += _ledger.run(Path(tmp), quick=args.quick)
        if "agentmem" in args.groups:
            import _agentmem

            progress("agentmem: add_turn(s), consolidate and recall beside the memory store")
            figures += _agentmem.run(Path(tmp), quick=args.quick, n=args.n, progress=progress)
        if "recurrence" in args.groups:
            import _recurrence

            progress("recurrence: promotion's grouping by meaning vs by words only")
            figures += _recurrence.run(Path(tmp), quick=args.quick, n=args.n, progress=progress)
        if "tiers" in args.groups:
            import _tiers

            progress("tiers: context(), the hot tier and the namespace check")
            figures += _tiers.run(Path(tmp), quick=args.quick, n=args.n, progress=progress)
        if "coldstart" in args.groups:
            import _coldstart

            progress("coldstart: cold CLI queries (ONNX vs torch) and bulk embedding")
            got_cs, skipped_cs = _coldstart.run(Path(tmp), args.scifact, quick=args.quick,
                                                progress=progress)
            figures += got_cs
            skipped += skipped_cs
        if "pg" in args.groups:
            import _pg

            progress("pg: PostgreSQL + pgvector beside the SQLCipher store (a durable server)")
            got_pg, skipped_pg = _pg.run(Path(tmp), quick=args.quick, n=args.n,
                                         progress=progress)
            figures += got_pg
            skipped += skipped_pg
        if "pgagent" in args.groups:
            import _pg_agentmem

            progress("pgagent: the agent memory on PostgreSQL beside a data dir")
            got_pa, skipped_pa = _pg_agentmem.run(Path(tmp), quick=args.quick, n=args.n,
                                                  progress=progress)
            figures += got_pa
            skipped += skipped_pa
        if "frameworks" in args.groups:
            import _frameworks_langgraph

            progress("frameworks: the LangGraph adapters beside SqliteSaver and SqliteStore")
            figures += _frameworks_langgraph.run(Path(tmp), quick=args.quick, progress=progress)
        if "sessions" in args.groups:
            import _frameworks_sessions

            progress("sessions: AgentZeroSession beside the Agents SDK's SQLiteSession")
            figures += _frameworks_sessions.run(Path(tmp), quick=args.quick, progress=progress)
        if "scifact" in args.groups:
            import _rag

            progress(f"scifact: ingest + nDCG@10 from {args.scifact}")
            got_sf = _rag.scifact(Path(tmp), args.scifact, quick=args.quick, progress=progress)
            if isinstance(got_sf, Skipped):
                skipped.append(got_sf)
            else:
                figures += got_sf
        if "locomo" in args.groups:
            import locomo

            progress(f"locomo: evidence recall@10 per recall mode from {args.locomo}")
            got_lo = locomo.figures(Path(tmp), args.locomo, quick=args.quick,
                                    progress=progress)
            if isinstance(got_lo, Skipped):
                skipped.append(got_lo)
            else:
                figures += got_lo
    elapsed = time.perf_counter() - started
    kind = "Quick run (small sizes: a CI smoke test)" if args.quick else "Full run"
    print(f"\n{kind}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {elapsed:.0f} s\n")
    print(table(figures, skipped))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "seconds": round(elapsed, 1),
        "figures": [f.to_dict() for f in figures],
        "skipped": [s.__dict__ for s in skipped],
    }, indent=2) + "\n", encoding="utf-8")
    print(f"\nJSON: {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
