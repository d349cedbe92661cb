"""How fast a memory fades, and how much it resists fading: pure math, no I/O.

Times are days as floats. The curve and the stability update follow FSRS (the Free
Spaced Repetition Scheduler): a memory has a *stability* S, the elapsed time at which
its *retrievability* R has fallen to 0.9, and a *difficulty* D in [1, 10]. Each time a
recalled memory turns out useful (or not), S grows and D moves; salience stretches S
before it is used, so vivid, specific memories fade slower than bland ones.

Consolidation (what to keep, merge or drop) and recall (how to rank) both call these
functions, so the two agree on what "faded" means.
"""

from __future__ import annotations

import hashlib
import math
import string
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..base.errors import InvalidArgumentError

MAX_STABILITY_DAYS = 36_500.0
"""Largest stability ``stability_after_recall`` grows to: 100 years of 365 days."""

MIN_DIFFICULTY = 1.0
"""Easiest difficulty: the memory is almost always useful when recalled."""

MAX_DIFFICULTY = 10.0
"""Hardest difficulty: the memory is almost never useful when recalled."""

# R(t, S) = (1 + t / (FACTOR * S)) ** DECAY: FSRS v4's curve. FACTOR = 9 puts R(S, S) at
# exactly 0.9, which is what makes S "the time to 90 % retrievability".
_FACTOR = 9.0
_DECAY = -1.0

# FSRS's successful-review update with its weights rounded to simple values:
# e^w8 -> 0.5, w9 (stability damping) -> 0.2, w10 (retrievability gain) -> 0.2.
_GROWTH = 0.5
_STABILITY_DAMPING = 0.2
_RETRIEVABILITY_GAIN = 0.2

# Our own difficulty rule, not FSRS's: being useful makes a memory a little easier,
# being useless makes it clearly harder, so an unused memory loses ground twice as fast
# as a used one gains it.
_USED_STEP = -0.5
_UNUSED_STEP = 1.0

# Salience weights (sum to 1): novelty matters most, since a memory that repeats what
# is already stored adds least.
_W_NOVELTY = 0.4
_W_IMPORTANCE = 0.3
_W_EXTREMITY = 0.1
_W_SPECIFICITY = 0.2

# Importance weights (sum to 1), TnsAI-style: how recent, how often used, how distinct
# from other memories, and what the user said.
_W_RECENCY = 0.3
_W_ACCESS = 0.2
_W_DISTINCT = 0.2
_W_USER = 0.3
_RECENCY_SCALE_DAYS = 30.0
_ACCESS_SCALE = 5.0


def _finite(name: str, value: float, hint: str) -> float:
    """``value`` as a float, or an InvalidArgumentError naming ``name``.

    NaN would pass every clamp unchanged (all comparisons with it are false) and then
    poison each score computed from it, so it is refused here, with infinities.
    """
    try:
        if isinstance(value, str | bytes | bytearray):  # float() would parse it
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{name} must be a number, got {type(value).__name__}", hint=hint
        ) from None
    if not math.isfinite(number):
        raise InvalidArgumentError(f"{name} must be finite, got {number!r}", hint=hint)
    return number


def _clamp(value: float, low: float, high: float) -> float:
    return low if value < low else high if value > high else value


def _positive_stability(stability: float) -> float:
    s = _finite("stability", stability, "pass a stability in days greater than 0")
    if s <= 0.0:
        raise InvalidArgumentError(
            f"stability must be greater than 0 days, got {s!r}",
            hint="pass a stability in days greater than 0 (a new memory starts at a few days)",
        )
    return s


