"""LoCoMo evidence recall@10 of ``AgentMemory.recall``, per ranking mode.

    .venv/bin/python benchmarks/locomo.py                       # keyword, semantic, hybrid
    .venv/bin/python benchmarks/locomo.py --modes hybrid --json # machine-readable, stdout
    .venv/bin/python benchmarks/locomo.py --quick               # the first conversation only
    .venv/bin/python benchmarks/locomo.py --modes auto --ablation  # each signal alone, and
                                                                   # the fusion without it

The data is the development half of LoCoMo (``../shared/data/locomo-dev``), read in place
and never copied into the repo; the script says so and exits 0 when it is absent.

Protocol (the data README's): all conversations go in one fresh store (random key), each
conversation (``sample_id``) in its own scope (``org_id=sample_id``). Every turn becomes
one episodic memory, ``Turn("user", "{speaker}: {text}")``, created at its session's date
(``session_N_date_time`` as aware UTC) plus ``i`` seconds for the ``i``-th turn of the
session, one ``add_turns`` call per session (``conversation_id="session_N"``). Each
question of category 1-4 that carries evidence is a ``recall(question, k=10, mode=M)`` in
its conversation's scope; its score is the share of its evidence ``dia_id`` values whose
memory is among the 10 hits; the figure is the mean over questions. Evidence ids that are
malformed or not in the conversation (LoCoMo has a few) count as not found, and are
reported.

Latency is of ``recall`` alone: the query embedding is excluded, because the store's
embedder is a ``QueryVectorCache`` serving vectors computed up front (its misses are
counted, and must be 0). Turn and question vectors are cached on disk outside the repo
(``$XDG_CACHE_HOME/agentzero-bench/``, else ``~/.cache/agentzero-bench/``), keyed by the
data file's SHA-256 and the model id, so a re-run does not load the model at all.

A ranking mode is a ``Ranker``: a name and a callable ``(mem, question, qvec) -> ids``;
add one to ``RANKERS`` to compare a new ranking on the same protocol.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

from _harness import Figure, Skipped, median, pct  # noqa: E402
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

DATA_FILE = "locomo-dev.json"
ORIGIN = (
    "the first 5 conversations of LoCoMo's locomo10.json (Maharana et al. 2024, CC BY-NC "
    "4.0) as locomo-dev.json, read in place and never shipped with the repo (see "
    "docs/design.md, Evaluation data)"
)
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo-dev"
CATEGORIES = (1, 2, 3, 4)  # 5 (adversarial) has no answer in the conversation
SESSION = re.compile(r"session_(\d+)")
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"

# Evidence recall@10 on this half, measured with the raw libraries (no store code): the
# data README's reference points, given as constants (not measured by this script).
REFERENCE: dict[str, tuple[float, str]] = {
    "semantic": (0.508, "MiniLM exact cosine"),
    "keyword": (0.562, "Tantivy en_stem BM25"),
    "hybrid": (0.613, "RRF k=60 of the two"),
}


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str
    session: str  # "session_3": the memory's conversation_id
    speaker: str
    content: str  # "{speaker}: {text}"
    created_at: datetime


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[LocomoTurn]
    questions: list[Question]

    def sessions(self) -> dict[str, list[LocomoTurn]]:
        """Turns grouped by session, in order (one ``add_turns`` call each)."""
        out: dict[str, list[LocomoTurn]] = {}
        for t in self.turns:
            out.setdefault(t.session, []).append(t)
        return out


def session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    return datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=UTC)


def load(path: Path) -> list[Conversation]:
    """The conversations of ``locomo-dev.json``: turns in session order, and the questions
    of categories 1-4 that carry evidence."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for item in raw:
        conv = item["conversation"]
        numbered = sorted(
            (int(m.group(1)), key) for key in conv if (m := SESSION.fullmatch(key)) and conv[key]
        )
        turns = []
        for _, key in numbered:
            start = session_date(conv[f"{key}_date_time"])
            for i, t in enumerate(conv[key]):
                turns.append(
                    LocomoTurn(
                        dia_id=t["dia_id"],
                        session=key,
                        speaker=t["speaker"],
                        content=f"{t['speaker']}: {t['text']}",
                        created_at=start + timedelta(seconds=i),
                    )
                )
        questions = [
            Question(q["question"], int(q["category"]), tuple(q["evidence"]))
            for q in item["qa"]
            if q.get("category") in CATEGORIES and q.get("evidence")
        ]
        out.append(Conversation(item["sample_id"], turns, questions))
    return out


