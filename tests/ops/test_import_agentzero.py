"""`agentzero memory import-agentzero`: AgentZero's memory table, from real plain SQLite and
SQLCipher files built here in both layouts (with and without the embedding column)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlcipher3

from agentzero_store import LocalEmbedder, MemoryEntry, SqliteMemoryStore
from agentzero_store.base.errors import (
    EmbedderMismatchError,
    InvalidArgumentError,
    WrongKeyError,
)
from agentzero_store.ops.import_agentzero import import_agentzero, open_agentzero

from ..conftest import FAST, PASSPHRASE, js, rand_vectors, run_cli, tree_digest

SOURCE_PASS = "agent zero's own pass"
DIM = 384

# (role, content, created_at, conversation_id, org_id, agent_id, expires_at)
ROWS: list[tuple[Any, ...]] = [
    ("user", "I'm allergic to peanuts", "2025-03-01 10:00:00", "c1", "acme", "a1", None),
    ("assistant", "Noted: no peanuts.", "2025-03-01T10:00:05+00:00", "c1", "acme", "a1", None),
    ("user", "My sister lives in Porto", "2025-03-02 09:00:00", "c2", "acme", "a2", None),
    ("user", "the wifi password is on the fridge", "2025-03-03 08:00:00", "c3", "home", "a1",
     "2099-01-01 00:00:00"),
    ("user", "a reminder that already expired", "2025-03-03 08:00:00", "c3", "home", "a1",
     "2025-03-04 00:00:00"),
    ("user", "   ", "2025-03-03 08:00:00", "c3", "home", "a1", None),
    ("user", "ok", "2025-03-05 12:00:00", "c4", None, None, None),
    ("user", "ok", "2025-03-05 12:00:00", "c4", None, None, None),  # an exact copy
    ("user", "a row with a date nobody can read", "the fifth of May", "c4", "acme", "a1", None),
]  # fmt: skip
IMPORTABLE = 6  # all but the expired, the empty and the unreadable row


def build(
    path: Path,
    *,
    passphrase: str | None = None,
    embeddings: Sequence[bytes | None] | None = None,
    sqlcipher3_format: bool = False,
) -> None:
    """AgentZero's memory.db: plain SQLite, or SQLCipher keyed with its passphrase."""
    if passphrase is None:
        conn: Any = sqlite3.connect(path)
    else:
        conn = sqlcipher3.connect(str(path))
        conn.execute(f"PRAGMA key = '{passphrase.replace(chr(39), chr(39) * 2)}'")
        if sqlcipher3_format:  # the defaults of SQLCipher 3 (older AgentZero builds)
            conn.execute("PRAGMA cipher_compatibility = 3")
    cols = "role, content, created_at, conversation_id, org_id, agent_id, expires_at"
    conn.execute(
        "CREATE TABLE memory (id INTEGER PRIMARY KEY AUTOINCREMENT, role TEXT NOT NULL,"
        " content TEXT NOT NULL, created_at TEXT NOT NULL, conversation_id TEXT, org_id TEXT,"
        " agent_id TEXT, expires_at TEXT" + (", embedding BLOB)" if embeddings else ")")
    )
    if embeddings:
        conn.executemany(
            f"INSERT INTO memory ({cols}, embedding) VALUES (?,?,?,?,?,?,?,?)",
            [(*r, e) for r, e in zip(ROWS, embeddings, strict=True)],
        )
    else:
        conn.executemany(f"INSERT INTO memory ({cols}) VALUES (?,?,?,?,?,?,?)", ROWS)
    conn.commit()
    conn.close()


def source_vectors() -> tuple[np.ndarray, list[bytes | None]]:
    """One 384-d float32 vector per row; row 1 has none, row 2 one of the wrong length."""
    vecs = rand_vectors(len(ROWS), DIM, seed=3)
    blobs: list[bytes | None] = [v.astype("<f4").tobytes() for v in vecs]
    blobs[1] = None
    blobs[2] = rand_vectors(1, 768, seed=4)[0].astype("<f4").tobytes()
    return vecs, blobs


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class HashEmbedder:
    """A small deterministic embedder that is not AgentZero's model."""

    model_id = "test/hash-embedder"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int(hashlib.sha256(w.encode()).hexdigest(), 16) % self.dimension] += 1
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-6)
        return out