def retrievability(elapsed_days: float, stability_days: float) -> float:
    """Probability-like recall strength after ``elapsed_days`` at ``stability_days``.

    R(t, S) = (1 + t / (9 S)) ** -1, the FSRS v4 power curve: R(0, S) = 1,
    R(S, S) = 0.9 and R(9 S, S) = 0.5, strictly decreasing in t. A negative elapsed time
    (clock skew between writers) counts as 0. The result is in (0, 1]; it only reaches
    0.0 when t / S overflows a float, far beyond any real age.

    Raises InvalidArgumentError if an argument is not finite or ``stability_days <= 0``.
    """
    t = _finite("elapsed_days", elapsed_days, "pass the days since the last review")
    s = _positive_stability(stability_days)
    t = max(t, 0.0)
    return 1.0 / (1.0 + t / (_FACTOR * s))


def retrievability_many(
    elapsed_days: npt.NDArray[np.float64],
    stability: npt.NDArray[np.float64],
    salience: npt.NDArray[np.float64],
    beta: float,
) -> npt.NDArray[np.float64]:
    """``retrievability(elapsed, effective_stability(S, salience, beta))`` of many
    memories at once (consolidation decays every memory of a scope in one pass); the
    stored values were checked when written, so nothing is validated here."""
    s_eff = stability * (1.0 + beta * np.clip(salience, 0.0, 1.0))
    result: npt.NDArray[np.float64] = 1.0 / (
        1.0 + np.maximum(elapsed_days, 0.0) / (_FACTOR * s_eff)
    )
    return result


def effective_stability(stability: float, salience: float, beta: float) -> float:
    """Stability stretched by salience: S * (1 + beta * salience).

    ``salience`` is clamped to [0, 1] (``Salience.total`` already is); ``beta`` is how
    much longer a maximally salient memory lasts, e.g. 1.0 doubles its stability. The
    result is used for decay only and is not capped: the stored S stays the base value.

    Raises InvalidArgumentError if an argument is not finite, ``stability <= 0`` or
    ``beta < 0`` (a negative beta would make salient memories fade faster).
    """
    s = _positive_stability(stability)
    sal = _clamp(_finite("salience", salience, "pass a salience in [0, 1]"), 0.0, 1.0)
    b = _finite("beta", beta, "pass a salience boost of 0 or more")
    if b < 0.0:
        raise InvalidArgumentError(
            f"beta must be 0 or more, got {b!r}", hint="pass a salience boost of 0 or more"
        )
    return s * (1.0 + b * sal)


def stability_after_recall(stability: float, difficulty: float, r: float) -> float:
    """Stability after a recall that proved useful, at retrievability ``r``.

    S' = S * (1 + 0.5 * (11 - D) * S**-0.2 * (e**(0.2 (1 - R)) - 1)), FSRS's update for
    a successful review with rounded weights. D is clamped to [1, 10] and R to [0, 1],
    so the growth term is never negative: S' >= S. Growth stops at
    ``MAX_STABILITY_DAYS``; a stability already above that cap is returned unchanged.

    The gain is largest when R is low (the memory was nearly forgotten and still
    helped) and is exactly zero at R = 1: feedback right after the last review adds no
    stability. That is the guard against rich-get-richer: a popular memory recalled and
    confirmed many times in a row does not grow without bound, only spaced recalls
    strengthen it. S**-0.2 damps growth further for already-stable memories, and easy
    memories (low D) grow faster than hard ones.

    Raises InvalidArgumentError if an argument is not finite or ``stability <= 0``.
    """
    s = _positive_stability(stability)
    d = _clamp(
        _finite("difficulty", difficulty, "pass a difficulty in [1, 10]"),
        MIN_DIFFICULTY,
        MAX_DIFFICULTY,
    )
    rr = _clamp(_finite("r", r, "pass a retrievability in [0, 1]"), 0.0, 1.0)
    if s >= MAX_STABILITY_DAYS:
        return s
    growth = (
        _GROWTH
        * (11.0 - d)
        * math.pow(s, -_STABILITY_DAMPING)
        * math.expm1(_RETRIEVABILITY_GAIN * (1.0 - rr))  # expm1: accurate near R = 1, 0 at R = 1
    )
    # max() guards against rounding only; growth is never negative.
    return min(MAX_STABILITY_DAYS, max(s, s * (1.0 + growth)))


