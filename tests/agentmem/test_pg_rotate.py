"""Key rotation of a PostgreSQL store the agent memory uses (a real server).

After a realistic session (the memory store's own rows with vectors; turns with
speakers and entities, facts superseded, procedures, pins, warm summaries sealed and
extractive, an archived memory, forgets pending undo (of a turn, of a fact, of a
procedure, of an archived note), a shared namespace, another agent of the org):

- everything reads back identically with the same passphrase: every memory, recall in
  each mode, facts and their history, procedures, context packs; the pending forgets
  undo and the archived memory restores;
- the old master key opens no sealed value and its keyed hashes match nothing;
- a kill -9 of the rotating process mid-way leaves every row as it was (the old keys
  work); a wrong passphrase changes no row;
- an agent memory opened before the rotation is refused (``KeyRotatedError``) on its
  next write and read, never told of tampering.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentzero_store import (
    CorruptStoreError,
    KeyRotatedError,
    LocalEmbedder,
    MemoryEntry,
    PgMemoryStore,
    TamperedRecordError,
    Turn,
    WrongKeyError,
)
from agentzero_store.agentmem.postgres.archive import open_text
from agentzero_store.agentmem.postgres.beliefs import history_row_id
from agentzero_store.agentmem.postgres.codec import LayerCodec
from agentzero_store.agentmem.records import Memory, entity_key
from agentzero_store.memory.postgres.rows import COLUMNS, RowCodec
from agentzero_store.ops import rotate_keys
from agentzero_store.sidecar.bm25_terms import BlindTerms
from agentzero_store.storage.credentials import Credential
from agentzero_store.storage.keys import StoreKeys
from tests.conftest import FAST, PASSPHRASE, child_env

from .conftest import Clock, open_memory

CRED = Credential.from_passphrase(PASSPHRASE)
STORE_TEXTS = [
    "the blue notebook is in the attic",
    "buy a green notebook for school",
    "call the plumber on monday about the leak",
    "the attic window is stuck again",
    "book the dentist for thursday morning",
]
QUERIES = ["Where does Ana live?", "wifi password", "parking level", "chores", "server"]


class Fixed:
    """A summarizer whose text is known (sealed in az_am_summary.text)."""

    def summarize(self, turns: Sequence[Memory]) -> str:
        return f"Bo listed {len(turns)} chores, the dishes first"


@dataclass
class Session:
    store_ids: list[str]
    facts: dict[str, str]
    archived: str
    tokens: dict[str, str]  # what was forgotten -> the undo token
    forgotten: dict[str, str]  # what was forgotten -> its memory id
    texts: dict[str, str] = field(default_factory=dict)


def _session(url: str, clock: Clock, embedder: LocalEmbedder) -> Session:
    with PgMemoryStore.open(url, passphrase=PASSPHRASE, config=FAST, embedder=embedder) as st:
        store_ids = st.append_many(
            [
                MemoryEntry(
                    t,
                    org_id="store",
                    agent_id="s1",
                    conversation_id=f"c{i % 2}",
                    metadata={"n": i, "tags": ["x", "y"]},
                )  # fmt: skip
                for i, t in enumerate(STORE_TEXTS)
            ]
        )
    with open_memory(url, clock, embedder=embedder) as mem:
        mem.add_turns(
            "conv1",
            [
                Turn("user", "I moved to Lisbon in May", speaker="Ana"),
                Turn("assistant", "Lisbon is lovely in spring", speaker="Helper"),
            ],
            about=["Lisbon"],
        )
        mem.add_turn("conv1", "user", "My sister Bea lives in Porto", speaker="Ana",
                     about=["Bea", "Porto"])  # fmt: skip
        clock.advance(hours=1)
        f1 = mem.assert_fact("Ana", "lives_in", "Lisbon")
        clock.advance(hours=1)
        f2 = mem.assert_fact("Ana", "lives_in", "Porto")  # supersedes f1
        f3 = mem.assert_fact("Bea", "works_at", "the hospital")
        mem.record_outcome("restart the server", success=True, context="deploy")
        mem.record_outcome("restart the server", success=False, context="deploy")
        mem.record_outcome("clear the cache", success=True)  # no context: keyed by ""
        note = mem.remember("The wifi password is on the fridge", about=["wifi"])
        assert mem.archive(note.id)
        parking = mem.remember("Parking is on level 3", about=["parking"])
        assert mem.archive(parking.id)
        key = mem.remember("The spare key is under the blue pot", about=["key"])
        tea = mem.assert_fact("Ana", "likes", "green tea")
        plants = mem.record_outcome("water the plants", success=True, context="garden")
        turn = mem.add_turn("conv4", "user", "Call me Anita from now on", speaker="Anita")
        forgotten = {"note": key.id, "archived note": parking.id, "fact": tea.id,
                     "procedure": plants.id, "turn": turn}  # fmt: skip
        tokens = {what: mem.forget(id=mid).token for what, mid in forgotten.items()}
        mem.add_turns("conv2", [Turn("user", f"chore {i}: the dishes", speaker="Bo")
                                for i in range(30)])  # fmt: skip
        mem.add_turns("conv3", [Turn("user", f"server log line {i}") for i in range(30)])
        assert mem.summarize("conv2", summarizer=Fixed())[0] is not None
        assert mem.summarize("conv3")[0] is None  # extractive
        mem.pin(f2.id)
        mem.mark_core(f3.id)
        mem.namespace("team")
        with mem.shared("team") as shared:
            shared.remember("The team standup is at nine", about=["standup"])
            shared.add_turn("t1", "user", "Standup moved to ten", speaker="Ana")
    with open_memory(url, clock, agent_id="a2", embedder=embedder) as other:
        other.add_turn("c1", "user", "Ana is my manager", speaker="Ana", about=["Ana"])
    return Session(
        store_ids,
        {"f1": f1.id, "f2": f2.id, "f3": f3.id},
        note.id,
        tokens,
        forgotten,
        {"note": "The wifi password is on the fridge"},
    )


def _observe(url: str, clock: Clock, embedder: LocalEmbedder, s: Session) -> dict[str, Any]:
    """Everything a client reads of the session (nothing written: recall with log=False)."""
    out: dict[str, Any] = {}
    with PgMemoryStore.open(url, passphrase=PASSPHRASE, config=FAST, embedder=embedder) as st:
        q = embedder.embed(["where is the notebook"])[0]
        out["store"] = (
            st.recent(50, org_id="store"),
            [st.get(i) for i in s.store_ids],
            st.keyword_recall("notebook attic", 5, org_id="store"),
            st.semantic_recall(q, 5, org_id="store"),
            st.hybrid_recall("notebook in the attic", limit=5, org_id="store"),
        )
    with open_memory(url, clock, embedder=embedder) as mem:
        out["memories"] = mem.memories(archived="include", limit=500)
        out["recall"] = [
            mem.recall(q, 5, mode=m, log=False, include_archived=True)
            for m in ("keyword", "semantic", "hybrid", "auto")
            for q in QUERIES
        ]
        out["about"] = mem.recall("Ana", 5, about="Ana", log=False)
        out["facts"] = (mem.facts(history=True), mem.facts("Ana"), mem.facts("ana", "LIVES_IN"))
        out["history"] = mem.history()
        out["procedures"] = (
            mem.best_procedures("restart the server", k=3),
            mem.best_procedures("clear the cache", k=3),
        )
        out["context"] = [
            mem.context(c, "chores", max_tokens=600).to_dict() for c in ("conv2", "conv3")
        ]
        out["pins"] = (mem.pinned(), mem.core_facts())
        out["edges"] = mem.edges(s.facts["f2"])
        out["archived"] = mem.get(s.archived)
        out["namespaces"] = mem.namespaces()
        with mem.shared("team") as shared:
            out["shared"] = (
                shared.memories(limit=50),
                shared.recall("standup", 3, mode="keyword", log=False),
            )
    with open_memory(url, clock, agent_id="a2", embedder=embedder) as other:
        out["other"] = (other.memories(), other.recall("Ana", 3, about="Ana", log=False))
    return out


def _tables(url: str) -> dict[str, list[str]]:
    """Every row of every ``az_`` table (what "no row changed" compares)."""
    with psycopg.connect(url) as c:
        names = [
            str(r[0])
            for r in c.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'az\\_%' ORDER BY 1"
            )
        ]
        return {t: sorted(repr(r) for r in c.execute(f"SELECT * FROM {t}")) for t in names}


def _keys(url: str) -> StoreKeys:
    with PgMemoryStore.open(url, passphrase=PASSPHRASE, config=FAST) as st:
        return st.keys


@pytest.fixture
def session(pg_url: str, clock: Clock, local_embedder: LocalEmbedder) -> Iterator[Session]:
    yield _session(pg_url, clock, local_embedder)


def test_everything_reads_back_identically_after_a_rotation(
    pg_url: str, clock: Clock, local_embedder: LocalEmbedder, session: Session
) -> None:
    before = _observe(pg_url, clock, local_embedder, session)
    old = _keys(pg_url)
    r = rotate_keys(pg_url, CRED)
    assert r.memory_rekeyed and r.archive_rekeyed and r.slots_dropped == []
    assert r.recomputed == {}  # every hash derived from its value exactly as written
    assert r.resealed["az_am_forgotten"] == 5 and r.resealed["az_am_archive"] == 2
    assert r.resealed["az_am_fact"] == 3 and r.resealed["az_am_summary"] == 2
    assert _keys(pg_url).master != old.master
    after = _observe(pg_url, clock, local_embedder, session)
    for part in before:
        assert after[part] == before[part], part
    assert after["archived"].content == session.texts["note"]
    with open_memory(pg_url, clock, embedder=local_embedder) as mem:
        for what, token in session.tokens.items():
            assert mem.undo(token) == 1, what
        back = {what: mem.get(mid) for what, mid in session.forgotten.items()}
        assert back["archived note"] is not None and back["archived note"].archived
        assert back["archived note"].content == "Parking is on level 3"
        assert back["turn"] is not None and back["turn"].speaker == "Anita"
        assert [f.object for f in mem.facts("Ana", "likes")] == ["green tea"]
        assert "water the plants" in {
            p.action for p in mem.best_procedures("water the plants", k=3)
        }
        assert mem.recall("Anita", 3, about="Anita", log=False)[0].id == session.forgotten["turn"]
        assert mem.restore(session.archived)
        restored = mem.get(session.archived)
        assert restored is not None and not restored.archived
        assert restored.content == session.texts["note"]
        hits = mem.recall("wifi password fridge", 3, mode="keyword", log=False)
        assert hits[0].id == session.archived
        # New writes go on under the new key, and dedupe against re-keyed fingerprints.
        assert mem.remember("The wifi password is on the fridge").status == "duplicate"
        mem.add_turn("conv1", "user", "Ana again", speaker="Ana")


def _sealed(c: Any) -> Iterator[tuple[str, str, str, str, bytes]]:
    """(codec table, row id, org, agent, blob) of every sealed value of the layer."""
    queries = {
        "az_memory.speaker": "SELECT id, org_id, agent_id, speaker FROM az_memory"
        " WHERE speaker IS NOT NULL",
        "az_am_about": "SELECT memory_id, org_id, agent_id, entity FROM az_am_about",
        "az_am_fact": "SELECT id, org_id, agent_id, sealed FROM az_am_fact",
        "az_am_procedure": "SELECT id, org_id, agent_id, sealed FROM az_am_procedure",
        "az_am_summary": "SELECT id, org_id, agent_id, text FROM az_am_summary"
        " WHERE text IS NOT NULL",
        "az_am_forgotten": "SELECT memory_id, org_id, agent_id, payload FROM az_am_forgotten",
        "az_am_archive": "SELECT id, org_id, agent_id, sealed FROM az_am_archive",
    }
    for table, sql in queries.items():
        for rid, org, agent, blob in c.execute(sql):
            yield table, str(rid), str(org), str(agent), bytes(blob)
    for _seq, org, agent, at, op, target, blob in c.execute(
        "SELECT seq, org_id, agent_id, at_us, op, target, detail FROM az_am_history"
    ):
        yield (
            "az_am_history",
            history_row_id(op, target, int(at)),
            str(org),
            str(agent),
            bytes(blob),
        )


def test_the_old_master_key_opens_nothing_and_its_hashes_match_nothing(
    pg_url: str, session: Session
) -> None:
    old = _keys(pg_url)
    rotate_keys(pg_url, CRED)
    new = _keys(pg_url)
    with psycopg.connect(pg_url) as c:
        rows = c.execute(f"SELECT {COLUMNS}, fingerprint FROM az_memory").fetchall()
        sealed = list(_sealed(c))
        facts = c.execute(
            "SELECT id, org_id, agent_id, sealed, subject_key, predicate_key, object_key"
            " FROM az_am_fact"
        ).fetchall()
        about = c.execute(
            "SELECT org_id, agent_id, memory_id, entity, key FROM az_am_about"
        ).fetchall()
        speakers = {str(r[0]) for r in c.execute("SELECT key FROM az_am_speaker")}
        forgotten = c.execute("SELECT org_id, agent_id, memory_id, payload, about"
                              " FROM az_am_forgotten").fetchall()  # fmt: skip
        archive = c.execute(
            "SELECT m.id, m.org_id, m.agent_id, m.archive_digest, a.sealed"
            " FROM az_memory m JOIN az_am_archive a ON a.id = m.id"
        ).fetchall()
        terms = {str(r[0]) for r in c.execute("SELECT term FROM az_terms")}
    assert len(rows) >= 70 and len(sealed) >= 40
    old_rows, new_rows = RowCodec(old), RowCodec(new)
    for row in rows:
        with pytest.raises(TamperedRecordError):
            old_rows.open(row[:8])
        new_rows.open(row[:8])
    for table, rid, org, agent, blob in sealed:
        with pytest.raises(TamperedRecordError):
            LayerCodec(old, org, agent).open(table, rid, blob)
        LayerCodec(new, org, agent).open(table, rid, blob)
    for fid, org, agent, blob, *keys in facts:
        parts = LayerCodec(new, org, agent).open("az_am_fact", fid, blob)
        assert keys == [LayerCodec(new, org, agent).blind(entity_key(x)) for x in parts]
        assert not set(keys) & {LayerCodec(old, org, agent).blind(entity_key(x)) for x in parts}
    for org, agent, mid, blob, key in about:
        name = LayerCodec(new, org, agent).open("az_am_about", mid, blob)
        assert key == LayerCodec(new, org, agent).blind(entity_key(name))
        assert key != LayerCodec(old, org, agent).blind(entity_key(name))
    assert LayerCodec(new, "acme", "a1").blind("ana") in speakers
    assert LayerCodec(old, "acme", "a1").blind("ana") not in speakers
    for org, agent, mid, blob, keys in forgotten:
        p = LayerCodec(new, org, agent).open("az_am_forgotten", mid, blob)
        plain = {k for _, k in p["about"]} | ({p["am_memory"][-1]} if p["am_memory"][-1] else set())
        assert json.loads(keys) == sorted(LayerCodec(new, org, agent).blind(k) for k in plain)
    for mid, org, agent, digest, blob in archive:
        text = open_text(LayerCodec(new, org, agent), mid, blob)
        assert digest == LayerCodec(new, org, agent).digest(*text)
    words = " ".join(STORE_TEXTS + ["Lisbon Porto wifi password fridge chore dishes"])
    assert not terms & set(BlindTerms(old.subkey("pg-bm25-terms")).terms(words))
    assert set(BlindTerms(new.subkey("pg-bm25-terms")).terms(words)) <= terms


ROTATE_CHILD = """
import os, sys, time
from agentzero_store.ops import rotate_keys
from agentzero_store.storage.credentials import Credential

