"""The agent memory's lifecycle on PostgreSQL (``postgres.lifecycle``, ``postgres.archive``)
against the SQLite repository: the facade's own ``Lifecycle`` (forget, undo, erase,
archive, restore) runs unchanged over each, and the same calls give the same results.
Then what only PostgreSQL has to show: no plaintext in any table, sealed values that
do not survive being moved, and two connections of one scope that forget, undo and
erase the same memories at once without restoring one twice or bringing back an erased
one. Real servers, no mocks."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentzero_store import SqliteMemoryStore
from agentzero_store.agentmem.lifecycle import Lifecycle
from agentzero_store.agentmem.namespaces import ScopeGate
from agentzero_store.agentmem.parts import Parts, new_memory
from agentzero_store.agentmem.postgres.archive import PgArchive
from agentzero_store.agentmem.postgres.repository import PgRepository
from agentzero_store.agentmem.postgres.side import PgSide
from agentzero_store.agentmem.records import Memory
from agentzero_store.agentmem.sqlite.archive import Archive
from agentzero_store.agentmem.sqlite.repository import SqliteRepository
from agentzero_store.agentmem.sqlite.side import SqliteSide
from agentzero_store.base.config import Layout
from agentzero_store.base.errors import (
    CorruptStoreError,
    NotFoundError,
    TamperedRecordError,
    UnsupportedByBackendError,
)
from agentzero_store.memory.postgres.store import PgMemoryStore
from agentzero_store.memory.records import MemoryEntry, Scope, from_us, to_us
from tests.agentmem.conftest import START, Clock
from tests.conftest import FAST, PASSPHRASE

ORG, AGENT = "acme", "a1"
DIM = 8
SECRETS = ("Zanzibar-7 launch code", "Ottoline Quist", "Quokka Harbour", "nebula-ledger-42")


@dataclass
class Side:
    """One backend: its store, repository, archive and the facade's ``Lifecycle``."""

    name: str
    store: Any
    repo: Any
    archive: Any
    life: Lifecycle

    def sql(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of a read (rows as tuples)."""
        if self.name == "pg":
            return [tuple(r) for r in self.store.query(sql, params)]
        return [tuple(r) for r in self.store.database.query(sql, params)]

    def change(self, sql: str, params: Sequence[Any] = ()) -> None:
        """A write behind the layer's back (PostgreSQL: what a tamperer with SQL does)."""
        with self.store.transaction() as tx:
            tx.execute(sql, params)


def pg_side(url: str, clock: Clock, agent: str = AGENT) -> Side:
    store = PgMemoryStore.open(url, passphrase=PASSPHRASE, config=FAST, clock=clock)
    repo = PgRepository(store, ORG, agent)
    repo.migrate()
    archive = PgArchive(store, ORG, agent)
    gate = ScopeGate(repo, archive, Scope(ORG, agent), None, agent)
    parts = Parts(store, PgSide(store), gate, FAST, clock, ORG, agent)
    return Side("pg", store, repo, archive, Lifecycle(parts))


@pytest.fixture
def sides(tmp_path: Path, pg_url: str, clock: Clock) -> Iterator[tuple[Side, Side]]:
    sq_store = SqliteMemoryStore.open(
        tmp_path / "d", passphrase=PASSPHRASE, config=FAST, clock=clock
    )
    sq_repo = SqliteRepository(sq_store, ORG, AGENT)
    sq_repo.migrate()
    archive = Archive(
        Layout(sq_store.data_dir).memory_archive,
        sq_store.keys.archive_key,
        sq_store.store_id,
        FAST.busy_timeout_ms,
    )
    sq = Side(
        "sqlite",
        sq_store,
        sq_repo,
        archive,
        Lifecycle(
            Parts(
                sq_store,
                SqliteSide(sq_store),
                ScopeGate(sq_repo, archive, Scope(ORG, AGENT), None, AGENT),
                FAST,
                clock,
                ORG,
                AGENT,
            )
        ),
    )
    pg = pg_side(pg_url, clock)
    yield sq, pg
    archive.close()
    sq_store.close()
    pg.store.close()


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


# (id, content, conversation, type, speaker, about, metadata)
SEED = [
    ("m01", f"{SECRETS[0]} was read aloud by Ottoline", "c1", "episodic", SECRETS[1], (), {}),
    ("m02", "the ferry leaves at noon from the harbour", "c1", "episodic", "Bram",
     (SECRETS[2],), {}),
    ("m03", "Bram prefers green tea in the morning", "c2", "semantic", None, ("Bram", "tea"),
     {"src": SECRETS[3]}),
    ("m04", "the quarterly report is due on friday", "c2", "semantic", None, (),
     {"n": 1, "a": [1, 2]}),
    ("m05", "Ottoline Quist booked the meeting room", "c3", "episodic", "Bram", (SECRETS[1],), {}),
]  # fmt: skip


def seed(side: Side, rows: Sequence[tuple[Any, ...]] = SEED, vectors: bool = True) -> None:
    entries = [
        MemoryEntry(
            content,
            role="user",
            conversation_id=conv,
            org_id=ORG,
            agent_id=side.repo.agent_id,
            id=mid,
            created_at=START + timedelta(minutes=i),
            metadata=meta,
            embedding_model="test-model" if vectors else None,
        )
        for i, (mid, content, conv, _, _, _, meta) in enumerate(rows)
    ]
    metas = [new_memory(FAST, t, speaker=sp, about=list(ab)) for _, _, _, t, sp, ab, _ in rows]
    vecs = [unit(i) for i in range(len(rows))] if vectors else None
    prepared = side.store.prepare(entries, vecs)
    with side.repo.transaction() as tx:
        side.repo.insert(tx, prepared, metas)


def memories(side: Side, ids: Sequence[str]) -> dict[str, Memory | None]:
    """Each memory as ``get`` shows it (archived text read back)."""
    now = to_us(START + timedelta(days=1))
    out: dict[str, Memory | None] = {}
    for i in ids:
        row = side.repo.by_id(i, now)
        out[i] = None if row is None else side.life.hydrate([row])[0]
    return out


def ids_of(side: Side, selector: str, value: str) -> list[str]:
    return sorted(mid for mid, _ in side.repo.select(selector, value))


ALL = [r[0] for r in SEED]


# ---------------------------------------------------------------------- parity
def test_forget_undo_round_trip_matches_sqlite(sides: tuple[Side, Side]) -> None:
    for s in sides:
        seed(s)
        with s.repo.transaction() as tx:
            s.repo.add_edges(tx, [("m03", "m01", "semantic", 1.0), ("m02", "m04", "x", 0.5)], 7)
    before = [memories(s, ALL) for s in sides]
    assert before[0] == before[1]
    assert all(m is not None for m in before[1].values())

    receipts = [s.life.forget(("conversation_id", "c1")) for s in sides]
    assert [r.ids for r in receipts] == [("m01", "m02")] * 2
    for s in sides:
        assert ids_of(s, "conversation_id", "c1") == []
        assert memories(s, ["m01", "m02"]) == {"m01": None, "m02": None}
        table = "az_am_edge" if s.name == "pg" else "am_edge"
        assert s.sql(f"SELECT count(*) FROM {table}") == [(0,)]
        assert s.repo.forgotten_select("id", "m01") == ["m01"]
        assert sorted(s.repo.forgotten_select("conversation_id", "c1")) == ["m01", "m02"]
    # about: a speaker (m01's) and an entity (m02's), by entity key as the facade passes it
    for key, want in (("ottoline quist", ["m01"]), ("quokka harbour", ["m02"]), ("bram", ["m02"])):
        assert [sorted(s.repo.forgotten_select("about", key)) for s in sides] == [want, want]
    now = to_us(START + timedelta(hours=1))
    got = [s.repo.forgotten(r.token, now) for s, r in zip(sides, receipts, strict=True)]
    for (sid, sp, sv), (pid, pp, pv) in zip(*got, strict=True):
        assert sid == pid and sv == pv  # the same float32 bytes
        assert sp["memory"] == pp["memory"]
        keep = [i for i in range(22) if i not in (1, 8)]  # not the label, not the fingerprint
        assert [sp["am_memory"][i] for i in keep] == [pp["am_memory"][i] for i in keep]
        assert sp["about"] == pp["about"]
    assert [s.repo.purgeable(now) for s in sides] == [[], []]
    later = to_us(START + timedelta(days=8))
    assert [s.repo.purgeable(later) for s in sides] == [["m01", "m02"]] * 2

    assert [s.life.undo(r.token) for s, r in zip(sides, receipts, strict=True)] == [2, 2]
    after = [memories(s, ALL) for s in sides]
    assert after[0] == after[1] == before[0]
    for s, r in zip(sides, receipts, strict=True):
        table = "az_am_edge" if s.name == "pg" else "am_edge"
        edges = s.sql(f"SELECT src, dst, type FROM {table} ORDER BY src")
        assert [tuple(e) for e in edges] == [("m02", "m04", "x"), ("m03", "m01", "semantic")]
        assert s.repo.forgotten_select("conversation_id", "c1") == []
        with pytest.raises(NotFoundError):
            s.life.undo(r.token)
    # the restored rows are found again by every signal
    pg = sides[1]
    label = pg.repo.select("id", "m01")[0][1]
    assert label in pg.repo.keyword_ranked("Zanzibar launch", 5, _filter())
    assert pg.repo.vector_of(label) == unit(0).tobytes()


def _filter() -> Any:
    from agentzero_store.agentmem.sqlite.core import Filter

    return Filter(now_us=to_us(START + timedelta(days=1)))


def test_facts_and_procedures_come_back_with_undo(sides: tuple[Side, Side]) -> None:
    sq, pg = sides
    for s in sides:
        seed(s)
    with sq.repo.transaction() as tx:
        sq.repo.insert_fact(
            tx, "m03", ("Bram", "prefers", "tea"), ("bram", "prefers", "tea"), 0.9, True, 5
        )
        sq.repo.insert_procedure(
            tx, "m04", "file report", "friday", ("file report", "friday"), True, 5
        )
    with pg.repo.transaction() as tx:
        c = pg.repo.codec
        tx.execute(
            "INSERT INTO az_am_fact (id, org_id, agent_id, sealed, subject_key, predicate_key,"
            " object_key, confidence, single_valued, valid_from_us) VALUES"
            " (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            ("m03", ORG, AGENT, c.seal("az_am_fact", "m03", ["Bram", "prefers", "tea"]),
             c.blind("bram"), c.blind("prefers"), c.blind("tea"), 0.9, True, 5),
        )  # fmt: skip
        tx.execute(
            "INSERT INTO az_am_procedure (id, org_id, agent_id, sealed, action_key, context_key,"
            " successes, failures, updated_at_us) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            ("m04", ORG, AGENT, c.seal("az_am_procedure", "m04", ["file report", "friday"]),
             c.blind("file report"), c.blind("friday"), 2, 1, 5),
        )  # fmt: skip
    tables = {"sqlite": ("am_fact", "am_procedure"), "pg": ("az_am_fact", "az_am_procedure")}
    for s in sides:
        rows = {t: s.sql(f"SELECT * FROM {t}") for t in tables[s.name]}
        r = s.life.forget(("conversation_id", "c2"))
        assert all(s.sql(f"SELECT * FROM {t}") == [] for t in tables[s.name])
        assert s.repo.orphans() == []  # moved to the undo area, not orphaned
        s.life.undo(r.token)
        assert {t: s.sql(f"SELECT * FROM {t}") for t in tables[s.name]} == rows