# ----------------------------------------------------------------------------- rankers
RANKERS: dict[str, Ranker] = rankers(REFERENCE)
DEFAULT_MODES = ("keyword", "semantic", "hybrid", "auto", "store-hybrid")


# ----------------------------------------------------------------------------- run
@dataclass
class ModeResult:
    mode: str
    recall_at_10: float
    per_category: dict[int, float]
    latency_p50_ms: float
    latency_p95_ms: float
    foreign_hits: int  # hits outside the question's conversation (must be 0)
    recall_resolvable: float  # the mean over questions with >= 1 resolvable evidence id
    reference: tuple[float, str] | None


@dataclass
class Report:
    data: str
    conversations: int
    turns: int
    questions: int
    per_category_n: dict[int, int]
    evidence_ids: int
    unresolvable_evidence: list[dict[str, str]]
    questions_without_resolvable_evidence: int
    query_embedding: dict[str, Any]
    cache_file: str
    cache_misses_while_timed: int
    ingest_seconds: float
    modes: list[ModeResult]
    quick: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run(
    data_dir: Path,
    rankers: Sequence[Ranker],
    *,
    quick: bool = False,
    tmp_parent: Path | None = None,
    vector_dir: Path | None = None,
    log: Callable[[str], None] = lambda m: None,
) -> Report:
    """Fill a store with the conversations, ask every question with every ranker."""
    data_file = data_dir / DATA_FILE
    convs = load(data_file)
    if quick:
        convs = convs[:1]
    inner = LocalEmbedder()
    vf = VectorFile.for_data([data_file], inner.model_id, vector_dir or cache_dir(), "locomo")
    questions = [q.text for c in convs for q in c.questions]
    vf.ensure((t.content for c in convs for t in c.turns), inner, "turns", log)
    vf.ensure(questions, inner, "questions", log)
    if "single_query" not in vf.meta:
        log("timing single-question embedding (once; cached)")
        vf.meta["single_query"] = single_query_embedding(inner, questions)
        vf.save()
    cache = QueryVectorCache(inner, vf)

    ids: dict[str, dict[str, str]] = {}  # sample_id -> dia_id -> memory id
    with tempfile.TemporaryDirectory(prefix="agentzero-locomo-", dir=tmp_parent) as tmp:
        key = os.urandom(32)

        def open_memory(sample_id: str) -> AgentMemory:
            return AgentMemory.open(
                tmp, key=key, org_id=sample_id, agent_id="bench", embedder=cache
            )

        t0 = time.perf_counter()
        for c in convs:
            log(f"{c.sample_id}: {len(c.turns)} turns")
            with open_memory(c.sample_id) as mem:
                got: dict[str, str] = {}
                for session, turns in c.sessions().items():
                    made = mem.add_turns(
                        session,
                        [
                            Turn("user", t.content, speaker=t.speaker, created_at=t.created_at)
                            for t in turns
                        ],
                        vectors=vf.matrix([t.content for t in turns]),
                    )
                    got.update(zip((t.dia_id for t in turns), made, strict=True))
                ids[c.sample_id] = got
        ingest_seconds = time.perf_counter() - t0

        scores: dict[str, list[tuple[int, float, bool]]] = {r.name: [] for r in rankers}
        latency: dict[str, list[float]] = {r.name: [] for r in rankers}
        foreign: dict[str, int] = dict.fromkeys(scores, 0)
        misses_before = cache.misses
        for c in convs:
            log(f"{c.sample_id}: {len(c.questions)} questions x {len(rankers)} modes")
            own = ids[c.sample_id]
            own_ids = set(own.values())
            with open_memory(c.sample_id) as mem:
                for r in rankers:  # warm-up, untimed: first-use costs of each path
                    r.rank(mem, c.questions[0].text, vf[c.questions[0].text])
                for q in c.questions:
                    qvec = vf[q.text]
                    wanted = [own.get(e) for e in q.evidence]  # None: not in the conversation
                    resolvable = any(w is not None for w in wanted)
                    for r in rankers:
                        t0 = time.perf_counter()
                        hits = r.rank(mem, q.text, qvec)
                        latency[r.name].append(time.perf_counter() - t0)
                        top = set(hits[:K])
                        foreign[r.name] += len(top - own_ids)
                        found = sum(1 for w in wanted if w is not None and w in top)
                        scores[r.name].append((q.category, found / len(wanted), resolvable))
        timed_misses = cache.misses - misses_before

    all_q = [q for c in convs for q in c.questions]
    unresolvable = [
        {"sample_id": c.sample_id, "evidence": e, "question": q.text}
        for c in convs
        for q in c.questions
        for e in q.evidence
        if e not in ids[c.sample_id]
    ]
    modes = []
    for r in rankers:
        s = scores[r.name]
        per_cat = {
            cat: float(np.mean([x for c_, x, _ in s if c_ == cat]))
            for cat in CATEGORIES
            if any(c_ == cat for c_, _, _ in s)
        }
        lat = latency[r.name]
        modes.append(
            ModeResult(
                r.name,
                float(np.mean([x for _, x, _ in s])),
                per_cat,
                median(lat) * 1e3,
                pct(lat, 95) * 1e3,
                foreign[r.name],
                float(np.mean([x for _, x, ok in s if ok])),
                r.reference,
            )
        )
    return Report(
        data=str(data_file),
        conversations=len(convs),
        turns=sum(len(c.turns) for c in convs),
        questions=len(all_q),
        per_category_n={
            cat: sum(1 for q in all_q if q.category == cat)
            for cat in CATEGORIES
            if any(q.category == cat for q in all_q)
        },
        evidence_ids=sum(len(q.evidence) for q in all_q),
        unresolvable_evidence=unresolvable,
        questions_without_resolvable_evidence=sum(
            1
            for c in convs
            for q in c.questions
            if not any(e in ids[c.sample_id] for e in q.evidence)
        ),
        query_embedding={
            "single_question": vf.meta.get("single_query"),
            "batched": vf.meta.get("embed_questions"),
        },
        cache_file=str(vf.path),
        cache_misses_while_timed=timed_misses,
        ingest_seconds=ingest_seconds,
        modes=modes,
        quick=quick,
    )


