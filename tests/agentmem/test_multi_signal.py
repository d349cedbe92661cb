"""Agent recall, mode auto (issue 16): the signals, their fusion, explain, and scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentzero_store import AgentMemory, LocalEmbedder, Turn
from agentzero_store.agentmem.recall import signals as sig
from agentzero_store.agentmem.recall.search import SIGNALS
from agentzero_store.base.errors import InvalidArgumentError

from .conftest import Clock, open_memory


def test_spreading_activation_reaches_the_reply_next_to_a_hit() -> None:
    seeds = {10: 1 / 6, 20: 1 / 7}
    neighbours = {10: [(11, 1), (12, 2), (9, 1)], 20: [(21, 1)]}
    act = sig.spread(seeds, neighbours, top=1, decay=0.5)
    assert act == {11: 1 / 6, 9: 1 / 6, 12: 1 / 12}  # only the best seed spreads; not to itself


def test_flat_signals_drop_out() -> None:
    order = [1, 2, 3]
    assert sig.subset_in_order(order, {1, 2, 3}) == []  # all: tells nothing apart
    assert sig.subset_in_order(order, set()) == []
    assert sig.subset_in_order(order, {3, 1}) == [1, 3]
    assert sig.by_value({1: 0.9, 2: 0.9, 3: 0.9}, order) == []
    assert sig.by_value({1: 0.2, 2: 0.9, 3: 0.5}, order) == [2, 3, 1]
    assert sig.activation({}, 0, order) == []


def test_act_r_activation_prefers_frequent_and_recent_accesses() -> None:
    now = 1_000_000_000_000
    hour = 3_600_000_000
    accesses = {1: [now - 100 * hour], 2: [now - hour, now - 2 * hour], 3: [now - hour]}
    assert sig.activation(accesses, now, [1, 2, 3]) == [2, 3, 1]


def test_intent_rules() -> None:
    assert sig.intent("How do I rebase a branch?") == "procedural"
    assert sig.intent("When did Ana move to Lisbon?") == "episodic"
    assert sig.intent("What does Ana prefer for breakfast?") == "semantic"
    assert sig.intent("lisbon") is None


def test_auto_recall_finds_the_reply_and_explains_itself(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = mem.add_turns(
            "s1",
            [
                Turn("user", "Bo: what did you name the new puppy?", speaker="Bo"),
                Turn("user", "Ana: we called her Biscuit", speaker="Ana"),
                Turn("user", "Bo: cute! is the garden fenced?", speaker="Bo"),
            ],
        )
        for i in range(30):
            mem.add_turn("s2", "user", f"Ana: unrelated chatter number {i} about trains")
        hits = mem.recall("What did Ana name the new puppy?", k=3, explain=True)
        got = [h.id for h in hits]
        assert ids[1] in got  # the answer is the reply, next to the matching question
        reply = hits[got.index(ids[1])]
        assert reply.explain is not None and "temporal" in reply.explain
        for name, e in reply.explain.items():
            assert e["rank"] == reply.ranks[name] and e["weight"] > 0
        assert abs(sum(e["score"] for e in reply.explain.values()) - reply.score) < 1e-9


def test_auto_recall_never_spreads_into_forgotten_or_other_scopes(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = mem.add_turns(
            "s1",
            [
                Turn("user", "Bo: where is the spare key hidden?", speaker="Bo"),
                Turn("user", "Ana: under the blue flower pot", speaker="Ana"),
            ],
        )
        mem.forget(id=ids[1])
        hits = mem.recall("where is the spare key hidden?", k=5)
        assert ids[1] not in [h.id for h in hits]
    with open_memory(where, clock, agent_id="other", embedder=local_embedder) as other:
        assert other.recall("where is the spare key hidden?", k=5) == []


def test_auto_is_the_default_mode_with_an_embedder(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        mem.add_turn("s1", "user", "Ana: I love green tea")
        (hit,) = mem.recall("tea", k=1, explain=True)
        assert hit.explain is not None
    mem2: AgentMemory
    with open_memory(where, clock) as mem2:  # no embedder: keyword
        (hit,) = mem2.recall("tea", k=1, explain=True)
        assert set(hit.ranks) == {"keyword"}


def test_weights_override_one_call_and_zero_leaves_a_signal_out(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = mem.add_turns(
            "s1",
            [
                Turn("user", "Bo: what did you name the new puppy?", speaker="Bo"),
                Turn("user", "Ana: we called her Biscuit", speaker="Ana"),
                Turn("user", "Bo: cute! is the garden fenced?", speaker="Bo"),
            ],
        )
        q = "What did Ana name the new puppy?"
        full = mem.recall(q, k=3, explain=True, log=False)
        assert any("temporal" in h.ranks for h in full)
        without = mem.recall(q, k=3, explain=True, log=False, weights={"temporal": 0})
        assert all("temporal" not in h.ranks for h in without)
        # One signal alone: the hits are that signal's list, in its order.
        alone = mem.recall(
            q,
            k=3,
            explain=True,
            log=False,
            weights={s: 0 for s in SIGNALS if s != "temporal"},
        )
        assert alone and all(set(h.ranks) == {"temporal"} for h in alone)
        assert [h.ranks["temporal"] for h in alone] == sorted(h.ranks["temporal"] for h in alone)
        assert ids[1] in [h.id for h in alone]
        doubled = mem.recall(q, k=3, explain=True, log=False, weights={"keyword": 2.5})
        assert any("keyword" in h.ranks for h in doubled)
        for h in doubled:
            assert h.explain is not None
            if "keyword" in h.explain:
                assert h.explain["keyword"]["weight"] == 2.5
        # The config's weights are untouched by an override.
        again = mem.recall(q, k=3, explain=True, log=False)
        assert [(h.id, h.ranks) for h in again] == [(h.id, h.ranks) for h in full]
        for bad in (
            {"nope": 1.0},
            {"keyword": -1.0},
            {"keyword": float("nan")},
            {"keyword": float("inf")},
            {"keyword": True},
            {"keyword": "1"},
        ):
            with pytest.raises(InvalidArgumentError):
                mem.recall(q, weights=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="auto"):
            mem.recall(q, mode="hybrid", weights={"keyword": 1.0})
