"""AgentMemory.memories: the listing behind `agentzero memory list` and `memory_list`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agentzero_store import AgentMemory, InvalidArgumentError, MemoryEntry
from agentzero_store.agentmem.parts import new_memory

from .conftest import Clock, open_memory


@pytest.fixture
def mem(bmem: AgentMemory) -> AgentMemory:
    """This module's tests on both backends (``where``)."""
    return bmem


def listed(mem: AgentMemory, **kw: Any) -> list[str]:
    return [m.content for m in mem.memories(**kw)]


def test_newest_first_in_pages_filtered_by_type_and_conversation(
    mem: AgentMemory, clock: Clock
) -> None:
    mem.add_turn("c1", "user", "first turn")
    clock.advance(seconds=1)
    mem.remember("a semantic note")
    clock.advance(seconds=1)
    mem.add_turn("c2", "user", "second conversation")
    clock.advance(seconds=1)
    mem.record_outcome("restart the router", success=True)
    assert listed(mem) == [
        "restart the router",
        "second conversation",
        "a semantic note",
        "first turn",
    ]
    assert listed(mem, limit=2) == ["restart the router", "second conversation"]
    assert listed(mem, limit=2, offset=2) == ["a semantic note", "first turn"]
    assert listed(mem, limit=2, offset=4) == []
    assert listed(mem, types="episodic") == ["second conversation", "first turn"]
    assert listed(mem, types=["semantic", "procedural"]) == [
        "restart the router",
        "a semantic note",
    ]
    assert listed(mem, conversation_id="c1") == ["first turn"]
    (m,) = mem.memories(conversation_id="c2")
    assert m.type == "episodic" and m.role == "user" and not m.archived


def test_listed_by_entity_what_is_about_it_or_said_by_it(mem: AgentMemory) -> None:
    mem.add_turn("c1", "user", "I moved in May", speaker="Ana")
    mem.remember("Ana is allergic to peanuts", about=["ana"])
    mem.remember("Bo likes tea", about=["Bo"])
    assert set(listed(mem, about="ANA")) == {"I moved in May", "Ana is allergic to peanuts"}
    assert listed(mem, about="Bo", types="episodic") == []
    assert listed(mem, about="nobody") == []


def test_one_batch_keeps_its_order(mem: AgentMemory) -> None:
    from agentzero_store import Turn

    mem.add_turns("c1", [Turn("user", "one"), Turn("assistant", "two"), Turn("user", "three")])
    assert listed(mem) == ["three", "two", "one"]  # same time: the later label first


def test_archived_only_on_request_with_their_text(mem: AgentMemory) -> None:
    live = mem.remember("a live note").id
    gone = mem.remember("the quokka sleeps in the garage").id
    mem.archive(gone)
    assert [m.id for m in mem.memories()] == [live]
    (a,) = mem.memories(archived="only")
    assert a.id == gone and a.archived and a.content == "the quokka sleeps in the garage"
    assert {m.id for m in mem.memories(archived="include")} == {live, gone}
    mem.restore(gone)
    assert mem.memories(archived="only") == []


def test_kind_is_the_stored_kind(mem: AgentMemory) -> None:
    mem.remember("granted by the user")
    # A row of another kind with its layer row, as an adopted store row would have.
    entry = MemoryEntry(
        "noted by the agent itself", kind="self_noted", org_id="acme", agent_id="a1"
    )
    prepared = mem.store.prepare([entry], None)
    with mem.repo.transaction() as tx:
        mem.repo.insert(tx, prepared, [new_memory(mem.config, "episodic")])
    assert listed(mem, kind="granted") == ["granted by the user"]
    assert listed(mem, kind="self_noted") == ["noted by the agent itself"]
    assert listed(mem, kind="recalled") == []


def test_never_expired_forgotten_erased_superseded_or_another_scopes(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock, agent_id="a2") as other:
        other.remember("another agent's note")
    with open_memory(where, clock) as mem:
        mem.remember("the door code is 4711", ttl=timedelta(hours=1))
        old = mem.assert_fact("Ana", "lives_in", "Porto")
        new = mem.assert_fact("Ana", "lives_in", "Lisbon")
        assert new.superseded == (old.id,)
        forgotten = mem.remember("forget me")
        erased = mem.remember("erase me")
        assert set(listed(mem)) == {
            "the door code is 4711",
            "Ana lives in Lisbon",
            "forget me",
            "erase me",
        }
        receipt = mem.forget(id=forgotten.id)
        mem.erase(id=erased.id)
        clock.advance(hours=2)
        assert listed(mem) == ["Ana lives in Lisbon"]
        mem.undo(receipt.token)
        assert listed(mem) == ["forget me", "Ana lives in Lisbon"]
    with open_memory(where, clock, agent_id="a2") as other:
        assert listed(other) == ["another agent's note"]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"kind": "dreamt"}, "kind must be one of"),
        ({"types": "dream"}, "types must be some of"),
        ({"archived": "yes"}, "archived must be exclude, include or only"),
        ({"limit": 0}, "limit must be a positive integer"),
        ({"limit": 10**9}, "at most"),
        ({"offset": -1}, "offset must be a whole number"),
        ({"offset": True}, "offset must be a whole number"),
    ],
)
def test_bad_arguments_are_refused(mem: AgentMemory, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        mem.memories(**kw)
    assert message in info.value.message
