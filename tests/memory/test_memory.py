"""The memory store: round trips, scope, expiry, deletes, recall paths and encryption at rest."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import (
    DimensionMismatchError,
    InvalidArgumentError,
    MemoryEntry,
    NoEmbedderError,
    SchemaVersionError,
    SqliteMemoryStore,
    StoreClosedError,
)
from agentzero_store.base.ranking import rrf_fuse

from ..conftest import FAST, PASSPHRASE, rand_vectors, scan_for, text_needles


class Clock:
    """A settable clock (injected into the store)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_round_trip_all_fields(store: SqliteMemoryStore) -> None:
    exp = datetime.now(UTC) + timedelta(days=3)
    e = MemoryEntry(
        content="Remember: the launch is on Tuesday",
        role="assistant",
        conversation_id="c1",
        org_id="o1",
        agent_id="a1",
        expires_at=exp,
        kind="self_noted",
        source="tool",
        metadata={"tags": ["launch"], "n": 1},
    )
    eid = store.append_with_embedding(e, rand_vectors(1)[0])
    got = store.get(eid)
    assert got is not None
    assert got.id == eid and got.created_at is not None
    assert got.with_(id=None, created_at=None, embedding_model=None) == e
    assert abs((got.expires_at - exp).total_seconds()) < 1e-5  # type: ignore[operator]


def test_entries_survive_reopen(data_dir: Path) -> None:
    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    ids = s.append_many([MemoryEntry(content=f"note {i}") for i in range(50)])
    s.close()
    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    assert [s.get(i).content for i in ids] == [f"note {i}" for i in range(50)]  # type: ignore[union-attr]
    s.close()
    with pytest.raises(StoreClosedError):
        s.recent()


def test_invalid_entries_are_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        MemoryEntry(content="  ")
    with pytest.raises(InvalidArgumentError):
        MemoryEntry(content="x", kind="bogus")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="timezone"):
        MemoryEntry(content="x", expires_at=datetime(2030, 1, 1))
    with pytest.raises(InvalidArgumentError):
        MemoryEntry(content="x", metadata={"f": object()})


def test_append_many_is_all_or_nothing(store: SqliteMemoryStore) -> None:
    vecs = rand_vectors(3)
    bad = [vecs[0], vecs[1], np.zeros(10, dtype=np.float32)]
    with pytest.raises(DimensionMismatchError):
        store.append_many([MemoryEntry(content=f"e{i}") for i in range(3)], vectors=bad)
    assert store.count() == 0


def test_dimension_is_fixed_by_first_vector(store: SqliteMemoryStore) -> None:
    store.append_with_embedding(MemoryEntry(content="a"), rand_vectors(1)[0])
    with pytest.raises(DimensionMismatchError):
        store.append_with_embedding(MemoryEntry(content="b"), rand_vectors(1, dim=128)[0])
    with pytest.raises(DimensionMismatchError):
        store.semantic_recall(np.ones(383), 3)
    with pytest.raises(DimensionMismatchError):
        store.semantic_recall(np.full(384, np.nan), 3)


def test_text_recall_without_embedder_is_a_typed_error(store: SqliteMemoryStore) -> None:
    store.append(MemoryEntry(content="keyword only works"))
    with pytest.raises(NoEmbedderError) as info:
        store.recall("anything", mode="semantic")
    assert "embedder" in info.value.hint
    assert store.recall("keyword", mode="keyword")[0].entry.content == "keyword only works"


def test_semantic_recall_is_exact_and_scoped(store: SqliteMemoryStore) -> None:
    vecs = rand_vectors(60)
    ids = [
        store.append_with_embedding(
            MemoryEntry(content=f"m{i}", org_id=f"o{i % 3}", agent_id=f"a{i % 2}"), vecs[i]
        )
        for i in range(60)
    ]
    hits = store.semantic_recall(vecs[7], 5, org_id="o1")
    assert hits[0].id == ids[7] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(h.entry.org_id == "o1" for h in hits)
    in_scope = [i for i in range(60) if i % 3 == 1]
    expected = sorted(in_scope, key=lambda i: -float(vecs[i] @ vecs[7]))[:5]
    assert [h.id for h in hits] == [ids[i] for i in expected]
    assert [h.ranks["semantic"] for h in hits] == [1, 2, 3, 4, 5]


