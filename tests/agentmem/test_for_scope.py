"""AgentMemory.adopt and AgentMemory.for_scope: what a long-lived host (the MCP server)
needs beside writers below the layer and for several tenants over one open store."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentzero_store import AgentMemory, InvalidArgumentError, MemoryEntry

from .conftest import Clock, open_memory


@pytest.fixture
def mem(bmem: AgentMemory) -> AgentMemory:
    """This module's tests on both backends (``where``)."""
    return bmem


def test_adopt_picks_up_rows_written_below_the_layer_since_open(mem: AgentMemory) -> None:
    eid = mem.store.append(MemoryEntry("appended beside the layer", org_id="acme", agent_id="a1"))
    assert mem.get(eid) is None  # open adopted what was there then, not this
    mem.adopt()
    m = mem.get(eid)
    assert m is not None and m.type == "episodic"
    assert [h.id for h in mem.recall("appended beside", mode="keyword")] == [eid]
    mem.adopt()  # nothing new: nothing changes
    assert [x.id for x in mem.memories()] == [eid]


def test_for_scope_serves_another_tenant_over_the_same_store(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as base:
        below = base.store.append(MemoryEntry("o2's appended row", org_id="o2", agent_id="b"))
        other = base.for_scope("o2", "b")
        try:
            assert other.store is base.store
            assert [m.id for m in other.memories()] == [below]  # adopted on the way in
            mid = other.remember("o2's own note").id
            assert base.get(mid) is None and base.memories() == []
        finally:
            other.close()
        assert base.remember("still open").status == "created"  # the store outlived it
    with open_memory(where, clock, org_id="o2", agent_id="b") as again:
        assert {m.content for m in again.memories()} == {"o2's appended row", "o2's own note"}


@pytest.mark.parametrize(
    ("org", "agent"),
    [("acme", "\x1ens\x1eteam"), ("acme", "a1\x1esession\x1es1"), ("o\n2", "b"), ("acme", " ")],
)
def test_for_scope_checks_names_as_open_does(mem: AgentMemory, org: str, agent: str) -> None:
    # A control character would reach a namespace's or a session's own scope.
    with pytest.raises(InvalidArgumentError):
        mem.for_scope(org, agent)
