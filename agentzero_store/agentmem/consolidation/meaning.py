"""Recurring facts, said in the same words or in other words: the groups consolidation
promotes.

Two memories are one recurring fact when

- their word sets are near-identical (Jaccard >= ``jaccard``, today's rule, ``dedup``),
  or both hold a vector and their cosine is >= ``cosine`` and they share a content word;
- and the words that decide a fact agree (``guards.signature``): negation, a changed
  state, wishes, stance, numbers, dates and times, quantities; for a link by meaning also
  their names, and the entities the store recorded for them (speaker and ``about``).

Groups are the connected components of those links. Deterministic: ids in, the same
groups out on every run, process and machine (no random state; a cosine within 1e-6
of the threshold is recomputed from correctly rounded sums, which no summation order
changes; the vectors are used as stored, not rescaled first). Sub-quadratic in
practice: a pair is only compared by meaning when both texts have the same
``signature`` key and share a content word that at most ``BLOCK_MAX`` of the texts hold
(a word in more of them is too common to single out a fact).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ...base.errors import InvalidArgumentError
from . import dedup
from .guards import Signature, signature

BLOCK_MAX = 256
"""Texts sharing one content word (and one signature key) that are compared pair by pair;
a word held by more of them proposes no pair."""

SMALL_PART = 64
"""A near-duplicate group split by its decisive words is regrouped pair by pair in parts
of up to this many texts, by ``dedup.near_duplicate_groups`` in larger ones."""

_EXACT_BAND = 1e-6  # cosines this close to the threshold are recomputed exactly
_CHUNK = 1 << 15  # pairs whose dot products are computed at once (~50 MB of rows)

Vectors = Callable[[Sequence[str]], Mapping[str, bytes]]
"""The stored float32 vectors (as bytes) of those of some memories that have one."""

Entities = Callable[[Sequence[str]], Mapping[str, tuple[str, ...]]]
"""The recorded entities (speaker, ``about``) of some memories by id."""

_F32 = npt.NDArray[np.float32]
_I64 = npt.NDArray[np.int64]


def recurring_groups(
    items: Sequence[tuple[str, str]],
    *,
    jaccard: float,
    cosine: float,
    vectors: Vectors | None = None,
    entities: Entities | None = None,
) -> list[list[str]]:
    """Groups (of two or more ids) of ``items`` (id, text) that state one fact; see the
    module. Members keep the order of ``items``; groups are ordered by their first
    member. ``vectors`` gives the float32 vector bytes of the ids asked (only those a
    pair by meaning could join are asked; an id without one is left to the word rule);
    without it, or with ``cosine`` above 1, the word rule alone links.

    Raises InvalidArgumentError if ``cosine`` is not above 0 or the vectors differ in
    length.
    """
    if not cosine > 0.0:  # also refuses NaN
        raise InvalidArgumentError(
            f"cosine must be above 0, got {cosine!r}",
            hint="pass a cosine such as 0.9 (above 1.0: the lexical rule alone)",
        )
    ids = [i for i, _ in items]
    texts = [t for _, t in items]
    sigs = [signature(t) for t in texts]
    parent = list(range(len(items)))

    def join(a: int, b: int) -> None:
        ra, rb = _find(parent, a), _find(parent, b)
        parent[ra] = parent[rb] = min(ra, rb)

    for a, b in _lexical_links(ids, texts, sigs, jaccard):
        join(a, b)
    if vectors is not None and cosine <= 1.0:
        for a, b in _meaning_links(ids, sigs, cosine, vectors, entities):
            join(a, b)
    by_root: dict[int, list[str]] = {}
    for k, ident in enumerate(ids):
        by_root.setdefault(_find(parent, k), []).append(ident)
    return [g for g in by_root.values() if len(g) >= 2]


def _find(parent: list[int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]  # path halving
        x = parent[x]
    return x


def _lexical_links(
    ids: list[str], texts: list[str], sigs: list[Signature], jaccard: float
) -> list[tuple[int, int]]:
    """Today's near-duplicate groups, split where the decisive words differ: a group
    whose members disagree is regrouped within each agreeing part (the same Jaccard
    rule, so a part falls apart only where its own links do)."""
    at = {ident: k for k, ident in enumerate(ids)}
    links: list[tuple[int, int]] = []
    for group in dedup.near_duplicate_groups(list(zip(ids, texts, strict=True)), jaccard):
        parts: dict[tuple[str, ...], list[int]] = {}
        for ident in group:
            k = at[ident]
            parts.setdefault(sigs[k].key[:-1], []).append(k)  # names: case is unreliable
        if len(parts) == 1:
            members = next(iter(parts.values()))
            links += [(members[0], k) for k in members[1:]]
            continue
        for members in parts.values():
            if len(members) > SMALL_PART:
                sub = [(ids[k], texts[k]) for k in members]
                for g in dedup.near_duplicate_groups(sub, jaccard):
                    links += [(at[g[0]], at[i]) for i in g[1:]]
                continue
            # Pair by pair: the same exact test, without MinHash's fixed cost.
            sets = [dedup.tokens(texts[k]) for k in members]
            links += [
                (members[x], members[y])
                for y in range(1, len(members))
                for x in range(y)
                if dedup.jaccard(sets[x], sets[y]) >= jaccard
            ]
    return links


def _meaning_links(
    ids: list[str],
    sigs: list[Signature],
    cosine: float,
    vectors: Vectors,
    entities: Entities | None,
) -> list[tuple[int, int]]:
    """Pairs of items with equal keys, a shared content word (not a name) that few
    items hold, vectors at cosine >= ``cosine`` and equal entities."""
    pairs = _candidate_pairs(sigs)
    if not len(pairs):
        return []
    # Only the vectors a candidate pair needs are read (a fraction of a large scope).
    wanted = np.unique(pairs).tolist()
    got = vectors([ids[k] for k in wanted])
    rows = [k for k in wanted if got.get(ids[k]) is not None]
    pos = np.full(len(ids), -1, dtype=np.int64)
    pos[rows] = np.arange(len(rows))
    a, b = pos[pairs[:, 0]], pos[pairs[:, 1]]
    has = (a >= 0) & (b >= 0)
    pairs, a, b = pairs[has], a[has], b[has]
    if not len(pairs):
        return []
    vecs = _rows([got[ids[k]] for k in rows])
    norms = np.linalg.norm(vecs.astype(np.float64), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.nan_to_num(_dots(vecs, a, b) / (norms[a] * norms[b]))
    near = np.abs(cos - cosine) < _EXACT_BAND
    for j in np.flatnonzero(near).tolist():
        cos[j] = exact_cosine(vecs[a[j]], vecs[b[j]])
    kept = [(x, y) for (x, y), c in zip(pairs.tolist(), cos.tolist(), strict=True) if c >= cosine]
    if entities is None or not kept:
        return kept
    seen = entities(sorted({ids[k] for pair in kept for k in pair}))
    return [(x, y) for x, y in kept if seen.get(ids[x], ()) == seen.get(ids[y], ())]


def _rows(raw: Sequence[bytes]) -> _F32:
    """The vectors as float32 rows."""
    if len({len(v) for v in raw}) != 1:
        raise InvalidArgumentError(
            "memory vectors differ in length", hint="re-embed the scope with one model"
        )
    m = np.empty((len(raw), len(raw[0]) // 4), dtype=np.float32)
    for k, v in enumerate(raw):
        m[k] = np.frombuffer(v, dtype=np.float32)
    return m


def exact_cosine(x: _F32, y: _F32) -> float:
    """The cosine of two float32 vectors, the same on every machine: each product of two
    float32 is exact in float64 and ``math.fsum`` rounds their sum correctly, whatever
    order a CPU's vector unit would add them in; sqrt and division are IEEE-exact."""
    a, b = x.astype(np.float64), y.astype(np.float64)
    xy, xx, yy = (math.fsum((u * v).tolist()) for u, v in ((a, b), (a, a), (b, b)))
    return xy / math.sqrt(xx * yy) if xx > 0 and yy > 0 else 0.0


