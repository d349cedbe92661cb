"""The PostgreSQL repository's own methods (``postgres.repository``) against SQLite's.

Every test runs the same calls on a ``SqliteRepository`` and a ``PgRepository`` of the
same scope, over the same memory rows (same ids and times), and compares what they
return; labels are compared as the ids they stand for (each backend numbers its own).
Then what only PostgreSQL has to prove: a summary's text never reaches the server in
the clear, a sealed summary moved to another row does not open, and two agents creating
one namespace at once agree on its owner.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import psycopg
import pytest

from agentzero_store import SqliteMemoryStore
from agentzero_store.agentmem.parts import new_memory
from agentzero_store.agentmem.postgres.repository import PgRepository
from agentzero_store.agentmem.records import entity_key
from agentzero_store.agentmem.sqlite.repository import Filter, SqliteRepository
from agentzero_store.base.errors import TamperedRecordError
from agentzero_store.memory.postgres.store import PgMemoryStore
from agentzero_store.memory.records import MemoryEntry, to_us
from tests.agentmem.conftest import START, Clock
from tests.conftest import FAST, PASSPHRASE

T = TypeVar("T")
ORG, AGENT = "acme", "a1"
DIM = 8
SECRET_SUMMARY = "the vault code is qx7731vw and Zanzibar knows it"


def us(seconds: float) -> int:
    return to_us(START + timedelta(seconds=seconds))


@dataclass
class Spec:
    """One memory row to write on both backends."""

    id: str
    content: str
    at: float  # seconds after START
    conv: str = "c1"
    type: str = "episodic"
    role: str = "user"
    kind: str = "granted"
    speaker: str | None = None
    about: tuple[str, ...] = ()
    expires: float | None = None
    agent: str = AGENT


@dataclass
class Side:
    """One backend: its store, the repositories of two agents, and its labels."""

    pg: bool
    store: Any
    repo: Any  # of (ORG, AGENT)
    other: Any  # of (ORG, "a2")
    label: dict[str, int] = field(default_factory=dict)
    mid: dict[int, str] = field(default_factory=dict)

    def add(self, specs: Sequence[Spec], vectored: bool = False) -> None:
        """Write ``specs`` (each agent's through its repository), vectors if asked."""
        for agent, repo in ((AGENT, self.repo), ("a2", self.other)):
            mine = [s for s in specs if s.agent == agent]
            if not mine:
                continue
            entries = [
                MemoryEntry(
                    s.content,
                    role=s.role,
                    conversation_id=s.conv,
                    org_id=ORG,
                    agent_id=agent,
                    kind=s.kind,  # type: ignore[arg-type]
                    id=s.id,
                    created_at=START + timedelta(seconds=s.at),
                    expires_at=None if s.expires is None else START + timedelta(seconds=s.expires),
                    embedding_model="test-8d" if vectored else None,
                )
                for s in mine
            ]
            vectors = [vector(s.id) for s in mine] if vectored else None
            metas = [new_memory(FAST, s.type, speaker=s.speaker, about=s.about) for s in mine]
            prepared = self.store.prepare(entries, vectors)
            with repo.transaction() as tx:
                for mid, lab in repo.insert(tx, prepared, metas):
                    self.label[mid], self.mid[lab] = lab, mid

    def ids(self, labels: Sequence[int]) -> list[str]:
        return [self.mid[lab] for lab in labels]

    def labels(self, ids: Sequence[str]) -> list[int]:
        return [self.label[i] for i in ids]

    def sql(self, sqlite: str, pg: str, params: Sequence[Any] = ()) -> None:
        """One raw statement, in each backend's dialect (rows only other helpers write)."""
        with self.repo.transaction() as tx:
            tx.execute(pg if self.pg else sqlite, params)

    def access(self, accesses: Sequence[tuple[str, float]]) -> None:
        with self.repo.transaction() as tx:
            self.repo.log_access(tx, [(mid, us(at)) for mid, at in accesses])

    def archive(self, mid: str, at: float) -> None:
        self.sql(
            "UPDATE memory SET archived_at_us = ? WHERE id = ?",
            "UPDATE az_memory SET archived_at_us = %s WHERE id = %s",
            (us(at), mid),
        )

    def close_fact(self, mid: str, at: float) -> None:
        """A superseded fact row for memory ``mid`` (beliefs write these; only its
        validity matters here)."""
        self.sql(
            "INSERT INTO am_fact (id, org_id, agent_id, subject, predicate, object,"
            " subject_key, predicate_key, object_key, confidence, single_valued,"
            " valid_from_us, valid_to_us) VALUES (?,?,?,'s','p','o','s','p','o',1,1,?,?)",
            "INSERT INTO az_am_fact (id, org_id, agent_id, sealed, subject_key, predicate_key,"
            " object_key, confidence, single_valued, valid_from_us, valid_to_us)"
            " VALUES (%s,%s,%s,'\\x00','s','p','o',1,true,%s,%s)",
            (mid, ORG, AGENT, us(0), us(at)),
        )

    def procedure(self, pid: str, action: str, context: str | None, s: int, f: int) -> None:
        if self.pg:
            sealed = self.repo.codec.seal("az_am_procedure", pid, [action, context])
            self.sql(
                "",
                "INSERT INTO az_am_procedure (id, org_id, agent_id, sealed, action_key,"
                " context_key, successes, failures, updated_at_us)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (pid, ORG, AGENT, sealed, f"k{pid}", "", s, f, 0),
            )
        else:
            self.sql(
                "INSERT INTO am_procedure (id, org_id, agent_id, action, context, action_key,"
                " context_key, successes, failures, updated_at_us)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                "",
                (pid, ORG, AGENT, action, context, f"k{pid}", "", s, f, 0),
            )


def vector(mid: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    rng = np.random.default_rng(sum(mid.encode()))
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def sides(pg_url: str, tmp_path: Path) -> Iterator[tuple[Side, Side]]:
    clock = Clock()
    lite = SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST, clock=clock)
    pg = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, clock=clock)
    out = (
        Side(False, lite, SqliteRepository(lite, ORG, AGENT), SqliteRepository(lite, ORG, "a2")),
        Side(True, pg, PgRepository(pg, ORG, AGENT), PgRepository(pg, ORG, "a2")),
    )
    for s in out:
        s.repo.migrate()
    try:
        yield out
    finally:
        lite.close()
        pg.close()


