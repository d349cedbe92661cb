"""The BM25 statistics a PostgreSQL store keeps on its write path (schema 2, ``pg.bm25``),
against a real server: scores equal to a full scan after every kind of write (the
store's, a layer's ``PgWriteTx``, raw SQL), exact under concurrent writers and
compactions, and the upgrade of a schema 1 store.

The full scan is computed here in Python from every row and posting (``full_scan``), and
for stores without expired rows also by schema 1's own SQL statement (``schema1_scored``,
kept verbatim): both count a scope's expired rows only when ``now_us`` is 0, while the
kept statistics count them until ``gc_expired`` deletes them, which ``full_scan`` does.
"""

from __future__ import annotations

import math
import random
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from agentzero_store import MemoryEntry, PgMemoryStore, SchemaVersionError, WrongKeyError
from agentzero_store.memory.postgres import bm25, schema
from agentzero_store.memory.records import Scope, to_us

from ...conftest import FAST, PASSPHRASE
from ...support.pg_server import PgServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
K1, B = 1.2, 0.75
ALL = 1 << 30  # k: every match, so whole score maps compare
WORDS = ["harbor", "lantern", "quartz", "meadow", "violin", "glacier", "saffron", "pebble"]
ORGS, AGENTS, CONVS = ("o0", "o1", "o2"), ("a0", "a1"), ("c0", "c1")


class Clock:
    """The store's injected clock: tests move time instead of sleeping."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _open(url: str, clock: Clock | None = None, **kw: Any) -> PgMemoryStore:
    kw.setdefault("passphrase", PASSPHRASE)
    return PgMemoryStore.open(url, config=FAST, clock=clock or Clock(), **kw)


@pytest.fixture
def store(pg_url: str) -> Iterator[PgMemoryStore]:
    s = _open(pg_url)
    yield s
    s.close()


# ---------------------------------------------------------------- references
# Schema 1's keyword statement, verbatim: every statistic from the scope's live rows.
SCHEMA1_SQL = f"""
    WITH live AS (SELECT label, doc_len FROM az_memory WHERE {{where}}),
    stats AS (SELECT count(*)::float8 AS n, greatest(avg(doc_len), 1)::float8 AS avgdl
              FROM live),
    hits AS (SELECT t.label, t.term, t.tf, l.doc_len FROM az_terms t
             JOIN live l ON l.label = t.label WHERE t.term = ANY(%s::text[])),
    df AS (SELECT term, count(*)::float8 AS df FROM hits GROUP BY term)
    SELECT h.label, sum(
        ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
        * h.tf * ({K1} + 1) / (h.tf + {K1} * (1 - {B} + {B} * h.doc_len / s.avgdl))
    ) AS score
    FROM hits h JOIN df ON df.term = h.term CROSS JOIN stats s
    GROUP BY h.label ORDER BY score DESC, h.label LIMIT %s
