"""``migrate_store`` and ``agentzero store migrate``: a data dir to PostgreSQL and back,
against a real server (tests/support/pg_server.py): same keys, every memory, idempotent,
resumable after kill -9, and checked (a copy that differs is an error naming what). The
agent memory's move: ``test_pg_migrate_agent.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from agentzero_store import (
    MemoryEntry,
    MigrationMismatchError,
    PgMemoryStore,
    SqliteMemoryStore,
    StoreExistsError,
    WrongKeyError,
)
from agentzero_store.memory.seam import MemoryStore
from agentzero_store.ops.migrate import migrate_store
from agentzero_store.ops.migrate_check import check, same_ranking

from ..conftest import AGENTZERO, FAST, PASSPHRASE, child_env, rand_vectors

DIM = 16
WORDS = [
    "harbor",
    "lantern",
    "quartz",
    "meadow",
    "violin",
    "glacier",
    "saffron",
    "pebble",
    "orchid",
    "thunder",
]


def _entries(n: int, start: int = 0) -> list[MemoryEntry]:
    t0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    return [
        MemoryEntry(
            f"note {i}: the {WORDS[i % 10]} and the {WORDS[(i * 3) % 10]} word{i}x",
            role="assistant" if i % 4 == 0 else "user",
            org_id=f"org{i % 3}",
            agent_id=f"agent{i % 2}",
            conversation_id=f"c{i % 5}",
            metadata={"n": i, "tag": WORDS[i % 10]} if i % 2 else {},
            created_at=t0 + timedelta(seconds=i),
            expires_at=t0 + timedelta(days=3650) if i % 7 == 0 else None,
            id=f"m{i:05d}",
            embedding_model="test-model",
        )
        for i in range(start, start + n)
    ]


def _fill(store: MemoryStore, n: int) -> None:
    """``n`` memories over 6 scopes; every fifth without a vector."""
    es, vs = _entries(n), rand_vectors(n, DIM, seed=7)
    for s in range(0, n, 250):
        with_v = [i for i in range(s, min(s + 250, n)) if i % 5]
        without = [i for i in range(s, min(s + 250, n)) if not i % 5]
        store.append_many([es[i] for i in with_v], vectors=[vs[i] for i in with_v])
        store.append_many([es[i] for i in without])


def _sqlite(d: Path, **kw: object) -> SqliteMemoryStore:
    return SqliteMemoryStore.open(d, passphrase=PASSPHRASE, config=FAST, **kw)  # type: ignore[arg-type]


def _migrate(source: Path | str, target: Path | str, **kw: object) -> object:
    return migrate_store(source, target, passphrase=PASSPHRASE, config=FAST, **kw)  # type: ignore[arg-type]


def test_data_dir_to_postgresql_and_back_keeps_keys_and_every_memory(
    tmp_path: Path, pg_url: str
) -> None:
    src = tmp_path / "src"
    with _sqlite(src) as s:
        _fill(s, 600)
        s.delete("m00003")
        store_id, recent = s.store_id, [e.id for e in s.recent(10, org_id="org1")]
    r = _migrate(src, pg_url)
    assert r.memories == 599 and r.written == 599 and r.store_id == store_id  # type: ignore[attr-defined]
    assert r.checked["memories"] == 599 and r.checked["semantic_queries"] > 0  # type: ignore[attr-defined]
    assert r.checked["keyword_queries"] > 0  # type: ignore[attr-defined]
    assert sum(x["count"] for x in r.scopes) == 599  # type: ignore[attr-defined]
    # The same passphrase opens it: the key header is the data dir's keys.json.
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False) as p:
        assert p.store_id == store_id and p.count() == 599
        assert [e.id for e in p.recent(10, org_id="org1")] == recent
        got = p.get("m00001")
        assert got is not None and got.metadata == {"n": 1, "tag": WORDS[1]}
        assert p.embedding_info() == ("test-model", DIM)
        assert p.get("m00003") is None
    assert _has_index(pg_url)  # built once, after the copy
    keys = json.loads((src / "keys.json").read_text())
    with psycopg.connect(pg_url) as c:
        row = c.execute("SELECT header FROM az_keys").fetchone()
    assert row is not None and json.loads(row[0]) == keys
    with pytest.raises(WrongKeyError):
        PgMemoryStore.open(pg_url, passphrase="not it", config=FAST, create=False)
    # Again: nothing is written twice, the check passes.
    again = _migrate(src, pg_url)
    assert again.written == 0 and again.memories == 599  # type: ignore[attr-defined]
    # And back, into a new data dir: the same store, the same answers.
    back = tmp_path / "back"
    r2 = _migrate(pg_url, back)
    assert r2.written == 599  # type: ignore[attr-defined]
    assert json.loads((back / "keys.json").read_text())["store_id"] == store_id
    with _sqlite(back, create=False) as b, _sqlite(src, create=False) as s:
        assert b.count() == s.count() == 599
        assert b.scopes() == s.scopes()
        q = rand_vectors(1, DIM, seed=99)[0]
        assert [h.id for h in b.semantic_recall(q, 5, org_id="org2")] == [
            h.id for h in s.semantic_recall(q, 5, org_id="org2")
        ]


def _has_index(url: str) -> bool:
    with psycopg.connect(url) as c:
        row = c.execute("SELECT to_regclass('az_memory_embedding') IS NOT NULL").fetchone()
    return bool(row and row[0])


def test_bulk_load_builds_the_vector_index_once_at_the_end(pg_url: str) -> None:
    vectors = rand_vectors(300, DIM, seed=4)
    entries = [MemoryEntry(f"row {i}", org_id=f"o{i % 3}", id=f"r{i}") for i in range(300)]
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as s:
        with s.bulk_load():
            s.append_many(entries[:150], vectors=list(vectors[:150]))
            assert not _has_index(pg_url)
            during = [h.id for h in s.semantic_recall(vectors[7], 5, org_id="o1")]
            s.append_many(entries[150:], vectors=list(vectors[150:]))
        assert _has_index(pg_url)
        after = [h.id for h in s.semantic_recall(vectors[7], 5, org_id="o1")]
        assert during[0] == after[0] == "r7"
        with s.bulk_load():  # the index exists: rows go in as usual
            s.append(MemoryEntry("one more", id="late"))
        assert _has_index(pg_url) and s.count() == 301


def test_a_target_holding_another_store_is_refused(tmp_path: Path, pg_url: str) -> None:
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST) as other:
        other.append(MemoryEntry("someone else's memory", id="x"))
    with _sqlite(tmp_path / "src") as s:
        _fill(s, 20)
    with pytest.raises(StoreExistsError):
        _migrate(tmp_path / "src", pg_url)
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False) as p:
        assert p.count() == 1
    with _sqlite(tmp_path / "other") as o:
        o.append(MemoryEntry("another data dir's memory"))
    with pytest.raises(StoreExistsError):
        _migrate(tmp_path / "src", tmp_path / "other")


def test_the_check_names_what_differs(tmp_path: Path, pg_url: str) -> None:
    src = tmp_path / "src"
    with _sqlite(src) as s:
        _fill(s, 60)
    _migrate(src, pg_url)
    with (
        _sqlite(src, create=False, hnsw=False) as s,
        PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, hnsw=False) as p,
    ):
        assert check(s, p)["memories"] == 60
        p.delete("m00004")
        with pytest.raises(MigrationMismatchError, match="org 'org1' agent 'agent0': 10 vs 9"):
            check(s, p)
        p.append(MemoryEntry("a stranger", org_id="org1", agent_id="agent0", id="zz"))
        with pytest.raises(MigrationMismatchError, match="1 missing from the target.*m00004"):
            check(s, p)
        p.delete("zz")
        e = s.get("m00004")
        assert e is not None
        p.append(e.with_(content=e.content + " changed"))
        with pytest.raises(MigrationMismatchError, match=r"1 differ \(fields or vector\)"):
            check(s, p)
        p.delete("m00004")
        v = s.entries_after(0, 10)[4][2]
        p.append_with_embedding(e, -v)  # the same fields, another vector
        with pytest.raises(MigrationMismatchError, match="m00004"):
            check(s, p)


def test_same_ranking_allows_only_ties_at_the_cut_off() -> None:
    a = [("x", 0.9), ("y", 0.8), ("z", 0.7)]
    assert same_ranking(a, list(a))
    assert same_ranking(a, [("x", 0.9), ("y", 0.8), ("w", 0.7)])  # tied at the cut-off
    assert same_ranking([("x", 0.9), ("y", 0.9), ("z", 0.5)], [("y", 0.9), ("x", 0.9), ("z", 0.5)])
    assert not same_ranking(a, [("x", 0.9), ("w", 0.8), ("z", 0.7)])
    assert not same_ranking(a, [("x", 0.9), ("y", 0.8), ("z", 0.6)])
    assert not same_ranking(a, a[:2])


CHILD_BATCH = "20"


def test_cli_migrate_killed_mid_way_finishes_on_the_next_run(tmp_path: Path, pg_url: str) -> None:
    """kill -9 of `agentzero store migrate` mid-way, run it again: it finishes, and
    nothing is doubled or lost (the check compares every memory)."""
    src = tmp_path / "src"
    n = 3_000
    with _sqlite(src) as s:
        _fill(s, n)
    # This checkout's package, whichever one the console script was installed from.
    root = str(Path(__file__).resolve().parents[2])
    env = {**child_env(), "AGENTZERO_PASSPHRASE": PASSPHRASE, "PYTHONPATH": root}
    args = [AGENTZERO, "--data-dir", str(src), "store", "migrate", "--to", pg_url]
    p = subprocess.Popen(
        [*args, "--batch", CHILD_BATCH, "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    copied = 0
    deadline = time.monotonic() + 60
    with psycopg.connect(pg_url, autocommit=True) as c:
        while time.monotonic() < deadline and p.poll() is None:
            if c.execute("SELECT to_regclass('az_memory') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
                copied = c.execute("SELECT count(*) FROM az_memory").fetchone()[0]  # type: ignore[index]
                if copied >= n // 4:
                    break
            time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert 0 < copied < n  # killed mid-way
    assert not _has_index(pg_url)  # the bulk load builds it at its end
    done = subprocess.run([*args, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    report = json.loads(done.stdout)
    assert report["memories"] == n and 0 < report["written"] < n
    assert report["checked"]["memories"] == n
    with psycopg.connect(pg_url) as c:
        rows = c.execute("SELECT count(*), count(DISTINCT id) FROM az_memory").fetchone()
    assert rows == (n, n)
    assert _has_index(pg_url)
    with PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST, create=False) as pg:
        assert sorted(e.id or "" for _, e, _ in pg.entries_after(0, n + 1)) == [
            f"m{i:05d}" for i in range(n)
        ]
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
    assert f"migrated store {report['store_id']}: {n} memories" in home.stdout
    assert "answered the same on both sides" in home.stdout
    with _sqlite(back, create=False) as b:
        assert b.count() == n
