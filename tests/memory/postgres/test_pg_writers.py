"""Many writer processes on one PostgreSQL memory store (a real server, no mocks).

Four processes append, re-send (their own batches after a "lost" acknowledgement, and
memories every process sends identically), race for the same ids with different
memories, delete by id and forget scopes, all at once. Afterwards: no id twice, every
acknowledged write that was not deleted is there with its text, every delete stuck,
each contested id went to exactly one writer, and no term outlives its memory.
"""

from __future__ import annotations

import multiprocessing as mp
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg

from agentzero_store import DuplicateIdError, MemoryEntry, PgMemoryStore

from ...conftest import FAST, PASSPHRASE

WRITERS, ROUNDS, BATCH, DIM = 4, 12, 20, 16
T0 = datetime(2026, 6, 1, tzinfo=UTC)


def shared(k: int) -> MemoryEntry:
    """A memory every writer sends, identically (a fleet re-sending one event)."""
    return MemoryEntry(f"shared event {k} quokka", org_id="fleet", id=f"shared-{k}", created_at=T0)


def _vec(rng: np.random.Generator) -> Any:
    return rng.normal(size=DIM).astype(np.float32)


def writer(url: str, w: int, start: Any, out: Any) -> None:
    """One writer process: returns what it saw acknowledged and deleted."""
    rng = np.random.default_rng(w)
    acked: dict[str, str] = {}
    deleted: list[str] = []
    won: list[str] = []
    lost: list[str] = []
    start.wait()
    with PgMemoryStore.open(url, passphrase=PASSPHRASE, config=FAST, create=False) as s:
        for r in range(ROUNDS):
            batch = [
                MemoryEntry(
                    f"writer {w} round {r} item {i} wombat{w}",
                    org_id=f"org{w % 2}",
                    agent_id=f"agent{w}",
                    conversation_id=f"tmp-{w}" if i % 5 == 0 else "keep",
                    created_at=T0 + timedelta(seconds=r),
                    id=f"w{w}-r{r}-i{i}",
                )
                for i in range(BATCH)
            ]
            vectors = [_vec(rng) for _ in batch]
            ids = s.append_many(batch, vectors=vectors)
            assert ids == [e.id for e in batch]
            acked.update({e.id: e.content for e in batch if e.id})
            # The acknowledgement "was lost": the same batch again is a no-op.
            assert s.append_many(batch, vectors=vectors) == ids
            # Every writer sends the same shared memories, in its own order.
            group = [shared(k) for k in range(r * 3, r * 3 + 3)]
            s.append_many(group[::-1] if w % 2 else group)
            # Contested ids: every writer claims clash-r with its own text.
            try:
                s.append(MemoryEntry(f"claimed by {w}", org_id="fleet", id=f"clash-{r}"))
                won.append(f"clash-{r}")
            except DuplicateIdError:
                lost.append(f"clash-{r}")
            # Deletes: one id of this round, and (every 4th round) the tmp scope.
            victim = f"w{w}-r{r}-i3"
            assert s.delete(victim)
            deleted.append(victim)
            if r % 4 == 3:
                s.forget(agent_id=f"agent{w}", conversation_id=f"tmp-{w}")
                deleted += [
                    k
                    for k in acked
                    if k.startswith(f"w{w}-") and k.endswith(("i0", "i5", "i10", "i15"))
                ]
    out.put({"w": w, "acked": acked, "deleted": deleted, "won": won, "lost": lost})


def test_concurrent_writer_processes_keep_the_invariants(pg_url: str) -> None:
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as s:
        s.append_with_embedding(MemoryEntry("first", id="seed"), np.ones(DIM))  # fixes dim
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(pg_url, w, start, out)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    acked: dict[str, str] = {}
    deleted: set[str] = set()
    winners: dict[str, int] = {}
    for r in results:
        acked.update(r["acked"])
        deleted.update(r["deleted"])
        for cid in r["won"]:
            assert cid not in winners, f"{cid} acknowledged to two writers"
            winners[cid] = r["w"]
        assert len(r["won"]) + len(r["lost"]) == ROUNDS
    assert sorted(winners) == sorted(f"clash-{r}" for r in range(ROUNDS))
    with psycopg.connect(pg_url) as c:
        total, distinct = c.execute("SELECT count(*), count(DISTINCT id) FROM az_memory").fetchone()  # type: ignore[misc]
        orphans = c.execute(
            "SELECT count(*) FROM az_terms t LEFT JOIN az_memory m ON m.label = t.label"
            " WHERE m.label IS NULL"
        ).fetchone()
    assert total == distinct
    assert orphans == (0,)
    live = set(acked) - deleted
    expected = len(live) + 1 + ROUNDS * 3 + ROUNDS  # + seed, shared, clash
    assert total == expected
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False) as s:
        for eid in sorted(live):
            got = s.get(eid)
            assert got is not None and got.content == acked[eid]
        for eid in sorted(deleted):
            assert s.get(eid) is None
        for w in range(WRITERS):
            assert s.count(agent_id=f"agent{w}", conversation_id=f"tmp-{w}") == 0
        for k in range(ROUNDS * 3):
            got = s.get(f"shared-{k}")
            assert got is not None and got.content == shared(k).content
        for cid, w in winners.items():
            got = s.get(cid)
            assert got is not None and got.content == f"claimed by {w}"
        # Keyword recall sees each writer's live rows and none of its deleted ones.
        for w in range(WRITERS):
            hits = s.keyword_recall(f"wombat{w}", 1_000, agent_id=f"agent{w}")
            assert {h.id for h in hits} == {e for e in live if e.startswith(f"w{w}-")}