def test_erase_matches_sqlite(sides: tuple[Side, Side], clock: Clock) -> None:
    for s in sides:
        seed(s)
        s.life.archive(["m05"])
        s.life.forget(("id", "m02"))
        with s.repo.transaction() as tx:
            s.repo.append_history(tx, 9, [("note", "m05", {"x": 1}), ("note", "m04", {})])
    # "Ottoline Quist": m01's speaker, m05's entity (archived); m02 (forgotten) is Bram's
    reports = [s.life.erase(("about", "ottoline quist")) for s in sides]
    assert [(r.count, r.ids, r.pending) for r in reports] == [(2, ("m01", "m05"), False)] * 2
    reports = [s.life.erase(("about", "quokka harbour")) for s in sides]  # only in the undo area
    assert [(r.count, r.ids) for r in reports] == [(1, ("m02",))] * 2
    tombs = [s.repo.tombstones() for s in sides]
    assert tombs[0] == tombs[1]
    assert [t["ids"] for t in tombs[1]] == [["m01", "m05"], ["m02"]]
    for s in sides:
        assert memories(s, ["m01", "m02", "m05"]) == {"m01": None, "m02": None, "m05": None}
        assert s.repo.forgotten_select("id", "m02") == []
        assert s.repo.pending_purge() == []
        assert s.archive.ids() == set()
    sq, pg = sides
    assert [tuple(r) for r in sq.sql("SELECT target FROM am_history")] == [("m04",)]
    assert pg.sql("SELECT target FROM az_am_history") == [("m04",)]
    # no live memory has a speaker any more: m01 and m05 are erased, m02 forgotten
    assert sq.sql("SELECT key FROM am_speaker") == pg.sql("SELECT key FROM az_am_speaker") == []
    assert pg.sql(
        "SELECT count(*) FROM az_memory WHERE id = ANY(%s)", (["m01", "m02", "m05"],)
    ) == [(0,)]
    with pytest.raises(NotFoundError):
        pg.life.erase(("id", "m01"))


