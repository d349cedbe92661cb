"""What the tiers cost (issue 17), over the agent-memory corpus of ``_agentmem`` (100k
memories; quick: 10k), query embedding excluded:

- ``context()`` p50/p95 of a conversation with a query (pinned, core facts, hot turns,
  warm summary, recalled memories; 2,000 tokens, estimated: no model is loaded);
- the hot tier: a read of a conversation's hot turns (``mem.hot``: one change-feed check
  and a copy of the ring buffer) and the append a write makes to it, in µs;
- the namespace check every call of a namespace handle makes (one indexed query), in µs,
  beside a whole recall on that handle.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

GROUP = "tiers"


def _p(ts: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(ts), q))


def run(
    tmp: Path, *, quick: bool, progress: Callable[[str], None], n: int | None = None
) -> list[Any]:
    """Every figure of the group."""
    import _agentmem as am
    from _data import clustered
    from _harness import Figure

    from agentzero_store import AgentMemory, Turn
    from agentzero_store.agentmem.context import HotTier

    sizes = am.QUICK if quick else am.FULL
    corpus = am.make_corpus(n or sizes.corpus)
    progress(f"tiers: filling {corpus.n:,} memories")
    filled = am.fill(tmp, corpus, progress)
    rng = np.random.default_rng(31)
    words = [w for t in am._TASKS + am._THINGS for w in t.split() if len(w) > 3]
    queries = [" ".join(rng.choice(words, size=3)) for _ in range(sizes.queries)]
    embedder = am.PrecomputedQueryVectors(corpus.vectors.shape[1])
    embedder.vectors = dict(zip(queries, clustered(len(queries), seed=32), strict=False))
    out: list[Any] = []
    with AgentMemory.open(
        filled.data,
        passphrase="bench",
        config=am._config(),
        org_id=am.ORG,
        agent_id=am.AGENT,
        clock=am.FixedClock(corpus.now),
        embedder=embedder,
    ) as mem:
        conv = "session-00003"
        for mid in filled.ids[3_000:3_003]:
            mem.pin(mid)
        mem.summarize(conv)
        ctx_t: list[float] = []
        tokens = 0
        for q in queries:
            t = time.perf_counter()
            pack = mem.context(conv, query=q, max_tokens=2000)
            ctx_t.append(time.perf_counter() - t)
            tokens += pack.tokens
        out.append(
            Figure(
                GROUP,
                "tiers_context",
                f"context(conversation, query, 2,000 tokens) over {corpus.n:,} memories, p50",
                _p(ctx_t, 50) * 1e3,
                "ms",
                note=f"p95 {_p(ctx_t, 95) * 1e3:.2f} ms; {tokens / len(queries):.0f} tokens "
                "a pack (estimated); 3 pins, a warm summary, 12 hot turns, 10 recalled",
                trials=len(ctx_t),
            )
        )
        mem.hot(conv)
        read_t = []
        for _ in range(2_000):
            t = time.perf_counter()
            mem.hot(conv)
            read_t.append(time.perf_counter() - t)
        ring = HotTier(12)
        ring.valid_at(0)
        turns = mem.hot(conv)
        ring.fill(conv, turns, None)
        append_t = []
        last = turns[-1]

        def tail(n: int) -> tuple[list[Any], None]:
            return [last], None

        for i in range(2_000):
            t = time.perf_counter()
            ring.appended(conv, i, i + 1, last.created_at, tail)
            append_t.append(time.perf_counter() - t)
        out.append(
            Figure(
                GROUP,
                "tiers_hot_read",
                "hot tier: read a conversation's 12 hot turns (feed check + copy), p50",
                _p(read_t, 50) * 1e6,
                "µs",
                note=f"p95 {_p(read_t, 95) * 1e6:.1f} µs; the append a write makes to the ring: "
                f"p50 {_p(append_t, 50) * 1e6:.2f} µs, p95 {_p(append_t, 95) * 1e6:.2f} µs "
                "(the durable write itself is add_turn's, in the agentmem group)",
                trials=len(read_t),
            )
        )
        team = mem.namespace("bench-team")
        team.grant("bench-b")
        with AgentMemory.open(
            filled.data,
            passphrase="bench",
            config=am._config(),
            org_id=am.ORG,
            agent_id="bench-b",
            namespace="bench-team",
            clock=am.FixedClock(corpus.now),
            embedder=embedder,
        ) as shared:
            shared.add_turns("c", [Turn("user", q) for q in queries[:200]])
            guard_t = []
            for _ in range(2_000):
                t = time.perf_counter()
                shared.gate.check()
                guard_t.append(time.perf_counter() - t)
            recall_t = []
            for q in queries:
                t = time.perf_counter()
                shared.recall(q, 10, mode="keyword")
                recall_t.append(time.perf_counter() - t)
        out.append(
            Figure(
                GROUP,
                "tiers_namespace_check",
                "namespace grant check, made by every call of a namespace handle, p50",
                _p(guard_t, 50) * 1e6,
                "µs",
                note=f"p95 {_p(guard_t, 95) * 1e6:.1f} µs; a whole keyword recall on that "
                f"handle: p50 {_p(recall_t, 50) * 1e3:.2f} ms",
                trials=len(guard_t),
            )
        )
    shutil.rmtree(filled.data)
    return out
