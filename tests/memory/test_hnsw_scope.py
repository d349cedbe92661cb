"""Scoped recall through the memory index (HNSW graph + in-memory scope map).

Properties: no answer ever holds an out-of-scope, expired or deleted row, whichever path
(HNSW graph, exact over the in-memory scope) answered; small scopes give exactly the
exact top-k; another process's writes and deletes are seen before answering; the scope
map survives a checkpoint and reload.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.memory.sqlite.index import exact_scope_limit
from tests.support.hnsw import FAST, KEY, run_child, vecs

N = 4_000
BASE = datetime(2030, 1, 1, tzinfo=UTC)


def _entry(i: int) -> MemoryEntry:
    # Two orgs (2,000 rows: the HNSW path at k ≤ 10) × two agents (1,000: HNSW at k ≤ 6),
    # 50 conversations (80 rows: exact path); one row in 7 expires 0–4 hours after BASE.
    return MemoryEntry(
        f"row {i}",
        org_id=f"o{i % 2}",
        agent_id=f"a{i // 2 % 2}",
        conversation_id=f"c{i % 50}",
        expires_at=BASE + timedelta(hours=i % 5) if i % 7 == 0 else None,
    )


class World:
    """One data dir opened twice (index and SQL-exact), a shared clock, deleted ids."""

    def __init__(self, root: Path) -> None:
        self.now = [BASE - timedelta(hours=1)]
        clock = lambda: self.now[0]  # noqa: E731
        self.ann = SqliteMemoryStore.open(root / "d", key=KEY, config=FAST, hnsw=True, clock=clock)
        self.exact = SqliteMemoryStore.open(
            root / "d", key=KEY, config=FAST, hnsw=False, clock=clock
        )
        x = vecs(0, N)
        self.ids = self.ann.append_many([_entry(i) for i in range(N)], vectors=list(x))
        self.deleted: set[str] = set()

    def close(self) -> None:
        self.ann.close()
        self.exact.close()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with tempfile.TemporaryDirectory() as tmp:
        w = World(Path(tmp))
        yield w
        w.close()


scope_st = st.fixed_dictionaries(
    {},
    optional={
        "org_id": st.sampled_from(["o0", "o1", "nope"]),
        "agent_id": st.sampled_from(["a0", "a1"]),
        "conversation_id": st.sampled_from([f"c{i}" for i in range(0, 50, 3)]),
    },
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    scope=scope_st,
    k=st.integers(1, 10),
    hours=st.integers(-1, 6),
    query=st.integers(0, 10**6),
    delete=st.lists(st.integers(0, N - 1), max_size=6),
)
def test_scoped_recall_never_leaks_and_small_scopes_are_exact(
    world: World,
    scope: dict[str, str],
    k: int,
    hours: int,
    query: int,
    delete: list[int],
) -> None:
    for i in delete:
        if world.ann.delete(world.ids[i]):
            world.deleted.add(world.ids[i])
    world.now[0] = BASE + timedelta(hours=hours)
    q = vecs(10**7 + query, 1)[0]
    h = world.ann.hnsw_index
    assert h is not None
    before = dict(h.answers)
    got = world.ann.semantic_recall(q, k, **scope)  # type: ignore[arg-type]
    want = world.exact.semantic_recall(q, k, **scope)  # type: ignore[arg-type]
    for hit in got:
        e = hit.entry
        assert all(getattr(e, f) == v for f, v in scope.items()), "out of scope"
        assert e.expires_at is None or e.expires_at > world.now[0], "expired"
        assert hit.id not in world.deleted, "deleted"
    assert len(got) == len(want)  # never short: k, or the whole scope
    visible = world.exact.count(**scope)  # type: ignore[arg-type]
    if visible <= exact_scope_limit(k, world.ann.count()):
        assert [x.id for x in got] == [x.id for x in want]  # small scope: exactly exact
    assert h.answers["sql"] == before["sql"]  # answered from the index, not SQL


def test_the_hnsw_path_is_used_for_large_scopes(world: World) -> None:
    h = world.ann.hnsw_index
    assert h is not None
    world.now[0] = BASE
    before = h.answers["index"]
    found = 0
    for j in range(30):
        q = vecs(2 * 10**7 + j, 1)[0]
        got = world.ann.semantic_recall(q, 10, org_id="o1")
        want = world.exact.semantic_recall(q, 10, org_id="o1")
        found += len({x.id for x in got} & {x.id for x in want})
    assert h.answers["index"] - before == 30
    assert found / 300 >= 0.95


def test_another_process_inserts_and_deletes_are_seen_in_scope(tmp_path: Path) -> None:
    data = tmp_path / "d"
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True)
    try:
        x = vecs(0, 3_000)
        ids = s.append_many(
            [MemoryEntry(f"r{i}", org_id=f"o{i % 2}") for i in range(3_000)], vectors=list(x)
        )
        q = vecs(5_000, 1)[0]
        assert s.semantic_recall(q, 3, org_id="o1")  # index loaded and in step
        victim = s.semantic_recall(x[7], 1, org_id="o1")[0].id
        assert victim == ids[7]
        p = run_child(
            """
import sys
from agentzero_store import MemoryEntry, SqliteMemoryStore
from tests.support.hnsw import FAST, KEY, vecs
s = SqliteMemoryStore.open(sys.argv[1], key=KEY, config=FAST, hnsw=False)
print(s.append_with_embedding(MemoryEntry("new", org_id="o1"), vecs(5_000, 1)[0]))
assert s.delete(sys.argv[2])
s.close()
""",
            str(data),
            victim,
        )
        assert p.returncode == 0, p.stderr
        new_id = p.stdout.split()[-1]
        assert s.semantic_recall(q, 1, org_id="o1")[0].id == new_id
        assert s.semantic_recall(q, 1, org_id="o0")[0].id != new_id
        assert victim not in {h.id for h in s.semantic_recall(x[7], 10, org_id="o1")}
        assert s.hnsw_index is not None and s.hnsw_index.answers["sql"] == 0
    finally:
        s.close()


def test_scope_map_survives_checkpoint_and_reload(tmp_path: Path) -> None:
    data = tmp_path / "d"
    now = [BASE]
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, hnsw=True, clock=lambda: now[0])
    x = vecs(0, 1_500)
    ids = s.append_many([_entry(i) for i in range(1_500)], vectors=list(x))
    for i in range(0, 1_500, 11):
        s.delete(ids[i])
    queries = vecs(3 * 10**7, 20)
    scopes = [{}, {"org_id": "o1"}, {"conversation_id": "c4"}, {"org_id": "o0", "agent_id": "a1"}]
    before = [[h.id for h in s.semantic_recall(q, 8, **sc)] for q in queries for sc in scopes]
    s.close()
    s = SqliteMemoryStore.open(data, key=KEY, config=FAST, clock=lambda: now[0])
    try:
        h = s.hnsw_index
        assert h is not None and h.open_report is not None and h.open_report.loaded
        after = [[h.id for h in s.semantic_recall(q, 8, **sc)] for q in queries for sc in scopes]
        assert after == before
        assert h.answers["sql"] == 0
        assert np.isclose(s.semantic_recall(x[3], 1)[0].score, 1.0, atol=1e-5)
    finally:
        s.close()
