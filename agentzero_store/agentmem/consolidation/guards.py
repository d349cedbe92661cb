"""What two sentences must share before their meaning may count as the same fact.

An embedding puts "I like oat milk" beside "I don't like oat milk", "3 kids" beside
"2 kids" and "Ana runs on Mondays" beside "Bo runs on Mondays": cosine sees the topic,
not the fact. ``signature`` reads the words that decide a fact and cosine does not
weigh: negation (and "used to", "anymore": a state that changed), numbers (digits and
number words, "three" = "3"), dates and times of day, quantities, stance (like / hate),
wishes and plans (want, will, hope: not yet a fact), and names. Two memories may only be
one recurring fact when these are equal (``Signature.key``), and when they share content
words (``content``), so two short replies ("Ana: Lovely!", "Ana: Great!") never pass
on cosine alone.

Pure and deterministic: word lists, no model, no locale. Names are read from case: a
capitalised word that is not a common English word (``_COMMON``), so a sentence's first
word is one only when it is no common word; what cannot be told apart errs towards a
name, which only keeps two memories apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .dedup import tokens


def _words(text: str) -> list[str]:
    return text.split()


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NEGATION = _set(
    "not no never nor none nothing nobody neither nowhere without cannot t dont doesnt"
    " didnt cant wont isnt wasnt arent werent havent hasnt hadnt couldnt wouldnt shouldnt"
    " aint mustnt neednt"
)
"""Negation cues (``tokens`` splits "don't" into "don" and "t": "t" stands for n't)."""

_CHANGE = _set("used anymore stopped quit quitting former formerly ex previously")
"""A state that no longer holds ("I used to ...", "not anymore")."""

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen"
            " fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "seventy": "70",
    "eighty": "80",
    "ninety": "90",
    "hundred": "100",
    "thousand": "1000",
    "million": "1000000",
    "billion": "1000000000",
    "first": "1st",
    "second": "2nd",
    "third": "3rd",
    "fourth": "4th",
    "fifth": "5th",
    "once": "1x",
    "twice": "2x",
    "single": "1",
    "double": "2x",
    "triple": "3x",
    "dozen": "12",
    "dozens": "12s",
    "hundreds": "100s",
    "thousands": "1000s",
    "millions": "1000000s",
    "half": "0.5",
}

_TIME = _set(
    "january february march april june july august september october november december"
    " jan feb apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday"
    " friday saturday sunday weekend weekday today tonight yesterday tomorrow last next"
    " ago soon recently lately upcoming past morning afternoon evening night noon midnight"
    " spring summer autumn fall winter christmas thanksgiving easter halloween birthday"
    " daily weekly monthly yearly annually week month year decade"
)
"""Dates, days, times of day and periods ("May" is left out: it is also a verb; a date
in May carries its day's number)."""

_NUMBER_SET = frozenset(_NUMBER_WORDS)

_TIME_FORMS = {w: w for w in _TIME} | {w + "s": w for w in _TIME if not w.endswith("s")}
"""Time words and their plurals ("mornings" is "morning")."""

_QUANTITY = _set(
    "few several many much more most less least fewer lot lots couple both plenty enough extra only"
)

_LIKE = _set(
    "love loves loved loving like likes liked enjoy enjoys enjoyed adore adores prefer"
    " prefers preferred favorite favourite favorites favourites fan"
)
_DISLIKE = _set("hate hates hated dislike dislikes disliked detest detests loathe loathes")

_WISH = _set(
    "want wants wanted wanna plan plans planning planned hope hopes hoping wish wishes"
    " will ll going gonna might maybe perhaps would could should considering thinking"
    " try trying someday"
)
"""Wishes, plans and possibilities: "I want to visit Rome" is not "I visited Rome"."""

