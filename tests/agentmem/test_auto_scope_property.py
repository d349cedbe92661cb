"""Promise 6 for multi-signal recall, by property: whatever the sequence of turns, facts
that supersede, links, procedure outcomes, feedback, expiries, store-level deletes,
forgets, erases and archives across several orgs and agents sharing ONE data dir, no
signal of any mode — semantic, keyword, temporal spreading over conversations whose ids
every scope also uses, entities every scope also names, activation from the access log,
the party a question asks about —
brings in another scope's memory, an expired, deleted, forgotten, erased or superseded
one, nor an archived one unless asked (hypothesis, the real embedder and SQLCipher)."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import AgentMemory, LocalEmbedder, Turn
from agentzero_store.agentmem.recall.search import SIGNALS
from agentzero_store.base.modes import MODES

from .conftest import Clock, open_memory

SCOPES = [("o1", "a1"), ("o1", "a2"), ("o2", "a1")]
CONVERSATIONS = ["c1", "c2"]  # the same ids in every scope: spreading must not cross
WORDS = ["apple", "river"]
SPEAKERS = ["Ana", "Bo"]  # the same entities in every scope
# Names an entity and a word some memories are about and others not (the entity signal),
# asks "when did" (the intent signal: episodic), names a time (the "when" signal: the
# clock's ticks spread created_at) and asks about the user's turns (the role signal: the
# turns are both parties').
QUERY = "When did Ana tell me about the apple yesterday?"
# The same about the assistant's replies (the role signal's other party).
QUERY_YOU = "When did you tell Ana about the apple yesterday?"
# Every auto signal on, activation too (its default weight is 0).
ALL_ON = {name: 1.0 for name in SIGNALS}
ONLY = [{name: (1.0 if name == only else 0.0) for name in SIGNALS} for only in SIGNALS]
ROLE_ONLY = ONLY[SIGNALS.index("role")]

S = st.sampled_from(range(len(SCOPES)))
W = st.sampled_from(WORDS)
op = st.one_of(
    st.tuples(st.just("turns"), S, W, st.sampled_from(range(len(CONVERSATIONS)))),
    st.tuples(st.just("turns"), S, W, st.sampled_from(range(len(CONVERSATIONS)))),
    st.tuples(st.just("fact"), S, W, st.integers(0, 4)),
    st.tuples(st.just("outcome"), S, W, st.booleans()),
    st.tuples(st.just("ttl"), S, W, st.just(0)),
    st.tuples(st.just("link"), S, W, st.integers(0, 10_000)),
    st.tuples(st.just("feedback"), S, W, st.integers(0, 10_000)),
    st.tuples(st.just("delete"), S, W, st.integers(0, 10_000)),
    st.tuples(st.just("forget"), S, W, st.integers(0, 10_000)),
    st.tuples(st.just("forget"), S, W, st.integers(0, 10_000)),
    st.tuples(st.just("erase"), S, W, st.just(0)),
    st.tuples(st.just("archive"), S, W, st.integers(0, 10_000)),
    st.tuples(st.just("undo"), S, W, st.just(0)),
    st.tuples(st.just("undo"), S, W, st.just(0)),
    st.tuples(st.just("tick"), S, W, st.just(0)),
)


@dataclass
class Model:
    """What each scope should see: its live memories (id -> word, expiry or None), which
    of them are archived, and the forgets that may still be undone."""

    clock: Clock
    live: dict[int, dict[str, tuple[str, datetime | None]]] = field(
        default_factory=lambda: {i: {} for i in range(len(SCOPES))}
    )
    archived: dict[int, set[str]] = field(
        default_factory=lambda: {i: set() for i in range(len(SCOPES))}
    )
    # forgets that may be undone: (scope, token, what it removed, which were archived)
    tokens: list[tuple[int, str, dict[str, tuple[str, datetime | None]], set[str]]] = field(
        default_factory=list
    )

    def current(self, s: int) -> dict[str, tuple[str, datetime | None]]:
        """The scope's memories that have not expired by now."""
        now = self.clock.now
        return {i: v for i, v in self.live[s].items() if v[1] is None or v[1] > now}

    def gone(self, s: int, ids: tuple[str, ...] | list[str]) -> None:
        for i in ids:
            self.live[s].pop(i, None)
            self.archived[s].discard(i)


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    """One real all-MiniLM-L6-v2 for every example (loading it is the slow part)."""
    e = LocalEmbedder()
    e.embed(["warm up"])
    return e


@pytest.fixture
def tmp_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def _pick(ids: dict[str, tuple[str, datetime | None]], n: int) -> str | None:
    return sorted(ids)[n % len(ids)] if ids else None


