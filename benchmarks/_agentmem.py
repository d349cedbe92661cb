"""What the agent-memory layer costs (issue 15): ``AgentMemory`` beside the memory store
it is built on, on the same machine, the same kind of data dir, interleaved.

- ``add_turn`` with a precomputed vector vs ``SqliteMemoryStore.append_with_embedding``
  (one durable write each; goal ≤ 1.5×);
- ``add_turns`` of 1,000 turns vs ``append_many`` of the same 1,000 entries (goal
  ≥ 0.9× the throughput): these batches fill the corpus the next figures use;
- ``consolidate()`` over the whole corpus (100k memories; quick: 10k) in a child
  process: wall time (goal ≤ 60 s per 100k) and peak RSS (``VmHWM`` of
  /proc/self/status, reset after the open through /proc/self/clear_refs so it is the
  consolidation's own peak), with what it did;
- ``recall`` p50/p95 over the consolidated corpus in the three modes, beside the memory
  store's own keyword, semantic and hybrid recall on the same data dir.

The corpus is short conversational sentences from templates, with recurring
near-duplicates (so promotion has work), semantic notes (some near-duplicate twins for
the merge, some with a TTL that has passed), a few forgotten memories past their undo
window, and turns spread over 900 days so that the oldest have faded below
``archive_below`` when the clock reaches the end. Vectors are seeded random unit vectors
(clustered, as real embeddings are: ``_data.clustered``); no embedding model is loaded.
Recall excludes query embedding on purpose: ``PrecomputedQueryVectors`` is an embedder
that returns a query's precomputed vector (and refuses any other text).

Also run as a script: ``_agentmem.py consolidate DATA_DIR NOW_US`` prints JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

GROUP = "agentmem"
BATCH = 1_000  # turns per add_turns / entries per append_many (one transaction)
K = 10
ORG, AGENT = "bench-org", "bench-agent"
SPAN_DAYS = 900  # the corpus's turns are spread over this many days
START = datetime(2024, 1, 1, tzinfo=UTC)
QUERY_MODEL = "bench-precomputed-query-vectors"


@dataclass(frozen=True)
class AgentMemSizes:
    """How much work each figure does (--quick shrinks it)."""

    singles: int  # add_turn / append_with_embedding pairs
    corpus: int  # memories consolidated and recalled over
    queries: int  # recall queries per mode


QUICK = AgentMemSizes(singles=60, corpus=10_000, queries=100)
FULL = AgentMemSizes(singles=400, corpus=100_000, queries=500)


def _config() -> Any:
    # Default settings but a fast KDF: every open here would otherwise pay one scrypt.
    from agentzero_store import StoreConfig
    from agentzero_store.base.config import FAST_KDF_FOR_TESTS

    return StoreConfig(kdf=FAST_KDF_FOR_TESTS)


class FixedClock:
    """The time the benchmark says it is (decay, TTL and undo windows without waiting)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class PrecomputedQueryVectors:
    """An ``Embedder`` that only looks up precomputed query vectors.

    Recall's query embedding is excluded from the recall figures on purpose (it is the
    model's cost, not the store's): each query text maps to its vector, and any other
    text raises, so nothing else can be embedded by it unnoticed.
    """

    def __init__(self, dim: int) -> None:
        self._dim = dim
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def model_id(self) -> str:
        return QUERY_MODEL

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


# ----------------------------------------------------------------------------- corpus
def _split(text: str, sep: str = "|") -> tuple[str, ...]:
    return tuple(text.split(sep))