# ----------------------------------------------------------------------------- output
def table(rep: Report) -> str:
    """The markdown table, then the counts a reader needs to trust it."""
    cats = list(rep.per_category_n)
    head = (
        ["mode", "recall@10"]
        + [f"cat {c} (n={rep.per_category_n[c]})" for c in cats]
        + ["p50 ms", "p95 ms", "reference, raw libraries (all 5 conversations)"]
    )
    lines = md_head(head)
    for m in rep.modes:
        ref = f"{m.reference[0]:.3f} ({m.reference[1]})" if m.reference else "—"
        lines.append(
            md_row(
                [m.mode, f"**{m.recall_at_10:.3f}**"]
                + [f"{m.per_category.get(c, float('nan')):.3f}" for c in cats]
                + [f"{m.latency_p50_ms:.2f}", f"{m.latency_p95_ms:.2f}", ref]
            )
        )
    emb = rep.query_embedding.get("single_question") or {}
    bad = ", ".join(f"{u['sample_id']} {u['evidence']!r}" for u in rep.unresolvable_evidence)
    notes = [
        "",
        f"{rep.conversations} conversation{'s' if rep.conversations != 1 else ''}, "
        f"{rep.turns:,} turns, {rep.questions} questions "
        f"(categories 1-4 with evidence), {rep.evidence_ids:,} evidence ids; ingest "
        f"{rep.ingest_seconds:.1f} s with precomputed vectors.",
        f"Unresolvable evidence ids (counted as not found): {len(rep.unresolvable_evidence)}"
        + (f" ({bad})" if bad else "")
        + f"; questions with none resolvable: {rep.questions_without_resolvable_evidence}.",
        "Over only the questions with a resolvable evidence id: "
        + ", ".join(f"{m.mode} {m.recall_resolvable:.3f}" for m in rep.modes)
        + ".",
        "Latency: recall alone (query vectors served by QueryVectorCache; misses while "
        f"timed: {rep.cache_misses_while_timed}). Excluded query embedding, one question "
        f"at a time: p50 {emb.get('p50_ms', float('nan')):.1f} ms, "
        f"p95 {emb.get('p95_ms', float('nan')):.1f} ms (n={emb.get('n', 0)}, "
        "measured when the vector cache was built).",
        "Hits outside the question's conversation: "
        + ", ".join(f"{m.mode} {m.foreign_hits}" for m in rep.modes)
        + ".",
        f"Vector cache: {rep.cache_file}",
    ]
    if rep.quick:
        notes.append("Quick run: the first conversation only; the reference is not comparable.")
    return "\n".join(lines + notes)