def _apply(mems: list[AgentMemory], m: Model, n: int, kind: str, s: int, word: str, x: int) -> None:
    """Do one operation on scope ``s`` and record its effect in the model."""
    mem = mems[s]
    if kind == "turns":
        conv = CONVERSATIONS[x]
        ids = mem.add_turns(
            conv,
            [
                Turn("user", f"Ana: the {word} story number {n}", speaker="Ana"),
                Turn("assistant", f"Bo: a reply {n} on that {word}", speaker="Bo"),
            ],
            about=[word],
        )
        m.live[s].update({i: (word, None) for i in ids})
    elif kind == "fact":
        # single valued: a new object for (Ana, likes) supersedes the scope's older one
        conf = 0.5 + 0.1 * x  # the confidence signal sees different values
        r = mem.assert_fact("Ana", "likes", f"{word} {n}", confidence=conf)
        m.gone(s, list(r.superseded))
        m.live[s][r.id] = (word, None)
    elif kind == "outcome":
        p = mem.record_outcome(f"{word} cleanup", success=bool(x), context=SPEAKERS[0])
        m.live[s][p.id] = (word, None)  # the same action again counts on the same memory
    elif kind == "ttl":
        r = mem.remember(f"{word} reminder {n}", about=[word], ttl=timedelta(hours=1))
        m.live[s][r.id] = (word, m.clock.now + timedelta(hours=1))
    elif kind == "link":
        current = m.current(s)
        a, b = _pick(current, x), _pick(current, x // 7)
        if a is not None and b is not None and a != b:
            mem.link(a, b, "causal")
    elif kind == "feedback":
        target = _pick(m.current(s), x)
        if target is not None:
            mem.feedback(target, used=True)
        mem.flush()  # the access log the activation signal reads
    elif kind == "delete":
        # Below the layer, as ``agentzero memory delete`` does: the row goes (with the
        # layer's columns on it); its entity, fact or procedure rows stay behind until
        # consolidation, and no later forget, erase or recall may stumble on them.
        target = _pick(m.live[s], x)
        if target is not None:
            assert mem.store.delete(target)
            m.gone(s, [target])
    elif kind == "forget":
        target = _pick(m.current(s), x)
        by_id = x % 2 and target is not None
        receipt = mem.forget(id=target) if by_id else mem.forget(about=word)
        gone = {i: m.live[s][i] for i in receipt.ids if i in m.live[s]}
        was_archived = m.archived[s] & set(gone)
        m.gone(s, list(gone))
        m.tokens.append((s, receipt.token, gone, was_archived))
    elif kind == "erase":
        report = mem.erase(about=word)
        m.gone(s, list(report.ids))
        for _, _, held, _ in m.tokens:
            for i in report.ids:
                held.pop(i, None)
    elif kind == "archive":  # one memory, or every one about the word
        one = _pick({i: v for i, v in m.current(s).items() if i not in m.archived[s]}, x)
        chosen = [one] if one is not None else []
        if x % 2 == 0:
            chosen = [i for i, (w, _) in m.current(s).items() if w == word]
        for i in chosen:
            if i not in m.archived[s]:
                assert mem.archive(i)
                m.archived[s].add(i)
    elif kind == "undo" and m.tokens:
        ts, token, held, was_archived = m.tokens.pop()
        if held:  # within the undo window: the test's clock moves 45 minutes a tick
            mems[ts].undo(token)
            m.live[ts].update(held)
            m.archived[ts] |= was_archived & set(held)
    elif kind == "tick":
        m.clock.advance(minutes=45)


def _check(mems: list[AgentMemory], m: Model) -> None:
    """Every mode, every signal alone and all together: only the caller's live set."""
    for s, mem in enumerate(mems):
        mem.flush()  # what the last checks' recalls returned: the activation signal's log
        live = set(m.current(s))
        unarchived = live - m.archived[s]
        others = set().union(*(m.live[o] for o in range(len(SCOPES)) if o != s))
        for mode in MODES:
            for archived in (False, True):
                expect = live if archived else unarchived
                runs: list[tuple[str, dict[str, float] | None]] = [(QUERY, None)]
                if mode == "auto":  # all on; each alone too (the archive filter is one clause
                    # every signal shares: checked alone without archived only, for time)
                    ons = [ALL_ON, *ONLY] if not archived else [ALL_ON]
                    runs += [(QUERY, w) for w in ons]
                    runs += [(QUERY_YOU, w) for w in (ALL_ON, ROLE_ONLY) if w in ons]
                for query, weights in runs:
                    got = {
                        h.id
                        for h in mem.recall(
                            query,
                            k=200,
                            mode=mode,  # type: ignore[arg-type]
                            include_archived=archived,
                            weights=weights,
                        )
                    }
                    assert got <= expect, (s, mode, archived, query, weights, got - expect)
                    if mode in ("auto", "semantic") and weights is None:
                        # the dense list holds every vector of the scope: nothing is lost
                        assert got == expect, (s, mode, archived, expect - got)
        for i in others:
            assert mem.get(i) is None


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(op, min_size=6, max_size=20))
def test_no_signal_brings_in_what_the_caller_may_not_see(
    embedder: LocalEmbedder,
    fresh_where: Callable[[], Path | str],
    ops: list[tuple[str, int, str, int]],
) -> None:
    clock = Clock()
    model = Model(clock)
    counter = itertools.count()
    # each example in a new place (a data dir, or a database), on both backends
    data_dir = fresh_where()
    mems = [
        open_memory(data_dir, clock, org_id=o, agent_id=a, embedder=embedder) for o, a in SCOPES
    ]
    try:
        for step, (kind, s, word, x) in enumerate(ops):
            _apply(mems, model, next(counter), kind, s, word, x)
            if step % 4 == 3 or step == len(ops) - 1:
                _check(mems, model)
    finally:
        for mem in mems:
            mem.close()


def test_forget_after_a_delete_below_the_layer(tmp_root: Path) -> None:
    """A memory deleted through the memory store, then a forget that selects it: the
    forget should skip the deleted one (it is gone already) and forget the rest."""
    clock = Clock()
    with open_memory(tmp_root / "data", clock) as mem:
        gone, kept = mem.add_turns(
            "c1", [Turn("user", "apple one"), Turn("user", "apple two")], about=["apple"]
        )
        assert mem.store.delete(gone)
        receipt = mem.forget(about="apple")
        assert set(receipt.ids) <= {gone, kept} and kept in receipt.ids
        assert mem.get(kept) is None
