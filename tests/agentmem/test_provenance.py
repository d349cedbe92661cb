"""Provenance (issue 30): what consolidation derived from a memory goes wherever the
memory goes. A turn said three times becomes a semantic memory in conversation
``memories`` holding its text verbatim; forgetting the turns hides it from every read
path (undo brings both back), erasing them erases it, on both backends; a derived
memory archived by a merge, and a warm summary, likewise. On SQLite the erase is
proven on the decrypted pages of memory.db and the archive, and the HNSW checkpoint."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from agentzero_store import AgentMemory, LocalEmbedder, SqliteMemoryStore
from agentzero_store.agentmem.records import Memory
from agentzero_store.base.config import Layout

from .conftest import Clock, count_rows, open_memory
from .test_erase_proof import halves, plaintext_left, read_checkpoint

CANARY = "zanzibarquokka"
# 15 words: one changed leaves a near-duplicate (Jaccard 14/16 >= 0.85) for the merge.
SAID = (
    f"my cat {CANARY} sleeps on the warm kitchen windowsill every single sunny afternoon in spring"
)
MODES: tuple[str | None, ...] = ("keyword", "semantic", "hybrid", "auto")


def _say_three_times(mem: AgentMemory, conversation_id: str, text: str = SAID) -> list[str]:
    return [mem.add_turn(conversation_id, "user", text) for _ in range(3)]


def _promoted(mem: AgentMemory) -> Memory:
    assert mem.consolidate().promoted == 1
    (derived,) = mem.memories(conversation_id="memories")
    assert derived.content == SAID and derived.type == "semantic"
    return derived


def _seen(mem: AgentMemory, memory_id: str) -> dict[str, bool]:
    """Where ``memory_id`` can still be read: each recall mode, the listings, get, and
    a context pack's text. Recall asks for semantic memories: it returns one memory per
    text, and the turns say the same."""
    query = f"{CANARY} windowsill"
    modes = MODES if mem.store.embedder is not None else ("keyword", None)
    out = {
        str(m): memory_id in {h.id for h in mem.recall(query, mode=m, types="semantic", log=False)}  # type: ignore[arg-type]
        for m in modes
    }
    out["recall_archived"] = memory_id in {
        h.id
        for h in mem.recall(
            CANARY, mode="keyword", types="semantic", include_archived=True, log=False
        )
    }
    out["memories"] = memory_id in {m.id for m in mem.memories(archived="include", limit=500)}
    out["get"] = mem.get(memory_id) is not None
    out["context"] = CANARY in mem.context("other", CANARY).text()
    return out


def _nowhere(mem: AgentMemory, memory_id: str) -> None:
    assert not any(_seen(mem, memory_id).values()), _seen(mem, memory_id)


def test_forget_hides_what_was_derived_and_undo_brings_both_back(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        turns = _say_three_times(mem, "c1")
        mem.add_turn("other", "user", "the office plant needs water on Mondays")
        derived = _promoted(mem)
        assert derived.sources == tuple(sorted(turns))
        assert all(_seen(mem, derived.id)[str(m)] for m in MODES)

        receipt = mem.forget(conversation_id="c1")
        assert receipt.count == 3 and receipt.derived == (derived.id,)
        _nowhere(mem, derived.id)
        assert count_rows(mem, "am_forgotten") == 4

        assert mem.undo(receipt.token) == 4
        back = mem.get(derived.id)
        assert back is not None and back.content == SAID and back.sources == derived.sources
        assert all(mem.get(t) is not None for t in turns)
        assert all(_seen(mem, derived.id)[str(m)] for m in MODES)


def test_forget_of_one_source_hides_it_and_undo_waits_for_the_other_forget(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        first = mem.add_turn("c1", "user", SAID)
        rest = [mem.add_turn("c2", "user", SAID) for _ in range(2)]
        derived = _promoted(mem)
        assert set(derived.sources) == {first, *rest}
        one = mem.forget(id=first)
        assert one.derived == (derived.id,) and mem.get(derived.id) is None
        two = mem.forget(conversation_id="c2")
        assert two.derived == ()  # hidden already
        # Undoing the first forget must not bring back a copy of what c2 said.
        assert mem.undo(one.token) == 1
        assert mem.get(first) is not None and mem.get(derived.id) is None
        assert mem.undo(two.token) == 3
        assert mem.get(derived.id) is not None


def test_erase_erases_what_was_derived_and_tombstones_it_apart(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        turns = _say_three_times(mem, "c1")
        kept = mem.add_turn("other", "user", "the office plant needs water on Mondays")
        derived = _promoted(mem)
        report = mem.erase(conversation_id="c1")
        assert report.count == 3 and set(report.ids) == set(turns)
        assert report.derived == (derived.id,)
        _nowhere(mem, derived.id)
        (stone,) = mem.tombstones()
        assert stone["count"] == 3 and stone["derived"] == [derived.id]
        assert CANARY not in repr(stone)
        assert count_rows(mem, "am_source") == 0
        assert mem.get(kept) is not None
        # What remains is derived again by consolidation's own rule: nothing here.
        assert mem.consolidate().promoted == 0


def test_erase_of_a_forgotten_source_erases_the_forgotten_derived_memory(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        _say_three_times(mem, "c1")
        derived = _promoted(mem)
        receipt = mem.forget(conversation_id="c1")
        report = mem.erase(conversation_id="c1")
        assert report.count == 3 and report.derived == (derived.id,)
        assert count_rows(mem, "am_forgotten") == 0
        assert count_rows(mem, "am_source") == 0
        try:
            mem.undo(receipt.token)
            raise AssertionError("undo after erase must fail")
        except Exception as e:  # noqa: BLE001 - NotFoundError, whatever the backend
            assert type(e).__name__ == "NotFoundError"
        _nowhere(mem, derived.id)


def test_a_derived_memory_archived_by_a_merge_goes_with_its_source(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        # An older note a near-duplicate of what c1 says: the merge keeps the note and
        # archives the promoted copy into it.
        note = mem.remember(SAID.replace(CANARY, "pim")).id
        clock.advance(minutes=1)
        _say_three_times(mem, "c1")
        report = mem.consolidate()
        assert report.promoted == 1 and report.merged == 1
        (derived,) = mem.memories(conversation_id="memories", archived="only")
        assert derived.content == SAID and len(derived.sources) == 3
        receipt = mem.forget(conversation_id="c1")
        assert receipt.derived == (derived.id,)
        _nowhere(mem, derived.id)
        mem.undo(receipt.token)
        assert _seen(mem, derived.id)["recall_archived"]
        assert mem.erase(conversation_id="c1").derived == (derived.id,)
        _nowhere(mem, derived.id)
        assert mem.get(note) is not None  # the note is its own, not derived


class Quoting:
    """A Summarizer standing in for an LLM that quotes the turns."""

    def summarize(self, turns: Sequence[Memory]) -> str:
        return "summary: " + " / ".join(t.content for t in turns)


def test_a_warm_summary_quoting_a_source_goes_with_it(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        mem.add_turn("c1", "user", SAID)
        for i in range(14):
            mem.add_turn("c1", "assistant", f"reply number {i} about the weather")
        text, _ = mem.summarize("c1", Quoting())
        assert text is not None and CANARY in text
        assert CANARY in mem.context("c1").text()
        receipt = mem.forget(conversation_id="c1")
        assert CANARY not in mem.context("c1").text()
        mem.undo(receipt.token)
        assert CANARY in mem.context("c1").text()
        mem.erase(conversation_id="c1")
        assert CANARY not in mem.context("c1").text()
        assert count_rows(mem, "am_summary") == 0


def test_an_expired_source_takes_what_was_derived_along(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        turns = [
            mem.remember(SAID, type="episodic", ttl=timedelta(days=2), conversation_id="c1").id
        ]
        turns += [mem.add_turn("c1", "user", SAID) for _ in range(2)]
        derived = _promoted(mem)
        clock.advance(days=3)
        mem.consolidate()
        assert mem.get(turns[0]) is None and mem.get(derived.id) is None
        assert mem.get(turns[1]) is not None


def test_erase_leaves_no_derived_text_on_disk(
    data_dir: Path, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(data_dir, clock, embedder=local_embedder) as mem:
        _say_three_times(mem, "c1")
        for i in range(130):  # past the checkpoint threshold: the graph holds every vector
            mem.add_turn("bulk", "user", f"note {i} tram {i * 7919 % 10007} Belem {i * 31}")
        derived = _promoted(mem)
        mem.summarize("c1", Quoting())
        assert isinstance(mem.store, SqliteMemoryStore)
        keys = mem.store.keys
        vec = bytes(
            mem.store.database.query(
                "SELECT v.embedding FROM memory m JOIN memory_vec v ON v.label = m.label"
                " WHERE m.id = ?",
                (derived.id,),
            )[0][0]
        )
    needles = halves(CANARY.encode())
    assert plaintext_left(data_dir, keys, needles)  # the scan sees the text before
    with open_memory(data_dir, clock, embedder=local_embedder) as mem:
        report = mem.erase(conversation_id="c1")
        assert report.derived == (derived.id,) and not report.pending
        assert plaintext_left(data_dir, keys, needles) == []
        assert plaintext_left(data_dir, keys, halves(vec)) == []
    ckpt = read_checkpoint(data_dir, keys)
    assert ckpt.nearest(vec)[0] < 0.9999
    assert not any(
        n in p.read_bytes()
        for p in Layout(data_dir).root.rglob("*")
        if p.is_file()
        for n in needles
    )


def test_a_store_from_before_provenance_gets_it_from_promoted_to_on_open(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        turns = _say_three_times(mem, "c1")
        derived = _promoted(mem)
        # Back to the schema before provenance (SQLite v4, PostgreSQL v1).
        if isinstance(mem.store, SqliteMemoryStore):
            with mem.store.transaction() as tx:
                tx.execute("DROP TABLE am_source")
                tx.execute("ALTER TABLE am_tombstone DROP COLUMN derived")
                tx.execute("UPDATE meta SET value = '4' WHERE key = 'agentmem_schema'")
        else:
            with mem.store.transaction() as ptx:
                ptx.execute("DROP TABLE az_am_source")
                ptx.execute("ALTER TABLE az_am_tombstone DROP COLUMN derived")
                ptx.execute("UPDATE az_meta SET value = '1' WHERE key = 'agentmem_schema'")
    with open_memory(where, clock) as mem:
        old = mem.get(derived.id)
        assert old is not None and old.sources == tuple(sorted(turns))
        assert mem.forget(conversation_id="c1").derived == (derived.id,)
        _nowhere(mem, derived.id)


def test_provenance_is_followed_to_the_end(where: Path | str, clock: Clock) -> None:
    """A memory derived from a derived one (a fact a later step extracts from a promoted
    memory, say) goes with the first source too; recorded here through the repository,
    as any deriving step records it."""
    with open_memory(where, clock) as mem:
        a = mem.add_turn("c1", "user", "Ana moved to Lisbon in May")
        b = mem.remember("Ana lives in Lisbon").id
        c = mem.remember("Ana's city is Lisbon").id
        with mem.repo.transaction() as tx:
            mem.repo.add_sources(tx, b, [a])
            mem.repo.add_sources(tx, c, [b])
        got = mem.get(c)
        assert got is not None and got.sources == (b,)
        receipt = mem.forget(id=a)
        assert receipt.derived == tuple(sorted((b, c)))
        assert mem.get(b) is None and mem.get(c) is None
        assert mem.undo(receipt.token) == 3
        assert mem.get(c) is not None
        report = mem.erase(id=a)
        assert report.ids == (a,) and report.derived == tuple(sorted((b, c)))
        assert mem.memories() == []
