"""One contract for every memory store backend: the same tests run on SQLite (a data dir)
and on PostgreSQL + pgvector (a real server from tests/support/pg_server.py, no mocks).

Most tests store small random vectors with ``append_with_embedding`` / ``append_many``
(no model loads); one uses the real local embedder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import (
    DimensionMismatchError,
    DuplicateIdError,
    InvalidArgumentError,
    LocalEmbedder,
    MemoryEntry,
    PgMemoryStore,
    SqliteMemoryStore,
    TamperedRecordError,
    UnsupportedByBackendError,
    WrongKeyError,
    open_memory_store,
)
from agentzero_store.base.config import Layout
from agentzero_store.memory.seam import MemoryStore, supports
from agentzero_store.ops.migrate import migrate_store
from agentzero_store.storage.key_header import read_header

from ..conftest import (
    FAST,
    PASSPHRASE,
    child_env,
    rand_vectors,
    scan_for,
    text_needles,
    tree_digest,
)
from ..support.pg_server import PgServer

DIM = 16
T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)

Store = MemoryStore


@dataclass
class FakeClock:
    """The store's injected clock: tests move time instead of sleeping."""

    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Target:
    """Where a backend's store lives, and how to open it again."""

    kind: str
    where: str | Path
    clock: FakeClock = field(default_factory=FakeClock)
    server: PgServer | None = None

    def open(self, **kw: Any) -> Store:
        kw.setdefault("passphrase", PASSPHRASE)
        kw.setdefault("config", FAST)
        kw.setdefault("clock", self.clock)
        return open_memory_store(self.where, **kw)

    def snapshot(self) -> Any:
        """Every byte (SQLite: every file) or every row (PostgreSQL) the store holds."""
        if self.server is None:
            return tree_digest(Path(self.where))
        with psycopg.connect(str(self.where)) as c:
            return {
                t: c.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("az_keys", "az_meta", "az_memory", "az_terms")
            }

    def files_root(self) -> Path:
        """The directory the canary scan reads: the data dir, or PostgreSQL's data
        directory and its log (flushed to disk first)."""
        if self.server is None:
            return Path(self.where)
        with psycopg.connect(self.server.url, autocommit=True) as c:
            c.execute("CHECKPOINT")
        return self.server.data_dir.parent


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "sqlite":
        return Target("sqlite", tmp_path / "data")
    return Target(
        "postgresql",
        request.getfixturevalue("pg_url"),
        server=request.getfixturevalue("postgres"),
    )


@pytest.fixture
def mem(target: Target) -> Iterator[Store]:
    s = target.open()
    yield s
    s.close()


def vec(seed: int) -> np.ndarray:
    return rand_vectors(1, DIM, seed)[0]


# ---------------------------------------------------------------- dispatch
def test_open_memory_store_picks_the_backend(target: Target, mem: Store) -> None:
    expected = PgMemoryStore if target.kind == "postgresql" else SqliteMemoryStore
    assert type(mem) is expected


# ---------------------------------------------------------------- the seam
def test_each_backend_declares_its_capabilities(target: Target, mem: Store) -> None:
    # What only some backends have is declared, not probed: the PostgreSQL store has the
    # SQLite store's methods too (each a typed refusal), so hasattr would say yes.
    expected = (
        {"bulk_load"} if target.kind == "postgresql" else {"data_dir", "sidecars", "change_feed"}
    )
    assert mem.capabilities == expected
    for capability in ("data_dir", "sidecars", "change_feed", "bulk_load"):
        assert supports(mem, capability) is (capability in expected)  # type: ignore[call-overload]
    # The seam's public members that replaced reads of private attributes across layers.
    assert mem.clock() == T0
    header = mem.key_header()
    assert header["store_id"] == mem.store_id
    if target.kind == "sqlite":
        assert header == read_header(Layout(Path(target.where)))