def progress(done, total):
    if done >= 500:  # past the first batch of rows, long before the last
        print("mid", done, total, flush=True)
        time.sleep(600)

rotate_keys(sys.argv[1], Credential.from_passphrase(sys.argv[2]), progress=progress)
print("finished", flush=True)
"""


def test_a_kill_9_mid_rotation_changes_no_row_and_the_old_keys_work(
    pg_url: str, clock: Clock, local_embedder: LocalEmbedder, session: Session
) -> None:
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as st:
        st.append_many([MemoryEntry(f"filler {i}", org_id="fill") for i in range(900)])
    seen = _observe(pg_url, clock, local_embedder, session)
    before = _tables(pg_url)  # after the reads (an open may move the adoption mark)
    p = subprocess.Popen(
        [sys.executable, "-c", ROTATE_CHILD, pg_url, PASSPHRASE],
        stdout=subprocess.PIPE,
        text=True,
        env={**child_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert p.stdout is not None
    line = p.stdout.readline().split()
    assert line[0] == "mid" and 500 <= int(line[1]) < int(line[2]), line
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert _tables(pg_url) == before  # no row half-rotated: the transaction rolled back
    assert _observe(pg_url, clock, local_embedder, session) == seen
    with open_memory(pg_url, clock, embedder=local_embedder) as mem:
        mem.add_turn("conv1", "user", "still the old key", speaker="Ana")
    r = rotate_keys(pg_url, CRED)  # and a rotation afterwards runs to the end
    assert r.resealed["az_memory"] > 900


def test_a_wrong_passphrase_changes_no_row(pg_url: str, session: Session) -> None:
    before = _tables(pg_url)
    with pytest.raises(WrongKeyError):
        rotate_keys(pg_url, Credential.from_passphrase("not the passphrase"))
    assert _tables(pg_url) == before


def test_an_agent_memory_opened_before_is_refused_after_a_rotation(
    pg_url: str, clock: Clock, session: Session
) -> None:
    stale = open_memory(pg_url, clock)
    fact = session.facts["f2"]
    assert stale.get(fact) is not None
    rotate_keys(pg_url, CRED)
    for call in (
        lambda: stale.get(fact),
        lambda: stale.facts("Ana"),  # a blinded lookup: it would match nothing
        lambda: stale.recall("Lisbon", mode="keyword", log=False),
        lambda: stale.memories(about="Ana"),
        lambda: stale.add_turn("conv1", "user", "sealed with the old key?", speaker="Ana"),
        lambda: stale.assert_fact("Ana", "lives_in", "Faro"),
        lambda: stale.forget(id=fact),
    ):
        with pytest.raises(KeyRotatedError):
            call()
    stale.close()
    with open_memory(pg_url, clock) as mem:
        assert [f.object for f in mem.facts("Ana", "lives_in")] == ["Porto"]
        assert not any("old key" in m.content for m in mem.memories(limit=500))


def test_a_damaged_archived_text_stays_reported_as_damaged(
    pg_url: str, clock: Clock, session: Session
) -> None:
    """The rotation re-keys a digest only when it matched its text: a mismatch stays one
    (it is not laundered into a valid digest of the damaged text)."""
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("UPDATE az_memory SET archive_digest = repeat('0', 64) WHERE id = %s",
                  (session.archived,))  # fmt: skip
    r = rotate_keys(pg_url, CRED)
    assert r.recomputed == {"digests_kept": [session.archived]}
    with open_memory(pg_url, clock) as mem, pytest.raises(CorruptStoreError, match="digest"):
        mem.get(session.archived)