def same(sides: tuple[Side, Side], call: Callable[[Side], T]) -> T:
    """``call`` on both backends; they must agree. Returns what they returned."""
    lite, pg = (call(s) for s in sides)
    assert lite == pg
    return lite


# A conversation c1 with a batch of three turns sharing an instant, a second conversation,
# notes, an expired turn and another agent's turns (which must never show).
TURNS = [
    Spec("t01", "hello there", 1, speaker="Alice", about=("Paris",)),
    Spec("t02", "hi Alice", 2, role="assistant", speaker="Bot"),
    Spec("t03", "ran the search", 3, role="tool", kind="self_noted"),
    Spec("t04", "first of a batch", 4, speaker="Bob", about=("Lyon", "paris")),
    Spec("t05", "second of a batch", 4, role="assistant", kind="recalled"),
    Spec("t06", "third of a batch", 4, speaker="alice"),
    Spec("t07", "later on", 7, role="tool"),
    Spec("t08", "the last word", 8, speaker="Bob", kind="self_noted"),
    Spec("u01", "other conversation", 2, conv="c2", speaker="Carol"),
    Spec("u02", "other conversation again", 5, conv="c2", role="assistant"),
    Spec("x01", "soon gone", 6, conv="c2", expires=30),
    Spec("n01", "Alice lives in Paris", 3, conv="notes", type="semantic", about=("Alice",)),
    Spec("n02", "Bob likes tea", 5, conv="notes", type="semantic", kind="recalled"),
    Spec("n03", "deploy with make", 6, conv="notes", type="procedural"),
    Spec("n04", "Carol is on call", 9, conv="notes", type="semantic", about=("Carol",)),
    Spec("o01", "another agent's turn", 4, agent="a2", speaker="Alice"),
    Spec("o02", "another agent's tool", 9, role="tool", agent="a2"),
]