def difficulty_after(difficulty: float, used: bool) -> float:
    """Difficulty after feedback on one recall: D - 0.5 if used, D + 1.0 if not.

    Our own simple rule (FSRS's difficulty update needs graded answers, which an agent
    does not give): the input is clamped to [1, 10] first and so is the result.

    Raises InvalidArgumentError if ``difficulty`` is not finite.
    """
    d = _clamp(
        _finite("difficulty", difficulty, "pass a difficulty in [1, 10]"),
        MIN_DIFFICULTY,
        MAX_DIFFICULTY,
    )
    step = _USED_STEP if used else _UNUSED_STEP
    return _clamp(d + step, MIN_DIFFICULTY, MAX_DIFFICULTY)


@dataclass(frozen=True, slots=True)
class Salience:
    """How much a memory stands out; every field is in [0, 1].

    ``total`` = 0.4 novelty + 0.3 importance + 0.1 extremity + 0.2 specificity.
    """

    novelty: float
    importance: float
    extremity: float
    specificity: float
    total: float


# Word lists as text, one frozenset each: membership tests are the hot path.
_INTENSE_TEXT = """
love loved loves loving adore adored hate hated hates hating despise despised loathe
terrified terrifying scared afraid frightened panic panicked desperate
terrible horrible horrific awful dreadful disgusting disgusted unbearable miserable
amazing amazed awesome incredible fantastic wonderful brilliant perfect
never always worst best furious angry enraged livid outraged
devastated heartbroken grief grieving tragic tragedy ashamed humiliated
thrilled ecstatic delighted overjoyed excited obsessed shocked shocking
urgent emergency critical disaster catastrophe catastrophic nightmare
"""
_INTENSE_WORDS = frozenset(_INTENSE_TEXT.split())

# Month and weekday names, matched in any case except where the lowercase form is an
# everyday word ("may", "march") or the abbreviation is one ("sat", "sun", "wed",
# "mar"): those count only when capitalised.
_DATES_ANY_CASE_TEXT = """
january february april june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
"""
_DATES_CAPITALISED_TEXT = """
May March Jan Feb Apr Jun Jul Aug Sep Sept Oct Nov Dec Mon Tue Tues Thu Thur Thurs Fri
"""
# All-caps words of 4+ letters that are names of things, not shouting.
_ACRONYMS_TEXT = """
JSON HTTP HTTPS HTML YAML TOML UUID REST CRUD ASCII UNIX POSIX LDAP SAML OAUTH CORS AJAX
SMTP IMAP JPEG TODO FIXME README NASA GDPR HIPAA NATO UNICEF
"""
_ACRONYMS = frozenset(_ACRONYMS_TEXT.split())
_DATE_WORDS_ANY_CASE = frozenset(_DATES_ANY_CASE_TEXT.split())
_DATE_WORDS_CAPITALISED = frozenset(_DATES_CAPITALISED_TEXT.split())

# Tokens are whitespace-separated parts with surrounding punctuation stripped: str.split
# and str.strip run in C, several times faster than a Unicode-aware regex findall.
_STRIP = string.punctuation + "‘’“”«»…–—"
_CLOSERS = "\"'’”»)]}*_"  # may follow a sentence's final ".", "!" or "?"
_SENTENCE_END_CHARS = ".!?"
_I_FORMS = frozenset({"I'", "I’"})  # I'm, I'll, I've, I'd
_SHOUT_MIN_LETTERS = 4  # shorter all-caps words are mostly acronyms (API, SQL, USA)
_CAP_PER_SIGNAL = 3  # exclamation marks or shouted words beyond three add nothing
_EXTREMITY_SCALE = 4.0
_DETAIL_SCALE = 3.0
_FULL_LENGTH_TOKENS = 8.0
_SPECIFICITY_FLOOR = 0.25


