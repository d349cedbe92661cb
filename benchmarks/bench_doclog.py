"""Document log throughput: durable single appends, group commit, replay and compaction.

Run by hand: ``.venv/bin/python benchmarks/bench_doclog.py [--dir DIR]``. Records carry
1 KiB of text. Every append is fsynced, so the figures depend on the disk under DIR
(default: a temp dir).
"""

from __future__ import annotations

import argparse
import os
import secrets
import tempfile
import time
from pathlib import Path

from agentzero_store.storage.keys import StoreKeys
from rag.log import DocumentLog
from rag.records import Upsert


def _text(i: int) -> str:
    return (f"document {i} " + secrets.token_hex(512))[:1024]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--singles", type=int, default=300)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    keys = StoreKeys(store_id=secrets.token_hex(16), master=os.urandom(32))
    rows: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = Path(d) / "rag" / "index.jsonl"
        with DocumentLog.open(path, keys) as log:
            t = time.perf_counter()
            for i in range(args.singles):
                log.upsert(f"s{i}", _text(i))
            rows.append(("upsert (1 write + 1 fsync each)", args.singles, time.perf_counter() - t))
            for batch in (10, 100, 1000):
                n = max(batch, args.records // 4)
                ops = [Upsert(f"b{batch}-{i}", _text(i)) for i in range(n)]
                t = time.perf_counter()
                for k in range(0, n, batch):
                    log.append_many(ops[k : k + batch])
                rows.append((f"append_many, batches of {batch}", n, time.perf_counter() - t))
            total = log.seq
        t = time.perf_counter()
        with DocumentLog.open(path, keys) as log:
            rows.append(("open + replay (verify every record)", total, time.perf_counter() - t))
            t = time.perf_counter()
            n = sum(1 for _ in log.changes_since(0))
            rows.append(("changes_since(0) (read + decrypt)", n, time.perf_counter() - t))
            t = time.perf_counter()
            log.compact()
            rows.append(("compact (rewrite live records)", log.seq, time.perf_counter() - t))
        size = path.stat().st_size
    print(f"{'operation':40} {'records':>8} {'seconds':>9} {'records/s':>10}")
    for name, count, secs in rows:
        print(f"{name:40} {count:8d} {secs:9.3f} {count / secs:10.0f}")
    print(f"log size after compaction: {size / total:.0f} bytes per 1 KiB record")


if __name__ == "__main__":
    main()
