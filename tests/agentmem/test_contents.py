"""``agent_memory_contents``: what the agent memory holds beyond the memory store's own
rows (what copying the memory store alone would leave behind, e.g. to PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.agentmem.repository import agent_memory_contents
from tests.conftest import FAST, PASSPHRASE

from .conftest import Clock, open_memory


def test_a_store_the_agent_memory_never_opened_holds_nothing_of_it(data_dir: Path) -> None:
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as store:
        store.append(MemoryEntry("plain row"))
        assert agent_memory_contents(store) == {}


def test_every_kind_of_layer_data_is_counted(data_dir: Path, clock: Clock) -> None:
    with open_memory(data_dir, clock) as mem:
        turn = mem.add_turn("c1", "user", "just a turn")
        mem.recall("turn", mode="keyword")  # the access log alone is not counted
        mem.flush()
        assert agent_memory_contents(mem.store) == {}
        mem.add_turn("c1", "user", "said by Ana", speaker="Ana")
        note = mem.remember("Ana likes tea", about=["Ana"])
        mem.assert_fact("Ana", "lives_in", "Lisbon")
        mem.archive(note.id)
        clock.advance(days=3)
        mem.feedback(turn, used=True)
        got = agent_memory_contents(mem.store)
    assert got["speakers of turns"] == 1
    assert got["notes (semantic or procedural memories)"] == 2
    assert got["archived memories (their text is in memory.archive.db)"] == 1
    assert got["memories strengthened by feedback"] == 1
    assert got["facts"] == 1
    assert got["entities memories are about"] >= 2
    assert got["belief history entries"] >= 1