def test_archive_and_restore_match_sqlite(sides: tuple[Side, Side]) -> None:
    for s in sides:
        seed(s)
    before = [memories(s, ALL) for s in sides]
    assert [s.life.archive(["m03", "m04", "nope"]) for s in sides] == [2, 2]
    for s in sides:
        assert [t[0] for t in s.repo.texts(ALL)] == ["m01", "m02", "m05"]
        assert set(s.repo.all_archived()) == {"m03", "m04"}
        got = memories(s, ["m03", "m04"])
        assert all(m is not None and m.archived for m in got.values())
        assert {k: (v.content, v.metadata) for k, v in got.items() if v} == {
            k: (v.content, v.metadata) for k, v in before[0].items() if v and k in got
        }
    pg = sides[1]
    label = pg.repo.select("id", "m03")[0][1]
    assert label in pg.repo.keyword_ranked("green tea morning", 5, _filter())  # terms kept
    assert pg.sql("SELECT count(*) FROM az_am_archive") == [(2,)]
    # forgotten while archived: the text stays in the archive, and undo reads it back
    receipts = [s.life.forget(("id", "m04")) for s in sides]
    assert [s.repo.archived_payload_ids() for s in sides] == [{"m04"}, {"m04"}]
    assert [s.life.drop_spare_archive_copies() for s in sides] == [0, 0]
    for s, r in zip(sides, receipts, strict=True):
        s.life.undo(r.token)
    assert [s.life.restore("m03") for s in sides] == [True, True]
    assert [s.life.restore("m04") for s in sides] == [True, True]
    assert [s.life.restore("m01") for s in sides] == [False, False]
    after = [memories(s, ALL) for s in sides]
    assert after[0] == after[1] == before[0]
    for s in sides:
        assert s.repo.all_archived() == {}
        assert s.archive.ids() == set()