def test_minilm_vectors_are_kept_the_rest_embedded_and_a_rerun_imports_nothing(
    tmp_path: Path, data_dir: Path, local_embedder: LocalEmbedder
) -> None:
    src = tmp_path / "memory.db"
    vecs, blobs = source_vectors()
    build(src, embeddings=blobs)
    before = digest(src)
    with (
        SqliteMemoryStore.open(
            data_dir, passphrase=PASSPHRASE, config=FAST, embedder=local_embedder
        ) as store,
        open_agentzero(src) as source,
    ):
        assert not source.encrypted and source.has_embeddings
        r = import_agentzero(store, source, batch=4)
        assert (r.rows, r.imported, r.already_imported) == (len(ROWS), IMPORTABLE, 0)
        assert r.skipped == {"expired": 1, "empty": 1} and r.invalid == 1
        assert r.invalid_rows == [9]  # the rowid of the unreadable date
        # Rows 0, 3, 6, 7 carry a usable MiniLM vector; row 1 none, row 2 a 768-d one.
        assert (r.embeddings_kept, r.embedded) == (4, 2)
        # A kept vector is the source's: it is its own nearest neighbour.
        hit = store.semantic_recall(vecs[0], 1)[0]
        assert hit.entry.content == "I'm allergic to peanuts" and hit.score > 0.999
        assert (hit.entry.org_id, hit.entry.agent_id, hit.entry.conversation_id) == (
            "acme",
            "a1",
            "c1",
        )
        assert hit.entry.created_at == datetime(2025, 3, 1, 10, tzinfo=UTC)
        assert hit.entry.metadata == {"imported_from": "agentzero"}
        # A re-embedded row is found by meaning, with the store's own model.
        top = store.recall("where does my sister live?", 1, mode="semantic")[0]
        assert top.entry.content == "My sister lives in Porto"
        wifi = store.recent(10, org_id="home")
        assert [e.content for e in wifi] == ["the wifi password is on the fridge"]
        assert wifi[0].expires_at == datetime(2099, 1, 1, tzinfo=UTC)
        oks = store.recent(10, conversation_id="c4")
        assert [e.content for e in oks] == ["ok", "ok"]  # copies stay copies
        assert {e.org_id for e in oks} == {"default"}
        count = store.count()
        # Idempotent: everything is already there, nothing is embedded again.
        again = import_agentzero(store, source)
        assert (again.imported, again.already_imported, again.embedded) == (0, IMPORTABLE, 0)
        assert store.count() == count == IMPORTABLE
    assert digest(src) == before  # the source is only read


@pytest.mark.parametrize("with_embeddings", [True, False])
def test_sqlcipher_source_with_another_embedder_is_embedded_again(
    tmp_path: Path, data_dir: Path, with_embeddings: bool
) -> None:
    src = tmp_path / "memory.db"
    build(src, passphrase=SOURCE_PASS, embeddings=source_vectors()[1] if with_embeddings else None)
    with (
        SqliteMemoryStore.open(
            data_dir, passphrase=PASSPHRASE, config=FAST, embedder=HashEmbedder()
        ) as store,
        open_agentzero(src, SOURCE_PASS) as source,
    ):
        assert source.encrypted and source.has_embeddings is with_embeddings
        r = import_agentzero(store, source)
        # Not AgentZero's model: no source vector is taken over, whatever its length.
        assert (r.imported, r.embeddings_kept, r.embedded) == (IMPORTABLE, 0, IMPORTABLE)
        assert store.embedding_info() == ("test/hash-embedder", 8)
        hits = store.keyword_recall("allergic", 5)
        assert [h.entry.content for h in hits] == ["I'm allergic to peanuts"]
        assert import_agentzero(store, source).imported == 0


