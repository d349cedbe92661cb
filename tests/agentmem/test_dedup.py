"""Near-duplicate detection: the token definition, Jaccard, and groups that are sound
(every group is chained by exact Jaccard >= threshold), complete for identical texts,
deterministic, independent of input order, and fast enough for 100k memories."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.agentmem.consolidation.dedup import (
    MAX_MISS_PROBABILITY,
    jaccard,
    lsh_miss_probability,
    near_duplicate_groups,
    tokens,
)
from agentzero_store.base.errors import InvalidArgumentError

_WORD = re.compile(r"\w+")


def _reference_tokens(text: str) -> frozenset[str]:
    """The documented definition, spelled out the slow way."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return frozenset(_WORD.findall(folded))


def _brute_force_groups(items: Sequence[tuple[str, str]], threshold: float) -> list[list[str]]:
    """Connected components of the exact Jaccard graph, checking every pair."""
    sets = [tokens(text) for _, text in items]
    parent = list(range(len(items)))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for i in range(len(items)):
        for j in range(i):
            if jaccard(sets[i], sets[j]) >= threshold:
                parent[find(i)] = find(j)
    groups: dict[int, list[str]] = {}
    for i, (ident, _) in enumerate(items):
        groups.setdefault(find(i), []).append(ident)
    return [g for g in groups.values() if len(g) >= 2]


def _assert_chained(items: Sequence[tuple[str, str]], groups: list[list[str]], t: float) -> None:
    """Each group is connected by edges of exact Jaccard >= t between its own members."""
    text_of = dict(items)
    for group in groups:
        sets = [tokens(text_of[i]) for i in group]
        reached, frontier = {0}, [0]
        while frontier:
            a = frontier.pop()
            for b in range(len(group)):
                if b not in reached and jaccard(sets[a], sets[b]) >= t:
                    reached.add(b)
                    frontier.append(b)
        assert len(reached) == len(group), group


def _partition(groups: list[list[str]]) -> set[frozenset[str]]:
    return {frozenset(g) for g in groups}


# --- tokens and jaccard ---------------------------------------------------------------


def test_tokens_fold_case_and_compatibility_forms() -> None:
    assert tokens("Hello, WORLD! hello_there 42") == {"hello", "world", "hello_there", "42"}
    assert tokens("ﬁne ＡＢＣ Straße ᴬ") == {"fine", "abc", "strasse", "a"}
    assert tokens("ǰoy") == {"ǰoy"}  # casefold decomposes it; NFKC puts it back together
    assert tokens("") == frozenset() and tokens(" ... !!! ") == frozenset()


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_fast_path_matches_the_definition(text: str) -> None:
    assert tokens(text) == _reference_tokens(text)


@given(st.text(max_size=100))
def test_tokens_match_the_definition(text: str) -> None:
    assert tokens(text) == _reference_tokens(text)


def test_tokens_refuse_non_text() -> None:
    with pytest.raises(InvalidArgumentError):
        tokens(None)  # type: ignore[arg-type]


def test_jaccard_values() -> None:
    a, b = frozenset({"a", "b"}), frozenset({"b", "c"})
    assert jaccard(a, b) == pytest.approx(1 / 3)
    assert jaccard(a, a) == 1.0
    assert jaccard(frozenset(), frozenset()) == 0.0  # documented: nothing shared
    assert jaccard(a, frozenset()) == 0.0


@given(st.frozensets(st.text(max_size=3)), st.frozensets(st.text(max_size=3)))
def test_jaccard_symmetric_and_bounded(a: frozenset[str], b: frozenset[str]) -> None:
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0


# --- LSH parameters -------------------------------------------------------------------