_STOP = _set(
    "a an the and or but so if then than as at by for from in into of on onto to with"
    " about over under up down out off again also just very really too even still"
    " i me my mine myself we us our ours you your yours he him his she her hers they them"
    " their theirs it its this that these those there here who whom whose what which"
    " when where why how is am are was were be been being do does did doing done have has"
    " had having get gets got getting s d m re ve ll t can all any each every some such"
    " own same other another one ones thing things something anything everything yes"
    " yeah oh ok okay well hey hi hello wow thanks thank please sure like just now always"
    " usually often sometimes"
)
"""Words that say nothing about which fact a sentence states (``content`` leaves them
out). "like" is here as a filler; its stance is read apart (``_LIKE``)."""

_COMMON = (
    _STOP
    | _NEGATION
    | _CHANGE
    | frozenset(_TIME_FORMS)
    | _QUANTITY
    | _LIKE
    | _DISLIKE
    | _WISH
    | frozenset(_NUMBER_WORDS)
    | _set(
        "after before because since while until although though once lately actually"
        " honestly anyway besides btw sorry great good nice cool awesome lovely amazing"
        " absolutely definitely totally exactly right true wait look listen guess let"
        " speaking talking remember don didn doesn isn wasn aren can't couldn wouldn"
        " shouldn haven hasn"
        " did"
    )
    | frozenset("abcdefghijklmnopqrstuvwxyz")  # a letter alone ("s" of "Ana's")
)
"""Words that start sentences without being names (a capitalised first word that is not
one of these counts as a name)."""

_DIGIT = re.compile(r"\d")
# A capitalised word up to an apostrophe ("Ana's" is "Ana"): on ASCII text the pattern
# finds only capitalised words, so most texts cost one or two matches.
_ASCII_CAPITAL = re.compile(r"(?<![\w'’])[A-Z][\w-]*")
_CAPITAL = re.compile(r"(?<![\w'’])[^\W\d_][\w-]*")
_KEY_WORDS = (
    _NEGATION
    | _CHANGE
    | _WISH
    | _LIKE
    | _DISLIKE
    | _NUMBER_SET
    | _QUANTITY
    | frozenset(_TIME_FORMS)
)
_NO_KEY = ("", "", "", "", "", "", "")


@dataclass(frozen=True)
class Signature:
    """The decisive words of one text: ``key`` must be equal for two texts to be one
    fact (its last part is the names); ``content`` is what the text is about (for the
    shared-words guard)."""

    key: tuple[str, ...]
    content: frozenset[str]


def names(text: str) -> frozenset[str]:
    """The casefolded names of ``text``: its capitalised words that are not common
    words (``_COMMON``: so "Honestly," starting a sentence, or "Monday", is none).
    "I" (and "I'm", "I've") is never a name."""
    found: set[str] = set()
    ascii_text = text.isascii()
    for match in (_ASCII_CAPITAL if ascii_text else _CAPITAL).finditer(text):
        head = match.group().rstrip("-")
        if head == "I" or not head[0].isupper():
            continue
        folded = head.lower() if ascii_text else head.casefold()
        if folded not in _COMMON:  # a common word starts a sentence, or is a weekday
            found.add(folded)
    return frozenset(found)


def signature(text: str) -> Signature:
    """The ``Signature`` of ``text`` (see the module)."""
    words = tokens(text)
    content = words - _COMMON
    digits = (
        {w for w in words if not w.isalpha() and _DIGIT.search(w)} if _DIGIT.search(text) else set()
    )
    hits = words & _KEY_WORDS
    if hits or digits:
        content -= digits
        numbers = digits | {_NUMBER_WORDS[w] for w in hits & _NUMBER_SET}
        stance = ("+" if hits & _LIKE else "") + ("-" if hits & _DISLIKE else "")
        decisive: tuple[str, ...] = (
            "neg" if hits & _NEGATION else "",
            "was" if hits & _CHANGE else "",
            "wish" if hits & _WISH else "",
            stance,
            ",".join(sorted(numbers)),
            ",".join(sorted({_TIME_FORMS[w] for w in hits & _TIME_FORMS.keys()})),
            ",".join(sorted(hits & _QUANTITY)),
        )
    else:
        decisive = _NO_KEY  # most texts: none of the decisive words
    key = (*decisive, ",".join(sorted(names(text))))
    return Signature(key, frozenset(content))


__all__ = ["Signature", "names", "signature"]