def test_a_store_built_with_another_model_refuses_before_writing(
    tmp_path: Path, data_dir: Path
) -> None:
    src = tmp_path / "memory.db"
    build(src, embeddings=source_vectors()[1])
    with SqliteMemoryStore.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, embedder=HashEmbedder()
    ) as store:
        store.append(MemoryEntry(content="first"))  # the store's vectors: HashEmbedder's
    with (
        SqliteMemoryStore.open(
            data_dir, passphrase=PASSPHRASE, config=FAST, embedder=LocalEmbedder()
        ) as store,
        open_agentzero(src) as source,
    ):
        with pytest.raises(EmbedderMismatchError):
            import_agentzero(store, source)
        assert store.count() == 1


def test_wrong_or_missing_source_passphrase_is_a_clear_error(tmp_path: Path) -> None:
    src = tmp_path / "memory.db"
    build(src, passphrase=SOURCE_PASS)
    before = digest(src)
    with pytest.raises(WrongKeyError, match="does not open") as info:
        open_agentzero(src, "not the passphrase")
    assert "--source-passphrase" in info.value.hint
    with pytest.raises(WrongKeyError, match="no source passphrase was given"):
        open_agentzero(src)
    assert digest(src) == before
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    with pytest.raises(InvalidArgumentError, match="not an AgentZero memory database"):
        open_agentzero(other)


def test_a_sqlcipher_3_source_opens_too(tmp_path: Path) -> None:
    src = tmp_path / "memory.db"
    build(src, passphrase=SOURCE_PASS, sqlcipher3_format=True)
    with open_agentzero(src, SOURCE_PASS) as source:
        assert source.encrypted and source.count() == len(ROWS)
    with pytest.raises(WrongKeyError):
        open_agentzero(src, "not it")


def test_import_through_the_real_cli(tmp_path: Path, data_dir: Path) -> None:
    src = tmp_path / "agentzero" / "memory.db"
    src.parent.mkdir()
    vecs = rand_vectors(len(ROWS), DIM, seed=5)
    build(src, passphrase=SOURCE_PASS, embeddings=[v.tobytes() for v in vecs])
    run_cli(data_dir, "init")
    # A wrong source passphrase: exit 3 (a credential error), the store untouched.
    before = tree_digest(data_dir)
    p = run_cli(
        data_dir,
        *("memory", "import-agentzero", str(src), "--source-passphrase", "nope", "--json"),
        check=False,
    )
    assert p.returncode == 3 and js(p)["error"] == "wrong_key"
    assert tree_digest(data_dir) == before
    # The store's default embedder is the local MiniLM: every source vector is kept, so
    # the model is never even loaded.
    env = {"AGENTZERO_SOURCE_PASSPHRASE": SOURCE_PASS}
    r = js(run_cli(data_dir, "memory", "import-agentzero", str(src), "--json", env=env))
    assert (r["imported"], r["embeddings_kept"], r["embedded"]) == (IMPORTABLE, IMPORTABLE, 0)
    assert r["skipped"] == {"expired": 1, "empty": 1} and r["invalid"] == 1
    human = run_cli(data_dir, "memory", "import-agentzero", str(src), env=env).stdout
    assert f"imported 0 of {len(ROWS)} rows" in human and f"{IMPORTABLE} were already" in human
    hits = js(
        run_cli(
            data_dir,
            *("memory", "search", "peanuts", "--mode", "keyword", "--org", "acme", "--json"),
        )
    )
    assert {h["content"] for h in hits} == {"I'm allergic to peanuts", "Noted: no peanuts."}
    # Plain SQLite without the embedding column, into a text-only store.
    plain = tmp_path / "plain.db"
    build(plain)
    other = tmp_path / "data2"
    run_cli(other, "init")
    r = js(
        run_cli(
            other,
            *("memory", "import-agentzero", str(plain), "--embedder", "none", "--json"),
        )
    )
    assert (r["imported"], r["embeddings_kept"], r["embedded"]) == (IMPORTABLE, 0, 0)