def test_consolidation_selections_match_sqlite(sides: tuple[Side, Side]) -> None:
    for s in sides:
        seed(s)
        entry = MemoryEntry("a short lived note", role="user", conversation_id="c9", org_id=ORG,
                            agent_id=AGENT, id="m09", created_at=START,
                            expires_at=START + timedelta(hours=2))  # fmt: skip
        with s.repo.transaction() as tx:
            s.repo.insert(tx, s.store.prepare([entry]), [new_memory(FAST, "semantic")])
    out = []
    for s in sides:
        res: dict[str, Any] = {
            t: [x[:1] + x[2:] for x in s.repo.texts_of_type(t)] for t in ("episodic", "semantic")
        }
        res["about"] = s.repo.about_of(["m02", "m03", "m05"])
        with s.repo.transaction() as tx:
            s.repo.set_promoted(tx, ["m01", "m05"], "m03")
            s.repo.log_access(tx, [("m04", 1), ("m04", 2), ("m03", 3)])
            s.repo.add_access_counts(tx, "m03", ["m04"])
        res["promoted"] = [t[4] for t in s.repo.texts_of_type("episodic")]
        res["counts"] = [m.access_count for m in memories(s, ["m03", "m04"]).values() if m]
        now = to_us(START + timedelta(hours=3))
        expired = s.repo.expired(now)
        res["expired"] = [i for i, _ in expired]
        r = s.life.forget(("id", "m02"))
        with s.repo.transaction() as tx:
            s.repo.drop(tx, expired)
            s.repo.schedule_purge(tx, s.repo.purgeable(to_us(START + timedelta(days=9))) + ["m09"])
            s.repo.prune_speakers(tx)
        res["after"] = (s.repo.forgotten(r.token, now), s.repo.orphans(), s.repo.expired(now))
        res["vector"] = s.repo.vector_of(s.repo.select("id", "m01")[0][1])
        out.append(res)
    assert out[0] == out[1]
    assert out[1]["counts"] == [3, 2] and out[1]["expired"] == ["m09"]
    assert out[1]["after"] == ([], [], [])


