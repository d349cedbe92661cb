"""Benchmark inputs: clustered vectors, synthetic short texts, the SciFact corpus, nDCG@10.

Vectors are clustered and normalised: real embeddings are clustered, and isotropic
Gaussians give misleading HNSW recall (about 0.35 at ef=50 with hnswlib 0.8).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

DIM = 384
ORGS = 10  # memories are spread over 10 orgs: a scoped query sees 10% of the rows
CONVERSATION = 100  # consecutive memories per conversation


def clustered(n: int, seed: int, clusters: int = 1_000) -> npt.NDArray[np.float32]:
    """``n`` unit vectors around ``clusters`` random centroids (same centroids every seed)."""
    cent = np.random.default_rng(0).normal(size=(clusters, DIM)).astype(np.float32)
    rng = np.random.default_rng(seed)
    x = cent[rng.integers(0, clusters, n)] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def vocabulary(size: int) -> list[str]:
    """``size`` distinct pronounceable pseudo-words (deterministic)."""
    onsets = ["b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "st",
              "tr", "pl", "gr", "sh"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
    sylls = [o + v for o in onsets for v in vowels]  # 160 syllables
    words: list[str] = []
    for i in range(size):
        w, j = "", i
        while True:
            w += sylls[j % len(sylls)]
            j //= len(sylls)
            if j == 0:
                break
        words.append(w + "n" if len(w) < 3 else w)
    return words


def texts(n: int, words_per: int, vocab: Sequence[str], seed: int) -> list[str]:
    """``n`` texts of ``words_per`` words drawn Zipf-like from ``vocab``."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    p = 1.0 / ranks
    p /= p.sum()
    idx = rng.choice(len(vocab), size=(n, words_per), p=p)
    return [" ".join(vocab[j] for j in row) for row in idx]


def org_of(i: int) -> str:
    """The org of the ``i``-th memory (0-based)."""
    return f"org{i // CONVERSATION % ORGS}"


def conversation_of(i: int) -> str:
    """The conversation of the ``i``-th memory (0-based)."""
    return f"c{i // CONVERSATION}"


# ----------------------------------------------------------------------------- SciFact
@dataclass(frozen=True)
class Beir:
    """A BEIR-layout dataset: corpus, test queries, graded relevance judgements."""

    corpus: list[tuple[str, str, str]]  # (id, title, text)
    queries: list[tuple[str, str]]  # (id, text), only those with judgements
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance


SCIFACT_ORIGIN = (
    "BEIR SciFact, test split (corpus.jsonl, queries_test.jsonl, qrels/test.tsv; Wadden et "
    "al. 2020, CC BY-NC 2.0), read in place and never shipped with the repo (see "
    "docs/design.md, Evaluation data)"
)


def scifact_present(path: Path) -> bool:
    """True if ``path`` holds the BEIR files this harness reads."""
    return all((path / f).is_file()
               for f in ("corpus.jsonl", "queries_test.jsonl", "qrels/test.tsv"))


def load_beir(path: Path) -> Beir:
    """Read ``corpus.jsonl``, ``queries_test.jsonl`` and ``qrels/test.tsv`` (read-only)."""
    corpus = []
    with (path / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            corpus.append((str(d["_id"]), d.get("title") or "", d.get("text") or ""))
    qrels: dict[str, dict[str, int]] = {}
    with (path / "qrels" / "test.tsv").open(encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t")
        next(rows)  # header: query-id, corpus-id, score
        for qid, did, score in rows:
            qrels.setdefault(qid, {})[did] = int(score)
    queries = []
    with (path / "queries_test.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if str(d["_id"]) in qrels:
                queries.append((str(d["_id"]), d["text"]))
    return Beir(corpus, queries, qrels)


def subset(data: Beir, n_queries: int, extra_docs: int) -> Beir:
    """A small slice for --quick: the first queries, their relevant docs and a few others."""
    queries = data.queries[:n_queries]
    want = {d for qid, _ in queries for d in data.qrels[qid]}
    corpus = [c for c in data.corpus if c[0] in want]
    corpus += [c for c in data.corpus if c[0] not in want][:extra_docs]
    return Beir(corpus, queries, {q: data.qrels[q] for q, _ in queries})


def ndcg_at_10(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> float:
    """Mean nDCG@10 over the judged queries (trec_eval gain: the relevance grade)."""
    scores = []
    for qid, rels in qrels.items():
        ranked = list(dict.fromkeys(run.get(qid, ())))[:10]
        dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked))
        ideal = sorted(rels.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        scores.append(dcg / idcg if idcg > 0 else 0.0)
    return float(np.mean(scores)) if scores else 0.0
