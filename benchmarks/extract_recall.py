"""Does extraction help recall? Evidence recall@10 of ``AgentMemory.recall`` (keyword
mode: no model runs) with and without ``extract()`` (RuleExtractor), on LoCoMo dev (the
``locomo.py`` protocol, with each turn's ``speaker`` set so facts are about them) and on
the LongMemEval_S dev questions of types knowledge-update and single-session-user (the
data README's protocol). An extracted fact or note in the top 10 counts as finding the
turns it came from (``Memory.sources``) — that is what it stands for. Also the cost:
``add_turns`` turns/s with extraction off and in the background, ``extract()`` turns/s.

    nice python benchmarks/extract_recall.py [--lme-limit N]

Data is read in place from ../shared/data (never copied); absent, the script exits 0.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locomo import DATA_FILE, DEFAULT_DATA, load  # noqa: E402

from agentzero_store import AgentMemory, RuleExtractor, Turn  # noqa: E402

K = 10
KEY = os.urandom(32)  # one random key for the run's scratch stores
TYPES = ("knowledge-update", "single-session-user")


def _open(where: Path, org: str, **kw: object) -> AgentMemory:
    return AgentMemory.open(
        where,
        key=KEY,
        org_id=org,
        embedder=None,
        **kw,  # type: ignore[arg-type]
    )


def _covered(mem: AgentMemory, question: str) -> set[str]:
    """The turn ids the top K stand for (a derived hit: its sources)."""
    out: set[str] = set()
    for h in mem.recall(question, K, mode="keyword", log=False):
        m = mem.get(h.id)
        out.add(h.id)
        if m is not None:
            out.update(m.sources)
    return out


def locomo(tmp: Path, data: Path) -> dict[str, float]:
    convs = load(data / "locomo-dev" / DATA_FILE)
    scores: dict[str, list[float]] = {"without": [], "with": []}
    add_s = ext_s = 0.0
    n_turns = 0
    for c in convs:
        with _open(tmp / "locomo", c.sample_id) as mem:
            ids: dict[str, str] = {}
            t0 = time.perf_counter()
            for session, turns in c.sessions().items():
                got = mem.add_turns(
                    session,
                    [Turn("user", t.content, t.speaker, t.created_at) for t in turns],
                )
                ids.update({t.dia_id: i for t, i in zip(turns, got, strict=True)})
            add_s += time.perf_counter() - t0
            n_turns += len(c.turns)
            for how in ("without", "with"):
                if how == "with":
                    t0 = time.perf_counter()
                    mem.extract()
                    ext_s += time.perf_counter() - t0
                for q in c.questions:
                    want = {ids.get(e) for e in q.evidence}
                    found = _covered(mem, q.text)
                    scores[how].append(sum(1 for w in want if w in found) / len(want))
    return {
        "questions": len(scores["with"]),
        "recall_without": sum(scores["without"]) / len(scores["without"]),
        "recall_with": sum(scores["with"]) / len(scores["with"]),
        "add_turns_per_s": n_turns / add_s,
        "extract_turns_per_s": n_turns / ext_s,
    }


def _date(text: str) -> datetime:
    return datetime.strptime(text.split(" (")[0], "%Y/%m/%d").replace(tzinfo=UTC)


def longmemeval(tmp: Path, lme: Path, limit: int) -> dict[str, object]:
    with gzip.open(lme / "sessions.jsonl.gz", "rt") as f:
        sessions = {s["session_id"]: s["turns"] for s in map(json.loads, f)}
    qs = [json.loads(x) for x in (lme / "questions.jsonl").read_text().splitlines()]
    out: dict[str, object] = {}
    for qtype in TYPES:
        chosen = [q for q in qs if q["question_type"] == qtype and "_abs" not in q["question_id"]]
        chosen = chosen[:limit]
        res: dict[str, list[float]] = {"without": [], "with": []}
        for n, q in enumerate(chosen):
            with _open(tmp / f"lme-{qtype}-{n}", "q") as mem:
                evidence: set[str] = set()
                for sid, day in zip(q["haystack_session_ids"], q["haystack_dates"], strict=True):
                    turns = [t for t in sessions[sid] if t["content"].strip()]
                    start = _date(day)
                    got = mem.add_turns(
                        sid,
                        [
                            Turn(t["role"], t["content"], None, start + timedelta(seconds=j))
                            for j, t in enumerate(turns)
                        ],
                    )
                    evidence |= {i for t, i in zip(turns, got, strict=True) if t.get("has_answer")}
                if not evidence:
                    continue
                for how in ("without", "with"):
                    if how == "with":
                        mem.extract()
                    found = _covered(mem, q["question"])
                    res[how].append(len(evidence & found) / len(evidence))
        out[qtype] = {
            "questions": len(res["with"]),
            "recall_without": sum(res["without"]) / max(len(res["without"]), 1),
            "recall_with": sum(res["with"]) / max(len(res["with"]), 1),
        }
    return out


def background_cost(tmp: Path, data: Path) -> dict[str, float]:
    """add_turns turns/s with extraction off and in the background (same turns)."""
    convs = load(data / "locomo-dev" / DATA_FILE)[:1]
    out = {}
    for mode, kw in (
        ("off", {}),
        ("background", {"extractor": RuleExtractor(), "extract": "background"}),
    ):
        with _open(tmp / f"cost-{mode}", "c", **kw) as mem:
            t0 = time.perf_counter()
            n = 0
            for c in convs:
                for session, turns in c.sessions().items():
                    mem.add_turns(
                        session, [Turn("user", t.content, t.speaker, t.created_at) for t in turns]
                    )
                    n += len(turns)
            out[f"add_turns_per_s_{mode}"] = n / (time.perf_counter() - t0)
            mem.drain_extraction()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--lme-limit", type=int, default=20, help="questions per type")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA.parent, help="shared/data")
    a = ap.parse_args()
    if not (a.data / "locomo-dev" / DATA_FILE).exists():
        print(f"no LoCoMo dev data under {a.data}: skipped")
        return 0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rep: dict[str, object] = {
            "locomo": locomo(tmp, a.data),
            "cost": background_cost(tmp, a.data),
        }
        if (a.data / "longmemeval-dev").exists():
            rep["longmemeval"] = longmemeval(tmp, a.data / "longmemeval-dev", a.lme_limit)
    print(json.dumps(rep, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