def figures(
    tmp: Path, data_dir: Path, *, quick: bool, progress: Callable[[str], None]
) -> list[Figure] | Skipped:
    """The ``locomo`` group of ``benchmarks/run.py``: recall@10 per mode beside the README's
    raw-library reference (not judged: there is no goal yet)."""
    if not (data_dir / DATA_FILE).is_file():
        return Skipped("locomo", f"no LoCoMo dev data at {data_dir}: {ORIGIN}; pass --locomo PATH")
    rep = run(
        data_dir,
        list(RANKERS.values()),
        quick=quick,
        tmp_parent=tmp,
        log=lambda m: progress(f"locomo: {m}"),
    )
    tag = " (quick: 1 conversation)" if quick else ""
    out = []
    for m in rep.modes:
        ref = m.reference
        cats = ", ".join(f"cat {c} {v:.3f}" for c, v in m.per_category.items())
        out.append(
            Figure(
                "locomo",
                f"locomo_recall10_{m.mode}",
                f"LoCoMo dev evidence recall@10, {m.mode}{tag}",
                m.recall_at_10,
                "",
                None if ref is None else ref[0],
                "" if ref is None else f"reference, raw libraries: {ref[1]}",
                None if ref is None or quick else m.recall_at_10 / ref[0],
                trials=rep.questions,
                note=f"{cats}; recall p50 {m.latency_p50_ms:.2f} ms, p95 "
                f"{m.latency_p95_ms:.2f} ms, query embedding excluded",
                extra={"report": rep.to_dict()} if m is rep.modes[0] else {},
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"folder holding {DATA_FILE} (read in place, never copied)",
    )
    common_args(ap, RANKERS, DEFAULT_MODES, "the first conversation only")
    args = ap.parse_args(argv)
    names, unknown = chosen_modes(args.modes, args.ablation, RANKERS)
    if unknown or not names:
        ap.error(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(RANKERS)}")
    data_file = args.data / DATA_FILE
    if not data_file.is_file():
        print(f"locomo: skipped: no {DATA_FILE} in {args.data}: {ORIGIN}; pass --data PATH")
        return 0
    try:
        vector_dir = cache_dir_checked(args.cache_dir)
    except ValueError as exc:
        ap.error(str(exc))
    log = stderr_log()

    rep = run(
        args.data,
        [RANKERS[m] for m in names],
        quick=args.quick,
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
