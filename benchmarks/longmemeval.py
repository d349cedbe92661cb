"""LongMemEval_S turn recall@10 of ``AgentMemory.recall``, per ranking mode and question
type, beside raw-library anchors measured in the same run.

    .venv/bin/python benchmarks/longmemeval.py                        # every mode, anchors
    .venv/bin/python benchmarks/longmemeval.py --questions 40         # a stratified subset
    .venv/bin/python benchmarks/longmemeval.py --modes auto --ablation --json
    .venv/bin/python benchmarks/longmemeval.py --quick                # 12 questions

The data is the development half of LongMemEval_S (``../shared/data/longmemeval-dev``),
read in place and never copied into the repo; the script says so and exits 0 when it is
absent.

Protocol (the data README's): per question a scope of its own, in a fresh store (random
key); every non-empty turn of its haystack becomes one memory,
``add_turns(<session id>, [Turn(role, content, created_at=<session date + j s>)])`` for
the ``j``-th turn of the session, one call per session; the store's clock reads the
question's date; the question is ``recall(question, k=10, mode=M)`` in that scope.
Scores, overall and per question type: turn recall@10 (the share of the evidence turns,
``has_answer``, among the 10 hits), session recall@10 (the share of the answer sessions
with a turn among them), recall_all@10 (1 if every evidence turn is). Abstention
questions (``_abs``) have no evidence and are left out.

Anchors, measured here over the same turns and vectors (no store code): MiniLM exact
cosine (numpy), Tantivy BM25 (tantivy-py, ``en_stem``, an index per question), and RRF
k=60 of the two (each to depth 100). ``--windows`` adds the cosine anchor with several
vectors per long turn (overlapping windows of the model's 256 word pieces, the best
window scores the turn) and its RRF with BM25: what multi-vector memories would buy.

Latency is of ``recall`` alone: the query embedding is excluded (``QueryVectorCache``).
Turn and question vectors are cached on disk outside the repo (see ``_memeval``); a
re-run loads no model. ``--questions N`` takes the first N of a deterministic stratified
order (each type in proportion, every type represented), and embeds only what they need.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

from _harness import median, pct  # noqa: E402
from _memeval import (  # noqa: E402
    K,
    QueryVectorCache,
    Ranker,
    VectorFile,
    cache_dir,
    cache_dir_checked,
    chosen_modes,
    common_args,
    md_head,
    md_row,
    rankers,
    single_query_embedding,
    stderr_log,
)

from agentzero_store import AgentMemory, LocalEmbedder, Turn  # noqa: E402
from agentzero_store.embed.minilm import LOCAL_MAX_TOKENS, TOKENIZER_FILE, model_dir  # noqa: E402
from agentzero_store.embed.vectors import Vector  # noqa: E402

QUESTIONS_FILE = "questions.jsonl"
SESSIONS_FILE = "sessions.jsonl.gz"
ORIGIN = (
    "the development half of LongMemEval_S (Wu et al., ICLR 2025, MIT) as questions.jsonl "
    "and sessions.jsonl.gz, read in place and never shipped with the repo"
)
DEFAULT_DATA = REPO.parent / "shared" / "data" / "longmemeval-dev"
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"  # "2023/05/30 (Tue) 23:42"
TYPES = (
    "knowledge-update",
    "multi-session",
    "single-session-assistant",
    "single-session-preference",
    "single-session-user",
    "temporal-reasoning",
)
SHORT = {
    "knowledge-update": "ku",
    "multi-session": "multi",
    "single-session-assistant": "ss-asst",
    "single-session-preference": "ss-pref",
    "single-session-user": "ss-user",
    "temporal-reasoning": "temporal",
}
RRF_K = 60
ANCHOR_DEPTH = 100
QUICK_QUESTIONS = 12
# Windows of the model's input: 256 word pieces with [CLS] and [SEP], overlapping by 64.
WINDOW = LOCAL_MAX_TOKENS - 2
STRIDE = WINDOW - 64
ANCHORS = ("raw-cosine", "raw-bm25", "raw-rrf")
WINDOW_ANCHORS = ("raw-cosine-windows", "raw-rrf-windows")
_WORD = re.compile(r"\w+")


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class LmeTurn:
    session: str  # the memory's conversation_id
    role: str
    content: str
    created_at: datetime
    evidence: bool  # has_answer
    slot: int  # the session's place in the haystack (a few haystacks list one twice)


@dataclass(frozen=True)
class Question:
    qid: str
    qtype: str
    text: str
    asked_at: datetime
    answer_sessions: tuple[str, ...]
    turns: tuple[LmeTurn, ...]  # the haystack's non-empty turns, session by session

    def sessions(self) -> list[tuple[str, list[LmeTurn]]]:
        """Turns grouped by haystack session, in order (one ``add_turns`` call each). A
        few haystacks list a session twice (at two dates): each time is its own group."""
        out: list[tuple[str, list[LmeTurn]]] = []
        for t in self.turns:
            if out and out[-1][1][0].slot == t.slot:
                out[-1][1].append(t)
            else:
                out.append((t.session, [t]))
        return out


def parse_date(text: str) -> datetime:
    """``"2023/05/30 (Tue) 23:42"`` as an aware UTC datetime."""
    return datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=UTC)


def load(data_dir: Path) -> list[Question]:
    """Every question but the abstention ones, with its haystack's non-empty turns."""
    raw = [
        json.loads(line)
        for line in (data_dir / QUESTIONS_FILE).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    sessions: dict[str, list[dict[str, Any]]] = {}
    with gzip.open(data_dir / SESSIONS_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)
            sessions[s["session_id"]] = s["turns"]
    out = []
    for q in raw:
        if "_abs" in q["question_id"]:
            continue
        turns = []
        haystack = zip(q["haystack_session_ids"], q["haystack_dates"], strict=True)
        for slot, (sid, date) in enumerate(haystack):
            start = parse_date(date)
            for j, t in enumerate(sessions[sid]):
                if t["content"].strip():
                    turns.append(
                        LmeTurn(
                            sid,
                            t["role"],
                            t["content"],
                            start + timedelta(seconds=j),
                            bool(t.get("has_answer")),
                            slot,
                        )
                    )
        out.append(
            Question(
                q["question_id"],
                q["question_type"],
                q["question"],
                parse_date(q["question_date"]),
                tuple(q["answer_session_ids"]),
                tuple(turns),
            )
        )
    return out


def stratified(questions: Sequence[Question], n: int | None) -> list[Question]:
    """The first ``n`` (all if None) of a deterministic stratified order: within a type by
    question id, types interleaved in proportion to their size, so every prefix holds
    each type in about its share (and the first seven every type)."""
    by_type: dict[str, list[Question]] = {}
    for q in sorted(questions, key=lambda q: q.qid):
        by_type.setdefault(q.qtype, []).append(q)
    keyed = [
        ((i + 0.5) / len(group), qtype, q)
        for qtype, group in by_type.items()
        for i, q in enumerate(group)
    ]
    order = [q for _, _, q in sorted(keyed, key=lambda x: (x[0], x[1]))]
    return order if n is None else order[:n]


# ----------------------------------------------------------------------------- windows
def windows(texts: Sequence[str]) -> list[list[str]]:
    """Per text, the texts of its later windows: overlapping spans of ``WINDOW`` word
    pieces every ``STRIDE`` (the first window is the text itself, which the model cuts to
    its first 256 word pieces). Empty for a text that fits the model."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / TOKENIZER_FILE))
    tok.no_truncation()
    out = []
    for text, enc in zip(
        texts, tok.encode_batch(list(texts), add_special_tokens=False), strict=True
    ):
        offsets = enc.offsets
        spans = []
        start = STRIDE
        while len(offsets) > WINDOW and start < len(offsets) - (WINDOW - STRIDE):
            end = min(start + WINDOW, len(offsets))
            spans.append(text[offsets[start][0] : offsets[end - 1][1]])
            start += STRIDE
        out.append(spans)
    return out


# ----------------------------------------------------------------------------- anchors
def rrf(lists: Iterable[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Plain RRF of ranked index lists, best first (ties by first index)."""
    score: dict[int, float] = {}
    for ranked in lists:
        for rank, i in enumerate(ranked, start=1):
            score[i] = score.get(i, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda i: (-score[i], i))


def bm25_ranking(texts: Sequence[str], question: str, depth: int) -> list[int]:
    """Tantivy BM25 (``en_stem``) over ``texts``, an index in RAM: indices, best first."""
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("key", stored=True)
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    index = tantivy.Index(sb.build())
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    for i, text in enumerate(texts):
        doc = tantivy.Document()
        doc.add_unsigned("key", i)
        doc.add_text("body", text)
        writer.add_document(doc)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    words = " ".join(w.lower() for w in _WORD.findall(question))
    if not words:
        return []
    hits = searcher.search(index.parse_query(words, ["body"]), depth).hits
    return [int(searcher.doc(a)["key"][0]) for _, a in hits]


def cosine_ranking(matrix: Vector, qvec: Vector, depth: int) -> list[int]:
    """Exact cosine (the vectors are normalised): indices, best first (ties by index)."""
    scores = matrix @ qvec
    return [int(i) for i in np.lexsort((np.arange(len(scores)), -scores))[:depth]]


def best_window_ranking(
    matrix: Vector, extra: Sequence[Vector | None], qvec: Vector, depth: int
) -> list[int]:
    """Cosine where a turn scores its best window: its own vector or one of ``extra``."""
    scores = matrix @ qvec
    for i, w in enumerate(extra):
        if w is not None and len(w):
            scores[i] = max(float(scores[i]), float((w @ qvec).max()))
    return [int(i) for i in np.lexsort((np.arange(len(scores)), -scores))[:depth]]


# ----------------------------------------------------------------------------- run
@dataclass
class Score:
    qid: str
    qtype: str
    turn: float
    session: float
    all_: float


@dataclass
class ModeResult:
    mode: str
    turn_recall: float
    session_recall: float
    recall_all: float
    per_type: dict[str, float]  # turn recall@10
    per_type_session: dict[str, float]
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    foreign_hits: int
    by_question: dict[str, float]  # question id -> turn recall@10 (to compare rankings)


@dataclass
class Report:
    data: str
    questions: int
    per_type_n: dict[str, int]
    turns: int
    distinct_texts: int
    evidence_turns: int
    long_turns: int  # longer than the model's window
    query_embedding: dict[str, Any]
    cache_file: str
    cache_misses_while_timed: int
    ingest_seconds: float
    modes: list[ModeResult]
    subset: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(xs: Iterable[float]) -> float:
    got = list(xs)
    return float(np.mean(got)) if got else float("nan")


def _result(name: str, scores: list[Score], lat: list[float] | None, foreign: int) -> ModeResult:
    types = [t for t in TYPES if any(s.qtype == t for s in scores)]
    return ModeResult(
        name,
        _mean(s.turn for s in scores),
        _mean(s.session for s in scores),
        _mean(s.all_ for s in scores),
        {t: _mean(s.turn for s in scores if s.qtype == t) for t in types},
        {t: _mean(s.session for s in scores if s.qtype == t) for t in types},
        median(lat) * 1e3 if lat else None,
        pct(lat, 95) * 1e3 if lat else None,
        foreign,
        {s.qid: s.turn for s in scores},
    )


def score(q: Question, top: set[int]) -> Score:
    """The three scores of ``q`` when ``top`` (indices into its turns) is what came back."""
    wanted = [i for i, t in enumerate(q.turns) if t.evidence]
    found = sum(1 for i in wanted if i in top)
    sessions = {q.turns[i].session for i in top}
    return Score(
        q.qid,
        q.qtype,
        found / len(wanted) if wanted else float("nan"),
        sum(1 for s in q.answer_sessions if s in sessions) / len(q.answer_sessions),
        float(found == len(wanted)),
    )


def run(
    data_dir: Path,
    rankers_: Sequence[Ranker],
    *,
    subset: int | None = None,
    types: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    anchors: bool = True,
    with_windows: bool = False,
    tmp_parent: Path | None = None,
    vector_dir: Path | None = None,
    log: Callable[[str], None] = lambda m: None,
) -> Report:
    """Per question a fresh store of its haystack; every ranker, then the anchors."""
    files = [data_dir / QUESTIONS_FILE, data_dir / SESSIONS_FILE]
    questions = load(data_dir)
    if types:
        questions = [q for q in questions if q.qtype in types]
    if ids:
        questions = [q for q in questions if q.qid in ids]
    questions = stratified(questions, subset)
    questions = [q for q in questions if any(t.evidence for t in q.turns)]
    inner = LocalEmbedder()
    vf = VectorFile.for_data(files, inner.model_id, vector_dir or cache_dir(), "longmemeval")
    vf.ensure((t.content for q in questions for t in q.turns), inner, "turns", log)
    vf.ensure((q.text for q in questions), inner, "questions", log)
    if vf.meta.get("single_query", {}).get("n", 0) < min(50, len(questions)):
        log("timing single-question embedding (once; cached)")
        vf.meta["single_query"] = single_query_embedding(inner, [q.text for q in questions])
        vf.save()
    distinct = list(dict.fromkeys(t.content for q in questions for t in q.turns))
    extra: dict[str, list[str]] = dict(zip(distinct, windows(distinct), strict=True))
    if with_windows:
        vf.ensure((w for ws in extra.values() for w in ws), inner, "windows", log)
    cache = QueryVectorCache(inner, vf)

    scores: dict[str, list[Score]] = {r.name: [] for r in rankers_}
    if anchors:
        scores.update({a: [] for a in ANCHORS})
        if with_windows:
            scores.update({a: [] for a in WINDOW_ANCHORS})
    latency: dict[str, list[float]] = {r.name: [] for r in rankers_}
    foreign: dict[str, int] = dict.fromkeys(scores, 0)
    ingest = 0.0
    misses_before = cache.misses
    key = os.urandom(32)
    for n, q in enumerate(questions, start=1):
        if n % 10 == 1:
            log(f"question {n}/{len(questions)} ({q.qtype}, {len(q.turns)} turns)")
        with (
            tempfile.TemporaryDirectory(prefix="agentzero-lme-", dir=tmp_parent) as tmp,
            AgentMemory.open(
                tmp,
                key=key,
                org_id=q.qid,
                agent_id="bench",
                embedder=cache,
                clock=lambda at=q.asked_at: at,
            ) as mem,
        ):
            t0 = time.perf_counter()
            turn_ids: dict[str, list[int]] = {}  # memory id -> its turns' indices
            at = 0
            for session, turns in q.sessions():
                made = mem.add_turns(
                    session,
                    [Turn(t.role, t.content, created_at=t.created_at) for t in turns],
                    vectors=vf.matrix([t.content for t in turns]),
                )
                # A text said twice is one memory: a hit on it finds both turns.
                for mid in made:
                    turn_ids.setdefault(mid, []).append(at)
                    at += 1
            ingest += time.perf_counter() - t0
            qvec = vf[q.text]
            for r in rankers_:  # warm-up, untimed: first-use costs of each path
                r.rank(mem, q.text, qvec)
            for r in rankers_:
                t0 = time.perf_counter()
                hits = r.rank(mem, q.text, qvec)[:K]
                latency[r.name].append(time.perf_counter() - t0)
                foreign[r.name] += sum(1 for h in hits if h not in turn_ids)
                top = {j for h in hits for j in turn_ids.get(h, ())}
                scores[r.name].append(score(q, top))
        if anchors:
            texts = [t.content for t in q.turns]
            matrix = vf.matrix(texts)
            cos = cosine_ranking(matrix, qvec, ANCHOR_DEPTH)
            bm = bm25_ranking(texts, q.text, ANCHOR_DEPTH)
            scores["raw-cosine"].append(score(q, set(cos[:K])))
            scores["raw-bm25"].append(score(q, set(bm[:K])))
            scores["raw-rrf"].append(score(q, set(rrf([cos, bm])[:K])))
            if with_windows:
                more = [vf.matrix(extra[t]) if extra[t] else None for t in texts]
                cw = best_window_ranking(matrix, more, qvec, ANCHOR_DEPTH)
                scores["raw-cosine-windows"].append(score(q, set(cw[:K])))
                scores["raw-rrf-windows"].append(score(q, set(rrf([cw, bm])[:K])))
    timed_misses = cache.misses - misses_before
    modes = [_result(r.name, scores[r.name], latency[r.name], foreign[r.name]) for r in rankers_]
    modes += [_result(a, scores[a], None, 0) for a in scores if a.startswith("raw-")]
    return Report(
        data=str(data_dir),
        questions=len(questions),
        per_type_n={t: sum(1 for q in questions if q.qtype == t) for t in TYPES},
        turns=sum(len(q.turns) for q in questions),
        distinct_texts=len(distinct),
        evidence_turns=sum(1 for q in questions for t in q.turns if t.evidence),
        long_turns=sum(1 for t in distinct if extra[t]),
        query_embedding={
            "single_question": vf.meta.get("single_query"),
            "batched": vf.meta.get("embed_questions"),
        },
        cache_file=str(vf.path),
        cache_misses_while_timed=timed_misses,
        ingest_seconds=ingest,
        modes=modes,
        subset=subset,
    )


# ----------------------------------------------------------------------------- output
def table(rep: Report) -> str:
    """The markdown table (turn recall@10 overall and per type), then the counts."""
    types = [t for t in TYPES if rep.per_type_n.get(t)]
    head = (
        ["mode", "turn R@10", "session R@10", "all R@10"]
        + [f"{SHORT[t]} (n={rep.per_type_n[t]})" for t in types]
        + ["p50 ms", "p95 ms"]
    )
    lines = md_head(head)
    for m in rep.modes:
        lat = ["—" if v is None else f"{v:.2f}" for v in (m.latency_p50_ms, m.latency_p95_ms)]
        lines.append(
            md_row(
                [m.mode, f"**{m.turn_recall:.3f}**", f"{m.session_recall:.3f}"]
                + [f"{m.recall_all:.3f}"]
                + [f"{m.per_type.get(t, float('nan')):.3f}" for t in types]
                + lat
            )
        )
    emb = rep.query_embedding.get("single_question") or {}
    notes = [
        "",
        f"{rep.questions} questions"
        + (f" (the first {rep.subset} of the stratified order)" if rep.subset else "")
        + f", {rep.turns:,} turns ({rep.distinct_texts:,} distinct texts, "
        f"{rep.long_turns:,} longer than the model's 256 word pieces), "
        f"{rep.evidence_turns} evidence turns; ingest {rep.ingest_seconds:.1f} s in all "
        "with precomputed vectors, a fresh store per question.",
        "Anchors (raw-*: numpy cosine, tantivy-py en_stem BM25, RRF k=60 of the two, over "
        "the same turns and vectors, no store code); latency is not theirs to compare.",
        "Latency: recall alone (query vectors served by QueryVectorCache; misses while "
        f"timed: {rep.cache_misses_while_timed}). Excluded query embedding, one question "
        f"at a time: p50 {emb.get('p50_ms', float('nan')):.1f} ms (n={emb.get('n', 0)}).",
        "Hits outside the question's scope: "
        + ", ".join(f"{m.mode} {m.foreign_hits}" for m in rep.modes if m.latency_p50_ms)
        + ".",
        f"Vector cache: {rep.cache_file}",
    ]
    return "\n".join(lines + notes)


RANKERS: dict[str, Ranker] = rankers()
DEFAULT_MODES = ("keyword", "semantic", "hybrid", "auto")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"folder holding {QUESTIONS_FILE} and {SESSIONS_FILE} (read in place)",
    )
    common_args(ap, RANKERS, DEFAULT_MODES, f"the first {QUICK_QUESTIONS} questions only")
    ap.add_argument(
        "--questions",
        type=int,
        default=None,
        metavar="N",
        help="the first N questions of a deterministic stratified order (every type)",
    )
    ap.add_argument(
        "--types",
        default="",
        help=f"comma-separated question types only (default all): {', '.join(TYPES)}",
    )
    ap.add_argument("--ids", default="", help="comma-separated question ids only")
    ap.add_argument("--no-anchors", action="store_true", help="skip the raw-library anchors")
    ap.add_argument(
        "--windows",
        action="store_true",
        help="also the cosine anchor with a vector per window of a long turn (embeds them)",
    )
    args = ap.parse_args(argv)
    names, unknown = chosen_modes(args.modes, args.ablation, RANKERS)
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    if set(types) - set(TYPES):
        ap.error(f"unknown type(s) {', '.join(set(types) - set(TYPES))}")
    if unknown:
        ap.error(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(RANKERS)}")
    if not all((args.data / f).is_file() for f in (QUESTIONS_FILE, SESSIONS_FILE)):
        print(f"longmemeval: skipped: no data in {args.data}: {ORIGIN}; pass --data PATH")
        return 0
    try:
        vector_dir = cache_dir_checked(args.cache_dir)
    except ValueError as exc:
        ap.error(str(exc))
    log = stderr_log()
    rep = run(
        args.data,
        [RANKERS[m] for m in names],
        subset=QUICK_QUESTIONS if args.quick else args.questions,
        types=types or None,
        ids=[i.strip() for i in args.ids.split(",") if i.strip()] or None,
        anchors=not args.no_anchors,
        with_windows=args.windows,
        tmp_parent=args.tmp,
        vector_dir=vector_dir,
        log=log,
    )
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        print(table(rep))
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