def seeded(sides: tuple[Side, Side], vectored: bool = False) -> tuple[Side, Side]:
    for s in sides:
        s.add(TURNS, vectored)
    return sides


# ---------------------------------------------------------------------------- namespaces
def test_namespaces_parity(sides: tuple[Side, Side]) -> None:
    def run(s: Side) -> list[Any]:
        r, other_org = s.repo, type(s.repo)(s.store, "globex", AGENT)
        out: list[Any] = [
            r.create_namespace("team", "a1", us(1)),
            r.create_namespace("team", "a2", us(2)),  # exists: its owner stays
            r.create_namespace("Zed", "a2", us(3)),
            r.create_namespace("alpha", "a1", us(4)),
            r.namespace_owner("team"),
            r.namespace_owner("nope"),
            other_org.namespace_owner("team"),  # namespaces are per org
        ]
        for agent in ("beta", "Zed", "alpha", "_x", "a2"):
            r.set_grant("team", agent, "a1", us(5), True)
        r.set_grant("team", "beta", "a1", us(6), True)  # twice: once
        r.set_grant("team", "_x", "a1", us(6), False)
        r.set_grant("Zed", "a1", "a2", us(7), True)
        out += [
            r.members("team"),
            r.members("Zed"),
            r.members("nope"),
            [r.may_use(n, a) for n in ("team", "Zed", "alpha") for a in ("a1", "a2", "_x")],
            r.namespaces_of("a1"),
            r.namespaces_of("a2"),
            r.namespaces_of("nobody"),
            other_org.namespaces_of("a1"),
            other_org.may_use("team", "a1"),
        ]
        return out

    out = same(sides, run)
    assert out[0] == out[1] == "a1"
    assert out[7] == ["Zed", "a2", "alpha", "beta"]  # byte order, as SQLite's


# ---------------------------------------------------------------------------- pins, core
def test_pins_and_core_parity(sides: tuple[Side, Side]) -> None:
    seeded(sides)

    def run(s: Side) -> list[Any]:
        r = s.repo
        out: list[Any] = []
        r.set_pin("n02", us(10), True)
        r.set_pin("t01", us(10), True)  # same instant: the id breaks the tie
        r.set_pin("n01", us(5), True)
        r.set_pin("n01", us(50), True)  # twice: the first pin stays
        r.set_pin("gone", us(11), True)  # no such memory: never listed
        out.append(s.ids(r.pinned_labels()))
        r.set_pin("t01", us(12), False)
        out.append(s.ids(r.pinned_labels()))
        # Promotion by access, assertion, demotion.
        s.access([("n01", 10), ("n01", 11), ("n02", 12), ("n04", 13), ("n04", 14), ("t01", 15)])
        out.append(r.core_candidates(2))
        out.append(r.core_candidates(1))
        r.set_core(["n01", "n04"], us(20), "accessed")
        r.set_core(["n02"], us(15), "asserted")
        r.set_core(["n02"], us(99), "accessed")  # exists: unchanged
        out.append(s.ids(r.core_labels()))
        out.append(r.core_candidates(1))
        out.append(r.core_idle(us(14)))
        out.append(r.core_idle(us(21)))  # accessed ones idle since their promotion
        s.access([("n01", 30)])
        out.append(r.core_idle(us(25)))
        s.archive("n04", 40)
        s.close_fact("n02", 41)
        out.append(s.ids(r.core_labels()))
        out.append(r.core_idle(0))  # archived and closed: demoted whatever the time
        r.set_core(["n04", "n02", "missing"], us(50), None)
        out.append(s.ids(r.core_labels()))
        out.append(r.core_idle(us(100)))
        out.append(s.other.core_labels())
        return out

    out = same(sides, run)
    assert out[0] == ["n01", "n02", "t01"]


