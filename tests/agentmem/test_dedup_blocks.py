"""The bucket-wise exact Jaccard (``jaccard_blocks``) gives the very groups that checking
every LSH candidate pair with ``jaccard`` gives: the same candidates, the same float64
test, so the same components, listed the same way. Checked against a plain reference
(the pair-by-pair verification, written out here) on random and adversarial corpora,
with tiles, strips and the dense-tile fallback shrunk so that every code path runs."""

from __future__ import annotations

import math
import random
import tracemalloc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.agentmem.consolidation import dedup, jaccard_blocks
from agentzero_store.agentmem.consolidation.dedup import jaccard, near_duplicate_groups, tokens
from agentzero_store.agentmem.consolidation.jaccard_blocks import least_common


def _reference_groups(items: Sequence[tuple[str, str]], threshold: float) -> list[list[str]]:
    """The LSH candidates of ``near_duplicate_groups``, each pair verified one at a time
    with ``jaccard`` (no skipping, no size bound), components by a plain union-find."""
    slot_of: dict[frozenset[str], int] = {}
    sets: list[frozenset[str]] = []
    slots = []
    for _, text in items:
        s = tokens(text)
        if not s:
            slots.append(-1)
            continue
        if s not in slot_of:
            slot_of[s] = len(sets)
            sets.append(s)
        slots.append(slot_of[s])
    parent = list(range(len(sets)))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    if threshold < 1.0 and len(sets) > 1:
        token_sets, vocab = dedup._token_sets(sets)
        bands, rows = dedup._banding(threshold)
        for bucket in dedup._buckets(dedup._signatures(token_sets, vocab), bands, rows):
            for i, x in enumerate(bucket):
                for y in bucket[:i]:
                    if jaccard(sets[x], sets[y]) >= threshold:
                        rx, ry = find(x), find(y)
                        parent[max(rx, ry)] = min(rx, ry)
    groups: dict[int, list[str]] = {}
    for (ident, _), slot in zip(items, slots, strict=True):
        if slot >= 0:
            groups.setdefault(find(slot), []).append(ident)
    return [g for g in groups.values() if len(g) >= 2]


@contextmanager
def _blocks(
    small: int = 1, tile: int = 1_024, strip: int = 1 << 20, dense: int = 1 << 24, gather: int = 1
) -> Iterator[None]:
    """Every bucket above ``small`` members through the matrix path, with these sizes."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dedup, "SMALL_BUCKET", small)
        mp.setattr(jaccard_blocks, "TILE", tile)
        mp.setattr(jaccard_blocks, "STRIP", strip)
        mp.setattr(jaccard_blocks, "DENSE_LIMIT", dense)
        mp.setattr(jaccard_blocks, "_GATHER", gather)
        yield


# Thresholds a pair can hit exactly (c / u for small c, u) and the floats either side of
# them: where a test that rounds differently from ``jaccard`` would disagree.
_EXACT = sorted({c / u for u in range(2, 30) for c in range(1, u) if c / u >= 0.3})
_EDGES = sorted({x for t in _EXACT for x in (t, math.nextafter(t, 0), math.nextafter(t, 1))})


def test_least_common_is_the_float_test() -> None:
    sums = np.arange(0, 120, dtype=np.int64)
    rng = random.Random(3)
    thresholds = [*_EDGES, 1e-9, 0.05, 0.5, 0.85, 0.999999, 1.0]
    thresholds += [rng.uniform(0.01, 1.0) for _ in range(200)]
    for t in thresholds:
        got = least_common(sums, t).tolist()
        for s in range(2, len(sums)):
            want = next((c for c in range(s) if c / (s - c) >= t), s + 1)
            assert got[s] == want, (t, s)


_WORDS = [f"w{i}" for i in range(40)] + ["the", "to", "user", "likes", "a"]


@st.composite
def _near_duplicates(draw: st.DrawFn) -> list[tuple[str, str]]:
    """A few base texts, each repeated with small edits (a word dropped, added or
    swapped), some exact and case-changed copies, and unrelated texts between: buckets
    of many distinct, similar sets, with pairs on both sides of every threshold."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    texts: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        base = rng.sample(_WORDS, rng.randint(3, 24))
        for _ in range(draw(st.integers(1, 30))):
            words = list(base)
            for _ in range(rng.randint(0, 3)):
                roll = rng.random()
                if roll < 0.3 and len(words) > 1:
                    words.pop(rng.randrange(len(words)))
                elif roll < 0.6:
                    words.insert(rng.randrange(len(words) + 1), rng.choice(_WORDS))
                else:
                    words[rng.randrange(len(words))] = rng.choice(_WORDS)
            text = " ".join(words)
            texts.append(text.upper() + "!" if rng.random() < 0.1 else text)
    for _ in range(draw(st.integers(0, 10))):
        texts.insert(rng.randrange(len(texts) + 1), " ".join(rng.sample(_WORDS, 4)))
    if texts and rng.random() < 0.3:
        texts += [texts[0]] * 3  # exact re-posts
    texts.append("!!!")  # no words: never grouped
    return [(f"m{i}", t) for i, t in enumerate(texts)]