"""


def schema1_scored(c: Any, terms: list[str], scope: Scope, now_us: int) -> dict[int, float]:
    """Every match's score by schema 1's statement (its statistics over live rows)."""
    from agentzero_store.memory.postgres.recall import scope_where

    where, params = scope_where(scope, now_us)
    sql = SCHEMA1_SQL.replace("{where}", where)
    rows = c.execute(sql, (*params, sorted(set(terms)), ALL)).fetchall()
    return {int(lab): float(s) for lab, s in rows}


def _in(scope: Scope, org: str, agent: str, conv: str) -> bool:
    return all(
        want is None or want == have
        for want, have in zip(
            (scope.org_id, scope.agent_id, scope.conversation_id), (org, agent, conv), strict=True
        )
    )


def full_scan(c: Any, terms: list[str], scope: Scope, now_us: int) -> dict[int, float]:
    """Every match's BM25 score computed from all rows and postings, in Python: ``n``,
    ``avgdl`` and ``df`` over the scope's rows (expired ones included until deleted),
    scores for its unexpired rows."""
    rows = {
        int(r[0]): r
        for r in c.execute(
            "SELECT label, org_id, agent_id, conversation_id, expires_at_us, doc_len FROM az_memory"
        )
        if _in(scope, r[1], r[2], r[3])
    }
    n = len(rows)
    avgdl = max(sum(r[5] for r in rows.values()) / n, 1.0) if n else 1.0
    postings = [
        (int(lab), str(term), int(tf))
        for lab, term, tf in c.execute(
            "SELECT label, term, tf FROM az_terms WHERE term = ANY(%s)", (sorted(set(terms)),)
        )
        if int(lab) in rows
    ]
    df = Counter(term for _, term, _ in postings)
    scores: dict[int, float] = defaultdict(float)
    for lab, term, tf in postings:
        expires, dl = rows[lab][4], rows[lab][5]
        if expires is not None and expires <= now_us:
            continue
        idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        scores[lab] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))
    return dict(scores)


def assert_same_scores(got: list[tuple[int, float]], want: dict[int, float]) -> None:
    assert {lab for lab, _ in got} == set(want)
    for lab, score in got:
        assert abs(score - want[lab]) <= 1e-9, (lab, score, want[lab])
    assert all(a[1] >= b[1] - 1e-12 for a, b in zip(got, got[1:], strict=False))  # best first


QUERY_SCOPES = [
    Scope(),
    *(Scope(o) for o in ORGS),
    *(Scope(o, a) for o in ORGS for a in AGENTS),
    Scope("o0", "a0", "c0"),
    Scope("o1", "a1", "c1"),
    Scope(None, "a1"),
]


def check_everything(s: PgMemoryStore, url: str, rng: random.Random, now_us: int) -> None:
    """The kept statistics match the rows, and every query shape scores as the full scan
    (and as schema 1's statement, counting expired rows at ``now_us`` 0)."""
    with psycopg.connect(url, autocommit=True) as c:
        assert bm25.check(c) == []
        for scope in QUERY_SCOPES:
            words = rng.sample(WORDS, rng.randint(1, 3))
            terms = s.blind_terms.terms(" ".join(words))
            assert_same_scores(
                s.keyword_scored(terms, ALL, scope, now_us), full_scan(c, terms, scope, now_us)
            )
            assert_same_scores(
                s.keyword_scored(terms, ALL, scope, 0), schema1_scored(c, terms, scope, 0)
            )


def _text(rng: random.Random) -> str:
    # Few words, repeated: terms shared between rows, tf > 1, lengths that differ.
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))


def _entries(rng: random.Random, n: int, clock: Clock) -> list[MemoryEntry]:
    out = []
    for _ in range(n):
        expiry = rng.choice([None, None, None, -5, 5, 60])  # minutes from now
        out.append(
            MemoryEntry(
                _text(rng),
                org_id=rng.choice(ORGS),
                agent_id=rng.choice(AGENTS),
                conversation_id=rng.choice(CONVS),
                expires_at=None if expiry is None else clock.now + timedelta(minutes=expiry),
            )
        )
    return out


