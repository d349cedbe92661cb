"""A ``Memory`` says how it came to be remembered, as its ``MemoryEntry`` does (issue 30,
item 12): the stored kind, on both backends, from every read."""

from __future__ import annotations

from pathlib import Path

from agentzero_store import MemoryEntry

from .conftest import Clock, open_memory


def test_a_memory_carries_its_kind(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        granted = mem.remember("the user prefers window seats").id
        noted = mem.store.append(
            MemoryEntry(
                content="the agent noted a flaky test",
                org_id="acme",
                agent_id="a1",
                kind="self_noted",
            )
        )
    with open_memory(where, clock) as mem:  # reopened: the noted row is adopted
        got = mem.get(noted)
        assert got is not None and got.kind == "self_noted"
        assert got.to_dict()["kind"] == "self_noted"
        g = mem.get(granted)
        assert g is not None and g.kind == "granted"
        assert [m.kind for m in mem.memories(kind="self_noted")] == ["self_noted"]
        assert {h.memory.kind for h in mem.recall("flaky test", mode="keyword")} == {"self_noted"}