def test_miss_probability_at_default_threshold() -> None:
    # 12 bands of 5 rows: (1 - 0.85**5) ** 12.
    assert lsh_miss_probability(0.85) == pytest.approx((1 - 0.85**5) ** 12, rel=1e-12)
    assert lsh_miss_probability(0.85) == pytest.approx(8.78e-4, rel=1e-3)
    assert lsh_miss_probability(0.9) < 3e-5
    assert lsh_miss_probability(0.95) < 2e-8
    assert lsh_miss_probability(1.0) == 0.0
    assert lsh_miss_probability(0.99, threshold=1.0) == 1.0  # no LSH at 1.0


@pytest.mark.parametrize("threshold", [0.15, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99])
def test_banding_meets_target_at_every_threshold(threshold: float) -> None:
    at = lsh_miss_probability(threshold, threshold)
    assert at <= MAX_MISS_PROBABILITY
    above = [lsh_miss_probability(s, threshold) for s in (threshold, (1 + threshold) / 2, 1.0)]
    assert above == sorted(above, reverse=True)


@pytest.mark.parametrize(("s", "t"), [(-0.1, 0.85), (1.5, 0.85), (0.5, 0.0), (0.5, 1.1)])
def test_miss_probability_refuses_bad_arguments(s: float, t: float) -> None:
    with pytest.raises(InvalidArgumentError):
        lsh_miss_probability(s, t)


# --- near_duplicate_groups: examples --------------------------------------------------


def test_groups_in_input_order() -> None:
    items = [
        ("a", "the quick brown fox jumps over the lazy dog"),
        ("b", "an unrelated memory about tea"),
        ("c", "The quick brown fox jumps over the lazy dog!"),
        ("d", "tea memory unrelated about an"),  # same token set as b
        ("e", "something else entirely"),
        ("f", "the quick brown fox jumped over the lazy dog"),
    ]
    # a/c identical sets; f differs by one token: J(a, f) = 7/9 < 0.85 but >= 0.75.
    assert near_duplicate_groups(items) == [["a", "c"], ["b", "d"]]
    assert near_duplicate_groups(items, threshold=0.75) == [["a", "c", "f"], ["b", "d"]]
    assert near_duplicate_groups(items, threshold=1.0) == [["a", "c"], ["b", "d"]]


def test_groups_are_chained_not_cliques() -> None:
    base = [f"w{i}" for i in range(20)]
    a = " ".join(base)
    b = " ".join(base[1:] + ["x1"])  # J(a, b) = 19/21
    c = " ".join(base[2:] + ["x1", "x2"])  # J(b, c) = 19/21, J(a, c) = 18/22
    items = [("a", a), ("b", b), ("c", c)]
    assert jaccard(tokens(a), tokens(c)) < 0.85
    assert near_duplicate_groups(items) == [["a", "b", "c"]]
    assert near_duplicate_groups([("a", a), ("c", c)]) == []


def test_texts_without_words_are_never_grouped() -> None:
    items = [("a", "!!!"), ("b", "!!!"), ("c", ""), ("d", "ok"), ("e", "OK.")]
    assert near_duplicate_groups(items) == [["d", "e"]]


def test_repeated_ids_are_listed_per_occurrence() -> None:
    assert near_duplicate_groups([("x", "same text"), ("x", "same text")]) == [["x", "x"]]


def test_empty_and_single_inputs() -> None:
    assert near_duplicate_groups([]) == []
    assert near_duplicate_groups([("a", "alone")]) == []


@pytest.mark.parametrize("threshold", [0.0, -0.5, 1.01, float("nan"), "0.85"])
def test_threshold_must_be_a_fraction(threshold: float) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        near_duplicate_groups([("a", "x")], threshold=threshold)
    assert err.value.hint


@pytest.mark.parametrize(
    "items", [[("a", "x", "extra")], [("a",)], ["ab"], [(1, "text")], [("a", None)]]
)
def test_malformed_items_are_refused(items: list[object]) -> None:
    with pytest.raises(InvalidArgumentError):
        near_duplicate_groups(items)  # type: ignore[arg-type]


# --- near_duplicate_groups: properties ------------------------------------------------

_VOCAB = [f"v{i}" for i in range(12)] + ["the", "a", "user", "likes"]
_texts = st.lists(st.sampled_from(_VOCAB), min_size=0, max_size=12).map(" ".join)


