"""The agent memory's schema v4: the layer's row of a memory became columns of its
``memory`` row (``schema._fold_into_memory_rows``). A store written at v3 — layer rows
in ``am_memory``, the speaker as an ``am_about`` row, a forget whose undo payload has the
v3 shape — opens at v4 with every attribute where it was, and its old forget undoes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from agentzero_store import MemoryEntry, SqliteMemoryStore, Turn
from agentzero_store.agentmem import fsrs
from agentzero_store.agentmem.sqlite.schema import MIGRATIONS, SCHEMA_KEY, migrate_chain
from agentzero_store.memory.records import to_us
from tests.conftest import FAST, PASSPHRASE

from .conftest import START, Clock, open_memory

SCOPE = ("acme", "a1")
# The v3 writer's statements (what AgentMemory wrote before v4), kept here verbatim.
V3_MEMORY = (
    "INSERT INTO am_memory (id, label, org_id, agent_id, conversation_id, type, speaker,"
    " created_at_us, fingerprint, confidence, importance, salience, stability,"
    " difficulty, last_review_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
V3_ABOUT = "INSERT INTO am_about (memory_id, org_id, agent_id, entity, key) VALUES (?,?,?,?,?)"


def _v3_store(data_dir: Path) -> dict[str, int]:
    """A data dir as the v3 layer left it: two turns and a note, one turn forgotten.
    Returns the labels of the rows written, by id."""
    store = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    try:
        migrate_chain(store, SCHEMA_KEY, MIGRATIONS[:3], "agent-memory")
        rows = [
            ("t1", "user", "I moved to Lisbon in May", "c1", "Ana", "episodic", ["Lisbon"]),
            ("t2", "assistant", "Lisbon is lovely in spring", "c1", "Bot", "episodic", []),
            ("n1", "memory", "Ana is allergic to peanuts", "memories", None, "semantic", ["Ana"]),
            ("t3", "user", "my sister is visiting Porto", "c1", "Ana", "episodic", []),
        ]
        entries = [
            MemoryEntry(
                text,
                role=role,
                conversation_id=conv,
                org_id="acme",
                agent_id="a1",
                id=mid,
                created_at=START + timedelta(minutes=i),
            )
            for i, (mid, role, text, conv, _, _, _) in enumerate(rows)
        ]
        store.append_many(entries)
        labels = {
            str(r[0]): int(r[1]) for r in store.database.query("SELECT id, label FROM memory")
        }
        with store.transaction() as tx:
            for i, (mid, _, text, conv, speaker, type_, about) in enumerate(rows):
                created = to_us(START + timedelta(minutes=i))
                sal = fsrs.text_salience(text, 0.5)
                fp = str(tx.query("SELECT fingerprint FROM memory WHERE id = ?", (mid,))[0][0])
                tx.execute(
                    V3_MEMORY,
                    (
                        mid,
                        labels[mid],
                        *SCOPE,
                        conv,
                        type_,
                        speaker,
                        created,
                        fp,
                        0.9,
                        0.5,
                        sal,
                        3.0,
                        5.0,
                        created,
                    ),
                )
                names = ([speaker] if speaker else []) + about
                for name in names:
                    tx.execute(V3_ABOUT, (mid, *SCOPE, name, name.casefold()))
            tx.execute("UPDATE am_memory SET access_count = 4, promoted_to = 'n1' WHERE id = 't1'")
            # t3 forgotten at v3: its rows live only in the undo area, in the v3 shape
            # (21 am_memory columns; the speaker among the about rows).
            am = list(tx.query("SELECT * FROM am_memory WHERE id = 't3'")[0])
            mem = list(
                tx.query(
                    "SELECT id, role, content, created_at_us, conversation_id, org_id,"
                    " agent_id, expires_at_us, kind, source, metadata, embedding_model"
                    " FROM memory WHERE id = 't3'"
                )[0]
            )
            payload = {
                "memory": mem,
                "am_memory": am,
                "about": [["Ana", "ana"]],
                "fact": None,
                "procedure": None,
                "edges": [],
            }
            tx.execute(
                "INSERT INTO am_forgotten (memory_id, token, org_id, agent_id, conversation_id,"
                " about, forgotten_at_us, until_us, payload, vector) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    "t3",
                    "tok3",
                    *SCOPE,
                    "c1",
                    json.dumps(["ana"]),
                    to_us(START),
                    to_us(START + timedelta(days=7)),
                    json.dumps(payload),
                    None,
                ),
            )
            tx.execute("DELETE FROM am_about WHERE memory_id = 't3'")
            tx.execute("DELETE FROM am_memory WHERE id = 't3'")
            tx.delete_labels([labels["t3"]])
        return labels
    finally:
        store.close()


def test_a_v3_store_opens_with_every_attribute_in_place(data_dir: Path, clock: Clock) -> None:
    labels = _v3_store(data_dir)
    with open_memory(data_dir, clock) as mem:
        db = mem.store.database
        assert db.query("SELECT type FROM sqlite_master WHERE name = 'am_memory'") == [("view",)]
        t1 = mem.get("t1")
        assert t1 is not None
        assert (t1.type, t1.speaker, t1.confidence, t1.access_count) == ("episodic", "Ana", 0.9, 4)
        assert t1.about == ("Ana", "Lisbon")
        assert t1.salience == fsrs.text_salience("I moved to Lisbon in May", 0.5)
        assert db.query("SELECT promoted_to, label FROM memory WHERE id = 't1'") == [
            ("n1", labels["t1"])
        ]
        # The speaker is a column now, not an am_about row; each scope lists its speakers.
        assert db.query("SELECT key FROM am_about WHERE memory_id = 't1'") == [("lisbon",)]
        assert sorted(db.query("SELECT key FROM am_speaker")) == [("ana",), ("bot",)]
        n1 = mem.get("n1")
        assert n1 is not None and n1.about == ("Ana",) and n1.speaker is None
        said = [m.id for m in mem.recall("Lisbon", mode="keyword", about=["Ana"])]
        assert said == ["t1"]


def test_a_forget_made_at_v3_undoes_at_v4(data_dir: Path, clock: Clock) -> None:
    _v3_store(data_dir)
    with open_memory(data_dir, clock) as mem:
        assert mem.get("t3") is None
        assert mem.undo("tok3") == 1
        t3 = mem.get("t3")
        assert t3 is not None
        assert (t3.speaker, t3.about, t3.type) == ("Ana", ("Ana",), "episodic")
        db = mem.store.database
        assert db.query("SELECT speaker_key FROM memory WHERE id = 't3'") == [("ana",)]
        # Its speaker came back as the column: no am_about row for it again.
        assert db.query("SELECT count(*) FROM am_about WHERE memory_id = 't3'") == [(0,)]
        assert [m.id for m in mem.recall("sister Porto", mode="keyword", about=["ana"])] == ["t3"]


def _stored_salience(db: object, mid: str) -> object:
    return db.query("SELECT salience FROM memory WHERE id = ?", (mid,))[0][0]  # type: ignore[attr-defined]


def test_salience_is_off_the_write_path_and_the_same_when_read(
    data_dir: Path, clock: Clock
) -> None:
    text = "I LOVE the new flat in Lisbon, moved on 3 May!"
    with open_memory(data_dir, clock) as mem:
        mid = mem.add_turn("c1", "user", text, speaker="Ana")
        db = mem.store.database
        assert _stored_salience(db, mid) is None  # nothing computed while writing
        m = mem.get(mid)
        assert m is not None and m.salience == fsrs.text_salience(text, 0.5) > 0.3
        other = mem.add_turn("c1", "user", "fine thanks")
        mem.consolidate(dry_run=True)
        assert _stored_salience(db, other) is None  # a dry run stores nothing
        mem.consolidate()
        assert _stored_salience(db, other) == fsrs.text_salience("fine thanks", 0.5)
        # Archive needs the text to compute it: done before the text leaves the row.
        late = mem.add_turn("c1", "user", "see you on Friday at 10")
        assert mem.archive(late)
        assert _stored_salience(db, late) == fsrs.text_salience("see you on Friday at 10", 0.5)
        archived = mem.get(late)
        assert archived is not None and archived.content == "see you on Friday at 10"
        assert archived.salience == fsrs.text_salience("see you on Friday at 10", 0.5)


def test_a_speaker_is_a_column_and_leaves_with_the_last_thing_they_said(
    data_dir: Path, clock: Clock
) -> None:
    with open_memory(data_dir, clock) as mem:
        ids = mem.add_turns(
            "c1",
            [Turn("user", "I moved to Lisbon", "Ana"), Turn("user", "me too", "Bo")],
            about=["Lisbon", "ana"],  # the speaker's own key: her spelling wins
        )
        db = mem.store.database
        rows = db.query("SELECT memory_id, key FROM am_about ORDER BY memory_id, key")
        assert sorted(rows) == sorted([(ids[0], "lisbon"), (ids[1], "ana"), (ids[1], "lisbon")])
        assert [m.about for m in map(mem.get, ids)] == [("Ana", "Lisbon"), ("ana", "Bo", "Lisbon")]
        assert sorted(db.query("SELECT key FROM am_speaker")) == [("ana",), ("bo",)]
        receipt = mem.forget(id=ids[1])
        assert sorted(db.query("SELECT key FROM am_speaker")) == [("ana",), ("bo",)]
        mem.undo(receipt.token)
        mem.erase(id=ids[1])  # Bo said nothing else: his name goes too
        assert sorted(db.query("SELECT key FROM am_speaker")) == [("ana",)]
        mem.erase(about="Ana")
        assert db.query("SELECT count(*) FROM am_speaker") == [(0,)]
        assert db.query("SELECT count(*) FROM memory") == [(0,)]


def test_turn_neighbours_within_one_instant_and_across_batches(
    data_dir: Path, clock: Clock
) -> None:
    """A batch's turns share one created_at: their order is the label, the trailing
    column of the store's conversation index the neighbour query walks."""
    with open_memory(data_dir, clock) as mem:
        first = mem.add_turns("c1", [Turn("user", f"turn {i}") for i in range(300)])
        clock.advance(seconds=1)
        second = mem.add_turns("c1", [Turn("user", f"next {i}") for i in range(3)])
        mem.add_turns("c2", [Turn("user", "another conversation")])
        label = {
            str(r[0]): int(r[1]) for r in mem.store.database.query("SELECT id, label FROM memory")
        }
        seeds = [label[first[0]], label[first[150]], label[first[-1]]]
        near = mem.repo.turn_neighbours(mem.repo.turn_places(seeds), 2)
        ids = {v: k for k, v in label.items()}
        assert [(ids[lab], d) for lab, d in near[seeds[0]]] == [(first[1], 1), (first[2], 2)]
        assert sorted((ids[lab], d) for lab, d in near[seeds[1]]) == sorted(
            [(first[149], 1), (first[148], 2), (first[151], 1), (first[152], 2)]
        )
        assert sorted((ids[lab], d) for lab, d in near[seeds[2]]) == sorted(
            [(first[298], 1), (first[297], 2), (second[0], 1), (second[1], 2)]
        )


def test_consolidation_forgets_a_speaker_whose_last_turn_was_deleted_below_the_layer(
    data_dir: Path, clock: Clock
) -> None:
    with open_memory(data_dir, clock) as mem:
        mem.add_turn("c1", "user", "hello from Ana", speaker="Ana")
        gone = mem.add_turn("c1", "user", "hello from Bo", speaker="Bo", about=["Lisbon"])
        assert mem.store.delete(gone)  # as `agentzero memory delete` does
        db = mem.store.database
        assert sorted(db.query("SELECT key FROM am_speaker")) == [("ana",), ("bo",)]
        mem.consolidate()
        assert db.query("SELECT key FROM am_speaker") == [("ana",)]
        assert db.query("SELECT count(*) FROM am_about WHERE memory_id = ?", (gone,)) == [(0,)]