def test_limit_is_the_result_count_of_every_recall_and_k_still_works(mem: Store) -> None:
    for i in range(6):
        mem.append_with_embedding(MemoryEntry(f"apple pie number {i}", id=f"a{i}"), vec(i))
    q = vec(0)
    ids = [h.id for h in mem.semantic_recall(q, limit=3)]
    assert len(ids) == 3 and [h.id for h in mem.semantic_recall(q, 3)] == ids
    assert len(mem.keyword_recall("apple", limit=4)) == 4
    assert len(mem.hybrid_recall("apple", q, limit=2)) == 2
    # The old keyword still works, with a warning that names the new one.
    with pytest.warns(DeprecationWarning, match=r"semantic_recall\(k=...\) is deprecated"):
        assert [h.id for h in mem.semantic_recall(q, k=3)] == ids  # type: ignore[call-arg]
    with pytest.warns(DeprecationWarning, match="limit="):
        assert len(mem.keyword_recall("apple", k=4)) == 4  # type: ignore[call-arg]


# ---------------------------------------------------------------- round trip
def test_round_trip_of_every_field_survives_reopen(target: Target, mem: Store) -> None:
    entry = MemoryEntry(
        "Flight LH 454 leaves at 07:15 — gate B22, seat 3A ✈",
        role="assistant",
        conversation_id="conv-1",
        org_id="org-a",
        agent_id="agent-x",
        expires_at=T0 + timedelta(days=3, microseconds=7),
        kind="self_noted",
        source="tool",
        metadata={"tags": ["travel", "ü"], "n": 3, "nested": {"ok": True, "none": None}},
        id="trip-1",
        created_at=T0 - timedelta(hours=1, microseconds=11),
        embedding_model="test-model",
    )
    assert mem.append_with_embedding(entry, vec(1)) == "trip-1"
    assert mem.get("trip-1") == entry
    assert mem.recent(5, org_id="org-a") == [entry]
    assert mem.embedding_info() == ("test-model", DIM)
    mem.close()
    with target.open(create=False) as again:
        assert again.get("trip-1") == entry
        assert again.count() == 1


def test_fresh_ids_and_times_are_chosen_on_append(mem: Store) -> None:
    eid = mem.append(MemoryEntry("no id given"))
    got = mem.get(eid)
    assert got is not None and got.id == eid and got.created_at == T0
    assert mem.get("no-such-id") is None


# ---------------------------------------------------------------- all or nothing
def test_append_many_is_all_or_nothing(mem: Store) -> None:
    mem.append_with_embedding(MemoryEntry("taken", id="taken"), vec(0))
    batch = [MemoryEntry(f"batch row {i}", id=f"b{i}") for i in range(3)]
    batch.append(MemoryEntry("a different memory", id="taken"))
    with pytest.raises(DuplicateIdError):
        mem.append_many(batch, vectors=[vec(i) for i in range(4)])
    assert mem.count() == 1
    assert all(mem.get(f"b{i}") is None for i in range(3))
    # A bad vector in the middle of a batch fails the whole batch too.
    bad = [vec(1), np.zeros(DIM + 1, dtype=np.float32), vec(2)]
    with pytest.raises(DimensionMismatchError):
        mem.append_many([MemoryEntry(f"v{i}", id=f"v{i}") for i in range(3)], vectors=bad)
    assert mem.count() == 1
    assert mem.keyword_recall("batch row", 10) == []
    # Anything but an entry is the same typed error on both backends, and writes nothing.
    with pytest.raises(InvalidArgumentError, match="MemoryEntry records"):
        mem.append_many([MemoryEntry("fine", id="fine"), "bare text"])  # type: ignore[list-item]
    assert mem.count() == 1 and mem.get("fine") is None


def test_identical_resend_is_a_no_op_and_a_reused_id_is_refused(mem: Store) -> None:
    e = MemoryEntry("remember the milk", id="m1", org_id="o", metadata={"a": 1})
    assert mem.append_with_embedding(e, vec(3)) == "m1"
    assert mem.append_with_embedding(e, vec(3)) == "m1"  # a retry after a lost ack
    assert mem.append_many(
        [e, MemoryEntry("and the eggs", id="m2", org_id="o")], vectors=[vec(3), vec(4)]
    ) == ["m1", "m2"]
    assert mem.count() == 2
    assert [h.id for h in mem.keyword_recall("milk", 5)] == ["m1"]
    with pytest.raises(DuplicateIdError):
        mem.append_with_embedding(e.with_(content="remember the bread"), vec(3))
    with pytest.raises(DuplicateIdError):
        mem.append_with_embedding(e.with_(org_id="other-tenant"), vec(3))
    with pytest.raises(DuplicateIdError):  # the same id twice in one batch
        mem.append_many([MemoryEntry("x", id="d"), MemoryEntry("x", id="d")])
    assert mem.count() == 2 and mem.get("m1") == mem.get("m1")


