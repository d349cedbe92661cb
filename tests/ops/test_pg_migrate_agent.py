"""``store migrate`` moves the agent memory too, against a real server (tests/support/pg_server.py):
a realistic session on one backend reads back the same through ``AgentMemory`` on the
other and back again; forgets pending in the undo area are refused before anything is
written; a kill -9 mid-move and a re-run double nothing; and no text of the session
reaches the PostgreSQL server's files in the clear."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import (
    AgentMemory,
    CorruptStoreError,
    ItemStore,
    MigrationMismatchError,
    PendingForgetsError,
    PgMemoryStore,
    SkillStore,
    SqliteMemoryStore,
    Turn,
    UnsupportedByBackendError,
)
from agentzero_store.memory.records import to_us
from agentzero_store.ops.migrate import migrate_store
from agentzero_store.ops.migrate_check_layer import check_layer
from agentzero_store.ops.migrate_layer import layer_of
from tests.agentmem.conftest import START, Clock, open_memory
from tests.conftest import (
    AGENTZERO,
    FAST,
    PASSPHRASE,
    child_env,
    scan_paths,
    text_needles,
)
from tests.support.pg_server import PgServer

WORDS = ("Lisbon", "quarterly", "wifi", "garage", "standup", "restart", "porto")


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _migrate(source: Path | str, target: Path | str, **kw: Any) -> Any:
    return migrate_store(source, target, passphrase=PASSPHRASE, config=FAST, **kw)


def _session(where: Path | str, clock: Clock, canary: str = "") -> dict[str, str]:
    """A realistic agent-memory session; the ids a test needs."""
    c = canary
    with open_memory(where, clock) as mem:
        turns = mem.add_turns(
            "conv1",
            [
                Turn("user", f"I moved to Lisbon in May {c}", speaker="Ana"),
                Turn("assistant", "How do you like Lisbon so far?", speaker="bot"),
            ],
            about=["Lisbon", f"Ana's move {c}".strip()],
        )
        porto = mem.assert_fact("Ana", "lives_in", f"Porto {c}".strip())
        clock.advance(days=1)
        lisbon = mem.assert_fact("Ana", "lives_in", "Lisbon")  # supersedes Porto
        assert lisbon.superseded == (porto.id,)
        mem.assert_fact("Ana", "likes", "green tea", single_valued=False, core=True)
        car = mem.assert_fact("Ana", "owns", "a red car")
        mem.retract(car.id)
        deploy = f"deploy {c}".strip()
        mem.record_outcome("restart the server", success=True, context=deploy)
        mem.record_outcome("restart the server", success=False, context=deploy)
        mem.record_outcome("restart the server", success=True, context=deploy)
        mem.record_outcome("clear the build cache", success=True)
        wifi = mem.remember(f"The office wifi password rotates monthly {c}", about=["office"])
        meet = mem.remember("Ana prefers morning meetings", about=["Ana"], importance=0.9)
        mem.link(wifi.id, meet.id, "causal", confidence=0.7)
        assert mem.recall("Lisbon", mode="keyword")  # logged accesses
        mem.flush()
        clock.advance(days=3)
        mem.feedback(meet.id, used=True)
        mem.feedback(turns[1], used=False)
        garage = mem.remember(f"The old parking garage closes at ten {c}", about=["garage"])
        mem.archive(garage.id)
        gone = mem.remember("A note that is erased for good")
        mem.erase(id=gone.id)  # a tombstone
        back = mem.forget(id=mem.remember("A note forgotten, then undone").id)
        mem.undo(back.token)  # the undo area is empty again
        mem.add_turns(
            "conv2",
            [Turn("user", f"turn {i} about the quarterly report", speaker="Bo") for i in range(30)],
        )
        mem.summarize("conv2")  # a warm summary of the older turns
        for conv in ("conv3", "conv4"):  # each said three times: promoted, with provenance
            for _ in range(3):
                mem.add_turn(conv, "user", f"in {conv} the bike shed door code changed again {c}")
        mem.consolidate()
        mem.erase(conversation_id="conv4")  # a tombstone listing a derived memory apart
        mem.pin(meet.id)
        mem.namespace("team").grant("a2")
        with mem.shared("team") as shared:
            shared.remember(f"The team standup is at nine {c}")
        with mem.start_session("s1") as s1:
            s1.assert_fact("Ana", "works_on", "the migration", core=True)
        mem.start_session("s2", ["s1"]).close()
    return {"garage": garage.id, "meet": meet.id, "turn": turns[0], "porto": porto.id}


def _snapshot(mem: AgentMemory) -> dict[str, Any]:
    """Everything the session wrote, as ``AgentMemory`` reads it (no read writes)."""
    listed = mem.memories(archived="include", limit=500)
    ids = sorted(m.id for m in listed)
    with mem.shared("team") as shared, mem.start_session("s2") as s2:
        return {
            "memories": listed,
            "get": [mem.get(i) for i in ids],
            "facts": mem.facts(history=True),
            "current": mem.facts(),
            "porto": mem.facts("Ana", as_of=START + timedelta(hours=12)),
            "history": mem.history(),
            "recall": {
                w: sorted(
                    h.id for h in mem.recall(w, mode="keyword", include_archived=True, log=False)
                )
                for w in WORDS
            },
            "procedures": sorted(
                mem.best_procedures("restart the server clear the build cache", k=5),
                key=lambda p: p.id,
            ),
            "edges": {i: mem.edges(i) for i in ids},
            "accesses": {i: mem.accesses(i) for i in ids},
            "pinned": mem.pinned(),
            "core": mem.core_facts(),
            "namespaces": mem.namespaces(),
            "tombstones": mem.tombstones(),
            "context": mem.context("conv2", max_tokens=400),
            "shared": shared.memories(),
            "session": (s2.core_facts(), s2.facts(history=True), s2.history()),
        }


def test_an_agent_memory_moves_to_postgresql_and_back(
    tmp_path: Path, pg_url: str, clock: Clock
) -> None:
    src, back = tmp_path / "src", tmp_path / "back"
    ids = _session(src, clock)
    with open_memory(src, clock) as mem:
        before = _snapshot(mem)
    assert len(before["memories"]) >= 40 and len(before["facts"]) == 4
    assert before["tombstones"] and before["pinned"] and before["context"].section("warm")
    assert len([m for m in before["memories"] if m.sources]) == 1
    assert [len(t["derived"]) for t in before["tombstones"]] == [0, 1]
    r = _migrate(src, pg_url)
    moved = r.agent_memory
    assert moved["facts"] == 6 and moved["archived_texts"] == 1 and moved["namespaces"] == 1
    assert moved["memories"] == sum(s["count"] for s in r.scopes)
    assert r.checked["agent_memories"] == moved["memories"] and r.checked["agent_memory_reads"]
    with open_memory(pg_url, clock) as mem:
        assert _snapshot(mem) == before
    # And back into a new data dir: the same again.
    r2 = _migrate(pg_url, back)
    assert r2.agent_memory == moved
    with open_memory(back, clock) as mem:
        assert _snapshot(mem) == before
    # Archived on both: restored on both, the text comes back from each one's archive.
    for where in (pg_url, back):
        with open_memory(where, clock) as mem:
            assert mem.restore(ids["garage"])
            m = mem.get(ids["garage"])
            assert m is not None and not m.archived and "parking garage" in m.content
            assert [h.id for h in mem.recall("garage", mode="keyword", log=False)] == [
                ids["garage"]
            ]
            # Life goes on: the next history line and tombstone get new numbers.
            seq = mem.history()[-1].seq
            mem.assert_fact("Ana", "lives_in", "Madrid")
            assert mem.history()[-1].seq > seq
            mem.erase(id=ids["turn"])
            assert len(mem.tombstones()) == 3


def test_a_move_into_postgresql_seals_every_text(
    tmp_path: Path, pg_url: str, postgres: PgServer, clock: Clock
) -> None:
    """Every text of the session holds a canary (turns, an entity, a fact and so its
    history, a procedure, notes, an archived note, a namespace's note); after moving it
    into PostgreSQL and a CHECKPOINT the server's whole data directory (WAL included)
    holds it nowhere; a control stored in the clear is found."""
    canary = f"canary{uuid.uuid4().hex[:10]}"
    src = tmp_path / "src"
    _session(src, clock, canary=canary)
    _migrate(src, pg_url)
    with open_memory(pg_url, clock) as mem:  # it is all there, readable
        found = mem.recall(canary, mode="keyword", include_archived=True, log=False)
        assert len(found) >= 3
    assert scan_paths(postgres.files_of(pg_url), text_needles(canary)) == []
    control = f"controlcanary{uuid.uuid4().hex[:10]}"  # the scan finds what is in the clear
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE plain_control (t text)")
        conn.execute("INSERT INTO plain_control VALUES (%s)", (control,))
    assert scan_paths(postgres.files_of(pg_url), text_needles(control))


@pytest.mark.parametrize("to_pg", [True, False])
def test_pending_forgets_are_refused_before_anything_is_written(
    tmp_path: Path, pg_url: str, clock: Clock, to_pg: bool
) -> None:
    """A forget's payload is shaped for its own backend's undo: while one is pending the
    move is refused, naming how many, before the target is touched; once undone, the
    store moves."""
    src: Path | str = tmp_path / "src" if to_pg else pg_url
    target: Path | str = pg_url if to_pg else tmp_path / "target"
    with open_memory(src, clock) as mem:
        mem.add_turn("c1", "user", "a turn that stays", speaker="Ana")
        mem.add_turns("c2", [Turn("user", "gone for now"), Turn("user", "this one too")])
        receipt = mem.forget(conversation_id="c2")
        assert receipt.count == 2
    with pytest.raises(PendingForgetsError) as err:
        _migrate(src, target)
    assert "2 forgotten memories" in err.value.message and "org 'acme'" in err.value.message
    assert "agentzero memory undo" in err.value.hint and "consolidate" in err.value.hint
    if to_pg:
        with psycopg.connect(pg_url) as c:  # nothing was created in the database
            assert c.execute("SELECT to_regclass('az_keys') IS NULL").fetchone() == (True,)
    else:
        assert not Path(target).exists() or not any(Path(target).iterdir())
    with open_memory(src, clock) as mem:
        assert mem.undo(receipt.token) == 2
    r = _migrate(src, target)
    assert r.agent_memory["memories"] == 3


def test_a_data_dir_holding_skills_is_refused_before_anything_is_written(
    tmp_path: Path, pg_url: str, clock: Clock
) -> None:
    """Skills have no PostgreSQL tables and are not copied: refused, with the way out."""
    src = tmp_path / "src"
    with open_memory(src, clock) as mem:
        mem.add_turn("c1", "user", "a turn", speaker="Ana")
        SkillStore(mem).save("Deploy app", "Ship the web app.", ["run tests", "ship"])
    with pytest.raises(UnsupportedByBackendError, match="1 skills") as err:
        _migrate(src, pg_url)
    assert "agentzero skill export" in err.value.hint
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT to_regclass('az_keys') IS NULL").fetchone() == (True,)


def test_a_data_dir_holding_items_is_refused_before_anything_is_written(
    tmp_path: Path, pg_url: str, clock: Clock
) -> None:
    """Items (a LangGraph store's, a checkpointer's) have no PostgreSQL tables: a data dir
    holding any is refused, never moved without them; emptied, it moves."""
    src = tmp_path / "src"
    with open_memory(src, clock) as mem:
        mem.add_turn("c1", "user", "a turn", speaker="Ana")
    with ItemStore.open(src, passphrase=PASSPHRASE, collection="langgraph") as items:
        items.put(("users", "ana"), "prefs", {"diet": "vegetarian"})
    with pytest.raises(UnsupportedByBackendError, match="1 items") as err:
        _migrate(src, pg_url)
    assert "ItemStore.delete_under" in err.value.hint
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT to_regclass('az_keys') IS NULL").fetchone() == (True,)
    with ItemStore.open(src, passphrase=PASSPHRASE, collection="langgraph") as items:
        assert items.delete_under(("users",)) == 1
    assert _migrate(src, pg_url).agent_memory["memories"] == 1


def test_the_check_names_what_differs_and_a_rerun_repairs_it(
    tmp_path: Path, pg_url: str, clock: Clock
) -> None:
    src = tmp_path / "src"
    ids = _session(src, clock)
    _migrate(src, pg_url)
    with (
        SqliteMemoryStore.open(src, passphrase=PASSPHRASE, config=FAST, hnsw=False) as s,
        PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, hnsw=False) as p,
    ):
        now = to_us(datetime.now(UTC))

        def check() -> dict[str, int]:
            return check_layer(s, p, layer_of(s), layer_of(p), now_us=now, sample=20)

        assert check()["agent_memory_reads"] > 0
        with psycopg.connect(pg_url, autocommit=True) as c:
            row = c.execute("SELECT access_count FROM az_memory WHERE id = %s", (ids["meet"],))
            was = row.fetchone()
            c.execute("UPDATE az_memory SET access_count = 7 WHERE id = %s", (ids["meet"],))
            with pytest.raises(MigrationMismatchError, match=f"1 access_count .ids {ids['meet']}"):
                check()
            c.execute("UPDATE az_memory SET access_count = %s WHERE id = %s", (*was, ids["meet"]))
            c.execute("DELETE FROM az_am_history WHERE target = %s", (ids["porto"],))
            with pytest.raises(MigrationMismatchError, match="history 1[0-9] vs"):
                check()
            c.execute("UPDATE az_memory SET access_count = 7 WHERE id = %s", (ids["meet"],))
            c.execute("DELETE FROM az_am_archive WHERE id = %s", (ids["garage"],))
            with pytest.raises(CorruptStoreError, match=ids["garage"]):
                check()
    # A re-run writes back what differs (the history line with its number, the text),
    # and the check passes.
    r = _migrate(src, pg_url)
    assert r.written == 0 and r.checked["agent_memory_rows"] > 0
    with open_memory(pg_url, clock) as mem, open_memory(src, clock) as orig:
        assert mem.history() == orig.history()
        assert mem.get(ids["meet"]) == orig.get(ids["meet"])
        assert mem.get(ids["garage"]) == orig.get(ids["garage"])


def test_rows_of_memories_that_expired_do_not_move(
    tmp_path: Path, pg_url: str, clock: Clock
) -> None:
    """An expired memory is not copied, nor are the rows pointing at it (its pin, its
    edges); the history stays whole, as on the source."""
    src = tmp_path / "src"
    with open_memory(src, clock) as mem:
        keep = mem.remember("This note stays")
        # Expired by the time of the move (the test clock is in the past).
        brief = mem.remember("This note is brief", ttl=60)
        mem.link(keep.id, brief.id, "causal")
        mem.pin(brief.id)
        history = mem.history()
    r = _migrate(src, pg_url)
    assert r.agent_memory["memories"] == 1 and "pins" not in r.agent_memory
    with open_memory(pg_url, clock) as mem:
        assert mem.get(brief.id) is None and mem.pinned() == []
        assert [e.type for e in mem.edges(keep.id)] == []
        assert mem.history() == history


# Spellings that fold together (NFKC, case) or not, and a few scripts: the plain form
# carries spellings, and each backend derives its own keys from them.
NAMES = ["Ana", "ANA", "ana ", "Zoë", "Zoe\u0308", "Straße", "STRASSE", "Ｌisbon", "東京", "İz"]
TEXT = st.text(st.sampled_from("abcdeé ßZ東京 .,!"), min_size=1, max_size=20).filter(str.strip)
step = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(range(2)), TEXT, st.sampled_from(NAMES)),
    st.tuples(st.just("note"), st.sampled_from(range(2)), TEXT, st.sampled_from(NAMES)),
    st.tuples(st.just("fact"), st.sampled_from(range(2)), st.sampled_from(NAMES), TEXT),
    st.tuples(st.just("outcome"), st.sampled_from(range(2)), TEXT, st.sampled_from(NAMES)),
    st.tuples(st.just("archive"), st.sampled_from(range(2)), st.just(""), st.just("")),
    st.tuples(st.just("pin"), st.sampled_from(range(2)), st.just(""), st.just("")),
    st.tuples(st.just("link"), st.sampled_from(range(2)), st.just(""), st.just("")),
    st.tuples(st.just("recall"), st.sampled_from(range(2)), TEXT, st.just("")),
    st.tuples(st.just("tick"), st.just(0), st.just(""), st.just("")),
    st.tuples(st.just("consolidate"), st.sampled_from(range(2)), st.just(""), st.just("")),
)


def _reads(mem: AgentMemory) -> dict[str, Any]:
    """What a property example compares (no read writes but the buffered accesses')."""
    mem.flush()
    listed = mem.memories(archived="include", limit=500)
    return {
        "memories": listed,
        "edges": {m.id: mem.edges(m.id) for m in listed},
        "accesses": {m.id: mem.accesses(m.id) for m in listed},
        "facts": mem.facts(history=True),
        "history": mem.history(),
        "procedures": mem.repo.all_procedures(),
        "pinned": mem.pinned(),
    }


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(step, min_size=1, max_size=20))
def test_any_session_reads_back_the_same_after_a_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    postgres: PgServer,
    steps: list[tuple[str, int, str, str]],
) -> None:
    """Random sessions over two scopes (spellings that fold together, several
    scripts): data dir -> PostgreSQL -> data dir, and every read is the same on all
    three (the move's own check passes on the way)."""
    clock = Clock()
    src, back = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("back")
    name = f"prop{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres.database_url(name)
    mems = [open_memory(src, clock, agent_id=a) for a in ("a1", "a2")]
    made: list[list[str]] = [[], []]
    try:
        for kind, i, text, other in steps:
            mem, ids = mems[i], made[i]
            if kind == "turn":
                ids += mem.add_turns("c", [Turn("user", text, speaker=other)], about=[other])
            elif kind == "note":
                ids.append(mem.remember(text, about=[other, text]).id)
            elif kind == "fact":
                ids.append(mem.assert_fact(text, "likes", other).id)
            elif kind == "outcome":
                ids.append(mem.record_outcome(text, success=len(text) % 2 == 0, context=other).id)
            elif kind == "archive" and ids:
                mem.archive(ids[-1])
            elif kind == "pin" and ids and mem.get(ids[0]) is not None:
                mem.pin(ids[0])
            elif kind == "link" and len(ids) > 1:
                mem.link(ids[0], ids[-1], "semantic")
            elif kind == "recall":
                mem.recall(text, mode="keyword")
            elif kind == "tick":
                clock.advance(days=20)
            elif kind == "consolidate":  # promotions, merges, decay, archives
                mem.consolidate()
        before = [_reads(m) for m in mems]
    finally:
        for m in mems:
            m.close()
    _migrate(src, url)
    _migrate(url, back / "data")
    for where in (url, back / "data"):
        for agent, want in zip(("a1", "a2"), before, strict=True):
            with open_memory(where, clock, agent_id=agent) as mem:
                assert _reads(mem) == want