def _labels(url: str) -> list[tuple[int, str, str, str, str]]:
    with psycopg.connect(url, autocommit=True) as c:
        rows = c.execute(
            "SELECT label, id, org_id, agent_id, conversation_id FROM az_memory ORDER BY label"
        ).fetchall()
    return [(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in rows]


# ---------------------------------------------------------------- every write path
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scores_equal_a_full_scan_after_random_writes_through_every_path(
    pg_url: str, seed: int
) -> None:
    rng = random.Random(seed)
    clock = Clock()
    with _open(pg_url, clock) as s:
        for step in range(45):
            rows = _labels(pg_url)
            op = rng.choice(
                ["append"] * 4
                + ["delete", "forget", "gc", "raw_delete", "delete_labels", "replace", "tx_insert"]
                + ["rollback"]
            )
            if op == "append" or not rows:
                s.append_many(_entries(rng, rng.randint(1, 6), clock))
            elif op == "delete":
                assert s.delete(rng.choice(rows)[1])
            elif op == "forget":
                _, _, o, a, cv = rng.choice(rows)
                shape = rng.choice([{"org_id": o}, {"org_id": o, "agent_id": a}])
                shape = rng.choice([shape, {"org_id": o, "agent_id": a, "conversation_id": cv}])
                assert s.forget(**shape) > 0
            elif op == "gc":
                clock.now += timedelta(minutes=rng.choice([0, 10, 90]))
                s.gc_expired()
            elif op == "raw_delete":  # a layer's own DELETE, below the store's API
                chosen = [r[0] for r in rng.sample(rows, min(len(rows), rng.randint(1, 4)))]
                with s.transaction() as tx:
                    tx.execute("DELETE FROM az_memory WHERE label = ANY(%s)", (chosen,))
            elif op == "delete_labels":
                with s.transaction() as tx:
                    tx.delete_labels([r[0] for r in rng.sample(rows, min(len(rows), 2))])
            elif op == "replace":  # an archived memory keeps other words searchable
                lab, _, o, a, cv = rng.choice(rows)
                with s.transaction() as tx:
                    tx.replace_keywords(lab, _text(rng), (o, a, cv))
            elif op == "tx_insert":
                batch = s.prepare(_entries(rng, rng.randint(1, 4), clock))
                with s.transaction() as tx:
                    tx.insert(batch)
                    tx.delete_labels([rng.choice(rows)[0]])
            else:  # a transaction that wrote and rolled back leaves no delta behind
                with pytest.raises(RuntimeError), s.transaction() as tx:
                    tx.insert(s.prepare(_entries(rng, 3, clock)))
                    tx.delete_labels([r[0] for r in rows[:3]])
                    raise RuntimeError("roll back")
            if step % 3 == 2:
                check_everything(s, pg_url, rng, to_us(clock.now))
        check_everything(s, pg_url, rng, to_us(clock.now))


def test_expired_rows_count_until_gc_and_never_score(pg_url: str) -> None:
    clock = Clock()
    with _open(pg_url, clock) as s, psycopg.connect(pg_url, autocommit=True) as c:
        s.append_many(
            [
                MemoryEntry("harbor lantern", org_id="o", id="live"),
                MemoryEntry("harbor", org_id="o", id="soon", expires_at=T0 + timedelta(minutes=1)),
                MemoryEntry("quartz", org_id="o", id="other"),
            ]
        )
        terms = s.blind_terms.terms("harbor")
        clock.now = T0 + timedelta(minutes=2)
        later = to_us(clock.now)
        got = s.keyword_scored(terms, ALL, Scope("o"), later)
        assert [lab for lab, _ in got] == [r[0] for r in _labels(pg_url)[:1]]  # "live"
        assert_same_scores(got, full_scan(c, terms, Scope("o"), later))  # n = 3, df = 2
        live_only = schema1_scored(c, terms, Scope("o"), later)  # n = 2, df = 1
        assert abs(got[0][1] - next(iter(live_only.values()))) > 1e-3
        assert s.gc_expired() == 1
        assert_same_scores(s.keyword_scored(terms, ALL, Scope("o"), later), live_only)


def test_other_tenants_never_change_a_score(store: PgMemoryStore) -> None:
    store.append_many([MemoryEntry(f"harbor {w}", org_id="A", agent_id="x") for w in WORDS])
    terms = store.blind_terms.terms("harbor quartz")
    before = store.keyword_scored(terms, ALL, Scope("A", "x"), 0)
    # Another agent of the same org, the same agent id in another org, another org.
    for org, agent in (("A", "y"), ("B", "x"), ("C", "z")):
        store.append_many([MemoryEntry("harbor harbor quartz", org_id=org, agent_id=agent)])
        store.append_many(
            [MemoryEntry(f"pebble {i}", org_id=org, agent_id=agent) for i in range(9)]
        )
        assert store.keyword_scored(terms, ALL, Scope("A", "x"), 0) == before
    assert store.forget(org_id="B") == 10
    assert store.keyword_scored(terms, ALL, Scope("A", "x"), 0) == before


def test_scope_moved_by_sql_and_truncate_keep_the_statistics(
    store: PgMemoryStore, pg_url: str
) -> None:
    store.append_many([MemoryEntry(_text(random.Random(i)), org_id="A") for i in range(10)])
    with psycopg.connect(pg_url, autocommit=True) as c:
        # Someone with write access moves a row (it no longer opens: its seal binds the
        # scope), but its postings and the statistics of both scopes follow.
        c.execute(
            "UPDATE az_memory SET org_id = 'B' WHERE label = (SELECT min(label) FROM az_memory)"
        )
        assert bm25.check(c) == []
        assert c.execute("SELECT count(*) FROM az_terms WHERE org_id = 'B'").fetchone()[0] > 0
        # A length changed around the store: the postings' copies follow it.
        c.execute("UPDATE az_memory SET doc_len = doc_len + 3 WHERE org_id = 'A'")
        assert bm25.check(c) == []
        terms = store.blind_terms.terms(" ".join(WORDS))
        assert_same_scores(
            store.keyword_scored(terms, ALL, Scope("A"), 0), full_scan(c, terms, Scope("A"), 0)
        )
        c.execute("TRUNCATE az_memory CASCADE")
        assert bm25.check(c) == []
        assert c.execute(f"SELECT count(*) FROM {bm25.STATS_TABLE}").fetchone()[0] == 0
    store.append_many([MemoryEntry("harbor", org_id="A")])
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert bm25.check(c) == []


def test_postings_that_disagree_with_their_row_are_refused(
    store: PgMemoryStore, pg_url: str
) -> None:
    store.append_many([MemoryEntry("harbor lantern", org_id="A", agent_id="x", id="m")])
    with psycopg.connect(pg_url, autocommit=True) as c:
        label, dl = c.execute("SELECT label, doc_len FROM az_memory WHERE id = 'm'").fetchone()
        for sql, params in (
            (  # a posting claiming another tenant
                "INSERT INTO az_terms (label, term, tf, org_id, agent_id, doc_len)"
                " VALUES (%s, 'x', 1, 'B', 'x', %s)",
                (label, dl),
            ),
            (  # or another length
                "INSERT INTO az_terms (label, term, tf, org_id, agent_id, doc_len)"
                " VALUES (%s, 'x', 1, 'A', 'x', %s)",
                (label, dl + 1),
            ),
            ("UPDATE az_terms SET org_id = 'B' WHERE label = %s", (label,)),
        ):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation):
                c.execute(sql, params)
        assert c.execute("SELECT count(*) FROM az_terms WHERE org_id = 'B'").fetchone()[0] == 0