def _extremity_specificity(text: str) -> tuple[float, float]:
    """Both text heuristics from one pass over the tokens (formulas: ``salience``)."""
    intense = shouted = numbers = dates = proper = n_tokens = 0
    for line in text.split("\n"):
        sentence_start = True  # a line break starts a sentence too (lists, headings)
        for part in line.split():
            core = part.strip(_STRIP)
            if not core:  # bare punctuation: "-", "!!!", "..."
                if any(end in part for end in _SENTENCE_END_CHARS):
                    sentence_start = True
                continue
            n_tokens += 1
            first = core[0]
            if first.isdigit():
                numbers += 1
            else:
                low = core.lower()
                if low in _INTENSE_WORDS:
                    intense += 1
                if first.isupper():
                    shout = (
                        len(core) >= _SHOUT_MIN_LETTERS
                        and core.isupper()
                        and core.isalpha()  # not "UTF-8", "COVID-19"
                        and core not in _ACRONYMS
                    )
                    if shout:
                        shouted += 1
                    if core in _DATE_WORDS_CAPITALISED or low in _DATE_WORDS_ANY_CASE:
                        dates += 1
                    # A capital after a sentence's start marks a name; shouted words
                    # and the pronoun "I" are capitalised for other reasons.
                    elif not (sentence_start or shout or core == "I" or core[:2] in _I_FORMS):
                        proper += 1
                elif low in _DATE_WORDS_ANY_CASE:
                    dates += 1
            # Never empty: core is not, and no character of core is a closer.
            sentence_start = part.rstrip(_CLOSERS)[-1] in _SENTENCE_END_CHARS
    exclaims = min(text.count("!"), _CAP_PER_SIGNAL)
    signal = exclaims + min(shouted, _CAP_PER_SIGNAL) + 2 * intense
    extremity = min(1.0, signal / _EXTREMITY_SCALE)
    detail = min(1.0, (numbers + dates + 0.5 * proper) / _DETAIL_SCALE)
    length = min(1.0, n_tokens / _FULL_LENGTH_TOKENS)
    specificity = length * (_SPECIFICITY_FLOOR + (1.0 - _SPECIFICITY_FLOOR) * detail)
    return extremity, specificity


