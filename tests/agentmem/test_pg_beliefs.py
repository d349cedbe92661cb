"""The beliefs of the agent-memory repository on PostgreSQL (``postgres.beliefs``).

Parity: the same calls on the SQLite ``BeliefRows`` and on ``PgBeliefRows`` give the
same results (history, facts that supersede, edges, procedures). Then what PostgreSQL
adds: no sealed text reaches the server in plaintext, a sealed value moved to another
row does not open, and two connections racing to supersede one (subject, predicate),
or to record a new procedure, end as one writer would (SQLite's write lock).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentzero_store import (
    MemoryEntry,
    PgMemoryStore,
    SqliteMemoryStore,
    StoreIOError,
    TamperedRecordError,
)
from agentzero_store.agentmem.parts import new_memory
from agentzero_store.agentmem.postgres.repository import PgRepository
from agentzero_store.agentmem.records import entity_key
from agentzero_store.agentmem.sqlite.repository import SqliteRepository
from agentzero_store.memory.records import to_us
from tests.conftest import FAST, PASSPHRASE

T0 = datetime(2026, 1, 1, tzinfo=UTC)
US = to_us(T0)
SCOPE = ("acme", "a1")


def _clock() -> datetime:
    return T0


@pytest.fixture
def repos(pg_url: str, tmp_path: Path) -> Iterator[tuple[SqliteRepository, PgRepository]]:
    """The SQLite and the PostgreSQL repository of one scope, migrated, empty."""
    lite = SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST, clock=_clock)
    pg = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, clock=_clock)
    a, b = SqliteRepository(lite, *SCOPE), PgRepository(pg, *SCOPE)
    a.migrate()
    b.migrate()
    yield a, b
    lite.close()
    pg.close()


Repo = Any  # either repository: the calls below are the ones both have


def _memories(repo: Repo, specs: list[tuple[str, str, tuple[str, ...]]]) -> None:
    """Memory rows (id, text, about) of the scope, as ``fact()`` writes them."""
    entries = [
        MemoryEntry(text, org_id=repo.org_id, agent_id=repo.agent_id, id=mid, created_at=T0)
        for mid, text, _ in specs
    ]
    metas = [new_memory(FAST, "semantic", about=about) for _, _, about in specs]
    prepared = repo._store.prepare(entries)
    with repo.transaction() as tx:
        repo.insert(tx, prepared, metas)


def _fact(repo: Repo, fid: str, s: str, p: str, o: str, at_us: int, *, single: bool = True) -> Any:
    """``AgentMemory.fact``'s write, given the id: lock, read the current facts inside the
    transaction, insert, close what it supersedes, link and log it."""
    _memories(repo, [(fid, f"{s} {p} {o}", (s, o))])
    keys = (entity_key(s), entity_key(p), entity_key(o))
    with repo.transaction() as tx:
        repo.lock_belief(tx, keys[0], keys[1])
        current = repo.current_facts(keys[0], keys[1], tx)
        closed = [f.id for f in current] if single else []
        repo.insert_fact(tx, fid, (s, p, o), keys, 0.9, single, at_us)
        for old in closed:
            repo.close_fact(tx, old, at_us, fid)
        repo.add_edges(tx, [(fid, old, "supersedes", 1.0) for old in closed], at_us)
        repo.append_history(
            tx,
            at_us,
            [("assert", fid, {"subject": s, "predicate": p, "object": o})]
            + [("supersede", old, {"by": fid}) for old in closed],
        )
    return closed


def _both(repos: tuple[Repo, Repo], run: Callable[[Repo], Any]) -> Any:
    """``run`` on both repositories; its results must be equal. Returns the SQLite one."""
    a, b = run(repos[0]), run(repos[1])
    assert a == b
    return a


def _facts(*args: Any) -> Callable[[Repo], Any]:
    return lambda r: r.facts(*args)


# ---------------------------------------------------------------------- parity
def test_history_parity(repos: tuple[SqliteRepository, PgRepository]) -> None:
    def write(repo: Repo) -> None:
        with repo.transaction() as tx:
            repo.append_history(
                tx,
                US,
                [
                    ("remember", "m1", {"confidence": 0.75, "b": [1, 2], "a": {"z": 1, "y": None}}),
                    ("assert", "m2", {"subject": "Zoë", "object": "東京", "pair": (1, "x")}),
                    ("retract", "m1", {}),
                ],
            )
            repo.append_history(tx, US + 5, [])  # nothing to append
        with repo.transaction() as tx:
            repo.append_history(tx, US + 10, [("forget", "m1", {"token": "t0k"})])

    _both(repos, write)
    every = _both(repos, lambda r: r.history(None, 1_000))
    assert [h.op for h in every] == ["remember", "assert", "retract", "forget"]
    assert every[1].detail == {"subject": "Zoë", "object": "東京", "pair": [1, "x"]}
    assert list(every[0].detail) == ["a", "b", "confidence"]  # as SQLite: sorted keys
    assert [list(h.detail) for h in repos[1].history(None, 10)] == [list(h.detail) for h in every]
    assert len(_both(repos, lambda r: r.history("m1", 1_000))) == 3
    assert len(_both(repos, lambda r: r.history("m1", 2))) == 2
    assert len(_both(repos, lambda r: r.history("", 1_000))) == 4  # "" is every target
    assert _both(repos, lambda r: r.history("nobody", 10)) == []


def test_fact_parity(repos: tuple[SqliteRepository, PgRepository]) -> None:
    def write(repo: Repo) -> list[Any]:
        out = [
            _fact(repo, "f-acme", "Alice", "works_at", "Acme", US),
            _fact(repo, "f-globex", "alice", "Works_At", "Globex", US + 100),  # supersedes
            # Multi-valued, at one time: ordered by id in byte order ("Z" < "_" < "a").
            _fact(repo, "tea", "Alice", "likes", "tea", US + 50, single=False),
            _fact(repo, "Zed", "Alice", "likes", "jazz", US + 50, single=False),
            _fact(repo, "_u", "Alice", "likes", "Übung", US + 50, single=False),
            _fact(repo, "a-b", "Alice", "likes", "coffee", US + 50, single=False),
            _fact(repo, "f-bob", "Bob", "works_at", "Initech", US + 20),
        ]
        with repo.transaction() as tx:
            repo.close_fact(tx, "tea", US + 300, None)  # retracted
            repo.close_fact(tx, "tea", US + 400, None)  # already closed: no change
            repo.set_confidence(tx, "f-bob", 0.25)
        return out

    assert _both(repos, write)[1] == ["f-acme"]
    alice, works, likes = entity_key("Alice"), entity_key("works_at"), entity_key("likes")
    assert [f.id for f in _both(repos, lambda r: r.current_facts(alice, works))] == ["f-globex"]
    liked = _both(repos, lambda r: r.current_facts(alice, likes))
    assert [f.id for f in liked] == ["Zed", "_u", "a-b"]
    assert liked[1].object == "Übung"

    def in_tx(repo: Repo) -> Any:
        with repo.transaction() as tx:
            return repo.current_facts(alice, likes, tx)

    assert _both(repos, in_tx) == liked
    for s_key, p_key in ((None, None), (alice, None), (None, works), (alice, works)):
        for at in (None, US - 1, US, US + 50, US + 99, US + 100, US + 300, US + 10_000):
            _both(repos, _facts(s_key, p_key, at, False))
        _both(repos, _facts(s_key, p_key, None, True))
    every = _both(repos, lambda r: r.facts(alice, works, None, True))
    assert len(every) == 2 and every[0].superseded_by == "f-globex"
    assert [f.id for f in _both(repos, lambda r: r.facts(alice, works, US + 99, False))] == [
        "f-acme"
    ]
    tea = _both(repos, lambda r: r.fact("tea"))
    assert tea.retracted and tea.valid_to == T0 + timedelta(microseconds=300)
    assert _both(repos, lambda r: r.fact("f-bob")).confidence == 0.25
    assert _both(repos, lambda r: r.by_id("f-bob", US).memory.confidence) == 0.25
    assert _both(repos, lambda r: r.fact("missing")) is None
    assert _both(repos, lambda r: r.edges("f-acme")) == [
        ("f-globex", "f-acme", "supersedes", 1.0, US + 100)
    ]
    assert len(_both(repos, lambda r: r.history(None, 100))) == 8


def test_facts_stay_in_their_scope(repos: tuple[SqliteRepository, PgRepository]) -> None:
    other: list[Repo] = [
        SqliteRepository(repos[0]._store, "acme", "a2"),
        PgRepository(repos[1]._store, "acme", "a2"),
    ]
    for repo in other:
        _fact(repo, "theirs", "Alice", "works_at", "Hooli", US)
    for repo in repos:
        _fact(repo, "mine", "Alice", "works_at", "Acme", US)
        # Its own close and confidence calls do not reach another scope's fact.
        with repo.transaction() as tx:
            repo.close_fact(tx, "theirs", US + 1, None)
    key = (entity_key("Alice"), entity_key("works_at"))
    assert [f.id for f in _both(repos, lambda r: r.current_facts(*key))] == ["mine"]
    assert _both(repos, lambda r: r.fact("theirs")) is None
    # The PostgreSQL one is stricter than SQLite here: closes only in its own scope.
    assert other[1].fact("theirs").current
    assert [f.id for f in other[1].facts(None, None, None, False)] == ["theirs"]


def test_edge_parity(repos: tuple[SqliteRepository, PgRepository]) -> None:
    def write(repo: Repo) -> None:
        with repo.transaction() as tx:
            repo.add_edges(tx, [("n", "b", "semantic", 0.5), ("Z", "n", "causal", 1.0)], US)
            repo.add_edges(tx, [("n", "_", "semantic", 0.7), ("n", "a", "semantic", 1.0)], US)
            repo.add_edges(tx, [], US)
        with repo.transaction() as tx:
            # An existing edge is kept, with its confidence and time.
            repo.add_edges(tx, [("n", "b", "semantic", 0.9), ("x", "n", "semantic", 1.0)], US - 7)

    _both(repos, write)
    edges = _both(repos, lambda r: r.edges("n"))
    assert [(e[0], e[1]) for e in edges] == [
        ("x", "n"),
        ("Z", "n"),
        ("n", "_"),
        ("n", "a"),
        ("n", "b"),
    ]
    assert edges[-1][3] == 0.5
    assert _both(repos, lambda r: r.edges("nobody")) == []


def test_procedure_parity(repos: tuple[SqliteRepository, PgRepository]) -> None:
    keys = (entity_key("Deploy"), entity_key("Friday"))
    bare = (entity_key("rollback"), "")

    def write(repo: Repo) -> None:
        with repo.transaction() as tx:
            assert repo.procedure_by_key(*keys, tx) is None
            repo.insert_procedure(tx, "p-deploy", "Deploy", "Friday", keys, False, US)
            repo.insert_procedure(tx, "P-roll", "rollback", None, bare, True, US)
        with repo.transaction() as tx:
            found = repo.procedure_by_key(*keys, tx)
            repo.count_outcome(tx, found.id, True, US + 1)
            repo.count_outcome(tx, found.id, False, US + 2)
            repo.count_outcome(tx, "P-roll", True, US + 3)

    _both(repos, write)
    deploy = _both(repos, lambda r: r.procedure_by_key(*keys))
    assert (deploy.action, deploy.context, deploy.successes, deploy.failures) == (
        "Deploy",
        "Friday",
        1,
        2,
    )
    assert _both(repos, lambda r: r.procedure_by_key(*bare)).context is None
    assert _both(repos, lambda r: r.procedure_by_key(keys[0], "")) is None
    assert set(_both(repos, lambda r: r.procedures(["p-deploy", "P-roll", "nope"]))) == {
        "p-deploy",
        "P-roll",
    }
    assert _both(repos, lambda r: r.procedures([])) == {}
    _both(repos, lambda r: r.set_outcomes("P-roll", 7, 3, US + 9))
    every = _both(repos, lambda r: r.all_procedures())
    assert [(p.id, p.successes, p.failures) for p in every] == [
        ("P-roll", 7, 3),
        ("p-deploy", 1, 2),
    ]


# ---------------------------------------------------------------------- what the server holds
def test_sealed_columns_hold_no_plaintext(
    repos: tuple[SqliteRepository, PgRepository], pg_url: str
) -> None:
    pg = repos[1]
    _fact(pg, "f1", "Zanzibarian", "collects", "Quetzalcoatl", US)
    _fact(pg, "f2", "Zanzibarian", "collects", "Marzipanoid", US + 1)
    with pg.transaction() as tx:
        keys = ("defenestrate-key", "thursdayish-key")
        pg.insert_procedure(tx, "p1", "defenestrate", "thursdayish", keys, True, US)
        pg.append_history(tx, US, [("note", "f1", {"why": "xylophonist"})])
    words = ["zanzibarian", "collects", "quetzalcoatl", "marzipanoid", "defenestrate"]
    words += ["thursdayish", "xylophonist", "defenestrate-key", "thursdayish-key"]
    dump = ""
    with psycopg.connect(pg_url) as conn, conn.cursor() as cur:
        for table in ("az_am_fact", "az_am_history", "az_am_procedure", "az_am_edge"):
            with cur.copy(f"COPY {table} TO STDOUT") as copy:
                dump += b"".join(bytes(b) for b in copy).decode()
    assert "f1" in dump and "supersedes" in dump  # ids and types are clear
    low = dump.lower()
    for w in words:  # neither as text nor inside a bytea (COPY shows it as hex)
        assert w not in low and w.encode().hex() not in low, w


def test_moved_sealed_values_do_not_open(repos: tuple[SqliteRepository, PgRepository]) -> None:
    pg = repos[1]
    _fact(pg, "f1", "Alice", "likes", "tea", US, single=False)
    _fact(pg, "f2", "Alice", "likes", "jazz", US, single=False)
    with pg.transaction() as tx:
        pg.insert_procedure(tx, "p1", "deploy", None, ("d", ""), True, US)
        pg.insert_procedure(tx, "p2", "rollback", None, ("r", ""), True, US)
    conn = pg._store.connection()
    conn.execute("UPDATE az_am_fact SET sealed = (SELECT sealed FROM az_am_fact WHERE id = 'f1')")
    assert pg.fact("f1").object == "tea"  # type: ignore[union-attr]
    with pytest.raises(TamperedRecordError, match="az_am_fact row 'f2'"):
        pg.fact("f2")
    with pytest.raises(TamperedRecordError):
        pg.facts(None, None, None, True)
    conn.execute(
        "UPDATE az_am_procedure SET sealed = (SELECT sealed FROM az_am_procedure WHERE id = 'p2')"
        " WHERE id = 'p1'"
    )
    with pytest.raises(TamperedRecordError, match="az_am_procedure row 'p1'"):
        pg.procedures(["p1"])
    # A history detail moved to another line (the same op and time, another target).
    assert [h.target for h in pg.history(None, 10)] == ["f1", "f2"]
    conn.execute(
        "UPDATE az_am_history SET detail = (SELECT detail FROM az_am_history WHERE target = 'f1')"
        " WHERE target = 'f2'"
    )
    assert pg.history("f1", 10)[0].detail["object"] == "tea"
    with pytest.raises(TamperedRecordError, match="az_am_history"):
        pg.history("f2", 10)
    # A history line re-timed keeps its detail sealed under the old time.
    conn.execute("UPDATE az_am_history SET at_us = at_us + 1 WHERE target = 'f1'")
    with pytest.raises(TamperedRecordError):
        pg.history("f1", 10)


# ---------------------------------------------------------------------- many writers
def _race(pg_url: str, n: int, work: Callable[[PgRepository, int], None]) -> None:
    """``work(repo, i)`` in ``n`` threads, each on its own connection, started together."""
    start = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False) as s:
                repo = PgRepository(s, *SCOPE)
                start.wait()
                work(repo, i)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]


@pytest.mark.parametrize("how", ["lock_belief", "current_facts_tx", "unlocked"])
def test_racing_supersedes_leave_one_current_fact(
    repos: tuple[SqliteRepository, PgRepository], pg_url: str, how: str
) -> None:
    """Two agents assert (Alice, works_at, ...) at once, three times each: every fact()
    reads the current facts, pauses, then inserts its own and closes those it read.
    Locked (``lock_belief``, then ``current_facts`` in the transaction; or only the
    latter, as ``AgentMemory.fact`` calls it today), one current fact remains and the
    closed ones form one chain; the control (the facts read outside the transaction,
    unlocked) shows the race is real."""
    locked = how != "unlocked"
    s_key, p_key = entity_key("Alice"), entity_key("works_at")

    rounds = 3 if locked else 1  # the control: one round, both read before either writes

    def work(repo: PgRepository, i: int) -> None:
        for r in range(rounds):
            fid = f"w{i}-{r}"
            _memories(repo, [(fid, f"Alice works at firm {i}.{r}", ("Alice",))])
            with repo.transaction() as tx:
                if how == "lock_belief":
                    repo.lock_belief(tx, s_key, p_key)
                if locked:
                    current = repo.current_facts(s_key, p_key, tx)
                else:
                    current = repo.current_facts(s_key, p_key)
                time.sleep(0.15)  # the other agent reads meanwhile
                keys = (s_key, p_key, entity_key(f"firm {i}.{r}"))
                repo.insert_fact(
                    tx, fid, ("Alice", "works_at", f"firm {i}.{r}"), keys, 1.0, True, US
                )
                for f in current:
                    repo.close_fact(tx, f.id, US, fid)
                repo.append_history(tx, US, [("supersede", f.id, {"by": fid}) for f in current])

    _race(pg_url, 2, work)
    pg = repos[1]
    current = pg.current_facts(s_key, p_key)
    every = pg.facts(s_key, p_key, None, True)
    assert len(every) == 2 * rounds
    if not locked:
        assert len(current) == 2  # both agents saw no fact: both believed theirs current
        return
    assert len(current) == 1
    # One chain: every other fact superseded by exactly one, no fact superseded twice.
    by = [f.superseded_by for f in every if f.id != current[0].id]
    assert None not in by and len(set(by)) == 5
    assert len(pg.history(None, 100)) == 5


@contextlib.contextmanager
def _held(pg_url: str, hold: Callable[[PgRepository, Any], None]) -> Iterator[None]:
    """``hold(repo, tx)`` on another connection, its transaction left open until the
    block ends (then committed)."""
    held, release = threading.Event(), threading.Event()

    def holder(repo: PgRepository, _: int) -> None:
        with repo.transaction() as tx:
            hold(repo, tx)
            held.set()
            release.wait(10)

    t = threading.Thread(target=_race, args=(pg_url, 1, holder))
    t.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        t.join(10)


def _timeout(tx: Any) -> None:
    tx.execute("SET LOCAL lock_timeout = '200ms'")


def test_lock_belief_holds_one_pair_until_commit(
    repos: tuple[SqliteRepository, PgRepository], pg_url: str
) -> None:
    pg = repos[1]
    with _held(pg_url, lambda repo, tx: repo.lock_belief(tx, "alice", "works_at")):
        with pytest.raises(StoreIOError, match="lock timeout"), pg.transaction() as tx:
            _timeout(tx)
            pg.lock_belief(tx, "alice", "works_at")
        with pg.transaction() as tx:  # another pair, or another scope, is not held
            _timeout(tx)
            pg.lock_belief(tx, "alice", "likes")
            PgRepository(pg._store, "acme", "a2").lock_belief(tx, "alice", "works_at")
    with pg.transaction() as tx:  # released at the holder's commit
        _timeout(tx)
        pg.lock_belief(tx, "alice", "works_at")


def test_current_facts_wait_for_a_concurrent_retract(
    repos: tuple[SqliteRepository, PgRepository], pg_url: str
) -> None:
    """A retract not yet committed holds its fact: ``current_facts`` in a transaction
    waits for it (``FOR UPDATE``) instead of deciding from the fact as it was, so a
    fact() never supersedes (and logs superseding) a fact retracted under it."""
    pg = repos[1]
    _fact(pg, "f1", "Alice", "works_at", "Acme", US)
    keys = (entity_key("Alice"), entity_key("works_at"))
    with _held(pg_url, lambda repo, tx: repo.close_fact(tx, "f1", US + 1, None)):
        assert [f.id for f in pg.current_facts(*keys)] == ["f1"]  # a read does not wait
        with pytest.raises(StoreIOError, match="lock timeout"), pg.transaction() as tx:
            _timeout(tx)
            pg.current_facts(*keys, tx)
    with pg.transaction() as tx:
        assert pg.current_facts(*keys, tx) == []
    assert pg.fact("f1").retracted  # type: ignore[union-attr]


def test_racing_new_procedure_is_recorded_once(
    repos: tuple[SqliteRepository, PgRepository], pg_url: str
) -> None:
    """``record_outcome``'s write from three connections at once, for an action none has
    seen: one inserts the procedure, the others wait and count on it; no outcome lost."""
    keys = (entity_key("deploy"), "")

    def work(repo: PgRepository, i: int) -> None:
        for r in range(4):
            pid = f"p{i}-{r}"
            prepared = repo._store.prepare(
                [MemoryEntry("deploy", org_id="acme", agent_id="a1", id=pid, created_at=T0)]
            )
            with repo.transaction() as tx:
                found = repo.procedure_by_key(*keys, tx)
                time.sleep(0.05)
                if found is not None:
                    repo.count_outcome(tx, found.id, r % 2 == 0, US)
                else:
                    repo.insert(tx, prepared, [new_memory(FAST, "procedural")])
                    repo.insert_procedure(tx, pid, "deploy", None, keys, r % 2 == 0, US)

    _race(pg_url, 3, work)
    [p] = repos[1].all_procedures()
    assert (p.action, p.successes, p.failures) == ("deploy", 6, 6)