def test_keyword_recall_is_bm25(store: SqliteMemoryStore) -> None:
    store.append(MemoryEntry(content="the garden has roses"))
    store.append(MemoryEntry(content="roses roses roses everywhere in the rose garden"))
    store.append(MemoryEntry(content="tulips and daffodils"))
    store.append(MemoryEntry(content="nothing relevant at all"))
    hits = store.keyword_recall("Roses?", 10)
    assert [h.entry.content for h in hits][:2] == [
        "roses roses roses everywhere in the rose garden",
        "the garden has roses",
    ]
    assert hits[0].score > hits[1].score > 0
    # FTS5 syntax in user text is quoted, never interpreted.
    assert store.keyword_recall('roses" OR "tulips', 10)
    assert store.keyword_recall("NEAR(", 10) == []
    assert store.keyword_recall("!!!", 10) == []


def test_rrf_fusion_hand_checked() -> None:
    # a: sem 1, kw 3 -> 1/61 + 1/63 = 0.032266; b: sem 2 -> 1/62 = 0.016129
    # c: kw 1, sem 3 -> 1/61 + 1/63 (ties a; a's best rank 1 == c's best rank 1; a first seen)
    # d: kw 2 -> 1/62 ; e: only sem 4 -> 1/64
    fused = rrf_fuse({"semantic": ["a", "b", "c", "e"], "keyword": ["c", "d", "a"]}, k=60, limit=10)
    assert [f.key for f in fused] == ["a", "c", "b", "d", "e"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 63)
    assert fused[2].score == pytest.approx(1 / 62)
    assert fused[0].ranks == {"semantic": 1, "keyword": 3}
    dedup = rrf_fuse({"s": ["a", "b", "c"]}, limit=10, fingerprint=lambda k: k in "ab")
    assert [f.key for f in dedup] == ["a", "c"]


def test_hybrid_recall_fuses_and_deduplicates(store: SqliteMemoryStore) -> None:
    v = rand_vectors(5)
    # x is the semantic winner; y the keyword winner; z is a near-duplicate of y's text.
    x = store.append_with_embedding(MemoryEntry(content="the espresso machine broke"), v[0])
    y = store.append_with_embedding(MemoryEntry(content="Invoice invoice for the printer"), v[1])
    store.append_with_embedding(MemoryEntry(content="invoice  INVOICE for the printer"), v[2])
    store.append_with_embedding(MemoryEntry(content="unrelated"), v[3])
    q = v[0] * 0.9 + v[1] * 0.3
    hits = store.hybrid_recall("invoice", q, 5)
    ids = [h.id for h in hits]
    assert ids[:2] in ([x, y], [y, x])
    assert len({h.entry.fingerprint() for h in hits}) == len(hits)  # deduplicated
    assert len(hits) == 3
    top = {h.id: h for h in hits}
    assert top[y].ranks["keyword"] == 1 and "semantic" in top[y].ranks
    assert top[x].ranks == {"semantic": 1}


def test_expiry_hides_rows_and_gc_removes_them(data_dir: Path) -> None:
    clock = Clock()
    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, clock=clock)
    v = rand_vectors(2)
    soon = s.append_with_embedding(
        MemoryEntry(content="ephemeral pancake", expires_at=clock.now + timedelta(minutes=5)), v[0]
    )
    keep = s.append_with_embedding(MemoryEntry(content="lasting pancake"), v[1])
    assert {h.id for h in s.keyword_recall("pancake", 5)} == {soon, keep}
    clock.now += timedelta(minutes=5)
    assert s.get(soon) is None
    for hits in (
        s.keyword_recall("pancake", 5),
        s.semantic_recall(v[0], 5),
        s.hybrid_recall("pancake", v[0], 5),
    ):
        assert [h.id for h in hits] == [keep]
    assert [e.id for e in s.recent()] == [keep]
    assert s.gc_expired() == 1 and s.gc_expired() == 0
    s.close()