def test_check_reports_and_fixes_drift(store: PgMemoryStore, pg_url: str) -> None:
    store.append_many([MemoryEntry("harbor lantern", org_id="A", agent_id="x")])
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute(f"INSERT INTO {bm25.STATS_TABLE} VALUES ('A', 'x', 1, 7)")  # written around
        assert bm25.check(c) == [bm25.Drift("A", "x", (1, 2), (2, 9))]
        with c.transaction():
            assert len(bm25.check(c, fix=True)) == 1
        assert bm25.check(c) == []


# ---------------------------------------------------------------- many writers
def _delta_rows(url: str) -> dict[tuple[str, str], int]:
    with psycopg.connect(url, autocommit=True) as c:
        rows = c.execute(f"SELECT org_id, agent_id, count(*) FROM {bm25.STATS_TABLE} GROUP BY 1, 2")
        return {(str(o), str(a)): int(n) for o, a, n in rows}


def _writer(url: str, w: int, rounds: int, errors: list[BaseException]) -> None:
    """One client: small batches into a scope every writer shares and into its own,
    deletes through the API, a layer's raw DELETE and keyword replacement."""
    rng = random.Random(100 + w)
    try:
        with _open(url) as s:
            for r in range(rounds):
                shared = [MemoryEntry(_text(rng), org_id="shared", agent_id="a") for _ in range(2)]
                own = [
                    MemoryEntry(
                        _text(rng), org_id="shared", agent_id=f"w{w}", conversation_id=f"c{r % 3}"
                    )
                    for _ in range(2)
                ]
                ids = s.append_many(shared + own)
                if r % 3 == 0:
                    s.delete(ids[0])
                if r % 4 == 1:
                    with s.transaction() as tx:
                        tx.execute(
                            "DELETE FROM az_memory WHERE label = ANY(SELECT label FROM az_memory"
                            " WHERE id = ANY(%s))",
                            ([ids[1], ids[2]],),
                        )
                if r % 5 == 2:
                    rows = s.query("SELECT label FROM az_memory WHERE id = %s", (ids[3],))
                    with s.transaction() as tx:
                        tx.replace_keywords(int(rows[0][0]), _text(rng), ("shared", f"w{w}", "x"))
                if r % 7 == 6:
                    s.forget(org_id="shared", agent_id=f"w{w}", conversation_id=f"c{r % 3}")
    except BaseException as exc:  # reported by the test thread
        errors.append(exc)