_NAMES = _split(
    "Ana Ben Carla Dmitri Elena Farid Greta Hiro Ines Jonas Kemal Lena Marco Nadia Omar Priya "
    "Quentin Rosa Sven Tara Umar Vera Wei Xavier Yara Zoe Amir Bea Chen Dora Emil Fatima Goran "
    "Hana Igor Julia Karim Lucia Mateo Nora",
    " ",
)
_PLACES = _split(
    "the office|the gym|the bakery|Lisbon|Porto|the library|the clinic|the station|the park|"
    "the school|the garage|Berlin|the airport|the pharmacy|the market|the cafe on Main Street|"
    "the dentist|the bank|the hotel|the museum|the harbour|the hospital|the post office|"
    "the cinema|the town hall|the supermarket|the pool|the studio|the lab|the warehouse"
)
_WHEN = _split(
    "on Monday|on Tuesday|on Wednesday|on Thursday|on Friday|on Saturday|on Sunday|"
    "tomorrow morning|tomorrow evening|next week|tonight|this afternoon|at 9:30|at 14:00|"
    "at noon|after lunch|before the weekend|in two days|on the 3rd|at the end of the month"
)
_THINGS = _split(
    "budget|report|contract|invoice|slides|roof|car|flight|visa|lease|boiler|laptop|printer|"
    "garden|passport|insurance|tax return|presentation|backup|router|fridge|bike|tickets|"
    "recipe|playlist|spreadsheet|manual|quote|deadline|schedule|menu|painting|delivery|"
    "survey|workshop|meeting notes|release|prototype|proposal|checklist"
)
_ADJ = _split(
    "late|fine|broken|too expensive|almost done|confusing|great|missing|ready|delayed|"
    "urgent|cheaper than expected|wrong|finished|on hold|noisy|slow|clean|new|approved"
)
_TASKS = _split(
    "call the plumber|book a table|send the invoice|renew the passport|pay the rent|"
    "water the plants|buy milk|email the landlord|fix the bike|pick up the kids|"
    "back up the laptop|order new ink|file the tax return|cancel the gym|print the tickets|"
    "update the slides|check the boiler|walk the dog|review the contract|charge the car|"
    "clean the fridge|reply to the survey|write the report|call the bank|return the books"
)
# Every sentence carries a number (an amount, a room, an order): chat is full of them,
# and without one, template sentences differing in a single word would be near-duplicates
# by the thousand (13 of 14 words shared is Jaccard 0.87).
_USER = (
    "I talked to {p} about the {t} at {l} {w}, it costs {n} euros",
    "can you remind me to {k} {w} and tell {p} about the {t}, order {n}",
    "{p} said the {t} at {l} was {a} again, ticket {n}",
    "I'm not sure the {t} will be {a} by {w2}, {p} says {n} people asked",
    "what time is my appointment at {l} {w}, room {n}, and is {p} bringing the {t}",
    "I need to {k} before I go to {l} with {p} {w}, it is {n} metres away",
    "the {t} at {l} is {a} today and {p} is annoyed about invoice {n}",
    "did {p} send me the {t} from {l} yet? it should be {a}, page {n}",
    "let's move the {t} review with {p} at {l} to {w}, call {n}",
    "I left the {t} at {l}, can you ask {p} to bring it {w}? locker {n}",
)
_ASSISTANT = (
    "Sure, I'll remind you to {k} {w} and let {p} know about the {t} (order {n}).",
    "Got it: you meet {p} at {l} {w} about the {t}, room {n}.",
    "Noted that {p} thinks the {t} at {l} is {a} since {w}, ticket {n}.",
    "The {t} from {p} arrived {w}; it looks {a} and cost {n} euros.",
    "I moved the {t} review with {p} at {l} to {w}, call {n}.",
    "You asked me to {k} {w}; {p} can help at {l} from desk {n}.",
    "Here is what {p} wrote about the {t}: it is {a} and due {w}, page {n}.",
    "Okay, I'll check whether {l} is open {w} for the {t} with {p}, booking {n}.",
)
_HABITS = (
    "I always take my vitamins at {h} before I leave for {l} and {p} reminds me",
    "my sister {p} lives in {c} and I visit her every {d} with the kids",
    "I prefer {drink} without sugar when I work from {l} in the morning with {p}",
    "please never schedule meetings with {p} before {h} on a {d2} again",
    "I usually go running in {park} after work on {d2}s with {p}",
    "remember that {p} is allergic to {food} so order something else for the {t} lunch",
    "my favourite place for lunch near {l} is {l2} because {p} likes it",
    "the wifi password at {l} is written on the {t} next to the calendar, ask {p}",
)
_FILL = {
    "h": _split("6:00 6:30 7:00 7:15 7:30 8:00 8:30 9:00 9:30 10:00", " "),
    "c": _split("Lisbon Porto Madrid Berlin Vienna Oslo Dublin Lyon Turin Ghent Krakow Riga", " "),
    "d": _split("weekend month summer Easter Sunday holiday", " "),
    "d2": _split("Monday Tuesday Wednesday Thursday Friday", " "),
    "drink": _split("coffee tea espresso cocoa matcha chai", " "),
    "park": _split("the park|the river path|the forest|the stadium|the old harbour"),
    "food": _split("peanuts shellfish gluten eggs sesame soy kiwi", " "),
    "l2": _split("the corner deli|the noodle bar|the Greek place|the food truck|the canteen"),
}
_PREFIXES = ("", "", "yes,", "well,", "again,", "so", "ok", "honestly,")


