"""DocumentStore end to end: ingest, versions, chunks, sidecar recovery, plaintext at rest."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import InvalidArgumentError, NoEmbedderError, WrongKeyError
from agentzero_store.embed.local import LocalEmbedder
from rag import DocInput, DocumentStore

from ..conftest import FAST, scan_for, text_needles, tree_digest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "docs"
KEY = bytes(range(32))


def open_store(data_dir: Path, **kw: object) -> DocumentStore:
    kw.setdefault("config", FAST)
    return DocumentStore.open(data_dir, key=KEY, **kw)  # type: ignore[arg-type]


def long_doc(n_words: int, marker: str, at: int) -> str:
    words = [f"filler{i % 97}" for i in range(n_words)]
    words[at] = marker
    return " ".join(words)


def test_ingest_query_versions_and_delete(data_dir: Path) -> None:
    with open_store(data_dir) as s:
        r = s.ingest("fruit", "apples are crunchy and red", title="Fruit", metadata={"n": 1})
        assert r.changed and r.seq == 1 and r.chunks == 1
        assert not s.ingest(
            "fruit", "apples are crunchy and red", title="Fruit", metadata={"n": 1}
        ).changed  # identical: a no-op
        assert s.log.seq == 1
        hits = s.query("crunchy apple", 5)
        assert [h.id for h in hits] == ["fruit"] and hits[0].metadata == {"n": 1}
        assert hits[0].title == "Fruit" and hits[0].text == "apples are crunchy and red"
        s.ingest("fruit", "bananas are soft and yellow", title="Fruit")  # a new version
        assert s.query("crunchy apple", 5) == []  # the old version never comes back
        assert [h.id for h in s.query("yellow", 5)] == ["fruit"]
        assert s.get("fruit").text.startswith("bananas")  # type: ignore[union-attr]
        assert s.delete("fruit") and not s.delete("fruit")
        assert s.query("yellow", 5) == [] and s.get("fruit") is None and len(s) == 0
        with pytest.raises(InvalidArgumentError):
            s.ingest("empty", "   ")
        with pytest.raises(InvalidArgumentError):
            s.query("x", 5, mode="fuzzy")  # type: ignore[arg-type]
        with pytest.raises(NoEmbedderError):
            s.query("x", 5, mode="semantic")


def test_long_documents_report_the_best_chunk(data_dir: Path) -> None:
    text = long_doc(1000, "zeppelin", 900)
    with open_store(data_dir) as s:
        r = s.ingest("long", text)
        assert r.chunks >= 5
        (hit,) = s.query("zeppelin", 3)
        assert "zeppelin" in hit.text and text[hit.start : hit.end] == hit.text
        assert hit.chunk >= r.chunks - 2 and hit.start > len(text) // 2  # overlap: 1 of 2


def test_reopen_loads_checkpoint_and_replays_the_tail(data_dir: Path) -> None:
    with open_store(data_dir) as s:
        s.ingest_many([DocInput(f"d{i}", f"document {i} about topic{i % 7}") for i in range(250)])
    with open_store(data_dir) as s:
        # Another writer appends behind the sidecar's back: the log is the truth.
        s.log.upsert("late", "a late document about zebras")
    s = open_store(data_dir)
    assert [h.id for h in s.query("zebras", 3)] == ["late"]
    assert len(s.query("topic3", 100)) == 36
    st = {x.kind: x for x in s.index_status()}["bm25"]
    assert st.applied_seq == st.source_seq == 251
    s.close()


@pytest.mark.parametrize("terms", ["blinded", "sealed"])
@pytest.mark.parametrize("damage", ["delete_dir", "truncate", "flip", "manifest_garbage"])
def test_damaged_bm25_sidecar_is_rebuilt(data_dir: Path, damage: str, terms: str) -> None:
    cfg = replace(FAST, bm25_terms=terms)
    with open_store(data_dir, config=cfg) as s:
        s.ingest_dir(FIXTURES)
        expected = [h.id for h in s.query("boiler pressure", 5)]
    side = data_dir / "rag" / "index.jsonl.tantivy"
    pattern = "*.tree/*.term" if terms == "blinded" else "*.sealed"
    files = sorted(side.glob(pattern))
    assert files
    if damage == "delete_dir":
        shutil.rmtree(side)
    elif damage == "truncate":
        files[0].write_bytes(files[0].read_bytes()[:10])
    elif damage == "flip":
        raw = bytearray(files[0].read_bytes())
        raw[len(raw) // 2] ^= 0x40
        files[0].write_bytes(bytes(raw))
    else:
        (side / "manifest.json").write_text('{"format": "agentzero-sidecar/1"')
    with open_store(data_dir, config=cfg) as s:
        assert [h.id for h in s.query("boiler pressure", 5)] == expected
        assert {x.kind: x for x in s.index_status()}["bm25"].entries == 4
    with open_store(data_dir, config=cfg) as s:  # the rebuilt checkpoint is valid again
        assert [h.id for h in s.query("boiler pressure", 5)] == expected


def test_wrong_key_changes_no_byte(data_dir: Path) -> None:
    with open_store(data_dir) as s:
        s.ingest_dir(FIXTURES)
    before = tree_digest(data_dir)
    with pytest.raises(WrongKeyError):
        DocumentStore.open(data_dir, key=os.urandom(32), config=FAST)
    assert tree_digest(data_dir) == before


def test_semantic_and_hybrid_with_the_local_model(
    data_dir: Path, local_embedder: LocalEmbedder
) -> None:
    with open_store(data_dir, embedder=local_embedder) as s:
        report = s.ingest_dir(FIXTURES)
        assert (report.added, report.total, report.skipped, report.failed) == (4, 4, [], [])
        assert s.query("my heating has lost pressure", 1, "semantic")[0].id == "boiler-manual.md"
        assert s.query("hot spring inn in Japan", 1, "semantic")[0].id == "travel/kyoto.md"
        hyb = s.query("feeding the starter", 2, "hybrid")
        assert hyb[0].id == "sourdough.txt" and set(hyb[0].ranks) == {"keyword", "semantic"}
        assert s.vector_coverage() == (4, 4)
    # The vectors live in the sealed log: losing the HNSW sidecar costs no re-embedding.
    shutil.rmtree(data_dir / "rag" / "index.jsonl.hnsw")
    with open_store(data_dir, embedder=local_embedder) as s:
        assert s.query("hot spring inn in Japan", 1, "semantic")[0].id == "travel/kyoto.md"


def test_no_document_text_or_vector_on_disk(data_dir: Path, local_embedder: LocalEmbedder) -> None:
    texts = {p.name: p.read_text() for p in FIXTURES.rglob("*") if p.is_file()}
    with open_store(data_dir, embedder=local_embedder) as s:
        s.ingest_dir(FIXTURES)
        s.ingest("canary", "the quizzical wombat juggles marmalade", title="Secret title here")
        vec = local_embedder.embed(["the quizzical wombat juggles marmalade"])[0]
    needles = [
        b"quizzical",
        b"marmalade",
        b"Secret title",
        vec.tobytes()[:32],
        np.float32(vec[0]).tobytes() + np.float32(vec[1]).tobytes(),
    ]
    for text in texts.values():
        for sentence in text.split(". "):
            if len(sentence) > 30:
                needles += text_needles(sentence.strip()[:40])
    needles += [b"boiler-manual", b"travel/kyoto"]  # ids are file paths: user data too
    assert scan_for(data_dir, needles) == []


def test_catch_up_after_ingest_takes_the_written_records_not_a_disk_reread(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(data_dir) as s:
        s.ingest("old", "an older version of the page")
        reads: list[int] = []
        real = type(s.log)._read_entry

        def counting(log: object, seq: int) -> object:
            reads.append(seq)
            return real(log, seq)  # type: ignore[arg-type]

        monkeypatch.setattr(type(s.log), "_read_entry", counting)
        s.ingest_many([DocInput("a", "write through alpha"), DocInput("old", "a new version")])
        assert set(reads) == {1}  # the live "old" version (change check, created_at) only
        assert s.indexes.chunks.record(3) is None  # held only until the sidecars caught up
        assert [h.id for h in s.query("alpha", 5)] == ["a"]
        assert [h.id for h in s.query("older", 5)] == []


@pytest.mark.parametrize("terms", ["blinded", "sealed"])
def test_large_bm25_index_checkpoints_as_it_grows_and_replays_the_rest(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, terms: str
) -> None:
    import rag.indexes

    monkeypatch.setattr(rag.indexes, "BM25_CHECKPOINT_GROWTH_ABOVE", 0)  # "large" at once
    docs = [DocInput(f"d{i}", f"growth doc {i} word{i % 7}") for i in range(1_000)]
    cfg = replace(FAST, bm25_terms=terms)
    s = open_store(data_dir, config=cfg)
    s.ingest_many(docs[:800])
    assert s.bm25.covered_seq == 800  # the first batch: nothing on disk yet
    s.ingest_many(docs[800:900])  # 100 changes < a quarter of 900 entries: no checkpoint
    assert (s.bm25.covered_seq, s.bm25.pending) == (800, 100)
    s.ingest_many(docs[900:])  # 200 < a quarter of 1,000 entries: still none
    assert (s.bm25.covered_seq, s.bm25.pending) == (800, 200)
    s.log.close()  # as a crash would: no checkpoint on the way out
    s.indexes.close()
    with open_store(data_dir, config=cfg) as again:  # loads it, replays 200 from the log
        assert (again.bm25.covered_seq, again.bm25.applied_seq) == (800, 1_000)
        assert {h.id for h in again.query("word3", 500)} == {
            f"d{i}" for i in range(1_000) if i % 7 == 3
        }
