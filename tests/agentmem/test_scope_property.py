"""Promise 6 for the agent memory, by property: whatever the sequence of writes,
forgets, erases, archives and expiries across several orgs and agents, recall and get
return only the caller's own live memories (hypothesis)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import AgentMemory

from .conftest import Clock, open_memory

SCOPES = [("o1", "a1"), ("o1", "a2"), ("o2", "a1")]
WORDS = ["apple", "river", "stone", "cloud"]

op = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(range(3)), st.sampled_from(WORDS)),
    st.tuples(st.just("remember"), st.sampled_from(range(3)), st.sampled_from(WORDS)),
    st.tuples(st.just("ttl"), st.sampled_from(range(3)), st.sampled_from(WORDS)),
    st.tuples(st.just("forget"), st.sampled_from(range(3)), st.sampled_from(WORDS)),
    st.tuples(st.just("erase"), st.sampled_from(range(3)), st.sampled_from(WORDS)),
    st.tuples(st.just("archive"), st.sampled_from(range(3)), st.sampled_from(WORDS)),
    st.tuples(st.just("undo"), st.sampled_from(range(3)), st.sampled_from(WORDS)),
    st.tuples(st.just("tick"), st.just(0), st.just("")),
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_recall_returns_only_own_live_memories(
    fresh_where: Callable[[], Path | str], ops: list[tuple[str, int, str]]
) -> None:
    clock = Clock()
    counter = itertools.count()
    # the model: scope -> {id: (word, expires_at or None)}; tokens -> (scope, {id: ...})
    live: dict[int, dict[str, tuple[str, object]]] = {i: {} for i in range(3)}
    archived: dict[int, set[str]] = {i: set() for i in range(3)}
    tokens: list[tuple[int, dict[str, tuple[str, object]], set[str]]] = []
    # each example in a new place (a data dir, or a database), on both backends
    data_dir = fresh_where()
    mems = [open_memory(data_dir, clock, org_id=o, agent_id=a) for o, a in SCOPES]
    try:
        for kind, s, word in ops:
            mem: AgentMemory = mems[s]
            text = f"{word} note {next(counter)}"
            if kind == "turn":
                live[s][mem.add_turn("c", "user", text, about=[word])] = (word, None)
            elif kind == "remember":
                live[s][mem.remember(text, about=[word]).id] = (word, None)
            elif kind == "ttl":
                mid = mem.remember(text, about=[word], ttl=timedelta(hours=1)).id
                live[s][mid] = (word, clock.now + timedelta(hours=1))
            elif kind == "forget":
                r = mem.forget(about=word)
                gone = {i: live[s].pop(i) for i in r.ids if i in live[s]}
                tokens.append((s, gone, {i for i in gone if i in archived[s]}))
            elif kind == "erase":
                r2 = mem.erase(about=word)
                for i in r2.ids:
                    live[s].pop(i, None)
                for _, gone, _ in tokens:
                    for i in r2.ids:
                        gone.pop(i, None)
            elif kind == "archive":
                for i, (w, _) in list(live[s].items()):
                    if w == word and mem.get(i) is not None:
                        mem.archive(i)
                        archived[s].add(i)
            elif kind == "undo" and tokens:
                ts, gone, _ = tokens.pop()
                if gone:
                    try:
                        mems[ts].undo(_token_of(mems[ts], gone))
                        live[ts].update(gone)
                    except Exception:  # noqa: BLE001 - window passed: stays gone
                        pass
            elif kind == "tick":
                clock.advance(minutes=45)
            for si, m in enumerate(mems):
                expect = {
                    i
                    for i, (_, exp) in live[si].items()
                    if exp is None or exp > clock.now  # type: ignore[operator]
                }
                got = {
                    h.id
                    for w in WORDS
                    for h in m.recall(w, k=50, mode="keyword", include_archived=True)
                }
                assert got <= expect, (si, got - expect)
                assert got == expect, (si, expect - got)
                for other in range(3):
                    if other != si:
                        for i in live[other]:
                            assert m.get(i) is None
    finally:
        for m in mems:
            m.close()


def _token_of(mem: AgentMemory, gone: dict[str, tuple[str, object]]) -> str:
    """The undo token of the forget that removed ``gone`` (from the history)."""
    some = next(iter(gone))
    (entry,) = [h for h in mem.history(some) if h.op == "forget"][-1:]
    return str(entry.detail["token"])