@dataclass
class Corpus:
    """The turns to add (in batches of one session each), the notes, the forgets."""

    texts: list[str]
    roles: list[str]
    speakers: list[str | None]
    times: list[datetime]
    vectors: npt.NDArray[np.float32]
    recurring: int  # turns that repeat an earlier statement (near-duplicates)
    # semantic notes: (batch after which it is written, text, ttl or None, entity, vector)
    notes: list[tuple[int, str, timedelta | None, str, int]] = field(default_factory=list)
    forgets: list[int] = field(default_factory=list)  # turn positions forgotten by id
    now: datetime = START

    @property
    def n(self) -> int:
        return len(self.texts)


def _fill(template: str, rng: np.random.Generator) -> str:
    pick = {
        "p": _NAMES,
        "l": _PLACES,
        "w": _WHEN,
        "w2": _WHEN,
        "t": _THINGS,
        "a": _ADJ,
        "k": _TASKS,
        **_FILL,
    }
    values = {key: str(opts[int(rng.integers(len(opts)))]) for key, opts in pick.items()}
    values["n"] = str(int(rng.integers(10, 10_000)))
    return template.format(**values)


def _variant(text: str, rng: np.random.Generator) -> str:
    """The same statement said again: a filler word in front, or other case/punctuation
    (one extra word at most: the word sets stay at Jaccard ≥ 0.9 from the original)."""
    prefix = _PREFIXES[int(rng.integers(len(_PREFIXES)))]
    out = f"{prefix} {text}" if prefix else text
    if rng.random() < 0.3:
        out = out.capitalize() + "."
    return out