# ---------------------------------------------------------------- recall
def test_keyword_semantic_and_hybrid_recall_rank_and_scope(mem: Store) -> None:
    rows = [
        ("o1", "the cat sat on the warm mat"),
        ("o1", "dogs chase cats in the garden"),
        ("o1", "quarterly revenue grew by nine percent"),
        ("o2", "the cat sat on the warm mat"),
    ]
    ids = mem.append_many(
        [MemoryEntry(text, org_id=org) for org, text in rows], vectors=[vec(i) for i in range(4)]
    )
    kw = mem.keyword_recall("cats sitting", 5, org_id="o1")
    # One term each ("cat"; "sat" is not "sit"): the shorter row ranks first (BM25).
    assert [h.id for h in kw] == [ids[1], ids[0]]
    assert all(h.ranks == {"keyword": r} for r, h in enumerate(kw, 1))
    assert kw[0].score > 0
    sem = mem.semantic_recall(vec(2), 2, org_id="o1")
    assert sem[0].id == ids[2] and sem[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(sem) == 2 and ids[3] not in [h.id for h in sem]
    hyb = mem.hybrid_recall("revenue", vec(2), 3, org_id="o1")
    assert hyb[0].id == ids[2] and hyb[0].ranks == {"semantic": 1, "keyword": 1}
    # Identical texts are fused into one hit (deduplicated on the fingerprint).
    both = mem.hybrid_recall("warm mat", vec(0), 5)
    assert [h.id for h in both].count(ids[0]) + [h.id for h in both].count(ids[3]) == 1
    assert mem.keyword_recall("zebra", 5) == []


scopes = st.tuples(st.integers(0, 2), st.integers(0, 2))
row_specs = st.lists(
    st.tuples(scopes, st.sampled_from(["live", "expired", "deleted"]), st.booleans()),
    min_size=1,
    max_size=14,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(specs=row_specs, query_scope=scopes, org_only=st.booleans(), k=st.integers(1, 6))
def test_recall_returns_only_the_callers_live_rows(
    mem: Store, specs: list[Any], query_scope: tuple[int, int], org_only: bool, k: int
) -> None:
    """Property: whatever rows three orgs and three agents hold, every recall mode returns
    only live, unexpired rows of the caller's scope, and as many as exist up to k."""
    run = uuid.uuid4().hex[:8]  # examples share the store: each writes its own orgs

    def org(i: int) -> str:
        return f"{run}-org{i}"

    entries, vectors, deleted = [], [], []
    for n, ((o, a), state, with_vector) in enumerate(specs):
        e = MemoryEntry(
            f"shared word plus row {n} {state}",
            org_id=org(o),
            agent_id=f"agent{a}",
            expires_at=T0 - timedelta(seconds=1) if state == "expired" else None,
        )
        entries.append(e)
        vectors.append(vec(n) if with_vector else None)
        if state == "deleted":
            deleted.append(n)
    ids = mem.append_many(entries, vectors=vectors)
    for n in deleted:
        assert mem.delete(ids[n])
    scope: dict[str, str] = {"org_id": org(query_scope[0])}
    if not org_only:
        scope["agent_id"] = f"agent{query_scope[1]}"

    def visible(n: int) -> bool:
        (o, a), state, _ = specs[n]
        return (
            state == "live"
            and org(o) == scope["org_id"]
            and (org_only or f"agent{a}" == scope["agent_id"])
        )

    allowed = {ids[n] for n in range(len(specs)) if visible(n)}
    with_vec = {ids[n] for n in range(len(specs)) if visible(n) and specs[n][2]}
    kw = mem.keyword_recall("shared word", k, **scope)
    assert {h.id for h in kw} <= allowed and len(kw) == min(k, len(allowed))
    sem = mem.semantic_recall(vec(0), k, **scope)
    assert {h.id for h in sem} <= with_vec and len(sem) == min(k, len(with_vec))
    hyb = mem.hybrid_recall("shared word", vec(0), k, **scope)
    assert {h.id for h in hyb} <= allowed and len(hyb) == min(k, len(allowed))
    assert {e.id for e in mem.recent(20, **scope)} == allowed
    assert mem.count(**scope) == len(allowed)


# ---------------------------------------------------------------- expiry, delete, forget
def test_expired_rows_vanish_and_gc_removes_them(target: Target, mem: Store) -> None:
    e = MemoryEntry("short-lived note about parking", id="p", expires_at=T0 + timedelta(minutes=5))
    mem.append_with_embedding(e, vec(5))
    mem.append_with_embedding(MemoryEntry("lasting note about parking", id="q"), vec(6))
    assert mem.get("p") == e.with_(created_at=T0) and mem.count() == 2
    assert mem.gc_expired() == 0
    target.clock.now = T0 + timedelta(minutes=5)  # expiry is exclusive: now it is gone
    assert mem.get("p") is None and mem.count() == 1
    assert [h.id for h in mem.keyword_recall("parking", 5)] == ["q"]
    assert [h.id for h in mem.semantic_recall(vec(5), 5)] == ["q"]
    assert [h.id for h in mem.hybrid_recall("parking", vec(5), 5)] == ["q"]
    assert mem.gc_expired() == 1 and mem.gc_expired() == 0
    target.clock.now = T0
    assert mem.get("p") is None  # collected, not merely hidden


def test_delete_and_forget(mem: Store) -> None:
    layout = [("o1", "a1", "c1"), ("o1", "a1", "c2"), ("o1", "a2", "c1"), ("o2", "a1", "c1")]
    ids = mem.append_many(
        [
            MemoryEntry(f"note {i} about lunch", org_id=o, agent_id=a, conversation_id=c)
            for i, (o, a, c) in enumerate(layout)
        ],
        vectors=[vec(i) for i in range(4)],
    )
    assert mem.delete(ids[0]) is True and mem.delete(ids[0]) is False
    assert mem.get(ids[0]) is None
    assert ids[0] not in [h.id for h in mem.keyword_recall("lunch", 10)]
    with pytest.raises(InvalidArgumentError):
        mem.forget()
    assert mem.forget(org_id="o1", agent_id="a1") == 1  # c2 (c1 was deleted)
    assert mem.forget(conversation_id="c1") == 2
    assert mem.count() == 0 and mem.keyword_recall("lunch", 10) == []
    assert mem.semantic_recall(vec(1), 10) == []


# ---------------------------------------------------------------- keys
def test_wrong_passphrase_changes_nothing(target: Target, mem: Store) -> None:
    mem.append_with_embedding(MemoryEntry("secret plan", id="s"), vec(7))
    mem.close()
    before = target.snapshot()
    with pytest.raises(WrongKeyError):
        target.open(passphrase="not the passphrase")
    with pytest.raises(WrongKeyError):
        target.open(passphrase=None, key=bytes(32))  # a raw key where a passphrase slot is
    assert target.snapshot() == before
    with target.open(create=False) as again:
        assert again.get("s") is not None


# ---------------------------------------------------------------- crash of a client
CHILD = """
import sys
from datetime import UTC, datetime
import numpy as np
from agentzero_store import MemoryEntry, StoreConfig, open_memory_store
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
target, passphrase = sys.argv[1], sys.argv[2]
store = open_memory_store(target, passphrase=passphrase, config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
rng = np.random.default_rng(1)
i = 0
while True:
    eid = f"crash-{i}"
    store.append_with_embedding(MemoryEntry(f"acknowledged write {i}", id=eid), rng.normal(size=16))
    print(eid, flush=True)
    i += 1
"""


@pytest.mark.crash
def test_a_killed_client_loses_no_acknowledged_write(target: Target, mem: Store) -> None:
    mem.close()  # created; the child opens it
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(target.where), PASSPHRASE],
        stdout=subprocess.PIPE,
        text=True,
        env={**child_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert p.stdout is not None
    acked = [p.stdout.readline().strip() for _ in range(6)]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    with target.open(create=False) as again:
        for eid in acked:
            got = again.get(eid)
            assert got is not None and got.content == f"acknowledged write {eid[6:]}"
        assert again.count() >= len(acked)
        assert again.append(MemoryEntry("life goes on")) in {e.id for e in again.recent(50)}


# ---------------------------------------------------------------- plaintext at rest
def _fresh_database(server: PgServer) -> str:
    name = f"mig{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return server.database_url(name)


def test_no_content_or_metadata_plaintext_at_rest(
    target: Target, mem: Store, postgres: PgServer, tmp_path: Path
) -> None:
    """A realistic session (writes, duplicates, recalls, deletes, forget, expiry), then a
    migration to the other backend and back into a new store of this one (each checked
    with keyword queries of the canaries), then every file of every store (PostgreSQL:
    the server's whole data directory, WAL included, after a CHECKPOINT, and its log)
    is scanned for each canary: 0 hits."""
    words = [f"canary{uuid.uuid4().hex[:10]}" for _ in range(12)]
    meta_words = [f"metacanary{uuid.uuid4().hex[:10]}" for _ in range(12)]
    entries = [
        MemoryEntry(
            f"note {words[i]} for the team",
            org_id=f"org{i % 3}",
            conversation_id=f"c{i % 2}",
            metadata={"label": meta_words[i], "n": i},
            expires_at=T0 + timedelta(minutes=1) if i == 11 else None,
        )
        for i in range(12)
    ]
    ids = mem.append_many(entries[:8], vectors=[vec(i) for i in range(8)])
    for i in range(8, 12):
        ids.append(mem.append_with_embedding(entries[i], vec(i)))
    mem.append_with_embedding(entries[0].with_(id=ids[0]), vec(0))  # an idempotent re-send
    for i in range(12):
        assert mem.keyword_recall(words[i], 3, org_id=f"org{i % 3}")[0].id == ids[i]
    mem.hybrid_recall(words[3], vec(3), 5)
    mem.semantic_recall(vec(4), 5, org_id="org1")
    mem.delete(ids[5])
    mem.forget(org_id="org2", conversation_id="c0")
    with pytest.raises(DuplicateIdError):
        mem.append(MemoryEntry(f"clash {words[0]}", id=ids[0]))
    target.clock.now = T0 + timedelta(hours=1)
    mem.gc_expired()
    mem.close()
    if target.server is None:
        other, back = _fresh_database(postgres), tmp_path / "back"
    else:
        other, back = tmp_path / "other", _fresh_database(postgres)
    for src, dst in ((target.where, other), (other, back)):
        report = migrate_store(src, dst, passphrase=PASSPHRASE, config=FAST)
        # 12, less one deleted, two forgotten (org2, c0: 2 and 8) and one expired (11).
        assert report.memories == 8 and report.checked["keyword_queries"] == 8
    needles = [n for w in (*words, *meta_words) for n in text_needles(w)]
    server_files = Target("postgresql", "", server=postgres).files_root()
    for root in (target.files_root(), server_files, tmp_path):
        assert scan_for(root, needles) == []
    if target.server is not None:
        # The control: text stored in the clear in that database is found by the same scan.
        control = f"controlcanary{uuid.uuid4().hex[:10]}"
        with psycopg.connect(str(target.where), autocommit=True) as c:
            c.execute("CREATE TABLE plain_control (t text)")
            c.execute("INSERT INTO plain_control VALUES (%s)", (control,))
        assert scan_for(target.files_root(), text_needles(control))


# ---------------------------------------------------------------- the real embedder
def test_text_recall_with_the_local_embedder(target: Target, local_embedder: LocalEmbedder) -> None:
    with target.open(embedder=local_embedder) as s:
        s.append_many(
            [
                MemoryEntry("The user is allergic to peanuts."),
                MemoryEntry("The meeting moved to Thursday afternoon."),
                MemoryEntry("Their dog is called Biscuit."),
            ]
        )
        top = s.recall("what food allergy does the user have?", 1)
        assert "peanuts" in top[0].entry.content
        hyb = s.recall("pet name", 1, mode="hybrid")
        assert "Biscuit" in hyb[0].entry.content
        assert s.embedding_info() == (local_embedder.model_id, local_embedder.dimension)


# ---------------------------------------------------------------- PostgreSQL only
def test_pg_row_moved_to_another_tenant_fails_to_open(pg_url: str) -> None:
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as s:
        s.append(MemoryEntry("tenant A's secret", id="a", org_id="A"))
        s.append(MemoryEntry("tenant B's note", id="b", org_id="B"))
        with psycopg.connect(pg_url, autocommit=True) as c:
            c.execute("UPDATE az_memory SET org_id = 'B' WHERE id = 'a'")
        with pytest.raises(TamperedRecordError):
            s.get("a")
        with psycopg.connect(pg_url, autocommit=True) as c:
            c.execute("UPDATE az_memory SET org_id = 'A' WHERE id = 'a'")
        assert s.get("a") is not None  # back as sealed: opens again
        with psycopg.connect(pg_url, autocommit=True) as c:  # an expiry extended: refused
            c.execute("UPDATE az_memory SET expires_at_us = 99999999999999999 WHERE id = 'b'")
        with pytest.raises(TamperedRecordError):
            s.keyword_recall("note", 5, org_id="B")


def test_pg_sqlite_only_internals_raise_a_typed_error(pg_url: str) -> None:
    calls: list[Callable[[PgMemoryStore], Any]] = [
        lambda s: s.enable_hnsw_index(),
        lambda s: s.rebuild_index(),
        lambda s: s.changes_since(0),
        lambda s: s.source_seq(),
        lambda s: s.index_status(),
        lambda s: s.database,
        lambda s: s.data_dir,
    ]
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as s:
        for call in calls:
            with pytest.raises(UnsupportedByBackendError) as info:
                call(s)
            assert "PostgreSQL backend does not support" in info.value.message
            assert info.value.hint


def _race(
    writers: list[tuple[PgMemoryStore, MemoryEntry]], vectors: list[Any] | None = None
) -> list[str]:
    """Append each entry (with its vector, if given) through its own client at the same
    moment; each outcome ("ok", "dup" or "dim")."""
    import threading

    barrier = threading.Barrier(len(writers))
    outcome: list[str] = []

    def write(s: PgMemoryStore, e: MemoryEntry, v: Any) -> None:
        barrier.wait()
        try:
            s.append(e) if v is None else s.append_with_embedding(e, v)
            outcome.append("ok")
        except DuplicateIdError:
            outcome.append("dup")
        except DimensionMismatchError:
            outcome.append("dim")

    vs = vectors or [None] * len(writers)
    threads = [
        threading.Thread(target=write, args=(*w, v)) for w, v in zip(writers, vs, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(outcome)


def test_pg_concurrent_writers_of_one_id_agree(pg_url: str) -> None:
    """Two clients race to write the same id: identical memories both succeed and store
    one row; different ones leave exactly one stored and one DuplicateIdError."""
    a = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST)
    b = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False)
    try:
        for round_, same in enumerate((True, False, True, False)):
            eid = f"race-{round_}"
            texts = ["same text", "same text"] if same else ["text one", "text two"]
            got = _race([(a, MemoryEntry(texts[0], id=eid)), (b, MemoryEntry(texts[1], id=eid))])
            assert got == (["ok", "ok"] if same else ["dup", "ok"])
            stored = a.get(eid)
            assert stored is not None and stored.content in texts
        assert a.count() == 4 and b.count() == 4
    finally:
        a.close()
        b.close()


def _send(s: PgMemoryStore, batch: list[MemoryEntry], barrier: Any, errors: list[Any]) -> None:
    barrier.wait()
    try:
        s.append_many(batch)
    except BaseException as exc:  # reported by the caller
        errors.append(exc)


def test_pg_batches_taking_the_same_ids_in_opposite_orders_both_succeed(pg_url: str) -> None:
    """Two clients re-send the same two memories in opposite orders at the same moment.
    Each insert waits for the other's uncommitted row: PostgreSQL breaks that deadlock by
    aborting one transaction, which the store runs again, so both calls succeed."""
    import threading

    a = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST)
    b = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False)
    try:
        for round_ in range(15):
            pair = [MemoryEntry(f"pair {round_} {n}", id=f"p{round_}-{n}") for n in "xy"]
            barrier = threading.Barrier(2)
            errors: list[BaseException] = []
            threads = [
                threading.Thread(target=_send, args=(a, pair, barrier, errors)),
                threading.Thread(target=_send, args=(b, pair[::-1], barrier, errors)),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert errors == []
        assert a.count() == 30
    finally:
        a.close()
        b.close()


def test_pg_concurrent_first_vectors_fix_one_dimension(pg_url: str) -> None:
    """Two clients store the first vectors at once, of different dimensions: one fixes the
    dimension (column type and HNSW index), the other is refused; nothing is half made."""
    a = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST)
    b = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False)
    try:
        got = _race(
            [(a, MemoryEntry("sixteen", id="d16")), (b, MemoryEntry("eight", id="d8"))],
            vectors=[vec(1), rand_vectors(1, 8, 1)[0]],
        )
        assert got == ["dim", "ok"]
        _, dim = a.embedding_info()
        winner, loser = ("d16", "d8") if dim == DIM else ("d8", "d16")
        assert a.get(winner) is not None and a.get(loser) is None and a.count() == 1
        assert b.embedding_info() == (None, dim)
        assert len(b.semantic_recall(vec(1) if dim == DIM else rand_vectors(1, 8, 1)[0], 5)) == 1
    finally:
        a.close()
        b.close()


