"""Tiers and context packing (issue 17): pins, core facts, the hot ring buffer, warm
summaries, ``context()`` within its token budget, sessions that inherit, and memories
written below the layer adopted on open."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import LocalEmbedder, MemoryEntry, SqliteMemoryStore, StoreConfig, Turn
from agentzero_store.agentmem.context import SECTIONS, Budget
from agentzero_store.agentmem.records import Memory
from agentzero_store.agentmem.tokens import estimate_tokens
from agentzero_store.base.errors import InvalidArgumentError, NotFoundError
from tests.conftest import FAST, PASSPHRASE

from .conftest import Clock, count_rows, open_memory

SMALL = dataclasses.replace(FAST, hot_turns=3, warm_turns=2, pin_budget_chars=60)


def _fill(mem: object, n: int, conversation: str = "c1") -> list[str]:
    return mem.add_turns(  # type: ignore[attr-defined, no-any-return]
        conversation, [Turn("user", f"turn number {i} about topic {i % 4}") for i in range(n)]
    )


def test_context_packs_in_priority_order_each_memory_once(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock, config=SMALL) as mem:
        ids = _fill(mem, 10)
        mem.pin(ids[9])  # also a hot turn: it must appear once, as pinned
        fact = mem.assert_fact("Ana", "lives_in", "Lisbon", core=True)
        mem.remember("Ana's dog is called Biscuit")  # archival: only when recalled
        pack = mem.context("c1", query="dog Biscuit", max_tokens=2000)
        sections = [i.section for i in pack.items]
        assert sections == sorted(sections, key=SECTIONS.index)  # priority order
        assert [i.id for i in pack.section("pinned")] == [ids[9]]
        assert [i.id for i in pack.section("core")] == [fact.id]
        assert [i.id for i in pack.section("hot")] == ids[7:9]  # ids[9] is pinned
        assert len(pack.section("warm")) == 2 and {i.id for i in pack.section("warm")} <= set(
            ids[:7]
        )
        assert "Ana's dog is called Biscuit" in [i.text for i in pack.section("recalled")]
        seen = [i.id for i in pack.items if i.id is not None]
        assert len(seen) == len(set(seen))
        text = pack.text()
        assert text.startswith("## Pinned\n") and "## Core facts" in text
        assert pack.tokens == estimate_tokens(text) <= 2000
        assert pack.counted_with.startswith("estimate")
        assert pack.to_dict()["items"][0]["section"] == "pinned"


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(budget=st.integers(min_value=0, max_value=400))
def test_context_never_exceeds_its_budget(
    tmp_path_factory: pytest.TempPathFactory, budget: int
) -> None:
    data_dir = tmp_path_factory.mktemp("ctx")
    with open_memory(data_dir, Clock(), config=SMALL) as mem:
        ids = _fill(mem, 12)
        mem.pin(ids[0])
        mem.assert_fact("Bo", "likes", "tea", core=True)
        pack = mem.context("c1", query="topic", max_tokens=budget)
        assert pack.tokens == estimate_tokens(pack.text()) <= budget
        if pack.items:  # what was left out was lower priority or did not fit
            assert sum(pack.left_out.values()) >= 0
        with pytest.raises(InvalidArgumentError):
            mem.context("c1", max_tokens=-1)


def test_context_counts_with_the_embedders_tokenizer(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        mem.add_turn("c1", "user", "Antidisestablishmentarianism is a long word")
        pack = mem.context("c1", max_tokens=100)
        counter = Budget(local_embedder)
        assert pack.counted_with == counter.method != "estimate: 4 tokens per 3 words"
        assert pack.tokens == counter.count([pack.text()])[0] <= 100


def test_pins_have_a_character_budget(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock, config=SMALL) as mem:
        a = mem.remember("x" * 40).id
        b = mem.remember("y" * 30).id
        mem.pin(a)
        mem.pin(a)  # again: a no-op
        with pytest.raises(InvalidArgumentError, match="pin budget"):
            mem.pin(b)
        mem.unpin(a)
        mem.pin(b)
        assert [m.id for m in mem.pinned()] == [b]
        with pytest.raises(NotFoundError):
            mem.pin("no-such-id")
        mem.forget(id=b)
        assert mem.pinned() == []  # a forgotten memory is never loaded


def test_the_hot_tier_follows_other_writers_and_forgets(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock, config=SMALL) as mem:
        ids = _fill(mem, 5)
        assert [m.id for m in mem.hot("c1")] == ids[2:]
        new = mem.add_turn("c1", "assistant", "a reply")
        assert [m.id for m in mem.hot("c1")] == [*ids[3:], new]  # appended in place
        with open_memory(where, clock, config=SMALL) as other:  # another writer
            theirs = other.add_turn("c1", "user", "from elsewhere")
        assert [m.id for m in mem.hot("c1")] == [ids[4], new, theirs]
        mem.forget(id=theirs)
        assert [m.id for m in mem.hot("c1")] == [ids[3], ids[4], new]
        tool = mem.add_tool_result("c1", "search", "3 results found")
        assert mem.latest_tool_result("c1") is not None
        assert mem.latest_tool_result("c1").id == tool  # type: ignore[union-attr]
        assert mem.hot("c1")[-1].role == "tool" and mem.hot("c1")[-1].speaker == "search"
        assert mem.hot("nothing-here") == []


def test_a_batch_updates_a_cached_hot_tier_as_a_fresh_read_would(
    where: Path | str, clock: Clock
) -> None:
    """The ring keeps only the batch's last turns (only those are built) and the latest
    tool result among all of them, even one the ring no longer holds."""
    with open_memory(where, clock, config=SMALL) as mem:
        _fill(mem, 2)
        mem.hot("c1")  # cached
        clock.advance(seconds=1)
        batch = [Turn("user", f"batch turn {i}") for i in range(6)]
        batch[1] = Turn("tool", "the tool said 42", speaker="calc")
        ids = mem.add_turns("c1", batch)
        assert [m.id for m in mem.hot("c1")] == ids[-3:]
        cached = (mem.hot("c1"), mem.latest_tool_result("c1"))
        assert cached[1] is not None and cached[1].id == ids[1]
        with open_memory(where, clock, config=SMALL) as fresh:
            assert (fresh.hot("c1"), fresh.latest_tool_result("c1")) == cached
        mem.add_turns("c1", [Turn("user", "said earlier", created_at=clock.now.replace(year=2020))])
        assert "said earlier" not in [m.content for m in mem.hot("c1")]  # re-read in order


class FirstWords:
    """A Summarizer standing in for an LLM (the point of the test is the plug)."""

    def summarize(self, turns: Sequence[Memory]) -> str:
        return "summary: " + "; ".join(t.content.split()[2] for t in turns)


def test_warm_summaries_are_extractive_or_plugged_and_never_outlive_their_sources(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock, config=SMALL) as mem:
        ids = _fill(mem, 9)  # 6 older turns, 3 hot
        text, sources = mem.summarize("c1")
        assert text is None and len(sources) == 2 and set(sources) <= set(ids[:6])
        warm = mem.context("c1").section("warm")
        assert [i.id for i in warm] == sources
        text, sources = mem.summarize("c1", FirstWords())
        assert text == "summary: 0; 1; 2; 3; 4; 5" and sources == ids[:6]
        assert [i.text for i in mem.context("c1").section("warm")] == [text]
        receipt = mem.forget(id=ids[2])  # a source forgotten: the summary may quote it
        assert all("summary" not in i.text for i in mem.context("c1").section("warm"))
        mem.undo(receipt.token)
        assert [i.text for i in mem.context("c1").section("warm")] == [text]
        clock.advance(days=SMALL.warm_ttl_days + 1)
        assert mem.consolidate().warm_evicted == 1
        _, sources = mem.summarize("c1", FirstWords())
        assert ids[0] in sources
        mem.erase(id=ids[0])  # erase deletes every summary made from it
        assert count_rows(mem, "am_summary") == 0


def test_core_facts_promote_by_access_and_demote_when_idle_or_replaced(
    where: Path | str, clock: Clock
) -> None:
    cfg = dataclasses.replace(FAST, core_promote_accesses=3, core_idle_days=10)
    with open_memory(where, clock, config=cfg) as mem:
        tea = mem.assert_fact("Bo", "drinks", "green tea").id
        assert mem.core_facts() == []
        for _ in range(3):
            mem.recall("what does Bo drink? green tea", k=3)
        report = mem.consolidate()
        assert report.core_promoted == 1 and [m.id for m in mem.core_facts()] == [tea]
        clock.advance(days=11)
        report = mem.consolidate()
        assert report.core_demoted == 1 and mem.core_facts() == []
        home = mem.assert_fact("Bo", "lives_in", "Porto", core=True).id
        assert [m.id for m in mem.core_facts()] == [home]
        mem.assert_fact("Bo", "lives_in", "Faro")  # supersedes: Porto is history now
        assert mem.core_facts() == []
        with pytest.raises(InvalidArgumentError):
            mem.mark_core(mem.add_turn("c", "user", "an episode"))


def test_sessions_inherit_core_facts_but_never_belief_history(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        with mem.start_session("monaco-2026") as monaco:
            monaco.assert_fact("car", "tyres", "soft", core=True)
            monaco.assert_fact("car", "tyres", "medium", core=True)  # supersedes soft
            monaco.assert_fact("track", "surface", "bumpy")  # archival: not inherited
            monaco.record_outcome("undercut", success=True)
            monaco.record_outcome("undercut", success=False)
        with mem.start_session("bahrain-2026") as bahrain:
            bahrain.assert_fact("driver", "prefers", "late braking", core=True)
        with mem.start_session(
            "imola-2026", inherits_from=["monaco-2026", "bahrain-2026"], procedures=True
        ) as imola:
            facts = sorted((f.subject, f.object) for f in imola.facts())
            assert facts == [("car", "medium"), ("driver", "late braking")]
            assert len(imola.core_facts()) == 2
            assert len(imola.history()) == 2  # its own asserts, not monaco's supersede
            (proc,) = imola.repo.all_procedures()
            assert (proc.successes, proc.failures) == (1, 1)
        with mem.start_session("imola-2026", inherits_from=["monaco-2026"]) as again:
            assert len(again.facts()) == 2  # reopened, nothing copied twice
        assert mem.facts() == []  # sessions are scopes of their own
        with pytest.raises(NotFoundError):
            mem.start_session("x", inherits_from=["never-started"])


def test_memories_written_below_the_layer_are_adopted_on_open(data_dir: Path, clock: Clock) -> None:
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as store:
        plain = store.append(
            MemoryEntry(content="the boiler code is 4471", org_id="acme", agent_id="a1")
        )
        store.append(MemoryEntry(content="the boiler code is 9", org_id="acme", agent_id="zz"))
    with open_memory(data_dir, clock) as mem:
        hits = mem.recall("boiler code", k=5)
        assert [h.id for h in hits] == [plain]
        assert hits[0].memory.type == "episodic"
    cfg: StoreConfig = FAST
    with open_memory(data_dir, clock, config=cfg) as mem:  # again: nothing doubled
        assert [h.id for h in mem.recall("boiler code", k=5)] == [plain]
