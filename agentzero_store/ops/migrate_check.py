"""Checking a migrated memory store against its source (``migrate.migrate_store``).

Three checks, each raising ``MigrationMismatchError`` naming what differs:

1. **Counts**: every (org, agent) scope holds as many live memories on both sides.
2. **Memories**: every memory is on both sides with the same fields (content, role,
   scope, kind, source, metadata, times, embedding model) and the same vector (compared
   through a fixed random projection to 8 numbers, within float32 rounding).
3. **Answers**: a sample of memories (spread over the store) become queries, asked in
   their own (org, agent) scope on both sides:

   - semantic: the memory's own vector, top ``K``, exact search on both sides (both
     stores are opened with ``hnsw=False``: the check compares the data, not two
     approximate indexes). The two rankings must be equal: the same scores, and the
     same ids but for rows tied at the cut-off.
   - keyword: a rare word of the memory (ASCII letters, found in fewer than
     ``KEYWORD_K`` memories of the scope). The two backends rank with different
     analyzers (SQLite: FTS5's porter stemmer; PostgreSQL: the blinded Snowball terms),
     so their scores and the rows their stemmers conflate differ by design; what must
     not differ is which memories holding that exact word are found: the same set on
     both sides, the sampled memory in it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ..base.errors import MigrationMismatchError
from ..base.ranking import STOPWORDS
from ..memory.records import MemoryEntry, MemoryHit, to_us
from ..memory.seam import MemoryStore

Store = MemoryStore

SAMPLE = 20  # memories turned into sample queries
K = 5  # semantic answers compared per query
KEYWORD_K = 50  # a word found this often in a scope is too common to compare every hit
SCORE_EPS = 1e-4  # float32 cosines of the same vectors, computed by two engines
SKETCH_DIMS, SKETCH_EPS = 8, 1e-4
PAGE = 1_000
TOKEN = re.compile(r"[^\W_]+")  # a run of letters and digits: a token to both analyzers


def check(src: Store, dst: Store, *, sample: int = SAMPLE) -> dict[str, int]:
    """Run the three checks; how many memories and queries were compared."""
    _check_counts(src, dst)
    sketch = _Sketch()
    mine, samples = _digests(src, sketch, sample)
    theirs, _ = _digests(dst, sketch, 0)
    _check_memories(mine, theirs)
    semantic = keyword = 0
    common: set[tuple[str, str, str]] = set()
    for entry, vector in samples:
        if vector is not None:
            _check_semantic(src, dst, entry, vector)
            semantic += 1
        keyword += _check_keyword(src, dst, entry, common)
    return {"memories": len(mine), "semantic_queries": semantic, "keyword_queries": keyword}


def _check_counts(src: Store, dst: Store) -> None:
    a = {(o, g): n for o, g, n in src.scopes()}
    b = {(o, g): n for o, g, n in dst.scopes()}
    wrong = [
        (s, a.get(s, 0), b.get(s, 0)) for s in sorted(a.keys() | b.keys()) if a.get(s) != b.get(s)
    ]
    if wrong:
        shown = "; ".join(f"org {o!r} agent {g!r}: {x} vs {y}" for (o, g), x, y in wrong[:5])
        raise MigrationMismatchError(
            f"{len(wrong)} scope(s) hold different numbers of memories (source vs target): {shown}"
        )


class _Sketch:
    """A fixed random projection of vectors to ``SKETCH_DIMS`` numbers: equal vectors
    give equal sketches, and a change anywhere in a vector changes its sketch."""

    def __init__(self) -> None:
        self._by_dim: dict[int, npt.NDArray[np.float32]] = {}

    def __call__(self, v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        dim = int(v.shape[0])
        if dim not in self._by_dim:
            rng = np.random.default_rng(dim)
            self._by_dim[dim] = rng.normal(size=(dim, SKETCH_DIMS)).astype(np.float32)
        unit = v / max(float(np.linalg.norm(v)), 1e-12)
        return (unit @ self._by_dim[dim]).astype(np.float32)


Digest = tuple[str, npt.NDArray[np.float32] | None]


def _digests(
    store: Store, sketch: _Sketch, sample: int
) -> tuple[dict[str, Digest], list[tuple[MemoryEntry, Any]]]:
    """Every memory's digest (fields hash, vector sketch) by id, and ``sample`` of them
    (entry, vector) spread evenly over the store."""
    out: dict[str, Digest] = {}
    total = store.count()
    step = max(1, total // sample) if sample else 0
    picked: list[tuple[MemoryEntry, Any]] = []
    for i, (e, v) in enumerate(_all(store)):
        assert e.id is not None
        out[e.id] = (_fields_hash(e, v is not None), None if v is None else sketch(v))
        if step and i % step == 0 and len(picked) < sample:
            picked.append((e, v))
    return out, picked


def _all(store: Store) -> Iterator[tuple[MemoryEntry, Any]]:
    after = 0
    while rows := store.entries_after(after, PAGE):
        after = rows[-1][0]
        for _, e, v in rows:
            yield e, v


def _fields_hash(e: MemoryEntry, has_vector: bool) -> str:
    fields = [
        e.content,
        e.role,
        e.org_id,
        e.agent_id,
        e.conversation_id,
        e.kind,
        e.source,
        json.loads(json.dumps(dict(e.metadata))),
        to_us(e.created_at) if e.created_at else None,
        to_us(e.expires_at) if e.expires_at else None,
        e.embedding_model if has_vector else None,
    ]
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()


def _check_memories(mine: dict[str, Digest], theirs: dict[str, Digest]) -> None:
    missing = sorted(mine.keys() - theirs.keys())
    extra = sorted(theirs.keys() - mine.keys())
    changed = []
    for eid in sorted(mine.keys() & theirs.keys()):
        (fa, va), (fb, vb) = mine[eid], theirs[eid]
        same_vec = (va is None) == (vb is None) and (
            va is None or vb is None or bool(np.allclose(va, vb, atol=SKETCH_EPS, rtol=0))
        )
        if fa != fb or not same_vec:
            changed.append(eid)
    problems = [
        f"{len(ids)} {what} (ids {', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})"
        for ids, what in (
            (missing, "missing from the target"),
            (extra, "only in the target"),
            (changed, "differ (fields or vector)"),
        )
        if ids
    ]
    if problems:
        raise MigrationMismatchError("memories differ: " + "; ".join(problems))


def _check_semantic(src: Store, dst: Store, e: MemoryEntry, vector: Any) -> None:
    scope = {"org_id": e.org_id, "agent_id": e.agent_id}
    a = _ranked(src.semantic_recall(vector, K, **scope))
    b = _ranked(dst.semantic_recall(vector, K, **scope))
    if not same_ranking(a, b):
        raise MigrationMismatchError(
            f"the semantic query by memory {e.id!r} (org {e.org_id!r}, agent {e.agent_id!r}) "
            f"is answered differently: source {a}, target {b}"
        )


def _ranked(hits: list[MemoryHit]) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 6)) for h in hits]


def same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """Whether two exact rankings (id, score), best first, are the same answer: as many
    rows, the same scores (within ``SCORE_EPS``), and the same ids above the last score
    (rows tied at the cut-off may be any of the tied ones, in any order)."""
    if len(a) != len(b):
        return False
    if any(abs(x[1] - y[1]) > SCORE_EPS for x, y in zip(a, b, strict=True)):
        return False
    if not a:
        return True
    cut = min(a[-1][1], b[-1][1]) + SCORE_EPS
    return {i for i, s in a if s > cut} == {i for i, s in b if s > cut}


def query_words(text: str) -> Iterator[tuple[str, re.Pattern[str]]]:
    """The words of ``text`` worth a keyword query (ASCII letters, 4 to 20 of them, not a
    stop word: a keyword query leaves those out and finds nothing by them), longest
    first, each with a pattern that finds it as a whole word in a text."""
    words = {
        w
        for w in TOKEN.findall(text)
        if w.isascii() and w.isalpha() and 4 <= len(w) <= 20 and w.lower() not in STOPWORDS
    }
    for word in sorted(words, key=lambda w: (-len(w), w)):
        yield word, re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", re.IGNORECASE)


def _check_keyword(
    src: Store, dst: Store, e: MemoryEntry, common: set[tuple[str, str, str]]
) -> int:
    """Compare one rare word of ``e`` (1), or none if it has no rare word (0). An
    archived memory's row holds a pointer, not its text, while the keyword index keeps
    the text's words: it is not asked here (``migrate_check_layer`` asks for it through
    ``AgentMemory``, whose recall reads the text back). ``common``: (org, agent, word)
    found too common already (not asked again: each ask scores the whole scope)."""
    if e.kind == "archived":
        return 0
    scope = {"org_id": e.org_id, "agent_id": e.agent_id}
    for word, exact in query_words(e.content):
        if (e.org_id, e.agent_id, word.casefold()) in common:
            continue
        a = src.keyword_recall(word, KEYWORD_K, **scope)
        b = dst.keyword_recall(word, KEYWORD_K, **scope)
        if len(a) >= KEYWORD_K or len(b) >= KEYWORD_K:
            common.add((e.org_id, e.agent_id, word.casefold()))
            continue  # too common to see every hit: try a rarer word
        found_a = {h.id for h in a if exact.search(h.entry.content)}
        found_b = {h.id for h in b if exact.search(h.entry.content)}
        if found_a != found_b or e.id not in found_a:
            raise MigrationMismatchError(
                f"the keyword query for a word of memory {e.id!r} (org {e.org_id!r}, agent "
                f"{e.agent_id!r}) finds different memories holding it: source "
                f"{sorted(found_a)}, target {sorted(found_b)}"
            )
        return 1
    return 0


__all__ = ["K", "KEYWORD_K", "SAMPLE", "check", "query_words", "same_ranking"]
