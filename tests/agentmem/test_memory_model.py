"""AgentMemory, part 1: the memory model on real SQLCipher files (issue 15)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from agentzero_store import (
    AgentMemory,
    InvalidArgumentError,
    LocalEmbedder,
    NotFoundError,
    Turn,
)
from agentzero_store.ops.backends import open_memory_store
from tests.conftest import FAST, PASSPHRASE

from .conftest import START, Clock, count_rows, footprint, open_memory


@pytest.fixture
def mem(bmem: AgentMemory) -> AgentMemory:
    """Every test of the memory model on both backends (``where``), but those of what
    only a data dir has (``smem``, ``data_dir``)."""
    return bmem


def contents(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory.content for h in hits]


# ---------------------------------------------------------------------- writes
def test_turns_are_episodic_memories_that_survive_reopen(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        mid = mem.add_turn("c1", "user", "I moved to Lisbon in May", speaker="Ana")
        ids = mem.add_turns("c1", [Turn("assistant", "Lisbon is lovely"), Turn("user", "Yes!")])
    with open_memory(where, clock) as mem:
        m = mem.get(mid)
        assert m is not None and m.type == "episodic" and m.speaker == "Ana"
        assert m.content == "I moved to Lisbon in May" and m.about == ("Ana",)
        assert m.created_at == START and m.conversation_id == "c1"
        assert [mem.get(i).content for i in ids] == ["Lisbon is lovely", "Yes!"]  # type: ignore[union-attr]


def test_add_turns_is_all_or_none(mem: AgentMemory) -> None:
    with pytest.raises(InvalidArgumentError):
        mem.add_turns("c1", [Turn("user", "fine"), Turn("user", "   ")])
    assert mem.recall("fine", mode="keyword") == []
    assert mem.store.count(org_id="acme") == 0


def test_remember_an_identical_memory_is_a_duplicate_and_writes_nothing(mem: AgentMemory) -> None:
    r = mem.remember("Ana is allergic to peanuts", confidence=0.9, about=["Ana"])
    seq = footprint(mem)
    again = mem.remember("ana is  ALLERGIC to peanuts", confidence=0.9, about=["Ana"])
    assert r.status == "created" and (again.id, again.status) == (r.id, "duplicate")
    assert footprint(mem) == seq
    other_type = mem.remember("Ana is allergic to peanuts", type="episodic")
    assert other_type.status == "created" and other_type.id != r.id


def test_results_are_copies(mem: AgentMemory) -> None:
    r = mem.remember("note", metadata={"tags": ["a"]})
    m = mem.get(r.id)
    assert m is not None
    m.metadata["tags"].append("mutated")  # type: ignore[index]
    assert mem.get(r.id).metadata == {"tags": ["a"]}  # type: ignore[union-attr]


# ---------------------------------------------------------------------- facts
def test_a_new_object_supersedes_a_single_valued_fact(mem: AgentMemory, clock: Clock) -> None:
    porto = mem.assert_fact("Ana", "lives_in", "Porto")
    clock.advance(days=30)
    lisbon = mem.assert_fact("Ana", "lives_in", "Lisbon", confidence=0.8)
    assert lisbon.status == "created" and lisbon.superseded == (porto.id,)
    (now,) = mem.facts(subject="ana", predicate="LIVES_IN")
    assert (now.object, now.confidence, now.current) == ("Lisbon", 0.8, True)
    (then,) = mem.facts(subject="Ana", as_of=START + timedelta(days=1))
    assert then.object == "Porto"
    old = [f for f in mem.facts(subject="Ana", history=True) if f.id == porto.id][0]
    assert old.valid_to == clock.now and old.superseded_by == lisbon.id
    closed = mem.get(porto.id)  # a closed fact is history, still there to read and forget
    assert closed is not None and closed.content == "Ana lives in Porto"
    assert any(e.type == "supersedes" and e.dst == porto.id for e in mem.edges(lisbon.id))
    # recall sees current knowledge only; as_of sees the past
    assert contents(mem.recall("Ana lives", mode="keyword")) == ["Ana lives in Lisbon"]
    past = mem.recall("Ana lives", mode="keyword", as_of=START + timedelta(days=1))
    assert contents(past) == ["Ana lives in Porto"]


def test_facts_duplicate_update_multi_valued_and_retract(mem: AgentMemory) -> None:
    a = mem.assert_fact("Ana", "speaks", "Portuguese", single_valued=False)
    b = mem.assert_fact("Ana", "speaks", "English", single_valued=False)
    assert b.superseded == () and len(mem.facts(subject="Ana")) == 2
    assert mem.assert_fact("Ana", "speaks", "english", single_valued=False).status == "duplicate"
    up = mem.assert_fact("Ana", "speaks", "English", confidence=0.5, single_valued=False)
    assert (up.id, up.status) == (b.id, "updated")
    gone = mem.retract(a.id)
    assert gone.retracted and not gone.current
    assert [f.object for f in mem.facts(subject="Ana")] == ["English"]
    ops = [(h.op, h.target) for h in mem.history()]
    assert ops == [
        ("assert", a.id),
        ("assert", b.id),
        ("confidence", b.id),
        ("retract", a.id),
    ]


def test_belief_history_is_append_only_and_ordered(mem: AgentMemory, clock: Clock) -> None:
    first = mem.assert_fact("Ana", "job", "nurse")
    clock.advance(days=1)
    second = mem.assert_fact("Ana", "job", "doctor")
    h = mem.history()
    assert [x.op for x in h] == ["assert", "assert", "supersede"]
    assert h[1].detail["object"] == "doctor" and h[2].target == first.id
    assert h[2].detail == {"by": second.id}
    assert [x.seq for x in h] == sorted(x.seq for x in h)


# ---------------------------------------------------------------------- procedures
def test_procedure_reliability_is_the_beta_mean(mem: AgentMemory) -> None:
    for ok in (True, True, False):
        p = mem.record_outcome("run the tests after a refactor", success=ok, context="rust")
    assert (p.successes, p.failures) == (2, 1) and p.reliability == pytest.approx(3 / 5)
    for _ in range(3):
        mem.record_outcome("rewrite the refactor from scratch", success=False, context="rust")
    best = mem.best_procedures("refactor", k=2, mode="keyword")
    assert [b.action for b in best][0] == "run the tests after a refactor"


def test_a_fact_deleted_below_the_layer_is_neither_listed_nor_a_duplicate(
    mem: AgentMemory,
) -> None:
    """A delete through the memory store leaves the fact's rows until consolidation:
    ``facts`` must not list it meanwhile, and asserting it again must store it again
    (not answer "duplicate" with the id of a memory that is gone)."""
    first = mem.assert_fact("Ana", "likes", "apples")
    assert mem.store.delete(first.id)
    assert mem.facts(subject="Ana") == []
    again = mem.assert_fact("Ana", "likes", "apples")
    assert again.status == "created" and again.id != first.id
    assert mem.get(again.id) is not None
    assert [f.id for f in mem.facts(subject="Ana")] == [again.id]
    assert [f.id for f in mem.facts(subject="Ana", history=True)] == [again.id]


def test_an_outcome_after_a_delete_below_the_layer_is_recorded_on_a_live_memory(
    mem: AgentMemory,
) -> None:
    """``agentzero memory delete`` removes the procedure's memory row and leaves its
    layer rows until consolidation: the next outcome of that action must not count on
    them (it was acknowledged under an id no read found), but start the action anew."""
    first = mem.record_outcome("water the ferns", success=True, context="home")
    mem.record_outcome("water the ferns", success=True, context="home")
    assert mem.store.delete(first.id)
    again = mem.record_outcome("water the ferns", success=False, context="home")
    assert again.id != first.id
    got = mem.get(again.id)
    assert got is not None and got.type == "procedural"
    assert (again.successes, again.failures) == (0, 1)  # the deleted counts went with it
    assert [p.id for p in mem.best_procedures("ferns", k=3, mode="keyword")] == [again.id]
    assert mem.repo.orphans() == []  # the deleted memory's layer rows went with it


# ---------------------------------------------------------------------- recall
def test_recall_filters_types_about_and_archive(mem: AgentMemory) -> None:
    t = mem.add_turn("c1", "user", "my dog Rex loves the beach", speaker="Ana")
    s = mem.remember("Rex is a beagle", about=["Rex"])
    mem.record_outcome("walk Rex at the beach before breakfast", success=True)
    assert set(contents(mem.recall("Rex beach", mode="keyword"))) == {
        "my dog Rex loves the beach",
        "Rex is a beagle",
        "walk Rex at the beach before breakfast",
    }
    assert contents(mem.recall("Rex", mode="keyword", types=["semantic"])) == ["Rex is a beagle"]
    assert contents(mem.recall("Rex", mode="keyword", about="ana")) == [
        "my dog Rex loves the beach"
    ]
    mem.archive(s.id)
    assert "Rex is a beagle" not in contents(mem.recall("Rex beagle", mode="keyword"))
    hit = mem.recall("beagle", mode="keyword", include_archived=True)
    assert contents(hit) == ["Rex is a beagle"] and hit[0].memory.archived
    with pytest.raises(InvalidArgumentError):
        mem.recall("Rex", types=["dream"])
    assert mem.get(t) is not None


def test_recall_never_returns_expired_memories(mem: AgentMemory, clock: Clock) -> None:
    mem.remember("the door code is 4711", ttl=timedelta(hours=1))
    assert contents(mem.recall("door code", mode="keyword")) == ["the door code is 4711"]
    clock.advance(hours=2)
    assert mem.recall("door code", mode="keyword") == []
    assert mem.consolidate().expired == 1


def test_other_agents_see_nothing_and_cannot_touch_ids(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as a1:
        mid = a1.remember("a1 secret plan about zebras").id
    with open_memory(where, clock, agent_id="a2") as a2:
        assert a2.recall("zebras", mode="keyword") == []
        assert a2.get(mid) is None
        for call in (
            lambda: a2.forget(id=mid),
            lambda: a2.archive(mid),
            lambda: a2.feedback(mid),
            lambda: a2.erase(id=mid),
        ):
            with pytest.raises(NotFoundError):
                call()
    with open_memory(where, clock, org_id="other") as other:
        assert other.recall("zebras", mode="keyword") == [] and other.get(mid) is None
    with open_memory(where, clock) as a1:
        assert a1.get(mid) is not None


# ---------------------------------------------------------------------- decay
def test_retrievability_follows_the_fsrs_curve(mem: AgentMemory, clock: Clock) -> None:
    mid = mem.add_turn("c1", "user", "ok")
    m = mem.get(mid)
    assert m is not None
    s_eff = m.stability_days * (1 + mem.config.salience_beta * m.salience)
    assert mem.retrievability(mid) == 1.0
    assert mem.retrievability(mid, at=START + timedelta(days=s_eff)) == pytest.approx(0.9)
    assert mem.retrievability(mid, at=START + timedelta(days=9 * s_eff)) == pytest.approx(0.5)


def test_only_feedback_strengthens_and_popularity_cannot_run_away(
    mem: AgentMemory, clock: Clock
) -> None:
    mid = mem.remember("Ana's birthday is on 3 March").id
    s0 = mem.get(mid).stability_days  # type: ignore[union-attr]
    for _ in range(300):  # recalled over and over: logged, never strengthened
        assert mem.recall("birthday", mode="keyword")[0].id == mid
    m = mem.get(mid)
    assert m is not None and m.stability_days == s0
    mem.flush()
    assert mem.get(mid).access_count == 300  # type: ignore[union-attr]
    # feedback at once, again and again: R stays 1, so S cannot grow (rich-get-richer guard)
    for _ in range(100):
        mem.feedback(mid, used=True)
    assert mem.get(mid).stability_days == pytest.approx(s0)  # type: ignore[union-attr]
    # after a month, a used recall grows S; unused only raises difficulty
    clock.advance(days=30)
    grown = mem.feedback(mid, used=True)
    assert grown.stability_days > s0 and grown.last_review == clock.now
    clock.advance(days=30)
    unused = mem.feedback(mid, used=False)
    assert unused.stability_days == grown.stability_days and unused.difficulty > grown.difficulty


# ---------------------------------------------------------------------- archive
def test_archive_moves_the_text_out_of_memory_db_and_restore_brings_it_back(
    mem: AgentMemory,
) -> None:
    mid = mem.remember("the quokka named Zanzibar sleeps in the garage").id
    assert mem.archive(mid) and not mem.archive(mid)
    row = mem.store.get(mid)
    assert row is not None and row.kind == "archived" and "quokka" not in row.content
    m = mem.get(mid)
    assert m is not None and m.archived and "quokka" in m.content
    assert mem.restore(mid) and not mem.restore(mid)
    assert mem.store.get(mid).content == m.content  # type: ignore[union-attr]
    assert mem.archive_file.ids() == set()


def test_a_missing_archive_is_reported_precisely(data_dir: Path, clock: Clock) -> None:
    from agentzero_store import CorruptStoreError

    with open_memory(data_dir, clock) as mem:
        mid = mem.remember("archived text").id
        mem.archive(mid)
    (data_dir / "memory.archive.db").unlink()
    with pytest.raises(CorruptStoreError) as err:
        open_memory(data_dir, clock)
    assert "1 archived memories" in err.value.message and mid in err.value.message


# ---------------------------------------------------------------------- forget, undo, erase
def test_forget_is_soft_and_undo_brings_everything_back(mem: AgentMemory, clock: Clock) -> None:
    t = mem.add_turn("c1", "user", "Ana adopted a cat called Miso", speaker="Ana")
    f = mem.assert_fact("Ana", "has_pet", "Miso")
    keep = mem.remember("the weather was mild")
    mem.archive(t)
    receipt = mem.forget(about="ana")
    assert receipt.count == 2 and set(receipt.ids) == {t, f.id}
    assert receipt.recoverable_until == clock.now + timedelta(days=7)
    assert mem.recall("Miso cat", mode="keyword", include_archived=True) == []
    assert mem.get(t) is None and mem.facts(subject="Ana") == []
    assert mem.get(keep.id) is not None
    clock.advance(days=6)
    assert mem.undo(receipt.token) == 2
    m = mem.get(t)
    assert m is not None and m.archived and m.content == "Ana adopted a cat called Miso"
    assert [x.object for x in mem.facts(subject="Ana")] == ["Miso"]
    # the archived turn's words are still searchable after the undo
    assert contents(
        mem.recall("Miso", mode="keyword", include_archived=True, types="episodic")
    ) == ["Ana adopted a cat called Miso"]
    with pytest.raises(NotFoundError):
        mem.undo(receipt.token)  # used up


def test_undo_window_closes_and_consolidation_purges(mem: AgentMemory, clock: Clock) -> None:
    mid = mem.remember("temporary note").id
    receipt = mem.forget(id=mid)
    clock.advance(days=8)
    with pytest.raises(NotFoundError):
        mem.undo(receipt.token)
    assert mem.consolidate().purged == 1
    assert count_rows(mem, "am_forgotten") == 0
    assert count_rows(mem, "am_purge") == 0  # finished like an erase


def test_forget_needs_exactly_one_selector(mem: AgentMemory) -> None:
    for kw in ({}, {"id": "x", "about": "y"}):
        with pytest.raises(InvalidArgumentError):
            mem.forget(**kw)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        mem.forget(id="no-such-id")
    assert mem.forget(conversation_id="empty").count == 0


def test_erase_leaves_a_content_free_tombstone(mem: AgentMemory) -> None:
    a = mem.add_turn("c9", "user", "my passport number is X123", speaker="Bo")
    b = mem.add_turn("c9", "user", "and my bank is Foo", speaker="Bo")
    forgotten = mem.remember("Bo's address is 1 Elm St", about=["Bo"]).id
    mem.forget(id=forgotten)
    report = mem.erase(about="bo")
    assert set(report.ids) == {a, b, forgotten}
    (stone,) = mem.tombstones()
    assert stone["count"] == 3 and stone["selector"] == "about" and "Bo" not in str(stone)
    assert mem.recall("passport bank address", mode="keyword", include_archived=True) == []
    assert count_rows(mem, "am_forgotten") == 0
    assert count_rows(mem, "am_purge") == 0


# ---------------------------------------------------------------------- consolidation
def test_recurring_episodes_are_promoted_once(mem: AgentMemory, clock: Clock) -> None:
    for i in range(3):
        mem.add_turn(f"c{i}", "user", "I drink my coffee black every morning", speaker="Ana")
        clock.advance(days=1)
    mem.add_turn("c9", "user", "something else entirely", speaker="Ana")
    report = mem.consolidate()
    assert (report.promoted, report.linked) == (1, 0)
    (sem,) = mem.recall("coffee black", mode="keyword", types="semantic")
    assert sem.memory.about == ("Ana",)
    assert sum(e.type == "semantic" for e in mem.edges(sem.id)) == 3
    again = mem.consolidate()
    assert again.promoted == again.linked == again.decayed == again.archived == 0
    mem.add_turn("c5", "user", "I drink my coffee black every morning")
    assert mem.consolidate().linked == 1


def test_near_duplicate_notes_merge_into_the_oldest(mem: AgentMemory, clock: Clock) -> None:
    old = mem.remember("Ana prefers window seats on long flights").id
    clock.advance(hours=1)
    mem.remember("Ana prefers window seats on long flights!!")
    report = mem.consolidate(dry_run=True)
    assert report.merged == 1 and report.dry_run
    assert mem.consolidate().merged == 1
    assert [h.id for h in mem.recall("window seats", mode="keyword")] == [old]
    assert mem.consolidate().merged == 0


def test_faded_memories_are_archived_and_still_found(mem: AgentMemory, clock: Clock) -> None:
    mid = mem.add_turn("c1", "user", "we talked about the red kite festival")
    clock.advance(days=5_000)
    report = mem.consolidate()
    assert report.archived == 1 and report.decayed == 1
    assert mem.recall("kite festival", mode="keyword") == []
    hits = mem.recall("kite festival", mode="keyword", include_archived=True)
    assert [h.id for h in hits] == [mid] and "kite" in hits[0].memory.content


# ---------------------------------------------------------------------- semantic
def test_hybrid_recall_with_the_local_embedder(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        mem.add_turn("c1", "user", "I adopted a small grey kitten", speaker="Ana")
        mem.add_turn("c1", "user", "The train to Porto was late again")
        mem.remember("Ana works as a nurse at the city hospital", about=["Ana"])
        hits = mem.recall("which pet was adopted?", k=2)
        assert hits[0].memory.content == "I adopted a small grey kitten"
        assert "semantic" in hits[0].ranks
        sem = mem.recall("medical job", k=1, mode="semantic", types="semantic")
        assert sem[0].memory.content.startswith("Ana works as a nurse")


def test_the_memory_store_keeps_working_beside_the_agent_layer(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock) as mem:
        mid = mem.remember("shared text about otters").id
    with open_memory_store(where, passphrase=PASSPHRASE, config=FAST) as store:
        assert [h.id for h in store.keyword_recall("otters", org_id="acme")] == [mid]
        assert store.delete(mid)
    with open_memory(where, clock) as mem:
        assert mem.get(mid) is None
        mem.consolidate()  # the layer's orphan rows go
        assert count_rows(mem, "am_memory") == 0


def test_a_narrow_filter_is_never_starved_by_the_index_candidates(mem: AgentMemory) -> None:
    for i in range(40):  # short notes: BM25 ranks them above the long turn
        mem.remember(f"apple {i}")
    turn = mem.add_turn("c1", "user", "an apple and a great many other words besides it here")
    hits = mem.recall("apple", k=1, mode="keyword", types="episodic")
    assert [h.id for h in hits] == [turn]


def test_two_processes_writing_the_same_note_and_fact_store_each_once(
    where: Path | str, clock: Clock
) -> None:
    import subprocess
    import sys

    open_memory(where, clock).close()
    child = (
        "import sys\n"
        "from agentzero_store import AgentMemory\n"
        "from tests.conftest import FAST, PASSPHRASE\n"
        "m = AgentMemory.open(sys.argv[1], passphrase=PASSPHRASE, org_id='acme',"
        " agent_id='a1', config=FAST)\n"
        "for i in range(15):\n"
        "    m.remember(f'shared note {i}')\n"
        "    m.assert_fact('Ana', 'lives_in', f'City {i}')\n"
        "    m.record_outcome('deploy on friday', success=bool(i % 2))\n"
        "m.close()\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", child, str(where)], cwd=Path(__file__).parents[2])
        for _ in range(2)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with open_memory(where, clock) as mem:
        notes = mem.recall("shared note", k=100, mode="keyword", types="semantic")
        assert sorted(h.memory.content for h in notes if "note" in h.memory.content) == sorted(
            f"shared note {i}" for i in range(15)
        )
        assert len(mem.facts(subject="Ana")) == 1  # single-valued: one current, never two
        (p,) = mem.best_procedures("deploy on friday", mode="keyword")
        assert p.successes + p.failures == 30


def test_a_missing_archive_is_reported_even_if_only_forgotten_memories_need_it(
    data_dir: Path, clock: Clock
) -> None:
    from agentzero_store import CorruptStoreError

    with open_memory(data_dir, clock) as mem:
        mid = mem.remember("archived then forgotten").id
        mem.archive(mid)
        mem.forget(id=mid)
    (data_dir / "memory.archive.db").unlink()
    with pytest.raises(CorruptStoreError) as err:
        open_memory(data_dir, clock)
    assert mid in err.value.message


def test_prune_archives_the_least_important_until_the_rest_fits(
    mem: AgentMemory, clock: Clock
) -> None:
    old = mem.remember("an old unimportant note about nothing much", importance=0.0).id
    clock.advance(days=200)
    vip = mem.remember("the launch code rule: never share it", importance=1.0).id
    fresh = mem.remember("a fresh note from today", importance=0.5).id
    would = mem.prune(max_tokens=20, dry_run=True)
    assert would == [old] and mem.get(old).archived is False  # type: ignore[union-attr]
    assert mem.prune(max_tokens=20) == [old]
    assert mem.get(old).archived and not mem.get(vip).archived  # type: ignore[union-attr]
    assert mem.prune(max_tokens=0) == [fresh, vip]
    assert mem.prune(max_tokens=0) == []