def salience(text: str, importance: float, novelty: float) -> Salience:
    """Score how much a memory stands out, from its text and two caller-given scores.

    ``importance`` and ``novelty`` (e.g. 1 - the highest similarity to a stored
    memory) are clamped to [0, 1]. The two text heuristics are deterministic, need no
    model, and take about 10 µs for a 20-word sentence, because they run on every
    write. Tokens are whitespace-separated words with surrounding punctuation stripped;
    a word right after ".", "!", "?" or a line break starts a sentence.

    - extremity = min(1, (min(!, 3) + min(SHOUTED, 3) + 2 * intense) / 4), counting
      exclamation marks, all-caps words of 4+ letters (shorter ones and a few known
      acronyms like JSON are names, not shouting), and words from a small built-in
      list of intense or emotional words (love, hate, terrified, never, worst, ...).
      Either of "I love it" or "!!!" alone reaches 0.5 or more.
    - specificity = min(1, tokens / 8) * (0.25 + 0.75 * detail), where
      detail = min(1, (numbers + dates + 0.5 * proper nouns) / 3): numbers ("3",
      "2024-05-01", "10:30"), month and weekday names, and capitalised words that do
      not start a sentence (not "I"). Texts under 8 tokens are scaled down; a long text
      without any such detail scores 0.25.

    total = 0.4 novelty + 0.3 importance + 0.1 extremity + 0.2 specificity.

    Raises InvalidArgumentError if ``text`` is not a str or a score is not finite.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"text must be a str, got {type(text).__name__}", hint="pass the memory's text"
        )
    imp = _clamp(_finite("importance", importance, "pass an importance in [0, 1]"), 0.0, 1.0)
    nov = _clamp(_finite("novelty", novelty, "pass a novelty in [0, 1]"), 0.0, 1.0)
    extremity, specificity = _extremity_specificity(text)
    total = (
        _W_NOVELTY * nov
        + _W_IMPORTANCE * imp
        + _W_EXTREMITY * extremity
        + _W_SPECIFICITY * specificity
    )
    return Salience(nov, imp, extremity, specificity, min(1.0, total))


NEUTRAL_NOVELTY = 0.5  # novelty is unknown at write time (it needs a neighbour search)


# text_salience's memo: (BLAKE2b-128 of the text, importance) -> salience, the least
# recently used dropped past the bound. Keyed by a digest, not the text, so the memo
# keeps no memory's text alive; 4096 entries of ~150 bytes each.
_SALIENCE_MEMO: OrderedDict[tuple[bytes, float], float] = OrderedDict()
_SALIENCE_MEMO_SIZE = 4096
_SALIENCE_MEMO_LOCK = threading.Lock()


def text_salience(text: str, importance: float) -> float:
    """A memory's stored salience: ``salience`` of its text and importance at neutral
    novelty. Memories are written without it (NULL) and it is computed here when first
    read or at consolidation, which stores it: the same value as at write time, since
    it depends on nothing but these two.

    Memoized (a bounded LRU keyed by the text's digest and the importance): a listing
    reads the same unconsolidated turns again and again, and the text heuristics cost
    ~10 µs a sentence where the digest costs under one."""
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"text must be a str, got {type(text).__name__}", hint="pass the memory's text"
        )
    key = (
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(),
        importance,
    )
    with _SALIENCE_MEMO_LOCK:
        hit = _SALIENCE_MEMO.get(key)
        if hit is not None:
            _SALIENCE_MEMO.move_to_end(key)
            return hit
    value = salience(text, importance=importance, novelty=NEUTRAL_NOVELTY).total
    with _SALIENCE_MEMO_LOCK:
        _SALIENCE_MEMO[key] = value
        if len(_SALIENCE_MEMO) > _SALIENCE_MEMO_SIZE:
            _SALIENCE_MEMO.popitem(last=False)
    return value


def importance_score(
    recency_days: float, access_count: int, distinctiveness: float, user_importance: float
) -> float:
    """A memory's importance in [0, 1], TnsAI-style, as a weighted sum of four signals:

    - 0.3 * exp(-recency_days / 30): recently touched memories matter (halves in ~21 days);
    - 0.2 * (1 - exp(-access_count / 5)): often-recalled ones too, saturating after ~15;
    - 0.2 * distinctiveness: how unlike other memories it is, clamped to [0, 1];
    - 0.3 * user_importance: what the user or agent said it is worth, clamped to [0, 1].

    The user's word and recency weigh most; use counts weigh less because they feed on
    themselves (recalled memories get recalled). Negative recency counts as 0.

    Raises InvalidArgumentError if an argument is not finite or ``access_count < 0``.
    """
    recency = max(0.0, _finite("recency_days", recency_days, "pass days since last access"))
    count = _finite("access_count", access_count, "pass how many times it was recalled")
    if count < 0:
        raise InvalidArgumentError(
            f"access_count must be 0 or more, got {count!r}",
            hint="pass how many times the memory was recalled",
        )
    distinct = _clamp(
        _finite("distinctiveness", distinctiveness, "pass a distinctiveness in [0, 1]"), 0.0, 1.0
    )
    user = _clamp(
        _finite("user_importance", user_importance, "pass an importance in [0, 1]"), 0.0, 1.0
    )
    score = (
        _W_RECENCY * math.exp(-recency / _RECENCY_SCALE_DAYS)
        - _W_ACCESS * math.expm1(-count / _ACCESS_SCALE)  # = 0.2 * (1 - e^-x)
        + _W_DISTINCT * distinct
        + _W_USER * user
    )
    return _clamp(score, 0.0, 1.0)
