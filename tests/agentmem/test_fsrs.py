"""FSRS decay, salience and importance: exact formula values, clamps, caps, and the
properties consolidation and recall rely on (retrievability falls with time, recall
feedback never shrinks stability, feedback at R = 1 adds nothing)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.agentmem.fsrs import (
    MAX_STABILITY_DAYS,
    Salience,
    difficulty_after,
    effective_stability,
    importance_score,
    retrievability,
    salience,
    stability_after_recall,
    text_salience,
)
from agentzero_store.base.errors import InvalidArgumentError

stabilities = st.floats(min_value=1e-3, max_value=MAX_STABILITY_DAYS)
elapsed = st.floats(min_value=0.0, max_value=1e6)
difficulties = st.floats(min_value=-5.0, max_value=20.0)
unit = st.floats(min_value=0.0, max_value=1.0)
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)


def _growth(s: float, d: float, r: float) -> float:
    """The update written out independently of the module."""
    return s * (1 + 0.5 * (11 - d) * math.pow(s, -0.2) * (math.exp(0.2 * (1 - r)) - 1))


# --- retrievability -------------------------------------------------------------------


@pytest.mark.parametrize("s", [0.5, 1.0, 3.0, 42.0, 36_500.0])
def test_retrievability_anchor_points(s: float) -> None:
    assert retrievability(0.0, s) == 1.0
    assert retrievability(s, s) == pytest.approx(0.9, rel=1e-12)
    assert retrievability(9 * s, s) == 0.5
    assert retrievability(81 * s, s) == pytest.approx(0.1, rel=1e-12)


def test_negative_elapsed_counts_as_zero() -> None:
    assert retrievability(-3.0, 2.0) == 1.0


@pytest.mark.parametrize(
    ("t", "s"), [(1.0, 0.0), (1.0, -1.0), (math.nan, 1.0), (1.0, math.nan), (math.inf, 1.0)]
)
def test_retrievability_refuses_bad_arguments(t: float, s: float) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        retrievability(t, s)
    assert err.value.code == "invalid_argument" and err.value.hint


@given(elapsed, elapsed, stabilities)
def test_retrievability_in_unit_interval_and_decreasing_in_time(
    t1: float, t2: float, s: float
) -> None:
    lo, hi = sorted((t1, t2))
    r_lo, r_hi = retrievability(lo, s), retrievability(hi, s)
    assert 0.0 < r_hi <= r_lo <= 1.0
    if hi - lo > 1e-9 * (hi + s):  # a step that float arithmetic can resolve
        assert r_hi < r_lo


@given(elapsed.filter(lambda t: t > 0), stabilities, stabilities)
def test_retrievability_increases_with_stability(t: float, s1: float, s2: float) -> None:
    lo, hi = sorted((s1, s2))
    assert retrievability(t, lo) <= retrievability(t, hi)


# --- effective stability --------------------------------------------------------------


def test_effective_stability_values_and_clamp() -> None:
    assert effective_stability(10.0, 0.5, 1.0) == 15.0
    assert effective_stability(10.0, 0.0, 3.0) == 10.0
    assert effective_stability(10.0, 2.0, 1.0) == 20.0  # salience clamped to 1
    assert effective_stability(10.0, -1.0, 1.0) == 10.0  # salience clamped to 0
    assert effective_stability(10.0, 1.0, 0.0) == 10.0


@pytest.mark.parametrize(
    ("s", "sal", "beta"), [(0.0, 0.5, 1.0), (10.0, 0.5, -0.1), (10.0, math.nan, 1.0)]
)
def test_effective_stability_refuses_bad_arguments(s: float, sal: float, beta: float) -> None:
    with pytest.raises(InvalidArgumentError):
        effective_stability(s, sal, beta)


@given(stabilities, finite, st.floats(min_value=0.0, max_value=10.0))
def test_effective_stability_never_below_stability(s: float, sal: float, beta: float) -> None:
    out = effective_stability(s, sal, beta)
    assert s <= out <= s * (1 + beta) * (1 + 1e-12)


# --- stability after recall -----------------------------------------------------------


@pytest.mark.parametrize(
    ("s", "d", "r"), [(10.0, 5.0, 0.9), (1.0, 1.0, 0.0), (3.5, 10.0, 0.5), (200.0, 7.2, 0.7)]
)
def test_stability_after_recall_matches_formula(s: float, d: float, r: float) -> None:
    assert stability_after_recall(s, d, r) == pytest.approx(_growth(s, d, r), rel=1e-12)


def test_stability_after_recall_clamps_difficulty_and_r() -> None:
    assert stability_after_recall(10.0, -4.0, 0.5) == stability_after_recall(10.0, 1.0, 0.5)
    assert stability_after_recall(10.0, 99.0, 0.5) == stability_after_recall(10.0, 10.0, 0.5)
    assert stability_after_recall(10.0, 5.0, -2.0) == stability_after_recall(10.0, 5.0, 0.0)
    assert stability_after_recall(10.0, 5.0, 3.0) == 10.0  # r clamped to 1: no growth


def test_stability_is_capped() -> None:
    assert stability_after_recall(35_000.0, 1.0, 0.0) == MAX_STABILITY_DAYS
    assert stability_after_recall(MAX_STABILITY_DAYS, 1.0, 0.0) == MAX_STABILITY_DAYS
    # Above the cap (set elsewhere): never shrunk by a recall, never grown either.
    assert stability_after_recall(50_000.0, 1.0, 0.0) == 50_000.0


def test_lower_retrievability_and_difficulty_grow_more() -> None:
    by_r = [stability_after_recall(10.0, 5.0, r) for r in (0.0, 0.3, 0.6, 0.9, 1.0)]
    assert by_r == sorted(by_r, reverse=True) and by_r[-1] == 10.0
    by_d = [stability_after_recall(10.0, d, 0.5) for d in (1.0, 4.0, 7.0, 10.0)]
    assert by_d == sorted(by_d, reverse=True) and by_d[-1] > 10.0


def test_relative_growth_shrinks_as_stability_grows() -> None:
    ratios = [stability_after_recall(s, 5.0, 0.5) / s for s in (1.0, 10.0, 100.0, 1000.0)]
    assert ratios == sorted(ratios, reverse=True)


@given(stabilities, difficulties, st.floats(min_value=-1.0, max_value=2.0))
def test_stability_after_recall_bounds(s: float, d: float, r: float) -> None:
    out = stability_after_recall(s, d, r)
    assert s <= out <= MAX_STABILITY_DAYS


@given(stabilities, difficulties, st.integers(min_value=1, max_value=50))
def test_feedback_at_full_retrievability_never_grows_stability(
    s: float, d: float, times: int
) -> None:
    """The rich-get-richer guard: a memory confirmed again and again right after its
    last review (R = 1) keeps its stability; only spaced recalls strengthen it."""
    out = s
    for _ in range(times):
        out = stability_after_recall(out, d, 1.0)
        d = difficulty_after(d, used=True)
    assert out == s


def test_spaced_recalls_grow_but_stay_capped() -> None:
    s, d = 1.0, 5.0
    for _ in range(500):
        r = retrievability(s, s)  # review when R has fallen to 0.9
        s, d = stability_after_recall(s, d, r), difficulty_after(d, used=True)
    assert 1.0 < s <= MAX_STABILITY_DAYS


@pytest.mark.parametrize(
    ("s", "d", "r"), [(0.0, 5.0, 0.5), (1.0, math.nan, 0.5), (1.0, 5.0, math.inf)]
)
def test_stability_after_recall_refuses_bad_arguments(s: float, d: float, r: float) -> None:
    with pytest.raises(InvalidArgumentError):
        stability_after_recall(s, d, r)


# --- difficulty -----------------------------------------------------------------------


def test_difficulty_steps_and_clamps() -> None:
    assert difficulty_after(5.0, used=True) == 4.5
    assert difficulty_after(5.0, used=False) == 6.0
    assert difficulty_after(1.0, used=True) == 1.0
    assert difficulty_after(9.5, used=False) == 10.0
    assert difficulty_after(50.0, used=True) == 9.5  # input clamped to 10 first
    assert difficulty_after(-3.0, used=False) == 2.0  # input clamped to 1 first
    with pytest.raises(InvalidArgumentError):
        difficulty_after(math.nan, used=True)


@given(difficulties, st.booleans())
def test_difficulty_stays_in_range(d: float, used: bool) -> None:
    assert 1.0 <= difficulty_after(d, used) <= 10.0


# --- salience -------------------------------------------------------------------------


def test_salience_total_is_the_weighted_sum() -> None:
    sal = salience("On Tuesday Alice paid 42 euros for the tickets.", 0.5, 0.8)
    assert isinstance(sal, Salience)
    assert (sal.novelty, sal.importance) == (0.8, 0.5)
    expected = 0.4 * 0.8 + 0.3 * 0.5 + 0.1 * sal.extremity + 0.2 * sal.specificity
    assert sal.total == pytest.approx(expected, rel=1e-12)


def test_salience_clamps_caller_scores() -> None:
    sal = salience("fine", 7.0, -3.0)
    assert (sal.importance, sal.novelty) == (1.0, 0.0)


def test_extremity_signals() -> None:
    def ext(text: str) -> float:
        return salience(text, 0.0, 0.0).extremity

    assert ext("the build finished and the report was sent") == 0.0
    assert ext("the build finished!") == 0.25
    assert ext("the build finished!!!!!!") == 0.75  # three marks at most
    assert ext("I absolutely love this editor") == 0.5
    assert ext("NEVER deploy on a Friday") == 0.75  # shouted and intense
    assert ext("the API returns JSON over SQL") == 0.0  # acronyms are not shouting
    assert ext("the UTF-8 decoder handles COVID-19 reports") == 0.0
    assert ext("I HATE it, worst day ever!!!") == 1.0


def test_specificity_signals() -> None:
    def spec(text: str) -> float:
        return salience(text, 0.0, 0.0).specificity

    bland = "the user likes it when the answers are short and clear"
    detailed = "the user met Alice in Berlin on 2024-05-03 at 10:30 on a Friday"
    assert spec(bland) == 0.25  # long enough, no detail: the floor
    assert spec(detailed) == 1.0
    assert spec("ok") < spec("ok thanks") < spec("ok thanks, that works for me now")
    # A capital at a sentence start is no name; mid-sentence it is (0.5 each).
    assert spec("Coffee is what the user drinks every single morning") == 0.25
    assert spec("every single morning the user drinks Lavazza coffee") > 0.25
    assert spec("this happened. Then it happened again and again") == 0.25
    assert spec("every day I say that I'm tired of it all") == 0.25  # "I" is no name
    assert spec("remind me next march about the tax return forms") == 0.25  # "march"
    assert spec("remind me next March about the tax return forms") > 0.25


@given(st.text(max_size=300), finite, finite)
def test_salience_components_in_unit_interval(text: str, importance: float, novelty: float) -> None:
    sal = salience(text, importance, novelty)
    for value in (sal.novelty, sal.importance, sal.extremity, sal.specificity, sal.total):
        assert 0.0 <= value <= 1.0
    assert salience(text, importance, novelty) == sal  # deterministic


def test_salience_refuses_bad_arguments() -> None:
    with pytest.raises(InvalidArgumentError):
        salience(b"bytes", 0.5, 0.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        salience("text", math.nan, 0.5)
    with pytest.raises(InvalidArgumentError):
        salience("text", "0.5", 0.5)  # type: ignore[arg-type]


# --- importance -----------------------------------------------------------------------


def test_importance_score_values() -> None:
    assert importance_score(0.0, 0, 0.0, 0.0) == pytest.approx(0.3)
    assert importance_score(30.0, 0, 0.0, 0.0) == pytest.approx(0.3 / math.e)
    assert importance_score(0.0, 5, 0.0, 0.0) == pytest.approx(0.3 + 0.2 * (1 - 1 / math.e))
    assert importance_score(1e9, 0, 1.0, 0.0) == pytest.approx(0.2)
    assert importance_score(1e9, 0, 0.0, 1.0) == pytest.approx(0.3)
    assert importance_score(-5.0, 0, 0.0, 0.0) == pytest.approx(0.3)  # negative recency
    assert importance_score(0.0, 10**6, 1.0, 1.0) == pytest.approx(1.0)
    assert importance_score(0.0, 0, 9.0, -9.0) == pytest.approx(0.5)  # clamped inputs


def test_importance_score_monotone() -> None:
    by_recency = [importance_score(d, 3, 0.5, 0.5) for d in (0, 1, 10, 100, 1000)]
    assert by_recency == sorted(by_recency, reverse=True)
    by_access = [importance_score(5.0, n, 0.5, 0.5) for n in (0, 1, 5, 20, 100)]
    assert by_access == sorted(by_access)


@given(finite, st.integers(min_value=0, max_value=10**9), finite, finite)
def test_importance_score_in_unit_interval(
    recency: float, count: int, distinct: float, user: float
) -> None:
    assert 0.0 <= importance_score(recency, count, distinct, user) <= 1.0


@settings(max_examples=20)
@given(st.integers(max_value=-1))
def test_importance_score_refuses_negative_counts(count: int) -> None:
    with pytest.raises(InvalidArgumentError):
        importance_score(0.0, count, 0.5, 0.5)


def test_retrievability_many_is_the_scalar_definition_per_memory() -> None:
    import numpy as np

    from agentzero_store.agentmem.fsrs import effective_stability, retrievability_many

    elapsed = np.array([-1.0, 0.0, 3.0, 27.0, 900.0])
    stability = np.array([3.0, 30.0, 3.0, 3.0, 14.0])
    salience = np.array([0.5, 1.2, 0.0, 0.44, -0.1])
    many = retrievability_many(elapsed, stability, salience, 1.0)
    for i in range(5):
        one = retrievability(elapsed[i], effective_stability(stability[i], salience[i], 1.0))
        assert many[i] == pytest.approx(one, rel=1e-12)


@settings(max_examples=200)
@given(text=st.text(max_size=80), importance=unit)
def test_text_salience_memo_returns_the_computed_value(text: str, importance: float) -> None:
    """The memo is invisible: the first call and every later one (served from the memo)
    equal ``salience`` at neutral novelty."""
    expected = salience(text, importance=importance, novelty=0.5).total
    assert text_salience(text, importance) == expected
    assert text_salience(text, importance) == expected


def test_text_salience_memo_is_keyed_by_importance_and_bounded() -> None:
    """Same text, other importance: another value, not the memoized one; the memo never
    grows past its bound, nor keeps the text itself; bad arguments are refused even
    for a memoized text."""
    from agentzero_store.agentmem import fsrs

    text = "On Monday Alice said the launch moved to 3 March!"
    low, high = text_salience(text, 0.0), text_salience(text, 1.0)
    assert high - low == pytest.approx(0.3)
    for i in range(fsrs._SALIENCE_MEMO_SIZE + 50):
        text_salience(f"turn {i}", 0.5)
    assert len(fsrs._SALIENCE_MEMO) == fsrs._SALIENCE_MEMO_SIZE
    assert all(isinstance(k[0], bytes) and len(k[0]) == 16 for k in fsrs._SALIENCE_MEMO)
    text_salience(text, 0.5)
    with pytest.raises(InvalidArgumentError):
        text_salience(text, math.nan)
    with pytest.raises(InvalidArgumentError):
        text_salience(b"bytes", 0.5)  # type: ignore[arg-type]