# ---------------------------------------------------------------------------- tiers
def test_hot_tier_parity(sides: tuple[Side, Side]) -> None:
    seeded(sides)
    # A long conversation whose only tool turn is far from its end: the PG walk crosses
    # several chunks of rows it opens.
    long = [Spec(f"L{i:03}", f"turn {i}", 100 + i // 3, conv="long") for i in range(150)]
    long[4] = Spec("L004", "the tool spoke", 100 + 4 // 3, conv="long", role="tool")
    for s in sides:
        s.add(long)

    def run(s: Side) -> list[Any]:
        r = s.repo
        out: list[Any] = [s.ids(r.last_turns(c, n)) for c in ("c1", "c2", "long") for n in (3, 1)]
        out += [
            s.ids(r.last_turns("c1", 0)),
            s.ids(r.last_turns("c1", 100)),
            s.ids(r.last_turns("c1", -1)),
            s.ids(r.last_turns("nope", 5)),
            s.ids(r.last_turns("notes", 5)),  # notes are no turns
        ]
        for conv in ("c1", "c2", "long", "nope"):
            lab = r.latest_tool_turn(conv)
            out.append(None if lab is None else s.mid[lab])
        out.append(s.ids([lab for lab, _ in r.turns_before("c1", None)]))
        for cut in ("t06", "t05", "t04", "t01", "L100"):
            before = r.turns_before("c1", s.label[cut])
            assert all(s.mid[lab] == mid for lab, mid in before)
            out.append([mid for _, mid in before])
        hot = r.last_turns("long", 12)
        out.append([mid for _, mid in r.turns_before("long", hot[0])])
        out.append(s.other.latest_tool_turn("c1") is None)
        return out

    out = same(sides, run)
    assert out[0] == ["t06", "t07", "t08"]
    assert out[11:14] == ["t07", None, "L004"]


def test_warm_summaries_parity(sides: tuple[Side, Side]) -> None:
    seeded(sides)

    def run(s: Side) -> list[Any]:
        r = s.repo
        out: list[Any] = [r.summary("c1", us(0)), r.evict_summaries(us(0))]
        r.put_summary("s1", "c1", "old words", ["t01", "t02"], us(10), us(100))
        r.put_summary("s2", "c1", "they met", ["t02", "t01", "t03"], us(11), us(100))
        r.put_summary("s3", "c2", None, ["u01"], us(12), us(60))
        r.put_summary("s4", "notes", "gone soon", ["n01"], us(12), us(20))
        for conv, at in (("c1", 50), ("c2", 50), ("c2", 60), ("notes", 19), ("nope", 1)):
            got = r.summary(conv, us(at))
            out.append(None if got is None else (got[0], s.ids(got[1])))
        out.append(s.other.summary("c1", us(50)))
        out.append(r.evict_summaries(us(60)))
        out.append(r.summary("c2", us(50)))
        out.append(r.evict_summaries(us(60)))
        # A source forgotten (its row gone): the summary must not bring its text back.
        with r.transaction() as tx:
            tx.delete_labels([s.label["t03"]])
        out.append(r.summary("c1", us(50)))
        r.put_summary("s5", "c1", "again", ["t01"], us(70), us(200))
        got = r.summary("c1", us(80))
        out.append(None if got is None else (got[0], s.ids(got[1])))
        out.append(r.evict_summaries(us(500)))
        out.append(r.summary("c1", us(80)))
        return out

    out = same(sides, run)
    assert out[2] == ("they met", ["t02", "t01", "t03"])
    assert out[3] == (None, ["u01"])


def test_vectors_procedures_and_sessions_parity(sides: tuple[Side, Side]) -> None:
    seeded(sides, vectored=True)
    for s in sides:
        s.add([Spec("w01", "no vector here", 20, conv="c3")])
        s.procedure("p2", "deploy", "friday", 1, 4)
        s.procedure("P1", "restart the worker", None, 3, 0)
        s.procedure("p0", "ask Zoë", "ünïcode", 0, 0)

    def run(s: Side) -> list[Any]:
        r = s.repo
        labels, blobs = r.vectors_of(s.labels(["t08", "n01", "w01", "t01", "u02"]))
        got = {
            s.mid[lab]: np.frombuffer(b, dtype=np.float32)[:DIM]
            for lab, b in zip(labels, blobs, strict=True)
        }
        out: list[Any] = [
            sorted(got),
            all(np.allclose(v, vector(mid), atol=1e-6) for mid, v in got.items()),
            r.vectors_of([]),
            r.all_procedures(),
        ]
        r.set_outcomes("p2", 5, 6, us(3))
        r.set_outcomes("nope", 1, 1, us(3))
        out.append(r.all_procedures())
        out.append(s.other.all_procedures())
        out += [
            r.session("main"),
            r.put_session("main", [], us(1)),
            r.put_session("child", ["main", "Zed"], us(2)),
            r.put_session("child", ["other"], us(3)),  # exists: unchanged
            r.session("main"),
            r.session("child"),
            r.session("nope"),
            s.other.session("child"),
        ]
        return out

    out = same(sides, run)
    assert out[0] == ["n01", "t01", "t08", "u02"] and out[1]
    assert [p.id for p in out[3]] == ["P1", "p0", "p2"]


# ---------------------------------------------------------------------------- signals
def test_recall_signals_parity(sides: tuple[Side, Side]) -> None:
    seeded(sides)
    for s in sides:
        s.access([("t01", 5), ("t01", 3), ("n02", 7), ("t04", 9), ("t01", 4)])

    def run(s: Side) -> list[Any]:
        r = s.repo
        everything = sorted(s.label.values())
        out: list[Any] = [
            r.neighbours_in_conversation(m)
            for m in ("t01", "t04", "t05", "t06", "t08", "u02", "n01", "o01", "nope")
        ]
        places = r.turn_places(everything)
        out.append(sorted((s.mid[lab], conv, at) for lab, conv, at in places))
        out.append(r.turn_places([]))
        for window in (1, 2, 5, 0):
            near = r.turn_neighbours(places, window)
            out.append({s.mid[seed]: [(s.mid[lab], d) for lab, d in v] for seed, v in near.items()})
        out.append(r.turn_neighbours([], 2))
        keys = [entity_key(k) for k in ("PARIS", "alice", "bob", "Carol", "Lyon", "nobody")]
        out.append(r.known_entities(keys))
        out.append(r.known_entities([]))
        out.append(s.other.known_entities(keys))
        # The labels a recall passes are its own scope's (on SQLite another scope's
        # label could match a plain key; here its keys are blinded for that scope).
        mine = [lab for lab in everything if s.mid[lab][0] != "o"]
        for about in (["paris"], ["alice"], ["carol", "lyon"], ["nobody"], []):
            out.append(sorted(s.ids(list(r.labels_about(mine, about)))))
        out.append(r.labels_about([], ["paris"]))
        times = r.access_times(everything)
        out.append({s.mid[lab]: sorted(v) for lab, v in times.items()})
        out.append(r.access_times([]))
        return out

    out = same(sides, run)
    pg = sides[1]
    assert pg.repo.labels_about(pg.labels(["o01"]), ["alice"]) == set()  # another scope's
    assert out[1] == [("t03", us(3)), ("t05", us(4))]
    assert out[-11] == {"paris", "alice", "bob", "carol", "lyon"}


# ---------------------------------------------------------------------------- listing
def test_page_parity(sides: tuple[Side, Side]) -> None:
    seeded(sides)
    extra = [Spec(f"k{i:02}", f"kind walk {i}", 50 + i, conv="c4") for i in range(70)]
    extra[7] = Spec("k07", "a recalled one", 57, conv="c4", kind="recalled")
    extra[66] = Spec("k66", "another recalled", 116, conv="c4", kind="recalled")
    for s in sides:
        s.add(extra)
        s.archive("n03", 20)
        s.archive("t02", 21)
        s.close_fact("n02", 22)

    now = us(10)
    later = us(40)  # x01 expired
    cases: list[tuple[Filter, dict[str, Any]]] = []
    for f in (
        Filter(now_us=now),
        Filter(now_us=later),
        Filter(now_us=later, include_archived=True),
        Filter(now_us=later, types=("semantic", "procedural"), include_archived=True),
        Filter(now_us=later, about=("paris",)),
        Filter(now_us=later, about=("alice", "carol"), include_archived=True),
        Filter(now_us=later, as_of_us=us(4)),
        Filter(now_us=later, any_validity=True),
    ):
        for kind in (None, "recalled", "self_noted", "granted", "archived"):
            for conv in (None, "c1", "c4"):
                for limit, offset in ((100, 0), (3, 0), (2, 1), (5, 60), (1, 1000)):
                    cases.append(
                        (
                            f,
                            {
                                "kind": kind,
                                "conversation_id": conv,
                                "archived_only": False,
                                "limit": limit,
                                "offset": offset,
                            },
                        )
                    )
    for kind in (None, "granted"):
        cases.append(
            (
                Filter(now_us=later, include_archived=True),
                {
                    "kind": kind,
                    "conversation_id": None,
                    "archived_only": True,
                    "limit": 10,
                    "offset": 0,
                },
            )
        )

    def run(s: Side) -> list[Any]:
        out = []
        for f, kw in cases:
            rows = s.repo.page(f, **kw)
            assert all(s.mid[r.label] == r.memory.id for r in rows)
            out.append([(r.memory, r.digest) for r in rows])
        return out

    out = same(sides, run)
    assert [m.id for m, _ in out[0][:3]] == ["k69", "k68", "k67"]
    assert any(len(page) == 2 and page[0][0].id == "k66" for page in out)


# ---------------------------------------------------------------------------- PG only
def _dump(url: str) -> bytes:
    """Every row of every table of the database, as COPY writes it (text format)."""
    out = bytearray()
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        ).fetchall()
        for (table,) in tables:
            with conn.cursor().copy(f"COPY {table} TO STDOUT") as copy:
                for chunk in copy:
                    out += bytes(chunk)
    return bytes(out)


def test_summary_text_never_reaches_the_server(pg_url: str) -> None:
    store = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, clock=Clock())
    try:
        repo = PgRepository(store, ORG, AGENT)
        repo.migrate()
        Side(True, store, repo, PgRepository(store, ORG, "a2")).add(TURNS[:3])
        repo.put_summary("s1", "c1", SECRET_SUMMARY, ["t01", "t02"], us(1), us(100))
        got = repo.summary("c1", us(2))
        assert got is not None and got[0] == SECRET_SUMMARY
        dump = _dump(pg_url)
        assert b"az_am_summary" not in dump  # (the dump holds rows, not names)
        for needle in (SECRET_SUMMARY, "vault code", "Zanzibar", "qx7731vw"):
            assert needle.encode() not in dump
            assert needle.encode().hex().encode() not in dump  # nor as bytea hex
        with psycopg.connect(pg_url) as conn:
            (n,) = conn.execute(
                "SELECT count(*) FROM az_am_summary WHERE text IS NOT NULL"
            ).fetchone()  # type: ignore[misc]
        assert n == 1
    finally:
        store.close()


def test_summary_moved_to_another_row_does_not_open(pg_url: str) -> None:
    store = PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, clock=Clock())
    try:
        repo, other = PgRepository(store, ORG, AGENT), PgRepository(store, ORG, "a2")
        repo.migrate()
        side = Side(True, store, repo, other)
        side.add(TURNS)
        repo.put_summary("s1", "c1", "what c1 said", ["t01"], us(1), us(100))
        repo.put_summary("s2", "c2", "what c2 said", ["u01"], us(1), us(100))
        with psycopg.connect(pg_url) as conn:
            conn.execute(
                "UPDATE az_am_summary SET text = (SELECT text FROM az_am_summary"
                " WHERE id = 's1') WHERE id = 's2'"
            )
        assert repo.summary("c1", us(2)) == ("what c1 said", [side.label["t01"]])
        with pytest.raises(TamperedRecordError) as exc:
            repo.summary("c2", us(2))
        assert "'s2'" in str(exc.value) and "az_am_summary" in str(exc.value)
        # The row moved to another agent's scope, whole (same id, same table): fails too.
        with psycopg.connect(pg_url) as conn:
            conn.execute("UPDATE az_am_summary SET agent_id = 'a2' WHERE id = 's1'")
            conn.execute(
                "UPDATE az_am_summary_source SET memory_id = 'o01' WHERE summary_id = 's1'"
            )
        assert repo.summary("c1", us(2)) is None
        with pytest.raises(TamperedRecordError):
            other.summary("c1", us(2))
    finally:
        store.close()


