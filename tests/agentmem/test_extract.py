"""Extraction (issue 32): what a user states about themselves becomes facts that
supersede, with the turns as sources — on both backends: forgetting the turn hides the
fact (undo restores it), erasing it erases the fact; re-running changes nothing; the
background mode reads what add_turns wrote without the write waiting on it."""

from __future__ import annotations

from pathlib import Path

from agentzero_store import AgentMemory, RuleExtractor, Turn

from .conftest import Clock, open_memory


def _lives(mem: AgentMemory, who: str = "Sam") -> list[str]:
    return [f.object for f in mem.facts(subject=who, predicate="lives_in")]


def _chat(mem: AgentMemory, clock: Clock) -> dict[str, str]:
    ids = {}
    for key, speaker, text in [
        ("porto", "Sam", "I live in Porto."),
        ("q", "Sam", "Do you live in Oslo?"),
        ("oslo", "Sam", "Big news: I moved to Oslo last month. I have a dog named Rex."),
        ("bot", None, "I live in the cloud."),
    ]:
        clock.advance(minutes=1)
        role = "assistant" if speaker is None else "user"
        ids[key] = mem.add_turn("c1", role, text, speaker=speaker)
    return ids


def test_statements_become_facts_that_supersede_with_their_turns_as_sources(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        ids = _chat(mem, clock)
        report = mem.extract()
        assert report.turns == 4
        assert _lives(mem) == ["Oslo"]
        (oslo,) = mem.facts(subject="Sam", predicate="lives_in")
        assert mem.get(oslo.id).sources == (ids["oslo"],)  # type: ignore[union-attr]
        old = [f for f in mem.facts(subject="Sam", history=True) if f.object == "Porto"]
        assert old[0].superseded_by == oslo.id
        assert [f.object for f in mem.facts(subject="Sam", predicate="has_pet")] == [
            "dog named Rex"
        ]
        assert not mem.facts(subject="user")  # the assistant's "I" is nobody's fact
        assert any(
            h.op == "assert" and h.detail.get("sources") == [ids["oslo"]]
            for h in mem.history(oslo.id)
        )
        # Again: nothing changes (Porto is older than the belief that replaced it).
        before = mem.facts(subject="Sam", history=True)
        again = mem.extract()
        assert {f["status"] for f in again.facts} <= {"duplicate", "stale"}
        assert mem.facts(subject="Sam", history=True) == before


def test_forgetting_the_turn_hides_the_fact_undo_restores_erase_erases(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        ids = _chat(mem, clock)
        mem.extract()
        (oslo,) = mem.facts(subject="Sam", predicate="lives_in")
        receipt = mem.forget(id=ids["oslo"])
        assert oslo.id in receipt.derived
        assert "Oslo" not in _lives(mem)
        assert mem.get(oslo.id) is None
        assert all(h.id != oslo.id for h in mem.recall("where does Sam live", log=False))
        mem.undo(receipt.token)
        assert mem.get(oslo.id) is not None and "Oslo" in _lives(mem)

        report = mem.erase(id=ids["oslo"])
        assert oslo.id in report.derived
        assert mem.get(oslo.id) is None
        assert all(f.object != "Oslo" for f in mem.facts(subject="Sam", history=True))


def test_no_longer_retracts_and_a_dry_run_writes_nothing(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        mem.add_turn("c1", "user", "I love hiking.")
        clock.advance(minutes=1)
        assert [f["status"] for f in mem.extract(dry_run=True).facts] == ["new"]
        assert not mem.facts(subject="user")
        mem.extract()
        assert [f.object for f in mem.facts(subject="user", predicate="likes")] == ["hiking"]
        mem.add_turn("c1", "user", "I don't like hiking anymore. I no longer eat meat.")
        mem.extract(conversation_id="c1")
        assert [f.object for f in mem.facts(subject="user", predicate="dislikes")] == ["hiking"]


def test_background_extraction_after_add_turns_and_at_consolidate(
    where: Path | str, clock: Clock
) -> None:
    mem = open_memory(where, clock, extractor=RuleExtractor(), extract="background")
    try:
        mem.add_turns("c1", [Turn("user", "I work at Acme.", speaker="Ana")])
        mem.drain_extraction()
        assert [f.object for f in mem.facts(subject="Ana")] == ["Acme"]
    finally:
        mem.close()
    with open_memory(where, clock, extractor=RuleExtractor()) as mem:  # at consolidate
        clock.advance(minutes=1)
        mem.add_turn("c1", "user", "I'm allergic to peanuts.", speaker="Ana")
        assert len(mem.facts(subject="Ana")) == 1
        mem.consolidate()
        assert {f.object for f in mem.facts(subject="Ana")} == {"Acme", "peanuts"}


def test_the_memory_extract_tool(data_dir: Path, clock: Clock) -> None:
    from agentzero_store.tools import agent_memory_tools

    with open_memory(data_dir, clock) as mem:
        t = mem.add_turn("c1", "user", "Call me Sammy. I work as a nurse.")
        (tool,) = [x for x in agent_memory_tools(mem) if x.name == "memory_extract"]
        dry = tool.run({"conversation_id": "c1", "dry_run": True})
        assert {(f["predicate"], f["object"]) for f in dry["facts"]} == {
            ("is_called", "Sammy"),
            ("works_as", "nurse"),
        }
        assert mem.facts() == []
        done = tool.run({})
        assert all(f["status"] == "created" and f["sources"] == [t] for f in done["facts"])
        assert len(mem.facts(subject="user")) == 2


def test_a_fact_believed_already_is_not_reweighed(data_dir: Path, clock: Clock) -> None:
    with open_memory(data_dir, clock) as mem:
        asserted = mem.assert_fact("Sam", "lives_in", "Oslo", confidence=0.95)
        mem.add_turn("c1", "user", "I live in Oslo.", speaker="Sam")
        (f,) = mem.extract().facts
        assert (f["status"], f["id"]) == ("duplicate", asserted.id)
        assert mem.facts(subject="Sam")[0].confidence == 0.95
