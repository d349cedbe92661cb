"""AgentMemory on PostgreSQL (issue 19): what only the PostgreSQL backend must prove.

The behaviour both backends share runs in the contract tests (the ``where`` fixture);
here: a wrong passphrase changes no row, no plaintext anywhere in the server's data
directory after a realistic session, a killed client loses no acknowledged write, and
concurrent agents keep the invariants a single SQLite writer kept for free.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentzero_store import AgentMemory, Turn, WrongKeyError
from tests.conftest import FAST, PASSPHRASE, child_env, scan_paths, text_needles
from tests.support.pg_server import PgServer

from .conftest import Clock, open_memory


def _tables(url: str) -> dict[str, Any]:
    """Every row of every ``az_`` table, ordered (what "no row changed" compares)."""
    with psycopg.connect(url) as c:
        names = [
            str(r[0])
            for r in c.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'az\\_%' ORDER BY 1"
            )
        ]
        return {
            t: sorted(repr(r) for r in c.execute(f"SELECT * FROM {t}").fetchall()) for t in names
        }


def test_open_on_a_url_and_reopen(pg_url: str, clock: Clock) -> None:
    with open_memory(pg_url, clock) as mem:
        mid = mem.add_turn("c1", "user", "I moved to Lisbon in May", speaker="Ana")
        fact = mem.assert_fact("Ana", "lives_in", "Lisbon")
    with open_memory(pg_url, clock) as mem:
        m = mem.get(mid)
        assert m is not None and m.speaker == "Ana" and m.about == ("Ana",)
        assert m.content == "I moved to Lisbon in May"
        assert [f.object for f in mem.facts("Ana")] == ["Lisbon"]
        assert mem.get(fact.id) is not None
        assert mem.recall("Lisbon", mode="keyword")[0].memory.id in {mid, fact.id}


def test_a_wrong_passphrase_is_refused_and_changes_no_row(pg_url: str, clock: Clock) -> None:
    with open_memory(pg_url, clock) as mem:
        mem.add_turn("c1", "user", "hello there", speaker="Ana")
        mem.assert_fact("Ana", "likes", "tea")
    before = _tables(pg_url)
    with pytest.raises(WrongKeyError):
        AgentMemory.open(pg_url, passphrase="not the passphrase", config=FAST, org_id="acme")
    assert _tables(pg_url) == before


def test_no_plaintext_in_the_server_after_a_realistic_session(
    pg_url: str, postgres: PgServer, clock: Clock
) -> None:
    """Every text the layer stores (turns, speakers, entities, facts, procedures,
    history, summaries, forget payloads, archived texts, namespaces' memories) holds a
    canary; after the session and a CHECKPOINT the server's whole data directory (WAL
    included) and its log hold none of them; a control stored in the clear is found."""
    c = [f"canary{uuid.uuid4().hex[:10]}" for _ in range(14)]
    with open_memory(pg_url, clock) as mem:
        mem.add_turns(
            "conv1",
            [Turn("user", f"we talked about {c[0]}", speaker=c[1]), Turn("assistant", c[2])],
            about=[c[3]],
        )
        f1 = mem.assert_fact(c[4], "lives_in", c[5])
        mem.assert_fact(c[4], "lives_in", c[6])  # supersedes: the belief history holds c[5]
        mem.record_outcome(c[7], success=True, context=c[8])
        note = mem.remember(f"note {c[9]}", about=[c[10]])
        mem.archive(note.id)
        assert mem.get(note.id).content == f"note {c[9]}"  # type: ignore[union-attr]
        receipt = mem.forget(id=mem.remember(f"forgotten {c[11]}").id)
        assert receipt.count == 1
        mem.namespace("team")
        with mem.shared("team") as shared:
            shared.remember(f"shared {c[12]}")
        mem.add_turns("conv2", [Turn("user", f"turn {i} {c[13]}") for i in range(30)])
        mem.context("conv2", c[13], max_tokens=300)
        for word in (c[0], c[4], c[13]):
            assert mem.recall(word, mode="keyword"), word
        assert mem.recall(c[9], mode="keyword", include_archived=True)[0].id == note.id
        assert f1.id
    # The database's own files, the shared catalogs, the WAL and the server's log.
    needles = [n for w in c for n in text_needles(w)]
    assert scan_paths(postgres.files_of(pg_url), needles) == []
    control = f"controlcanary{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE plain_control (t text)")
        conn.execute("INSERT INTO plain_control VALUES (%s)", (control,))
    assert scan_paths(postgres.files_of(pg_url), text_needles(control))


CHILD = """
import sys
from agentzero_store import AgentMemory
from agentzero_store.base.config import FAST_KDF_FOR_TESTS, StoreConfig
mem = AgentMemory.open(sys.argv[1], passphrase=sys.argv[2], org_id="acme", agent_id="a1",
                       config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
i = 0
while True:
    mid = mem.add_turn("c1", "user", f"acknowledged turn {i}", speaker="Ana")
    print(mid, i, flush=True)
    i += 1
"""


def test_a_killed_client_loses_no_acknowledged_turn(pg_url: str, clock: Clock) -> None:
    open_memory(pg_url, clock).close()  # created; the child writes
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, pg_url, PASSPHRASE],
        stdout=subprocess.PIPE,
        text=True,
        env={**child_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert p.stdout is not None
    acked = [p.stdout.readline().split() for _ in range(8)]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    with open_memory(pg_url, clock) as mem:
        for mid, i in acked:
            m = mem.get(mid)
            assert m is not None and m.content == f"acknowledged turn {i}" and m.speaker == "Ana"
        assert mem.add_turn("c1", "user", "life goes on")


def _race(pg_url: str, clock: Clock, n: int, body: Any) -> list[BaseException]:
    """Run ``body(mem, i)`` in ``n`` threads, each with its own handle (connection),
    started together; the errors they raised."""
    mems = [open_memory(pg_url, clock) for _ in range(n)]
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            body(mems[i], i)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in mems:
        m.close()
    return errors


def test_concurrent_supersedes_leave_one_current_fact(pg_url: str, clock: Clock) -> None:
    open_memory(pg_url, clock).close()
    for round_ in range(3):
        errors = _race(
            pg_url,
            clock,
            4,
            lambda m, i, r=round_: m.assert_fact("Ana", "lives_in", f"city{r}-{i}"),
        )
        assert errors == []
        with open_memory(pg_url, clock) as mem:
            current = mem.facts("Ana", "lives_in")
            assert len(current) == 1, current
            history = mem.facts("Ana", "lives_in", history=True)
            assert len(history) == 4 * (round_ + 1)  # every assertion kept as a version


def test_concurrent_outcomes_are_all_counted(pg_url: str, clock: Clock) -> None:
    open_memory(pg_url, clock).close()
    errors = _race(
        pg_url,
        clock,
        4,
        lambda m, i: [m.record_outcome("deploy", success=j % 2 == 0) for j in range(5)],
    )
    assert errors == []
    with open_memory(pg_url, clock) as mem:
        p = mem.record_outcome("deploy", success=True)
        assert (p.successes, p.failures) == (4 * 3 + 1, 4 * 2)


def test_forget_and_undo_race_restores_once(pg_url: str, clock: Clock) -> None:
    with open_memory(pg_url, clock) as mem:
        ids = mem.add_turns("c1", [Turn("user", f"turn {i}") for i in range(10)])
        token = mem.forget(conversation_id="c1").token
    errors = _race(pg_url, clock, 3, lambda m, i: m.undo(token))
    # One undo brings the turns back; the others find no forget with that token.
    assert len(errors) == 2 and all("no forget" in str(e) for e in errors), errors
    with open_memory(pg_url, clock) as mem:
        assert sorted(m.id for m in mem.memories()) == sorted(ids)


def test_agents_of_one_store_write_and_erase_concurrently(pg_url: str, clock: Clock) -> None:
    def work(m: AgentMemory, i: int) -> None:
        m2 = m.for_scope("acme", f"agent{i}")
        try:
            ids = m2.add_turns("c", [Turn("user", f"agent{i} turn {j}") for j in range(20)])
            m2.forget(id=ids[0])
            m2.erase(id=ids[1])
            m2.assert_fact("project", "status", f"state{i}")
        finally:
            m2.close()

    open_memory(pg_url, clock).close()
    assert _race(pg_url, clock, 4, work) == []
    for i in range(4):
        with open_memory(pg_url, clock, agent_id=f"agent{i}") as mem:
            mine = mem.memories()
            assert all(m.content.startswith(f"agent{i} ") or m.type == "semantic" for m in mine)
            assert len([m for m in mine if m.type == "episodic"]) == 18
            assert [f.object for f in mem.facts("project")] == [f"state{i}"]