def test_create_namespace_waits_for_a_concurrent_creator(pg_url: str) -> None:
    """A creator whose row is not committed yet: the second one waits, then reads the
    first one's owner (no duplicate, no error)."""
    stores = [
        PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, clock=Clock())
        for _ in range(2)
    ]
    try:
        a, b = (PgRepository(s, ORG, agent) for s, agent in zip(stores, ("a1", "a2"), strict=True))
        a.migrate()
        got: list[str] = []
        with psycopg.connect(pg_url) as first:  # its own transaction, left open
            first.execute(
                "INSERT INTO az_am_namespace (org_id, name, owner, created_at_us)"
                " VALUES (%s, 'shared', 'early', 1)",
                (ORG,),
            )
            t = threading.Thread(target=lambda: got.append(b.create_namespace("shared", "a2", 2)))
            t.start()
            time.sleep(0.5)
            assert t.is_alive() and not got  # blocked on the uncommitted row
            first.commit()
        t.join(10)
        assert got == ["early"]
        assert a.namespace_owner("shared") == "early"
    finally:
        for s in stores:
            s.close()


def test_concurrent_create_namespace_has_one_owner(pg_url: str) -> None:
    stores = [
        PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, clock=Clock())
        for _ in range(2)
    ]
    try:
        repos = [PgRepository(s, ORG, agent) for s, agent in zip(stores, ("a1", "a2"), strict=True)]
        repos[0].migrate()
        names = [f"ns{i}" for i in range(40)]
        results: dict[int, list[str]] = {0: [], 1: []}
        errors: list[BaseException] = []
        barrier = threading.Barrier(2)

        def worker(i: int) -> None:
            try:
                for name in names:
                    barrier.wait()
                    results[i].append(repos[i].create_namespace(name, f"a{i + 1}", i))
            except BaseException as exc:  # reported below, not lost in the thread
                errors.append(exc)
                barrier.abort()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        assert results[0] == results[1]  # both read the one owner
        owners = [repos[0].namespace_owner(n) for n in names]
        assert owners == results[0]
        with psycopg.connect(pg_url) as conn:
            (n,) = conn.execute("SELECT count(*) FROM az_am_namespace").fetchone()  # type: ignore[misc]
        assert n == len(names)
    finally:
        for s in stores:
            s.close()