def _candidate_pairs(sigs: list[Signature]) -> _I64:
    """(x, y), x < y, of items that share a key and a content word other than a name
    held by at most ``BLOCK_MAX`` items of that key; each pair once, sorted."""
    by_key: dict[tuple[str, ...], list[int]] = {}
    for k, sig in enumerate(sigs):
        by_key.setdefault(sig.key, []).append(k)
    blocks: list[list[int]] = []
    for key, same in by_key.items():
        if len(same) < 2:
            continue  # most keys: one text (its numbers, dates or names are its own)
        by_word: dict[str, list[int]] = {}
        named = key[-1].split(",")
        for k in same:
            # A shared name says who, not what: the key holds the names already.
            for word in sigs[k].content.difference(named):
                by_word.setdefault(word, []).append(k)
        blocks += by_word.values()
    parts: list[_I64] = []
    for members in blocks:
        n = len(members)
        if n < 2 or n > BLOCK_MAX:
            continue
        m = np.asarray(members, dtype=np.int64)
        i, j = np.triu_indices(n, 1)
        parts.append(np.stack([m[i], m[j]], axis=1))
    if not parts:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.concatenate(parts)
    pairs.sort(axis=1)
    return np.unique(pairs, axis=0)


def _dots(vecs: _F32, a: _I64, b: _I64) -> npt.NDArray[np.float64]:
    """Dot product of each (a[k], b[k]) row pair, in float64, a chunk at a time."""
    out = np.empty(len(a), dtype=np.float64)
    for s in range(0, len(a), _CHUNK):
        x = vecs[a[s : s + _CHUNK]].astype(np.float64)
        y = vecs[b[s : s + _CHUNK]].astype(np.float64)
        out[s : s + _CHUNK] = np.einsum("ij,ij->i", x, y)
    return out


__all__ = ["BLOCK_MAX", "Entities", "Vectors", "exact_cosine", "recurring_groups"]
