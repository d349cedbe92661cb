"""LangGraph's adapters beside LangGraph's own plaintext SQLite classes (issue 28):
``AgentZeroSaver`` vs ``SqliteSaver`` (checkpoint ``put``, ``get_tuple``) and
``AgentZeroStore`` vs ``SqliteStore`` (``put``; ``search`` with a text query over 10k
items), same machine, same run, one call of each side after the other (the order
alternating), p50 over the calls. Goal: within 2x of the plaintext reference, despite
encryption (SQLCipher) and durability (every commit fsynced, acknowledged in the
ledger, under the data dir's writer lock).

Both sides embed with the same deterministic hash embedder (64 dimensions), so the
search figure compares the stores, not a model. The reference classes are what users
swap out: ``SqliteSaver.from_conn_string`` / ``SqliteStore.from_conn_string`` on a file,
as LangGraph ships them (the saver in WAL mode, the store in SQLite's default journal).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _harness import Figure, median

GROUP = "frameworks"
DIMS = 64
WORDS = [
    "tea", "coffee", "lemon", "sugar", "cake", "bread", "river", "mountain", "garden",
    "window", "music", "jazz", "piano", "violin", "dog", "cat", "horse", "bird", "python",
    "rust", "golang", "database", "index", "vector", "memory", "agent", "travel", "paris",
    "tokyo", "berlin", "summer", "winter", "autumn", "spring", "doctor", "nurse",
    "hospital", "train",
]


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Hashed words, normalised: cheap and the same for both sides."""
    out = []
    for text in texts:
        vec = [0.0] * DIMS
        for word in text.split():
            vec[hashlib.blake2b(word.encode(), digest_size=2).digest()[0] % DIMS] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out


def _text(i: int) -> str:
    return " ".join(WORDS[(i * k + k) % len(WORDS)] for k in (1, 3, 7, 11, 13, 17))


def _checkpoint(step: int) -> dict[str, Any]:
    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    messages = [{"role": "user" if j % 2 else "ai", "content": _text(j) * 3} for j in range(20)]
    cp["channel_values"] = {"messages": messages, "step": step}
    cp["channel_versions"] = {"messages": f"{step:032}.0", "step": f"{step:032}.0"}
    return dict(cp)


def _alternate(
    n: int, ours: Callable[[int], float], ref: Callable[[int], float]
) -> tuple[list[float], list[float]]:
    a: list[float] = []
    b: list[float] = []
    for i in range(n):
        if i % 2:
            a.append(ours(i))
            b.append(ref(i))
        else:
            b.append(ref(i))
            a.append(ours(i))
    return a, b


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _figure(
    name: str, label: str, ref_label: str, ours: list[float], ref: list[float], note: str = ""
) -> Figure:
    o, a = median(ours) * 1e3, median(ref) * 1e3
    ratio = o / a
    return Figure(GROUP, name, label, o, "ms", a, ref_label, ratio, "≤ 2×", ratio <= 2.0,
                  trials=len(ours), note=note)


def saver_figures(tmp: Path, n: int) -> list[Figure]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agentzero_store import StoreConfig
    from agentzero_store.base.config import FAST_KDF_FOR_TESTS
    from agentzero_store.integrations.langgraph import AgentZeroSaver

    ours_saver = AgentZeroSaver(tmp / "saver-ours", passphrase="bench",
                                config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
    with SqliteSaver.from_conn_string(str(tmp / "saver-ref.sqlite")) as ref_saver:
        configs: dict[str, dict[str, Any]] = {
            "ours": {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
            "ref": {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
        }

        def put(which: str, saver: Any) -> Callable[[int], float]:
            def one(i: int) -> float:
                cp = _checkpoint(i + 1)
                t = time.perf_counter()
                cfg = saver.put(configs[which], cp, {"source": "loop", "step": i + 1}, {})
                took = time.perf_counter() - t
                saver.put_writes(cfg, [("messages", {"content": _text(i)})], f"task-{i}")
                configs[which] = cfg
                return took
            return one

        put_ours, put_ref = _alternate(n, put("ours", ours_saver), put("ref", ref_saver))
        latest = {"configurable": {"thread_id": "t"}}
        get_ours, get_ref = _alternate(
            n,
            lambda i: _timed(lambda: ours_saver.get_tuple(latest)),
            lambda i: _timed(lambda: ref_saver.get_tuple(latest)),
        )
    ours_saver.close()
    note = "a checkpoint of 20 messages (~6 KB) plus one pending write per step"
    return [
        _figure("lg_checkpoint_put", "LangGraph checkpoint put (p50)", "SqliteSaver",
                put_ours, put_ref, note),
        _figure("lg_checkpoint_get_tuple", f"LangGraph checkpoint get_tuple, latest of {n} (p50)",
                "SqliteSaver", get_ours, get_ref),
    ]


def _plain_connection(path: Path) -> Any:
    """A plain SQLite connection that can load sqlite-vec, as ``from_conn_string`` opens
    it. The stdlib ``sqlite3`` here is built without extension loading, so this is the
    SQLite bundled with ``sqlcipher3`` with no key: a plaintext file, the same engine
    version as ours."""
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    import sqlcipher3

    return sqlcipher3.connect(str(path), check_same_thread=False, isolation_level=None)


def store_figures(tmp: Path, n_items: int, n: int) -> list[Figure]:
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    from agentzero_store import StoreConfig
    from agentzero_store.base.config import FAST_KDF_FOR_TESTS
    from agentzero_store.integrations.langgraph import AgentZeroStore

    index: Any = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    ours = AgentZeroStore(tmp / "store-ours", passphrase="bench", index=index,
                          config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
    ref = SqliteStore(_plain_connection(tmp / "store-ref.sqlite"), index=index)
    try:
        ref.setup()
        for start in range(0, n_items, 500):
            ops = [
                PutOp(("users", f"u{i % 10}", "memories"), f"m{i}", {"text": _text(i), "i": i})
                for i in range(start, min(start + 500, n_items))
            ]
            ours.batch(ops)
            ref.batch(ops)

        def put(store: Any) -> Callable[[int], float]:
            return lambda i: _timed(
                lambda: store.put(("users", "new", "memories"), f"n{i}", {"text": _text(i), "i": i})
            )

        put_ours, put_ref = _alternate(n, put(ours), put(ref))

        def search(store: Any) -> Callable[[int], float]:
            return lambda i: _timed(
                lambda: store.search(("users",), query=_text(i * 7 + 3), limit=10)
            )

        search_ours, search_ref = _alternate(n, search(ours), search(ref))
    finally:
        ref.conn.close()
    ours.close()
    return [
        _figure("lg_store_put", "LangGraph store put, one item with its embedding (p50)",
                "SqliteStore", put_ours, put_ref),
        _figure("lg_store_search",
                f"LangGraph store search, text query over {n_items:,} items (p50)",
                "SqliteStore + sqlite-vec", search_ours, search_ref,
                "exact cosine over every vector on both sides"),
    ]


def run(tmp: Path, *, quick: bool, progress: Callable[[str], None]) -> list[Figure]:
    """The four figures; ``quick``: a few hundred items, a few calls."""
    n = 20 if quick else 200
    n_items = 500 if quick else 10_000
    work = tmp / "frameworks-langgraph"
    work.mkdir(parents=True, exist_ok=True)
    progress(f"frameworks: LangGraph checkpointer, {n} puts and get_tuples each side")
    figures = saver_figures(work, n)
    progress(f"frameworks: LangGraph store, {n_items:,} items, {n} puts and searches each side")
    return figures + store_figures(work, n_items, n)