def test_pg_key_header_is_the_keys_json_format_without_secrets(pg_url: str) -> None:
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as s:
        store_id = s.store_id
    with psycopg.connect(pg_url) as c:
        (raw,) = c.execute("SELECT header FROM az_keys").fetchone() or ("",)
    header = json.loads(raw)
    assert header["format"] == "agentzero-keys/1" and header["store_id"] == store_id
    assert [s["kind"] for s in header["slots"]] == ["passphrase"]
    assert PASSPHRASE not in raw


def test_pg_small_tenant_gets_k_semantic_results_through_the_hnsw_index(pg_url: str) -> None:
    """A tenant with 2% of the rows still gets k results when the HNSW index serves the
    query (iterative scan), and only its own rows, in order of similarity."""
    n, small = 2_000, 40
    vectors = rand_vectors(n, DIM, seed=5)
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as s:
        for start in range(0, n, 500):
            s.append_many(
                [
                    MemoryEntry(f"row {i}", org_id="small" if i % (n // small) == 0 else "big")
                    for i in range(start, start + 500)
                ],
                vectors=list(vectors[start : start + 500]),
            )
        q = rand_vectors(1, DIM, seed=99)[0]
        # At this size the planner would read the small tenant through its btree index
        # and sort (exact, and right); these settings make it use the HNSW index, whose
        # iterative scan is what this test is about. Set on the store's own connection.
        force_hnsw = ["SET enable_seqscan = off", "SET enable_sort = off"]
        for stmt in force_hnsw:
            s._conn.execute(stmt)
        sql = (
            "SELECT label FROM az_memory WHERE embedding IS NOT NULL"
            " AND org_id = 'small' ORDER BY embedding <=> %s::vector LIMIT 10"
        )
        qtext = "[" + ",".join(str(float(x)) for x in q) + "]"
        with psycopg.connect(pg_url) as c:
            for stmt in force_hnsw:
                c.execute(stmt)
            plan = "\n".join(r[0] for r in c.execute("EXPLAIN " + sql, (qtext,)))
            assert "az_memory_embedding" in plan  # the HNSW index serves the query
            # Without iterative scans the same query finds fewer than k of the tenant's
            # rows: the store must not rely on that.
            c.execute("SET hnsw.iterative_scan = off")
            assert len(c.execute(sql, (qtext,)).fetchall()) < 10
        hits = s.semantic_recall(q, 10, org_id="small")
        assert len(hits) == 10 and all(h.entry.org_id == "small" for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        exact = sorted((float(vectors[i] @ q), f"row {i}") for i in range(0, n, n // small))[::-1][
            :10
        ]
        found = {h.entry.content for h in hits}
        assert len(found & {c for _, c in exact}) >= 8  # approximate, but close


def test_pg_semantic_recall_of_more_than_250_asks_within_pgvectors_bounds(pg_url: str) -> None:
    """A k whose 4k exceeds pgvector's hnsw.ef_search limit (1,000) still answers, with
    every row of the scope (the iterative scan goes past ef_search)."""
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as s:
        s.append_many([MemoryEntry(f"row {i}") for i in range(300)], [vec(i) for i in range(300)])
        assert len(s.semantic_recall(vec(1), 300)) == 300
