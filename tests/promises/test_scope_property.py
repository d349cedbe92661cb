"""Property: no recall path ever returns a row outside the requested org/agent/conversation."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import MemoryEntry, SqliteMemoryStore

from ..conftest import FAST

ORGS, AGENTS, CONVS = ["o1", "o2", "o3"], ["a1", "a2"], ["c1", "c2", "c3"]
WORDS = ["alpha", "beta", "gamma", "delta", "omega"]

entry_st = st.tuples(
    st.sampled_from(ORGS),
    st.sampled_from(AGENTS),
    st.sampled_from(CONVS),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
)
scope_st = st.tuples(
    st.none() | st.sampled_from(ORGS),
    st.none() | st.sampled_from(AGENTS),
    st.none() | st.sampled_from(CONVS),
)


def _in_scope(e: MemoryEntry, scope: tuple[str | None, str | None, str | None]) -> bool:
    o, a, c = scope
    return (
        (o is None or e.org_id == o)
        and (a is None or e.agent_id == a)
        and (c is None or e.conversation_id == c)
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.lists(entry_st, min_size=1, max_size=30),
    scopes=st.lists(scope_st, min_size=1, max_size=5),
    query_words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_recall_never_crosses_scope(entries, scopes, query_words, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        s = SqliteMemoryStore.open(Path(tmp) / "d", passphrase="p", config=FAST)
        vecs = rng.normal(size=(len(entries), 384)).astype(np.float32)
        ids = s.append_many(
            [
                MemoryEntry(content=" ".join(w), org_id=o, agent_id=a, conversation_id=c)
                for o, a, c, w in entries
            ],
            vecs,
        )
        by_id = {i: s.get(i) for i in ids}
        q = rng.normal(size=384).astype(np.float32)
        text = " ".join(query_words)
        for scope in scopes:
            kw = dict(org_id=scope[0], agent_id=scope[1], conversation_id=scope[2])
            visible = {i for i, e in by_id.items() if e is not None and _in_scope(e, scope)}
            sem = s.semantic_recall(q, 50, **kw)
            assert {h.id for h in sem} == visible  # k exceeds the scope: all of it, nothing more
            for hits in (
                s.keyword_recall(text, 50, **kw),
                s.hybrid_recall(text, q, 50, **kw),
                [type("H", (), {"id": e.id}) for e in s.recent(50, **kw)],
            ):
                assert {h.id for h in hits} <= visible
        s.close()