N_TURNS = 2_000


def test_kill_9_mid_move_then_a_rerun_finishes_with_nothing_doubled(
    tmp_path: Path, pg_url: str, clock: Clock
) -> None:
    """kill -9 of `agentzero store migrate` while it writes the agent memory, run it
    again: it finishes, the check passes, and no access, history line or entity is
    there twice."""
    src = tmp_path / "src"
    with open_memory(src, clock) as mem:
        for start in range(0, N_TURNS, 500):
            mem.add_turns(
                f"c{start}",
                [
                    Turn("user", f"turn {i} of the long talk", speaker=f"s{i % 7}")
                    for i in range(start, start + 500)
                ],
                about=["the long talk"],
            )
        for i in range(40):
            mem.assert_fact("Ana", "counter", str(i))
        assert len(mem.recall("long talk", mode="keyword", k=50)) == 50  # logged
    # This checkout's package, whichever one the console script was installed from.
    root = str(Path(__file__).resolve().parents[2])
    env = {**child_env(), "AGENTZERO_PASSPHRASE": PASSPHRASE, "PYTHONPATH": root}
    args = [AGENTZERO, "--data-dir", str(src), "store", "migrate", "--to", pg_url]
    p = subprocess.Popen(
        [*args, "--batch", "20", "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    typed = 0
    deadline = time.monotonic() + 120
    with psycopg.connect(pg_url, autocommit=True) as c:
        while time.monotonic() < deadline and p.poll() is None:
            # Until the table and the layer's columns are created: nothing to count yet.
            with contextlib.suppress(psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
                typed = c.execute(
                    "SELECT count(*) FROM az_memory WHERE type IS NOT NULL"
                ).fetchone()[0]  # type: ignore[index]
            if typed >= N_TURNS // 4:
                break
            time.sleep(0.01)
    assert p.poll() is None, "the move ended before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert 0 < typed < N_TURNS + 40  # killed while writing the agent memory
    done = subprocess.run([*args, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    report = json.loads(done.stdout)
    assert report["agent_memory"]["memories"] == N_TURNS + 40
    assert report["checked"]["agent_memories"] == N_TURNS + 40
    mine, theirs = _table_counts(src), _table_counts(pg_url)
    assert mine == theirs
    assert mine["access"][0] >= 50 and mine["history"][0] >= 40
    assert all(rows == distinct for rows, distinct in theirs.values())  # nothing doubled
    with open_memory(pg_url, clock) as mem, open_memory(src, clock) as orig:
        assert mem.facts(history=True) == orig.facts(history=True)
        assert len(mem.memories(limit=5_000)) == N_TURNS + 1  # the facts closed but one
    # And back to a new data dir, the source being the global --database-url.
    back = tmp_path / "back"
    home = subprocess.run(
        [AGENTZERO, "--database-url", pg_url, "store", "migrate", "--to", str(back)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert home.returncode == 0, home.stderr
    assert f"agent memory: {N_TURNS + 40} memories" in home.stdout
    assert f"checked the agent memory: {N_TURNS + 40} memories' state" in home.stdout
    assert _table_counts(back) == mine


def _table_counts(where: Path | str) -> dict[str, tuple[int, int]]:
    """(rows, distinct keys) of the agent memory's tables that a re-run could double."""
    sql = {
        "access": ("am_access", "memory_id || ' ' || at_us"),
        "history": ("am_history", "seq"),
        "about": ("am_about", "memory_id || ' ' || key"),
        "fact": ("am_fact", "id"),
        "speaker": ("am_speaker", "org_id || ' ' || agent_id || ' ' || key"),
        "typed": ("memory", "CASE WHEN type IS NOT NULL THEN id END"),  # all, once done
    }
    out = {}
    if isinstance(where, Path):
        with SqliteMemoryStore.open(where, passphrase=PASSPHRASE, config=FAST) as s:
            for name, (table, key) in sql.items():
                row = s.database.query(f"SELECT count(*), count(DISTINCT {key}) FROM {table}")
                out[name] = (int(row[0][0]), int(row[0][1]))
        return out
    with psycopg.connect(where) as c:
        for name, (table, key) in sql.items():
            t = "az_memory" if table == "memory" else f"az_{table}"
            row = c.execute(f"SELECT count(*), count(DISTINCT {key}) FROM {t}").fetchone()
            assert row is not None
            out[name] = (int(row[0]), int(row[1]))
    return out