def test_concurrent_put_summary_leaves_one_summary(pg_url: str) -> None:
    """Two writers replacing one conversation's summary at once: one summary stays (as
    under SQLite's single writer), with its own sources only."""
    stores = [
        PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, clock=Clock())
        for _ in range(2)
    ]
    try:
        repos = [PgRepository(s, ORG, AGENT) for s in stores]
        repos[0].migrate()
        Side(True, stores[0], repos[0], PgRepository(stores[0], ORG, "a2")).add(TURNS[:3])
        errors: list[BaseException] = []
        barrier = threading.Barrier(2)

        def worker(i: int) -> None:
            try:
                for n in range(30):
                    barrier.wait()
                    srcs = ["t01", "t02"] if i else ["t03"]
                    repos[i].put_summary(f"s{i}-{n}", "c1", f"by {i}", srcs, us(n), us(999))
            except BaseException as exc:  # reported below, not lost in the thread
                errors.append(exc)
                barrier.abort()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute("SELECT id FROM az_am_summary").fetchall()
            srcs = conn.execute("SELECT DISTINCT summary_id FROM az_am_summary_source").fetchall()
        assert len(rows) == 1 and srcs == rows
        got = repos[0].summary("c1", us(100))
        assert got is not None and got[0] in ("by 0", "by 1")
    finally:
        for s in stores:
            s.close()