@settings(max_examples=80, deadline=None)
@given(
    _near_duplicates(),
    st.one_of(st.sampled_from([t for t in _EDGES if t >= 0.5]), st.floats(0.5, 1.0)),
    st.sampled_from([2, 7, 1_024]),  # tile
    st.sampled_from([3, 64, 1 << 18]),  # strip
    st.sampled_from([0, 60, 1 << 24]),  # dense limit (0: every tile pair by pair)
    st.sampled_from([0, 1 << 14]),  # gather: per column size, or per pair
)
def test_blocks_give_the_groups_of_the_pairwise_check(
    items: list[tuple[str, str]], threshold: float, tile: int, strip: int, dense: int, gather: int
) -> None:
    want = _reference_groups(items, threshold)
    with _blocks(tile=tile, strip=strip, dense=dense, gather=gather):
        assert near_duplicate_groups(items, threshold) == want
    assert near_duplicate_groups(items, threshold) == want  # the default split too


def test_blocks_on_a_synthetic_corpus_with_big_buckets() -> None:
    """Template sentences (shared frame, different slot words) make LSH buckets of
    hundreds of texts, most pairs just below the threshold, planted edits above it."""
    rng = random.Random(5)
    frames = [
        "on {d} {p} told me the {t} in {l} costs {n} euros and I should buy it",
        "remind me that {p} wants the {t} from {l} before {d} at {n}",
        "{p} said the meeting in {l} moved to {d} so bring the {t} number {n}",
    ]
    slots = {
        "p": [f"person{i}" for i in range(12)],
        "t": [f"thing{i}" for i in range(12)],
        "l": [f"place{i}" for i in range(12)],
        "d": ["monday", "tuesday", "friday", "sunday"],
    }
    texts: list[str] = []
    for i in range(1_500):
        frame = frames[i % len(frames)]
        text = frame.format(n=rng.randint(1, 60), **{k: rng.choice(v) for k, v in slots.items()})
        if rng.random() < 0.05 and texts:
            text = rng.choice(texts) + rng.choice([" ok", " please", " thanks"])
        texts.append(text)
    items = [(f"t{i}", t) for i, t in enumerate(texts)]
    for threshold in (0.75, 0.85):
        want = _reference_groups(items, threshold)
        assert any(len(g) > 2 for g in want)
        assert near_duplicate_groups(items, threshold) == want
        with _blocks(tile=300, strip=5_000):
            assert near_duplicate_groups(items, threshold) == want


def test_a_bucket_of_thousands_of_near_identical_texts_stays_small_in_memory() -> None:
    """3,000 distinct texts that all match each other (20 shared words and one of their
    own: J = 20/22), plus 5,000 copies of one of them: one group, and the check never
    holds anything like the 4.5M pairs at once (numpy reports its buffers to
    tracemalloc; one float64 3,000 × 3,000 matrix alone would be 69 MiB)."""
    shared = " ".join(f"common{i}" for i in range(20))
    items = [(f"n{i}", f"{shared} own{i}") for i in range(3_000)]
    items += [(f"c{i}", items[0][1]) for i in range(5_000)]
    tracemalloc.start()
    try:
        groups = near_duplicate_groups(items)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert groups == [[i for i, _ in items]]
    assert peak < 48 * 2**20, f"peak {peak / 2**20:.0f} MiB"