def test_adopt_rows_written_below_the_layer_matches_sqlite(sides: tuple[Side, Side]) -> None:
    found = []
    for s in sides:
        seed(s, SEED[:2], vectors=False)
        s.store.append_many(
            [
                MemoryEntry(
                    f"plain turn {i}",
                    role="user",
                    conversation_id="raw",
                    org_id=ORG,
                    agent_id=AGENT,
                    id=f"r{i}",
                    created_at=START,
                )
                for i in range(3)
            ]  # fmt: skip
        )
        s.store.append_many([MemoryEntry("elsewhere", role="user", conversation_id="raw",
                                         org_id=ORG, agent_id="other", id="o1")])  # fmt: skip
        rows, after, top = s.repo.unadopted(2)
        found.append(([r[1:] for r in rows], after))
        metas = [new_memory(FAST, "episodic", speaker="Bram")] * len(rows)
        s.repo.adopt(rows, metas, rows[-1][0])
        rows2, after2, top2 = s.repo.unadopted()
        assert after2 == rows[-1][0] and [r[1] for r in rows2] == ["r2"]
        s.repo.adopt(rows2, metas[:1], rows2[-1][0])
        assert s.repo.unadopted()[0] == []
        s.repo.adopt([], [], top2)
        assert s.repo.unadopted()[1] == top2
        assert ids_of(s, "conversation_id", "raw") == ["r0", "r1", "r2"]
        assert ids_of(s, "about", "bram") == ["m02", "r0", "r1", "r2"]
    assert found[0] == found[1]


# ---------------------------------------------------------------------- PostgreSQL only
def _dump(side: Side) -> bytes:
    """Every row of every table of the store, as ``COPY ... TO STDOUT`` writes it."""
    conn = side.store.connection()
    tables = [
        r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'az_%'")
    ]
    out = b""
    for t in tables:
        with conn.cursor().copy(f"COPY {t} TO STDOUT") as copy:
            for chunk in copy:
                out += bytes(chunk)
    return out


def test_no_plaintext_in_the_database(pg_url: str, clock: Clock) -> None:
    pg = pg_side(pg_url, clock)
    try:
        seed(pg)
        pg.life.archive(["m03"])
        pg.life.forget(("conversation_id", "c1"))
        pg.life.forget(("id", "m03"))  # archived, then forgotten
        pg.life.erase(("id", "m05"))
        assert pg.sql("SELECT count(*) FROM az_am_forgotten") == [(3,)]
        assert pg.sql("SELECT count(*) FROM az_am_archive") == [(1,)]
        dump = _dump(pg)
        for secret in (*SECRETS, "green tea", "Bram", "bram"):
            for form in (secret.encode(), secret.encode().hex().encode()):
                assert form not in dump, secret
    finally:
        pg.store.close()


def test_moved_or_missing_sealed_values_are_refused(pg_url: str, clock: Clock) -> None:
    pg = pg_side(pg_url, clock)
    try:
        seed(pg)
        r1 = pg.life.forget(("id", "m01"))
        pg.life.forget(("id", "m02"))
        pg.change("UPDATE az_am_forgotten SET payload = (SELECT payload FROM az_am_forgotten"
               " WHERE memory_id = 'm02') WHERE memory_id = 'm01'")  # fmt: skip
        with pytest.raises(TamperedRecordError) as exc:
            pg.life.undo(r1.token)
        assert "az_am_forgotten" in str(exc.value) and "m01" in str(exc.value)

        pg.life.archive(["m03", "m04"])
        pg.change("UPDATE az_am_archive SET sealed = (SELECT sealed FROM az_am_archive"
               " WHERE id = 'm04') WHERE id = 'm03'")  # fmt: skip
        with pytest.raises(TamperedRecordError) as exc:
            pg.life.restore("m03")
        assert "az_am_archive" in str(exc.value) and "m03" in str(exc.value)

        digest = pg.sql("SELECT archive_digest FROM az_memory WHERE id = 'm04'")[0][0]
        pg.change("UPDATE az_memory SET archive_digest = %s WHERE id = 'm04'", ("0" * 64,))
        with pytest.raises(CorruptStoreError) as differs:
            pg.life.restore("m04")
        assert "m04" in str(differs.value) and "expected digest 0000" in str(differs.value)
        pg.change("UPDATE az_memory SET archive_digest = %s WHERE id = 'm04'", (digest,))
        pg.change("DELETE FROM az_am_archive WHERE id = 'm04'")
        with pytest.raises(CorruptStoreError) as missing:
            pg.life.restore("m04")
        msg = str(missing.value)
        assert "az_am_archive holds no text for memory m04" in msg and digest[:16] in msg
        assert not isinstance(missing.value, TamperedRecordError)
    finally:
        pg.store.close()


