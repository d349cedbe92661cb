"""What the acknowledgement ledger costs (issue 13): a single durable memory append and a
single-document ingest, with and without the ledger's acknowledgement.

Both arms run on the same open store, interleaved (A, B, B, A, ...) so disk and load
drift hit them alike; the "without" arm detaches the store's ledger guard for the call,
which is exactly the work the ledger adds (one pwrite of a 2 KiB sealed slot after
the source's own fsync or commit, and an fdatasync every 100 updates). Goals from the
issue: ≤ 1.25× on the append, ≤ 1.10× on the ingest.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _harness import Figure, median, pct

from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from rag import DocumentStore

GROUP = "ledger"
CONFIG = StoreConfig(kdf=FAST_KDF_FOR_TESTS)


def _paired(n: int, run: Callable[[int, bool], float]) -> tuple[list[float], list[float]]:
    """``run(i, with_ledger)`` n times per arm, the order alternating every trial."""
    on: list[float] = []
    off: list[float] = []
    for i in range(n):
        for arm in ((True, False) if i % 2 else (False, True)):
            (on if arm else off).append(run(i, arm))
    return on, off


def memory_append(tmp: Path, n: int) -> Figure:
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(2 * n + 100, 384)).astype(np.float32)
    with SqliteMemoryStore.open(tmp / "mem", passphrase="bench", config=CONFIG) as s:
        s.append_many([MemoryEntry(content=f"warm {i}") for i in range(100)], vecs[:100])
        guard = s._acks  # the ledger guard a real open attaches

        def one(i: int, with_ledger: bool) -> float:
            s._acks = guard if with_ledger else None
            e = MemoryEntry(content=f"memory {i} {secrets.token_hex(8)}", org_id="o")
            t = time.perf_counter()
            s.append_with_embedding(e, vecs[100 + 2 * i + with_ledger])
            return time.perf_counter() - t

        on, off = _paired(n, one)
        s._acks = guard
    return _figure("ledger_memory_append", "single durable memory append, ledger on vs off (p50)",
                   on, off, 1.25)


def doc_ingest(tmp: Path, n: int) -> Figure:
    with DocumentStore.open(tmp / "docs", passphrase="bench", config=CONFIG) as d:
        for i in range(50):
            d.ingest(f"warm-{i}", f"warm up document {i} with a few words")
        guard = d.log._acks

        def one(i: int, with_ledger: bool) -> float:
            d.log._acks = guard if with_ledger else None
            text = f"document {i} about the boiler pressure and the valve {secrets.token_hex(8)}"
            t = time.perf_counter()
            d.ingest(f"doc-{i}-{with_ledger}", text)
            return time.perf_counter() - t

        on, off = _paired(n, one)
        d.log._acks = guard
    return _figure("ledger_doc_ingest", "single-document ingest, ledger on vs off (p50)",
                   on, off, 1.10)


def _figure(name: str, label: str, on: list[float], off: list[float], goal: float) -> Figure:
    o, a = median(on) * 1e3, median(off) * 1e3
    return Figure(GROUP, name, label, o, "ms", a, "the same call with the ledger detached",
                  o / a, f"≤ {goal:.2f}×", o / a <= goal, len(on),
                  note=f"p95 {pct(on, 95) * 1e3:.2f} vs {pct(off, 95) * 1e3:.2f} ms")


def run(tmp: Path, *, quick: bool) -> list[Figure]:
    """Both figures (60 pairs each in a quick run, 400 in a full one)."""
    n = 60 if quick else 600
    return [memory_append(tmp, n), doc_ingest(tmp, n)]