def test_delete_and_forget(store: SqliteMemoryStore) -> None:
    v = rand_vectors(6)
    ids = [
        store.append_with_embedding(
            MemoryEntry(content=f"walrus fact {i}", conversation_id=f"c{i % 2}", org_id="o"), v[i]
        )
        for i in range(6)
    ]
    assert store.delete(ids[0]) and not store.delete(ids[0])
    assert store.get(ids[0]) is None
    assert store.forget(conversation_id="c1") == 3
    left = {h.id for h in store.keyword_recall("walrus", 10)}
    assert left == {ids[2], ids[4]}
    assert {h.id for h in store.semantic_recall(v[1], 10)} == left
    with pytest.raises(InvalidArgumentError):
        store.forget()
    seq_ops = [c.op for c in store.changes_since(0)]
    assert seq_ops.count("delete") == 4 and seq_ops.count("insert") == 6


def test_memory_db_is_not_plain_sqlite(store: SqliteMemoryStore, data_dir: Path) -> None:
    store.append(MemoryEntry(content="hello"))
    with pytest.raises(sqlite3.DatabaseError, match="not a database"):
        sqlite3.connect(data_dir / "memory.db").execute("SELECT * FROM sqlite_master").fetchall()


def test_page_cache_is_the_configured_size(data_dir: Path) -> None:
    """Recall at 100k memories re-decrypted its index pages on every query with SQLite's
    2 MiB default (BENCHMARKS.md run 11): the store's connection asks for cache_mib."""
    from dataclasses import replace

    for mib in (64, 3):
        with SqliteMemoryStore.open(
            data_dir, passphrase=PASSPHRASE, config=replace(FAST, cache_mib=mib)
        ) as s:
            assert s.database.query("PRAGMA cache_size") == [(-1024 * mib,)]


def test_no_plaintext_under_data_dir(data_dir: Path) -> None:
    texts = [f"zanzibar-canary-{i} the quokka sings at dawn" for i in range(40)]
    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    vecs = rand_vectors(40)
    for t, v in zip(texts, vecs, strict=True):
        s.append_with_embedding(MemoryEntry(content=t, metadata={"note": t}), v)
    s.delete(s.recent(1)[0].id or "")
    # Scan while the store is open (WAL and SHM present) and again after close.
    assert (data_dir / "memory.db-wal").exists()
    needles = [n for t in texts for n in text_needles(t)] + [b"quokka", b"zanzibar"]
    needles += [v.tobytes()[:64] for v in vecs]
    assert scan_for(data_dir, needles) == []
    s.close()
    assert scan_for(data_dir, needles) == []


def test_future_schema_is_refused(data_dir: Path) -> None:
    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    s._db.conn.execute("PRAGMA user_version = 99")
    s.close()
    with pytest.raises(SchemaVersionError):
        SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)


def test_local_embedder_recall(data_dir: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    s = SqliteMemoryStore.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, embedder=local_embedder
    )
    s.append_many(
        [
            MemoryEntry(content=t)
            for t in (
                "My sister's birthday is on the 4th of March",
                "The car needs new winter tyres",
                "I prefer oat milk in my coffee",
            )
        ]
    )
    assert s.recall("what do I put in coffee?", 1)[0].entry.content.startswith("I prefer oat")
    hits = s.recall("when is the birthday", 2, mode="hybrid")
    assert hits[0].entry.content.startswith("My sister")
    assert s.embedding_info() == ("sentence-transformers/all-MiniLM-L6-v2", 384)
    s.close()


def test_hybrid_recall_survives_a_row_deleted_between_its_queries(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an index, hybrid recall reads exact semantic candidates, then their
    fingerprints, in two statements: another writer may delete a candidate in between.
    The row is left out (as a row deleted before the read is); recall must not raise."""
    from agentzero_store.memory.sqlite import recall

    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, hnsw=False)
    try:
        v = rand_vectors(3)
        doomed = s.append_with_embedding(MemoryEntry(content="a whistle at dawn"), v[0])
        kept = s.append_with_embedding(MemoryEntry(content="the kettle is blue"), v[1])
        exact = recall._semantic_sql

        def deleting_after_read(*args: object, **kwargs: object) -> list[tuple[int, float]]:
            """Fault injection: the candidates are read, then another writer deletes one."""
            out = exact(*args, **kwargs)  # type: ignore[arg-type]
            s.delete(doomed)
            return out

        monkeypatch.setattr(recall, "_semantic_sql", deleting_after_read)
        hits = s.hybrid_recall("kettle", v[0], 5)
        assert [h.id for h in hits] == [kept]
    finally:
        s.close()