def _run_writers(url: str, writers: int, rounds: int) -> None:
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_writer, args=(url, w, rounds, errors)) for w in range(writers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
        assert not t.is_alive(), "a writer hung (a compaction must never wait)"
    assert errors == []


def test_concurrent_writers_leave_exact_statistics(pg_url: str) -> None:
    with _open(pg_url):
        pass  # the schema exists before the writers race
    _run_writers(pg_url, writers=4, rounds=40)
    rng = random.Random(7)
    with _open(pg_url) as s, psycopg.connect(pg_url, autocommit=True) as c:
        assert bm25.check(c) == []
        for scope in (Scope("shared"), Scope("shared", "a"), Scope("shared", "w2"), Scope()):
            terms = s.blind_terms.terms(" ".join(rng.sample(WORDS, 2)))
            assert_same_scores(
                s.keyword_scored(terms, ALL, scope, 0), full_scan(c, terms, scope, 0)
            )
            assert_same_scores(
                s.keyword_scored(terms, ALL, scope, 0), schema1_scored(c, terms, scope, 0)
            )
    # The shared scope took ~4 x 40 x 2 deltas: the writers folded them as they went.
    assert _delta_rows(pg_url)[("shared", "a")] <= 2 * bm25.COMPACT_AFTER


def test_a_compaction_in_progress_blocks_no_writer_and_no_reader(pg_url: str) -> None:
    rng = random.Random(5)
    with _open(pg_url) as a, _open(pg_url) as b, _open(pg_url) as r:
        b.connection().execute("SET statement_timeout = '5s'")  # a wait fails the test
        r.connection().execute("SET statement_timeout = '5s'")
        terms = a.blind_terms.terms(" ".join(WORDS))
        for outcome in ("commit", "rollback"):
            while _delta_rows(pg_url).get(("K", "default"), 0) < bm25.COMPACT_AFTER:
                a.append_many([MemoryEntry(_text(rng), org_id="K")])  # one delta row each
            assert _delta_rows(pg_url) == {("K", "default"): bm25.COMPACT_AFTER}
            fails = pytest.raises(RuntimeError) if outcome == "rollback" else nullcontext()
            with fails, a.transaction() as tx:
                # Over the threshold: this transaction folds the key and holds its lock.
                tx.insert(a.prepare([MemoryEntry(_text(rng), org_id="K")]))
                folded = tx.query(f"SELECT count(*) FROM {bm25.STATS_TABLE} WHERE org_id = 'K'")[0][
                    0
                ]
                assert folded == 1
                # Another writer of the key does not wait for the fold (it skips its own),
                b.append_many([MemoryEntry(_text(rng), org_id="K") for _ in range(3)])
                # and a reader sees exactly the committed rows, the fold not yet.
                with psycopg.connect(pg_url, autocommit=True) as c:
                    assert bm25.check(c) == []
                    assert_same_scores(
                        r.keyword_scored(terms, ALL, Scope("K"), 0),
                        full_scan(c, terms, Scope("K"), 0),
                    )
                if outcome == "rollback":
                    raise RuntimeError("roll back the fold")
            with psycopg.connect(pg_url, autocommit=True) as c:
                assert bm25.check(c) == []
                assert_same_scores(
                    r.keyword_scored(terms, ALL, Scope("K"), 0), full_scan(c, terms, Scope("K"), 0)
                )


def test_compactions_racing_on_one_scope_stay_exact(pg_url: str) -> None:
    """Eight clients writing one scope in single-row transactions: every write is over
    the threshold after the first few, so folds race each other all the time."""
    with _open(pg_url):
        pass
    errors: list[BaseException] = []

    def hammer(w: int) -> None:
        rng = random.Random(w)
        try:
            with _open(pg_url) as s:
                for i in range(60):
                    ids = s.append_many([MemoryEntry(_text(rng), org_id="hot", agent_id="a")])
                    if i % 4 == 3:
                        s.delete(ids[0])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
        assert not t.is_alive()
    assert errors == []
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert bm25.check(c) == []
        n, total = c.execute(
            f"SELECT sum(n), sum(total_len) FROM {bm25.STATS_TABLE} WHERE org_id = 'hot'"
        ).fetchone()
        assert n == 8 * 45
    assert _delta_rows(pg_url)[("hot", "a")] <= 2 * bm25.COMPACT_AFTER


# ---------------------------------------------------------------- schema 1 -> 2
def to_schema_1(c: Any) -> None:
    """Undo schema 2 on a store (its rows stay): what a store of schema 1 holds."""
    for trigger in ("insert", "delete", "update", "truncate"):
        c.execute(f"DROP TRIGGER az_memory_bm25_{trigger} ON az_memory")
    for trigger in ("insert", "update"):
        c.execute(f"DROP TRIGGER az_terms_{trigger}_check ON az_terms")
    c.execute(
        "DROP FUNCTION az_bm25_rows_added(), az_bm25_rows_removed(), az_bm25_row_changed(),"
        " az_bm25_truncated(), az_bm25_compact(text, text), az_bm25_postings_check()"
    )
    c.execute(f"DROP TABLE {bm25.STATS_TABLE}")
    c.execute("ALTER TABLE az_terms DROP COLUMN org_id, DROP COLUMN agent_id, DROP COLUMN doc_len")
    c.execute("UPDATE az_meta SET value = '1' WHERE key = 'schema_version'")


def catalog(url: str) -> dict[str, Any]:
    """The store's schema as the server describes it: columns, indexes, constraints,
    triggers and functions of the ``az_`` objects."""
    with psycopg.connect(url, autocommit=True) as c:
        q = {
            "columns": "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod),"
            " a.attnotnull FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE c.relname LIKE 'az\\_%%' AND c.relkind = 'r' AND a.attnum > 0"
            " AND NOT a.attisdropped ORDER BY 1, a.attnum",
            "indexes": "SELECT indexname, indexdef FROM pg_indexes"
            " WHERE tablename LIKE 'az\\_%%' ORDER BY 1",
            "constraints": "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid::regclass::text LIKE 'az\\_%%' ORDER BY 1",
            "triggers": "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger"
            " WHERE NOT tgisinternal ORDER BY 1",
            "functions": "SELECT proname, prosrc FROM pg_proc WHERE proname LIKE 'az\\_%%'"
            " ORDER BY 1",
        }
        return {k: c.execute(sql).fetchall() for k, sql in q.items()}


def _new_database(postgres: PgServer, name: str) -> str:
    with psycopg.connect(postgres.url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return postgres.database_url(name)


def _fill(s: PgMemoryStore, rng: random.Random, clock: Clock) -> None:
    for _ in range(12):
        s.append_many(_entries(rng, 8, clock))
    with s.transaction() as tx:  # keywords replaced, as an archived memory's are
        rows = tx.query(
            "SELECT label, org_id, agent_id, conversation_id FROM az_memory ORDER BY label"
        )
        for lab, o, a, cv in rows[::7]:
            tx.replace_keywords(int(lab), _text(rng), (o, a, cv))


def test_a_schema_1_store_is_upgraded_on_open(postgres: PgServer, pg_url: str) -> None:
    rng = random.Random(11)
    clock = Clock()
    with _open(pg_url, clock) as s:
        _fill(s, rng, clock)
        model_v2 = catalog(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as c, c.transaction():
        to_schema_1(c)
    # What schema 1 created is what the store now holds.
    fresh = _new_database(postgres, f"{pg_url.rsplit('/', 1)[1]}_v1")
    with psycopg.connect(fresh, autocommit=True) as c:
        for stmt in schema.CREATE:
            c.execute(stmt)
    assert catalog(pg_url) == catalog(fresh)

    now = to_us(clock.now)
    queries = [s.blind_terms.terms(" ".join(rng.sample(WORDS, 2))) for _ in QUERY_SCOPES]
    with psycopg.connect(pg_url, autocommit=True) as c:
        before = [schema1_scored(c, t, sc, 0) for t, sc in zip(queries, QUERY_SCOPES, strict=True)]
        reference = [full_scan(c, t, sc, now) for t, sc in zip(queries, QUERY_SCOPES, strict=True)]

    with pytest.raises(WrongKeyError):  # a wrong credential upgrades nothing
        _open(pg_url, passphrase="wrong")
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert schema.version(c) == 1

    # Two clients opening it at once: one upgrades, the other waits and finds it done.
    opened: list[PgMemoryStore] = []
    threads = [threading.Thread(target=lambda: opened.append(_open(pg_url, clock))) for _ in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(opened) == 2
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert schema.version(c) == schema.SCHEMA_VERSION == 2
        assert bm25.check(c) == []
    assert catalog(pg_url) == model_v2  # the same schema as a store created by this version
    s = opened[0]
    for terms, scope, old, ref in zip(queries, QUERY_SCOPES, before, reference, strict=True):
        assert_same_scores(s.keyword_scored(terms, ALL, scope, 0), old)
        assert_same_scores(s.keyword_scored(terms, ALL, scope, now), ref)
    opened[1].append_many(_entries(rng, 5, clock))  # and it keeps them exact from there
    check_everything(s, pg_url, rng, now)
    for o in opened:
        o.close()


def test_the_upgrade_needs_the_owner_and_keeps_the_application_role_working(
    postgres: PgServer, pg_url: str
) -> None:
    db = pg_url.rsplit("/", 1)[1]
    owner, app = f"{db}_owner", f"{db}_app"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {owner} LOGIN")
        admin.execute(f"CREATE ROLE {app} LOGIN")
        admin.execute("CREATE EXTENSION vector")
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {owner}")
    url = f"postgresql://{{}}@127.0.0.1:{postgres.port}/{db}"
    with _open(url.format(owner)) as s:
        s.append_many([MemoryEntry(f"harbor note {i}", org_id="o") for i in range(5)])
    with psycopg.connect(url.format(owner), autocommit=True) as c:
        with c.transaction():
            to_schema_1(c)
        for g in (  # what schema 1's README asked for
            f"GRANT SELECT ON az_keys, az_meta TO {app}",
            f"GRANT SELECT, INSERT, DELETE ON az_memory, az_terms TO {app}",
            f"GRANT USAGE ON SEQUENCE az_memory_label_seq TO {app}",
        ):
            c.execute(g)
    with pytest.raises(SchemaVersionError, match="owns its tables"):
        _open(url.format(app))
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert schema.version(c) == 1  # the failed upgrade changed nothing
    _open(url.format(owner)).close()  # upgrades, and gives the statistics to the app role
    with _open(url.format(app)) as s:
        s.append_many([MemoryEntry(f"harbor line {i}", org_id="o") for i in range(40)])
        assert s.forget(org_id="o", conversation_id="default") == 45
        s.append_many([MemoryEntry("harbor again", org_id="o")])
        assert len(s.keyword_recall("harbor", 5, org_id="o")) == 1
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert bm25.check(c) == []


def test_snapshot_isolation_writers_count_but_leave_the_fold_to_others(pg_url: str) -> None:
    """Under REPEATABLE READ a fold could meet rows another fold removed after its
    snapshot: such transactions add their deltas and never fold."""
    rng = random.Random(3)
    with _open(pg_url) as s:
        s.connection().isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        for _ in range(bm25.COMPACT_AFTER + 5):
            s.append_many([MemoryEntry(_text(rng), org_id="R")])
        assert _delta_rows(pg_url)[("R", "default")] == bm25.COMPACT_AFTER + 5
        s.connection().isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        s.append_many([MemoryEntry(_text(rng), org_id="R")])
        assert _delta_rows(pg_url)[("R", "default")] == 1
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert bm25.check(c) == []