def make_corpus(n: int, seed: int = 11) -> Corpus:
    """``n`` turns over ``SPAN_DAYS`` (deterministic for a seed), notes and forgets."""
    from _data import clustered

    rng = np.random.default_rng(seed)
    texts: list[str] = []
    roles: list[str] = []
    speakers: list[str | None] = []
    for i in range(n):
        user = i % 2 == 0
        pool = _USER if user else _ASSISTANT
        texts.append(_fill(pool[int(rng.integers(len(pool)))], rng))
        roles.append("user" if user else "assistant")
        speakers.append("user" if user else None)
    # Recurring statements: ~1.2% of the turns say one of n/250 habits again, 2-6 times
    # each (twice is below promote_min_duplicates: those stay episodes).
    recurring = 0
    vectors = clustered(n, seed=seed)
    groups = max(4, n // 250)
    for g in range(groups):
        habit = _fill(_HABITS[g % len(_HABITS)], rng)
        repeats = int(rng.integers(2, 7))
        where = np.sort(rng.choice(n // 2, size=repeats, replace=False)) * 2  # user turns
        base = vectors[where[0]].copy()
        for j, pos in enumerate(where):
            texts[pos] = habit if j == 0 else _variant(habit, rng)
            v = base + 0.05 * rng.standard_normal(base.shape[0]).astype(np.float32)
            vectors[pos] = v / np.linalg.norm(v)
            recurring += j > 0
    step = timedelta(days=SPAN_DAYS) / n
    times_ = [START + step * i for i in range(n)]
    corpus = Corpus(texts, roles, speakers, times_, vectors, recurring)
    batches = (n + BATCH - 1) // BATCH
    # Semantic notes (n/200): every tenth has a near-duplicate twin written later (merged
    # into the older one), every tenth a TTL of a day to a month (expired by the end).
    for i in range(max(4, n // 200)):
        b = int(rng.integers(batches))
        note = _fill(_HABITS[int(rng.integers(len(_HABITS)))], rng) + f" (note {i})"
        ttl = timedelta(days=int(rng.integers(1, 31))) if i % 10 == 5 else None
        about, vec = _NAMES[int(rng.integers(len(_NAMES)))], int(rng.integers(n))
        corpus.notes.append((b, note, ttl, about, vec))
        if i % 10 == 0:
            twin = (min(batches - 1, b + 1), _variant(note, rng), None, about, vec)
            corpus.notes.append(twin)
    corpus.notes.sort(key=lambda x: x[0])
    # Forgotten memories (n/1000), forgotten at the end of their session: past their undo
    # window at the end, unless said in the last week.
    corpus.forgets = sorted(int(x) for x in rng.choice(n, size=max(2, n // 1_000), replace=False))
    corpus.now = times_[-1] + timedelta(days=1)
    return corpus


# ----------------------------------------------------------------------------- figures
def _entries(c: Corpus, lo: int, hi: int, conversation: str) -> list[Any]:
    from agentzero_store import MemoryEntry

    return [
        MemoryEntry(
            c.texts[i],
            role=c.roles[i],
            conversation_id=conversation,
            org_id=ORG,
            agent_id=AGENT,
            created_at=c.times[i],
        )
        for i in range(lo, hi)
    ]


def _turns(c: Corpus, lo: int, hi: int) -> list[Any]:
    from agentzero_store import Turn

    return [Turn(c.roles[i], c.texts[i], c.speakers[i], c.times[i]) for i in range(lo, hi)]


def single_add(tmp: Path, sizes: AgentMemSizes) -> Any:
    """``add_turn(..., vector=v)`` vs ``append_with_embedding`` on two fresh data dirs side
    by side (same disk, both without the HNSW sidecar: its sync is the same call for
    both), 100 warm-up rows each, interleaved, the order alternating."""
    from _data import clustered
    from _harness import Figure, median, pct

    from agentzero_store import AgentMemory, MemoryEntry, SqliteMemoryStore

    n = sizes.singles
    c = make_corpus(max(200, 2 * n + 100), seed=5)
    x = clustered(c.n, seed=6)
    cfg = _config()
    clock = FixedClock(c.now)
    ours_t: list[float] = []
    anchor_t: list[float] = []
    with (
        AgentMemory.open(
            tmp / "single-am",
            passphrase="bench",
            config=cfg,
            org_id=ORG,
            agent_id=AGENT,
            clock=clock,
            hnsw=False,
        ) as mem,
        SqliteMemoryStore.open(
            tmp / "single-store", passphrase="bench", config=cfg, clock=clock, hnsw=False
        ) as store,
    ):
        mem.add_turns("warm", _turns(c, 0, 100), vectors=x[:100])
        store.append_many(_entries(c, 0, 100, "warm"), x[:100])

        def ours(i: int) -> None:
            t = time.perf_counter()
            mem.add_turn("c1", c.roles[i], c.texts[i], speaker=c.speakers[i], vector=x[i])
            ours_t.append(time.perf_counter() - t)

        def anchor(i: int) -> None:
            e = MemoryEntry(
                c.texts[i], role=c.roles[i], conversation_id="c1", org_id=ORG, agent_id=AGENT
            )
            t = time.perf_counter()
            store.append_with_embedding(e, x[i])
            anchor_t.append(time.perf_counter() - t)

        for i in range(100, 100 + n):
            for f in (ours, anchor) if i % 2 else (anchor, ours):
                f(i)
    shutil.rmtree(tmp / "single-am")
    shutil.rmtree(tmp / "single-store")
    o, a = median(ours_t) * 1e3, median(anchor_t) * 1e3
    return Figure(
        GROUP,
        "agentmem_add_turn",
        "add_turn with a precomputed vector vs one durable store append (p50)",
        o,
        "ms",
        a,
        "SqliteMemoryStore.append_with_embedding, same disk",
        o / a,
        "≤ 1.5×",
        o / a <= 1.5,
        n,
        note=f"p95 ours {pct(ours_t, 95) * 1e3:.2f} ms, store {pct(anchor_t, 95) * 1e3:.2f} ms; "
        "ours writes the layer's columns (type, speaker, decay state) on the same row, in the "
        "same transaction",
    )


@dataclass
class Filled:
    """The corpus in an agent memory (and the batched-write figure measured filling it)."""

    data: Path
    corpus: Corpus
    ids: list[str]
    ours_s: list[float]
    anchor_s: list[float]


def fill(tmp: Path, c: Corpus, progress: Callable[[str], None]) -> Filled:
    """Write the corpus in sessions of ``BATCH`` turns through ``add_turns`` and, batch by
    batch interleaved, the same entries and vectors through ``append_many`` into a plain
    memory store beside it (deleted afterwards); the notes and forgets go in between."""
    from agentzero_store import AgentMemory, SqliteMemoryStore

    cfg = _config()
    data = tmp / "agentmem-corpus"
    clock = FixedClock(START)
    ours_s: list[float] = []
    anchor_s: list[float] = []
    ids: list[str] = []
    notes = list(c.notes)
    forgets = list(c.forgets)
    embedder = PrecomputedQueryVectors(c.vectors.shape[1])
    with (
        AgentMemory.open(
            data,
            passphrase="bench",
            config=cfg,
            org_id=ORG,
            agent_id=AGENT,
            clock=clock,
            embedder=embedder,
            hnsw=False,
        ) as mem,
        SqliteMemoryStore.open(
            tmp / "agentmem-anchor", passphrase="bench", config=cfg, clock=clock, hnsw=False
        ) as store,
    ):
        for b, lo in enumerate(range(0, c.n, BATCH)):
            hi = min(c.n, lo + BATCH)
            clock.now = c.times[hi - 1]
            session = f"session-{b:05d}"
            vecs = c.vectors[lo:hi]
            # Each side builds its API's records (Turn, MemoryEntry) inside the timing.
            for first in (0, 1) if b % 2 else (1, 0):
                t = time.perf_counter()
                if first:
                    ids += mem.add_turns(session, _turns(c, lo, hi), vectors=vecs)
                    ours_s.append(time.perf_counter() - t)
                else:
                    store.append_many(_entries(c, lo, hi, session), vecs)
                    anchor_s.append(time.perf_counter() - t)
            while notes and notes[0][0] <= b:
                _, text, ttl, about, vec = notes.pop(0)
                mem.remember(text, ttl=ttl, about=[about], vector=c.vectors[vec])
            while forgets and forgets[0] < hi:
                mem.forget(id=ids[forgets.pop(0)])
            if b % 20 == 19:
                progress(f"agentmem: filled {hi:,} of {c.n:,}")
    shutil.rmtree(tmp / "agentmem-anchor")
    return Filled(data, c, ids, ours_s, anchor_s)


def batched(f: Filled) -> Any:
    """The batched-write figure from the fill: turns/s of ``add_turns`` vs ``append_many``."""
    from _harness import Figure, median

    ratio = median([a / o for o, a in zip(f.ours_s, f.anchor_s, strict=True)])
    rate, raw = BATCH / median(f.ours_s), BATCH / median(f.anchor_s)
    return Figure(
        GROUP,
        "agentmem_add_turns_batched",
        f"add_turns, {BATCH:,} turns per call with vectors, filling {f.corpus.n:,}",
        rate,
        "/s",
        raw,
        f"SqliteMemoryStore.append_many, {BATCH:,} per call",
        ratio,
        "≥ 0.9× store throughput",
        ratio >= 0.9,
        len(f.ours_s),
        note="ratio = median over batches of store time / ours; both without the HNSW "
        "sidecar (built once afterwards)",
    )


def _rss_mib() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MiB (not getrusage: Linux carries ru_maxrss
    across fork + exec, so a child would report its parent's peak)."""
    status = Path("/proc/self/status").read_text().splitlines()
    kib = {
        line.split(":")[0]: int(line.split()[1])
        for line in status
        if line.startswith(("VmRSS:", "VmHWM:"))
    }
    return kib["VmRSS"] / 1024, kib["VmHWM"] / 1024


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: "5" to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _child_consolidate(data: str, now_us: int) -> dict[str, Any]:
    """Open, consolidate once (timed, with each step's seconds and peak RSS), then again
    (it must change nothing)."""
    from agentzero_store import AgentMemory
    from agentzero_store.memory.records import from_us

    imports = _rss_mib()[0]
    clock = FixedClock(from_us(now_us))
    t = time.perf_counter()
    mem = AgentMemory.open(
        data,
        passphrase=os.environ["AGENTZERO_BENCH_PASSPHRASE"],
        config=_config(),
        org_id=ORG,
        agent_id=AGENT,
        clock=clock,
    )
    opened_s = time.perf_counter() - t
    after_open, peak_open = _rss_mib()
    steps: dict[str, tuple[float, float]] = {}  # step -> (seconds, peak MiB)
    mark = [time.perf_counter()]

    def step(name: str, done: int, total: int) -> None:
        steps[name] = (time.perf_counter() - mark[0], _rss_mib()[1])
        _reset_peak()
        mark[0] = time.perf_counter()

    reset = _reset_peak()
    t = mark[0] = time.perf_counter()
    report = mem.consolidate(progress=step)
    seconds = time.perf_counter() - t
    cur, peak = _rss_mib()
    if reset:
        peak = max([peak, *(p for _, p in steps.values())])
    t = time.perf_counter()
    again = mem.consolidate()
    again_s = time.perf_counter() - t
    mem.close()
    return {
        "seconds": seconds,
        "open_s": opened_s,
        "again_s": again_s,
        "report": report.to_dict(),
        "again": again.to_dict(),
        "steps": steps,
        "rss_imports": imports,
        "rss_after_open": after_open,
        "peak_open": peak_open,
        "peak": peak,
        "rss_after": cur,
        "hwm_reset": reset,
    }


def consolidate(f: Filled) -> list[Any]:
    """Build the HNSW sidecar (as a store that has been in use has one), then
    ``consolidate()`` at the corpus's end time in a fresh child process."""
    from _harness import Figure

    from agentzero_store import SqliteMemoryStore

    with SqliteMemoryStore.open(f.data, passphrase="bench", config=_config(), hnsw=False) as s:
        s.enable_hnsw_index(watch=False)
    from agentzero_store.memory.records import to_us

    out = subprocess.run(
        [sys.executable, __file__, "consolidate", str(f.data), str(to_us(f.corpus.now))],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "AGENTZERO_BENCH_PASSPHRASE": "bench"},
    )
    r: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    n = f.corpus.n
    goal_s = 60.0 * n / 100_000
    did = r["report"]
    changed_again = {k: v for k, v in r["again"].items() if v and k != "dry_run"}
    did_txt = ", ".join(f"{k} {v:,}" for k, v in did.items() if k != "dry_run")
    peak_what = "peak during consolidate" if r["hwm_reset"] else "peak incl. open (no reset)"
    steps_txt = ", ".join(f"{k} {sec:.1f} s" for k, (sec, _) in r["steps"].items())
    peaks_txt = ", ".join(f"{k} {mib:.0f}" for k, (_, mib) in r["steps"].items())
    return [
        Figure(
            GROUP,
            "agentmem_consolidate",
            f"consolidate() over {n:,} memories (first run, wall time)",
            r["seconds"],
            "s",
            None,
            "",
            None,
            f"≤ {goal_s:.0f} s" + ("" if n == 100_000 else " (60 s per 100k)"),
            r["seconds"] <= goal_s,
            1,
            note=f"{did_txt}; steps {steps_txt}; {f.corpus.recurring:,} recurring turns in the "
            f"corpus; re-run "
            f"{r['again_s']:.2f} s, changed {changed_again or 'nothing'}; open "
            f"{r['open_s']:.2f} s (HNSW loaded)",
            extra=r,
        ),
        Figure(
            GROUP,
            "agentmem_consolidate_rss",
            f"peak RSS of consolidate() over {n:,} memories (child process)",
            r["peak"],
            "MiB",
            r["rss_after_open"],
            "RSS of the same process after open, before consolidate",
            r["peak"] / r["rss_after_open"],
            "",
            None,
            1,
            note=f"/proc/self/status VmHWM, {peak_what}; by step (MiB): {peaks_txt}; peak of "
            "the open itself "
            f"{r['peak_open']:.0f} MiB; imports {r['rss_imports']:.0f} MiB",
        ),
    ]


def recall(f: Filled, sizes: AgentMemSizes) -> list[Any]:
    """``AgentMemory.recall`` in each mode vs the memory store's own call on the same
    data dir and scope, interleaved; query embedding excluded on both sides."""
    from _data import clustered
    from _harness import Figure, median, pct

    from agentzero_store import AgentMemory

    rng = np.random.default_rng(21)
    words = [w for t in _TASKS + _THINGS for w in t.split() if len(w) > 3]
    words += [w.lower() for w in _NAMES]
    # Every other query is a first-person question, so the role signal's path (the
    # candidates' roles read, the assistant's replies left out) is in the timing too.
    queries = [
        ("what did I say about " if i % 2 else "")
        + " ".join(words[int(j)] for j in rng.choice(len(words), size=int(rng.integers(2, 4))))
        for i in range(sizes.queries)
    ]
    qvecs = clustered(sizes.queries, seed=22)
    embedder = PrecomputedQueryVectors(qvecs.shape[1])
    embedder.vectors = dict(zip(queries, qvecs, strict=False))  # a repeated text: last wins
    out: list[Any] = []
    with AgentMemory.open(
        f.data,
        passphrase="bench",
        config=_config(),
        org_id=ORG,
        agent_id=AGENT,
        clock=FixedClock(f.corpus.now),
        embedder=embedder,
    ) as mem:
        store = mem.store
        scope = {"org_id": ORG, "agent_id": AGENT}
        anchors: dict[str, tuple[str, Callable[[str], Any]]] = {
            "keyword": ("keyword_recall", lambda q: store.keyword_recall(q, K, **scope)),
            "semantic": (
                "semantic_recall",
                lambda q: store.semantic_recall(embedder.vectors[q], K, **scope),
            ),
            "hybrid": (
                "hybrid_recall",
                lambda q: store.hybrid_recall(q, embedder.vectors[q], K, **scope),
            ),
            "auto": (  # multi-signal (issue 16) beside the store's two-signal hybrid
                "hybrid_recall",
                lambda q: store.hybrid_recall(q, embedder.vectors[q], K, **scope),
            ),
        }
        for mode, (name, anchor) in anchors.items():
            ours_t: list[float] = []
            anchor_t: list[float] = []
            hits = 0
            for qi, q in enumerate(queries):
                for first in (0, 1) if qi % 2 else (1, 0):
                    t = time.perf_counter()
                    if first:
                        hits += len(mem.recall(q, K, mode=mode))
                        ours_t.append(time.perf_counter() - t)
                    else:
                        anchor(q)
                        anchor_t.append(time.perf_counter() - t)
            o, a = median(ours_t) * 1e3, median(anchor_t) * 1e3
            out.append(
                Figure(
                    GROUP,
                    f"agentmem_recall_{mode}",
                    f"recall k={K}, mode={mode}, over {f.corpus.n:,} memories, p50 "
                    "(query embedding excluded)",
                    o,
                    "ms",
                    a,
                    f"SqliteMemoryStore.{name}, same data dir and scope",
                    o / a,
                    "≤ 20 ms (issue 16)" if mode == "auto" else "",
                    o <= 20.0 if mode == "auto" else None,
                    len(ours_t),
                    note=f"p95 ours {pct(ours_t, 95) * 1e3:.2f} ms, store "
                    f"{pct(anchor_t, 95) * 1e3:.2f} ms; {hits / len(queries):.1f} hits a query; "
                    "ours filters type/archive/expiry, hydrates and logs the access; half the "
                    "queries first-person (the role signal reads the candidates' roles)",
                )
            )
    return out


def run(
    tmp: Path, *, quick: bool, progress: Callable[[str], None], n: int | None = None
) -> list[Any]:
    """Every figure of the group (10-25 s with --quick, ~4 min in full at 100k);
    ``n`` overrides the corpus size."""
    sizes = QUICK if quick else FULL
    if n:
        sizes = dataclasses.replace(sizes, corpus=n)
    figures = [single_add(tmp, sizes)]
    progress(f"agentmem: building a corpus of {sizes.corpus:,} turns")
    corpus = make_corpus(sizes.corpus)
    filled = fill(tmp, corpus, progress)
    figures.append(batched(filled))
    progress("agentmem: HNSW sidecar, then consolidate() in a child process")
    figures += consolidate(filled)
    progress("agentmem: recall in three modes vs the memory store's own recall")
    figures += recall(filled, sizes)
    shutil.rmtree(filled.data)
    return figures


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
    if sys.argv[1] == "consolidate":
        print(json.dumps(_child_consolidate(sys.argv[2], int(sys.argv[3]))))
    else:
        raise SystemExit(f"unknown command {sys.argv[1]!r}")