# ---------------------------------------------------------------------- concurrency
@pytest.fixture
def two(pg_url: str, clock: Clock) -> Iterator[tuple[Side, Side]]:
    a, b = pg_side(pg_url, clock), pg_side(pg_url, clock)
    yield a, b
    a.store.close()
    b.store.close()


def _undo_steps(side: Side, token: str) -> tuple[Any, Any]:
    """The facade's undo (``Lifecycle.undo``) up to its transaction."""
    entries = side.repo.forgotten(token, side.life._mem.now_us())
    if not entries:
        raise NotFoundError("no forget with this token in its undo window")
    payloads = [p for _, p, _ in entries]
    records = [
        MemoryEntry(r[2], role=r[1], conversation_id=r[4], org_id=r[5], agent_id=r[6],
                    created_at=from_us(r[3]), kind=r[8], source=r[9], metadata=json.loads(r[10]),
                    id=r[0], embedding_model=r[11])
        for r in (p["memory"] for p in payloads)
    ]  # fmt: skip
    vectors = [np.frombuffer(v, dtype=np.float32) for _, _, v in entries]
    return payloads, side.store.prepare(records, vectors)


def _undo_commit(side: Side, payloads: Any, prepared: Any) -> None:
    with side.repo.transaction() as tx:
        written = dict(tx.insert(prepared))
        missing = [p["memory"][0] for p in payloads if p["memory"][0] not in written]
        if missing:  # the facade change proposed with this port
            raise NotFoundError(f"{missing[0]} was restored by another undo meanwhile")
        side.repo.unforget(tx, payloads, [written[p["memory"][0]] for p in payloads])