@st.composite
def _corpora(draw: st.DrawFn) -> list[tuple[str, str]]:
    """Small texts over a small vocabulary (so similar pairs are common), some repeated
    exactly and some repeated with different case and punctuation."""
    texts = draw(st.lists(_texts, min_size=0, max_size=25))
    for text in draw(st.lists(st.sampled_from(texts), max_size=5)) if texts else []:
        texts.insert(draw(st.integers(0, len(texts))), text.upper() + "!")
    return [(f"id{i}", text) for i, text in enumerate(texts)]


@settings(max_examples=150, deadline=None)
@given(_corpora(), st.sampled_from([0.5, 0.7, 0.85, 0.9, 1.0]))
def test_groups_are_sound_and_complete_for_identical_sets(
    items: list[tuple[str, str]], threshold: float
) -> None:
    groups = near_duplicate_groups(items, threshold)
    ids = [i for i, _ in items]
    position = {ident: n for n, ident in enumerate(ids)}
    # Shape: disjoint groups of 2+, ids in input order, groups by first member.
    flat = [i for g in groups for i in g]
    assert len(flat) == len(set(flat))
    assert all(len(g) >= 2 and g == sorted(g, key=position.__getitem__) for g in groups)
    assert [position[g[0]] for g in groups] == sorted(position[g[0]] for g in groups)
    # Sound: no false links, so no group outside the exact components.
    _assert_chained(items, groups, threshold)
    exact = _brute_force_groups(items, threshold)
    assert all(any(set(g) <= set(e) for e in exact) for g in groups)
    # Identical non-empty token sets always share a group.
    group_of = {i: n for n, g in enumerate(groups) for i in g}
    by_set: dict[frozenset[str], list[str]] = {}
    for ident, text in items:
        if tokens(text):
            by_set.setdefault(tokens(text), []).append(ident)
    for same in by_set.values():
        if len(same) > 1:
            assert len({group_of.get(i) for i in same}) == 1 and same[0] in group_of
    # Deterministic, and the partition does not depend on the input order.
    assert near_duplicate_groups(items, threshold) == groups
    shuffled = random.Random(len(items)).sample(items, len(items))
    assert _partition(near_duplicate_groups(shuffled, threshold)) == _partition(groups)


def _synthetic(n: int, seed: int) -> list[tuple[str, str]]:
    """Short texts with common words, ~5 % one-word edits and ~2 % exact re-posts."""
    rng = random.Random(seed)
    common = ["the", "a", "to", "of", "and", "in", "is", "that", "for", "it", "on", "with"]
    vocab = [f"w{i}" for i in range(5000)]
    items: list[tuple[str, str]] = []
    for i in range(n):
        roll = rng.random()
        if items and roll < 0.05:
            words = rng.choice(items)[1].split()
            words[rng.randrange(len(words))] = rng.choice(vocab)
            text = " ".join(words)
        elif items and roll < 0.07:
            text = rng.choice(items)[1].upper() + "."
        else:
            size = rng.randint(10, 30)
            text = " ".join(
                rng.choice(common) if rng.random() < 0.4 else rng.choice(vocab) for _ in range(size)
            )
        items.append((f"m{i}", text))
    return items


def test_matches_brute_force_on_a_synthetic_corpus() -> None:
    items = _synthetic(700, seed=7)
    for threshold in (0.7, 0.85, 0.9):
        assert near_duplicate_groups(items, threshold) == _brute_force_groups(items, threshold)


def test_twenty_thousand_texts_find_the_planted_duplicates() -> None:
    # Its speed is a benchmark figure (benchmarks/, group agentmem), not a timed test.
    items = _synthetic(20_000, seed=1)
    groups = near_duplicate_groups(items)
    assert sum(map(len, groups)) > 0.05 * len(items)  # the planted duplicates were found
    _assert_chained(items, groups[:200], 0.85)
