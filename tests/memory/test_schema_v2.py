"""Schema v2 (vectors in ``memory_vec``) and v3 (scope tokens in FTS5): a v1 database
migrates with every vector intact and recall unchanged; a kill -9 during the migration
leaves one whole schema version (which then migrates on), never a half-moved store."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.memory.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from agentzero_store.storage.sqlcipher import Database

from ..conftest import FAST, PASSPHRASE, rand_vectors

MODEL = "test-model"
DIM = 384
ORGS, AGENTS, CONVS = 3, 4, 11


@dataclass
class V1Store:
    """A data dir whose memory.db was written by the v1 schema, and what it holds."""

    root: Path
    key: bytes
    store_id: str
    vectors: dict[int, bytes]  # label -> float32 bytes, rows holding a vector
    ids: dict[int, str]  # label -> id, every live row
    max_seq: int


def scope_of(i: int) -> tuple[str, str, str]:
    return f"o{i % ORGS}", f"a{i % AGENTS}", f"c{i % CONVS}"


def make_v1_store(root: Path, n: int) -> V1Store:
    """A store with ``n`` rows inserted the v1 way (vector inline in ``memory``); every
    9th row has no vector and every 50th is deleted again (label gaps, delete changes)."""
    with SqliteMemoryStore.open(root, passphrase=PASSPHRASE, config=FAST) as s:
        key, store_id, path = s.keys.sqlcipher_key, s.store_id, s._db.path
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    db = Database(path, key, busy_timeout_ms=5_000)
    vecs = rand_vectors(n, DIM, seed=7)
    vectors: dict[int, bytes] = {}
    ids: dict[int, str] = {}
    with db.tx() as c:
        for stmt in MIGRATIONS[0].split(";\n"):
            if stmt.strip():
                c.execute(stmt)
        c.execute("INSERT INTO meta VALUES ('store_id', ?)", (store_id,))
        c.execute("INSERT INTO meta VALUES ('embedding_dim', ?)", (str(DIM),))
        c.execute("INSERT INTO meta VALUES ('embedding_model', ?)", (MODEL,))
        for i in range(n):
            blob = None if i % 9 == 4 else vecs[i].tobytes()
            org, agent, conv = scope_of(i)
            content = f"note {i} about topic{i % 13} zebra{i}"
            label = c.execute(
                "INSERT INTO memory (id, role, content, created_at_us, conversation_id, org_id,"
                " agent_id, expires_at_us, kind, source, metadata, fingerprint, embedding,"
                " embedding_model) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    f"id{i}",
                    "user",
                    content,
                    1_700_000_000_000_000 + i,
                    conv,
                    org,
                    agent,
                    None,
                    "message",
                    "conversation",
                    "{}",
                    f"fp{i}",
                    blob,
                    MODEL if blob else None,
                ),
            ).lastrowid
            c.execute("INSERT INTO memory_fts (rowid, content) VALUES (?, ?)", (label, content))
            c.execute("INSERT INTO changes (op, label) VALUES ('insert', ?)", (label,))
            ids[label] = f"id{i}"
            if blob is not None:
                vectors[label] = blob
        for label in [lab for lab in ids if lab % 50 == 0]:
            c.execute("DELETE FROM memory WHERE label = ?", (label,))
            c.execute("DELETE FROM memory_fts WHERE rowid = ?", (label,))
            c.execute("INSERT INTO changes (op, label) VALUES ('delete', ?)", (label,))
            del ids[label]
            vectors.pop(label, None)
        c.execute("PRAGMA user_version = 1")
        max_seq = int(c.execute("SELECT max(seq) FROM changes").fetchone()[0])
    db.close()
    return V1Store(root, key, store_id, vectors, ids, max_seq)


def user_version(v1: V1Store) -> int:
    db = Database(v1.root / "memory.db", v1.key, busy_timeout_ms=5_000)
    try:
        return int(db.query("PRAGMA user_version")[0][0])
    finally:
        db.close()


def assert_v2_intact(s: SqliteMemoryStore, v1: V1Store) -> None:
    """Schema v2 or later, every vector and row of the v1 store present and byte-identical."""
    db = s._db
    assert int(db.query("PRAGMA user_version")[0][0]) == SCHEMA_VERSION >= 2
    assert db.query("PRAGMA integrity_check") == [("ok",)]
    columns = {r[1] for r in db.query("PRAGMA table_info(memory)")}
    assert "embedding" not in columns and "embedding_model" in columns
    got = {int(lab): bytes(b) for lab, b in db.query("SELECT label, embedding FROM memory_vec")}
    assert got == v1.vectors
    assert dict(db.query("SELECT label, id FROM memory")) == v1.ids
    assert s.source_seq() == v1.max_seq
    assert s.embedding_info() == (MODEL, DIM)


def in_scope(label: int, v1: V1Store, scope: dict[str, str]) -> bool:
    row = int(v1.ids[label][2:])  # id{i}
    fields = dict(zip(("org_id", "agent_id", "conversation_id"), scope_of(row), strict=True))
    return all(fields[f] == v for f, v in scope.items())


def exact_ids(v1: V1Store, q: np.ndarray, k: int, scope: dict[str, str]) -> list[str]:
    """What v1 recall answered: exact cosine top-k over the in-scope rows with a vector."""

    labels = [lab for lab in v1.vectors if in_scope(lab, v1, scope)]
    scores = [float(np.frombuffer(v1.vectors[lab], dtype=np.float32) @ q) for lab in labels]
    order = np.argsort(-np.asarray(scores), kind="stable")[:k]
    return [v1.ids[labels[j]] for j in order]


SCOPES: list[dict[str, str]] = [
    {},
    {"org_id": "o1"},
    {"agent_id": "a2"},
    {"org_id": "o0", "agent_id": "a3"},
    {"conversation_id": "c5"},
]


@pytest.mark.parametrize("hnsw", [False, True])
def test_v1_store_migrates_with_vectors_and_recall_intact(tmp_path: Path, hnsw: bool) -> None:
    v1 = make_v1_store(tmp_path / "data", 600)
    assert user_version(v1) == 1
    with SqliteMemoryStore.open(v1.root, passphrase=PASSPHRASE, config=FAST, hnsw=hnsw) as s:
        assert_v2_intact(s, v1)
        assert (s.hnsw_index is not None) == hnsw
        found = wanted = 0
        for qi, q in enumerate(rand_vectors(4, DIM, seed=99)):
            for scope in SCOPES:
                got = [h.entry.id for h in s.semantic_recall(q, 10, **scope)]
                exact = exact_ids(v1, q, 10, scope)
                if not hnsw:  # exact search in SQL: the very answer v1 gave
                    assert got == exact, (qi, scope)
                found, wanted = found + len(set(got) & set(exact)), wanted + len(exact)
        # HNSW is approximate on random 384-d vectors; it must hold every migrated vector
        # (each one finds itself) and keep its usual recall.
        assert found / wanted >= 0.9
        for label in list(v1.vectors)[::25]:
            hit = s.semantic_recall(np.frombuffer(v1.vectors[label], dtype=np.float32), 1)
            assert hit[0].entry.id == v1.ids[label]
        hits = s.keyword_recall("zebra123", 3)
        assert [h.entry.id for h in hits] == ["id123"]
        # v3 rebuilt the FTS5 index with scope tokens: scoped keyword recall finds exactly
        # the live in-scope rows holding the word, migrated or not.
        for scope in SCOPES:
            got = {h.entry.id for h in s.keyword_recall("topic5", 100, **scope)}
            assert got == {
                v1.ids[lab]
                for lab in v1.ids
                if int(v1.ids[lab][2:]) % 13 == 5 and in_scope(lab, v1, scope)
            }, scope
        entry = s.get("id10")
        assert entry is not None and entry.embedding_model == MODEL
        assert s.count() == len(v1.ids)
    # Reopening a v2 store runs no migration and changes nothing.
    with SqliteMemoryStore.open(v1.root, passphrase=PASSPHRASE, config=FAST) as s:
        assert_v2_intact(s, v1)


def test_writes_and_deletes_keep_memory_vec_in_step(tmp_path: Path) -> None:
    v1 = make_v1_store(tmp_path / "data", 60)
    with SqliteMemoryStore.open(v1.root, passphrase=PASSPHRASE, config=FAST) as s:
        vec = rand_vectors(1, DIM, seed=5)[0]
        new = s.append_with_embedding(MemoryEntry(content="fresh after v2"), vec)
        bare = s.append(MemoryEntry(content="no vector here"))  # the store has no embedder
        (label,) = s._db.query("SELECT label FROM memory WHERE id = ?", (new,))[0]
        (bare_label,) = s._db.query("SELECT label FROM memory WHERE id = ?", (bare,))[0]
        assert s._db.query("SELECT embedding FROM memory_vec WHERE label = ?", (label,)) == [
            (vec.tobytes(),)
        ]
        assert not s._db.query("SELECT 1 FROM memory_vec WHERE label = ?", (bare_label,))
        assert s.semantic_recall(vec, 1)[0].entry.id == new
        assert s.delete(new) and s.delete("id1")
        gone = [label, next(lab for lab, i in v1.ids.items() if i == "id1")]
        assert not s._db.query("SELECT 1 FROM memory_vec WHERE label IN (?, ?)", gone)
        # No orphan vector rows anywhere.
        assert not s._db.query(
            "SELECT v.label FROM memory_vec v LEFT JOIN memory m ON m.label = v.label "
            "WHERE m.label IS NULL"
        )
        changes = s.changes_since(v1.max_seq)
        assert [(c.op, c.embedding is not None) for c in changes] == [
            ("insert", False),  # the row was deleted since: no vector, a delete follows
            ("insert", False),
            ("delete", False),
            ("delete", False),
        ]


_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from agentzero_store.memory.sqlite.schema import migrate
    from agentzero_store.storage.sqlcipher import Database
    db = Database(Path(sys.argv[1]), bytes.fromhex(os.environ["AZ_TEST_KEY"]),
                  busy_timeout_ms=5000)
    print("ready", flush=True)
    t = time.perf_counter()
    migrate(db, sys.argv[2])
    print(f"done {time.perf_counter() - t:.6f}", flush=True)
    db.close()
    """
)