def test_two_undos_of_one_forget_restore_once(two: tuple[Side, Side]) -> None:
    a, b = two
    seed(a)
    token = a.life.forget(("conversation_id", "c1")).token
    ready = threading.Barrier(2)
    results: dict[Any, Any] = {}

    def run(side: Side) -> None:
        try:
            steps = _undo_steps(side, token)
            ready.wait(10)
            _undo_commit(side, *steps)
            results[side.store] = "ok"
        except NotFoundError as exc:
            results[side.store] = exc

    threads = [threading.Thread(target=run, args=(s,)) for s in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 2  # neither thread failed otherwise
    outcomes = sorted(results.values(), key=lambda v: v != "ok")
    assert outcomes[0] == "ok" and isinstance(outcomes[1], NotFoundError)
    assert a.sql("SELECT id, count(*) FROM az_memory WHERE conversation_id = 'c1' GROUP BY id"
                 " ORDER BY id") == [("m01", 1), ("m02", 1)]  # fmt: skip
    assert a.sql("SELECT count(*) FROM az_am_about WHERE memory_id = 'm02'") == [(1,)]
    assert a.sql("SELECT count(*) FROM az_am_forgotten") == [(0,)]


def test_an_undo_after_an_erase_restores_nothing(two: tuple[Side, Side]) -> None:
    a, b = two
    seed(a)
    token = a.life.forget(("id", "m01")).token
    steps = _undo_steps(a, token)  # read before the erase commits
    b.life.erase(("id", "m01"))
    with pytest.raises(NotFoundError, match="no longer in the undo area"):
        _undo_commit(a, *steps)
    assert a.sql("SELECT count(*) FROM az_memory WHERE id = 'm01'") == [(0,)]
    assert a.repo.tombstones()[0]["ids"] == ["m01"]


def test_forget_and_erase_of_one_memory_at_once_leave_nothing(two: tuple[Side, Side]) -> None:
    a, b = two
    seed(a)
    chosen_a, chosen_b = a.repo.select("id", "m01"), b.repo.select("id", "m01")
    holding, release, done = threading.Event(), threading.Event(), threading.Event()

    def forget_and_hold() -> None:
        with a.repo.transaction() as tx:
            a.repo.forget(tx, chosen_a, "tok", 1, to_us(START + timedelta(days=7)))
            holding.set()
            release.wait(10)

    def erase() -> None:
        with b.repo.transaction() as tx:
            b.repo.erase(tx, chosen_b, b.repo.forgotten_select("id", "m01"), "id", 2)
        done.set()

    ta = threading.Thread(target=forget_and_hold)
    ta.start()
    assert holding.wait(10)
    tb = threading.Thread(target=erase)
    tb.start()
    assert not done.wait(0.5)  # the scope's lock: erase waits for the forget's commit
    release.set()
    ta.join(10)
    tb.join(10)
    assert done.is_set()
    # erase chose m01 live; it reached the undo entry the forget committed meanwhile
    assert a.sql("SELECT count(*) FROM az_am_forgotten") == [(0,)]
    assert a.sql("SELECT count(*) FROM az_memory WHERE id = 'm01'") == [(0,)]


def test_two_forgets_of_one_memory_keep_one_undo_entry(two: tuple[Side, Side]) -> None:
    a, b = two
    seed(a)
    chosen = a.repo.select("id", "m01")
    ra = a.life.forget(("id", "m01"))
    with b.repo.transaction() as tx:  # b selected before a's commit: the row is gone
        b.repo.forget(tx, chosen, "late", 1, 2)
    assert a.sql("SELECT token FROM az_am_forgotten") == [(ra.token,)]


def test_scopes_do_not_wait_for_each_other(pg_url: str, clock: Clock) -> None:
    a, b = pg_side(pg_url, clock), pg_side(pg_url, clock, agent="a2")
    try:
        seed(a)
        seed(b, [("b" + r[0][1:], *r[1:]) for r in SEED])
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            with a.repo.transaction() as tx:
                a.repo.forget(tx, a.repo.select("id", "m01"), "t", 1, 2)
                holding.set()
                release.wait(10)

        t = threading.Thread(target=hold)
        t.start()
        assert holding.wait(10)
        started = time.monotonic()
        b.life.forget(("id", "b01"))
        b.life.erase(("conversation_id", "c2"))
        elapsed = time.monotonic() - started
        release.set()
        t.join(10)
        assert elapsed < 5  # never waited for a's open transaction
        assert ids_of(b, "conversation_id", "c1") == ["b02"]
        assert a.repo.forgotten_select("id", "m01") == ["m01"]
    finally:
        a.store.close()
        b.store.close()


def test_pg_archive_alone(pg_url: str, clock: Clock) -> None:
    pg = pg_side(pg_url, clock)
    other = PgArchive(pg.store, ORG, "a2")
    try:
        arch = pg.archive
        assert arch.exists() and arch.truncate_wal() is True and arch.ids() == set()
        arch.put([("x1", SECRETS[0], "{}"), ("x2", "two", '{"k": 1}')], 5)
        other.put([("y1", "theirs", "{}")], 5)
        arch.put([("x2", "two, again", "{}")], 6)  # replaces
        digest = pg.repo.codec.digest
        assert arch.get({"x1": digest(SECRETS[0], "{}"), "x2": digest("two, again", "{}")}) == {
            "x1": (SECRETS[0], "{}"),
            "x2": ("two, again", "{}"),
        }
        assert arch.ids() == {"x1", "x2"} and other.ids() == {"y1"}
        with pytest.raises(CorruptStoreError, match="no text for memory y1"):
            arch.get({"y1": digest("theirs", "{}")})  # another scope's is not this scope's
        assert arch.delete(["x1", "y1", "nope"]) == 1
        assert other.ids() == {"y1"}
        with pytest.raises(UnsupportedByBackendError):
            _ = arch.db
        arch.close()
    finally:
        pg.store.close()