def _spawn_migration(v1: V1Store) -> subprocess.Popen[str]:
    env = {**os.environ, "AZ_TEST_KEY": v1.key.hex()}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(v1.root / "memory.db"), v1.store_id],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


@pytest.mark.crash
def test_kill_during_migration_leaves_a_whole_version(tmp_path: Path) -> None:
    """v1 -> v2 -> v3 are one transaction each: a kill leaves one of them, never a mix."""
    pristine = make_v1_store(tmp_path / "pristine", 6_000)

    def copy(name: str) -> V1Store:
        root = tmp_path / name
        shutil.copytree(pristine.root, root)
        return V1Store(root, pristine.key, pristine.store_id, *_rest(pristine))

    # Calibrate: how long does the migration take here, start to commit?
    cal = copy("calibrate")
    child = _spawn_migration(cal)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0, out
    seconds = float(out.split()[-1])
    rng = random.Random(20261122)
    outcomes: list[tuple[float, int]] = []
    for trial in range(8):
        v1 = copy(f"trial{trial}")
        child = _spawn_migration(v1)
        # Uniform over the migration's span and a little past it (some land after commit).
        delay = rng.uniform(0.0, seconds * 1.2)
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        version = user_version(v1)
        assert version in range(1, SCHEMA_VERSION + 1)
        outcomes.append((delay, version))
        with SqliteMemoryStore.open(v1.root, passphrase=PASSPHRASE, config=FAST) as s:
            assert_v2_intact(s, v1)
    print(f"migration {seconds * 1000:.1f} ms; (kill delay s, version found): {outcomes}")


def _rest(v: V1Store) -> tuple[dict[int, bytes], dict[int, str], int]:
    return v.vectors, v.ids, v.max_seq


class StaleVersionRead:
    """Fault injection: the database as a process sees it that read ``user_version``
    before another process migrated the store (its first read says 0)."""

    def __init__(self, db: Any) -> None:
        self._db = db
        self.path = db.path
        self.stale_reads = 0

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        if sql == "PRAGMA user_version" and not self.stale_reads:
            self.stale_reads += 1
            return [(0,)]
        rows: list[Any] = self._db.query(sql, params)
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def test_a_step_another_process_ran_meanwhile_is_not_run_again(tmp_path: Path) -> None:
    from agentzero_store.memory.sqlite.schema import migrate

    with SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST) as s:
        s.append(MemoryEntry(content="kept"))
        late = StaleVersionRead(s.database)
        migrate(late, s.store_id)  # type: ignore[arg-type]  # v1 again would CREATE TABLE memory
        assert late.stale_reads == 1
        assert int(s.database.query("PRAGMA user_version")[0][0]) == SCHEMA_VERSION
        assert [e.content for e in s.recent(5)] == ["kept"]
