"""``RuleExtractor``: offline, deterministic, English. It reads first-person statements
of a turn's speaker (its ``speaker``, or ``"user"`` for a user turn without one) and
keeps to patterns precise enough to be believed: where they live or moved, work,
family and pets, likes and dislikes, diet and allergies, plans with dates, owned
things, their name ("call me …"). Questions, hypotheticals and wishes give nothing;
"no longer" retracts; "used to" is the past, not a current fact."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ..records import Fact, Memory
from .protocol import Extraction, FactCandidate, NoteCandidate

CONFIDENCE = 0.8

# A sentence that opens with one of these states no fact ("if I lived in Oslo", "maybe
# I'll move"); one that holds one of the inner markers neither ("I would love to").
_HYPOTHETICAL_START = re.compile(
    r"^(?:if|when|whenever|unless|suppose|imagine|maybe|perhaps|what if|should|would|"
    r"could|do|does|did|are|is|was|were|have|has|can|will|why|how|what|where|who|"
    r"hopefully|someday|one day)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL_INNER = re.compile(
    r"\b(?:would|wouldn't|could|might|wish|wished|hope to|dream of|dreaming of|"
    r"thinking about|considering|if|i'd|imagine|pretend|not sure|guess)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|never|don't|doesn't|didn't|no)\b", re.IGNORECASE)
_PRONOUNS = {
    "it", "that", "this", "them", "those", "these", "you", "him", "her", "everything",
    "something", "anything", "nothing", "one", "all", "so", "too", "much", "lot", "a",
    "the", "my", "your", "to", "how", "what", "when", "being", "doing", "having", "getting",
}  # fmt: skip
_END = (
    r"(?=\s*(?:[,.;!:)]|\s-\s|\band\b|\bbut\b|\bbecause\b|\bsince\b|\bso\b|\bwhich\b|"
    r"\bwho\b|\bwith\b|\bfor\b|\bat\b|\bin\b|\bon\b|$))"
)
_PLACE = (
    r"(?P<obj>[A-Z][\w'-]*(?:\s+(?:[A-Z][\w'-]*|de|del|da|do|of|upon))*"
    r"(?:,\s+[A-Z][\w'-]*)?)"
)
_THING = r"(?P<obj>[\w'-]+(?:\s+[\w'-]+){0,3}?)"
_NAME = r"(?P<obj>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
_PET = (
    r"(?P<kind>dog|puppy|cat|kitten|parrot|rabbit|bunny|hamster|turtle|horse|fish|snake|"
    r"bird|guinea pig)"
)
_RELATION = (
    r"(?P<rel>wife|husband|partner|girlfriend|boyfriend|fiancee?|son|daughter|brother|"
    r"sister|mother|mom|mum|father|dad|grandmother|grandma|grandfather|grandpa|"
    r"best friend|cousin|aunt|uncle)"
)
_SINGLE_RELATIONS = {
    "wife", "husband", "partner", "girlfriend", "boyfriend", "fiance", "fiancee",
    "mother", "mom", "mum", "father", "dad",
}  # fmt: skip
_DIETS = r"(?P<obj>vegetarian|vegan|pescatarian|gluten-free|lactose intolerant|keto|kosher|halal)"
_DATE = re.compile(
    r"\b(?:on|next|this|in|by|until|from)\s+"
    r"(?:(?:the\s+)?\d{1,2}(?:st|nd|rd|th)?(?:\s+of)?\s+)?"
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|week|month|year|"
    r"january|february|march|april|may|june|july|august|september|october|november|"
    r"december|spring|summer|autumn|fall|winter|\d{4})\b|\btomorrow\b|\btonight\b",
    re.IGNORECASE,
)

_I = r"(?:^|(?<=[\s,;]))I"
_ADV = r"(?:\s+(?:just|recently|finally|actually|currently|now|still|also|really|"
_ADV += r"absolutely|totally|truly|kind of|sort of|even))*"
# (pattern, predicate, single_valued, negated): "I" is the speaker; ``obj`` the object.
# Earlier rules win a span ("I no longer live in" is not read again as "live in").
_RULES: list[tuple[re.Pattern[str], str, bool, bool]] = [
    (
        re.compile(rf"{_I}{_ADV}\s+(?:no longer|don\'t|do not)\s+live\s+in\s+{_PLACE}"),
        "lives_in",
        True,
        True,
    ),
    (
        re.compile(rf"{_I}\s+used\s+to\s+live\s+in\s+{_PLACE}"),
        "lived_in",
        False,
        False,
    ),
    (
        re.compile(rf"{_I}(?:\'m| am){_ADV}\s+(?:living|based|located)\s+in\s+{_PLACE}"),
        "lives_in",
        True,
        False,
    ),
    (
        re.compile(rf"{_I}{_ADV}\s+live\s+in\s+{_PLACE}"),
        "lives_in",
        True,
        False,
    ),
    (
        re.compile(rf"{_I}(?:\'ve| have)?{_ADV}\s+(?:moved|relocated)\s+to\s+{_PLACE}"),
        "lives_in",
        True,
        False,
    ),
    (
        re.compile(rf"{_I}{_ADV}\s+(?:grew up|was born)\s+in\s+{_PLACE}"),
        "is_from",
        True,
        False,
    ),
    (
        re.compile(rf"{_I}(?:\'m| am){_ADV}\s+(?:originally\s+)?from\s+{_PLACE}"),
        "is_from",
        True,
        False,
    ),
    (
        re.compile(rf"{_I}{_ADV}\s+(?:no longer|don\'t|do not)\s+work\s+(?:at|for)\s+{_PLACE}"),
        "works_at",
        True,
        True,
    ),
    (
        re.compile(rf"{_I}(?:\'m| am)?{_ADV}\s+work(?:ing)?\s+(?:at|for)\s+{_PLACE}"),
        "works_at",
        True,
        False,
    ),
    (
        re.compile(
            rf"{_I}(?:\'m| am)?{_ADV}\s+work(?:ing)?\s+as\s+(?:an?\s+)?{_THING}{_END}", re.I
        ),
        "works_as",
        True,
        False,
    ),
    (
        re.compile(
            rf"\b[Mm]y\s+(?:job|profession|occupation)\s+is\s+(?:an?\s+)?{_THING}{_END}", re.I
        ),
        "works_as",
        True,
        False,
    ),
    (
        re.compile(
            rf"\b[Mm]y\s+{_RELATION}(?:\'s name)?\s+is\s+(?:called\s+|named\s+)?{_NAME}{_END}"
        ),
        "has_",
        False,
        False,
    ),
    (
        re.compile(rf"\b[Mm]y\s+{_RELATION},\s+{_NAME},"),
        "has_",
        False,
        False,
    ),
    (
        re.compile(rf"{_I}\s+have\s+an?\s+{_PET}\s+(?:named|called)\s+{_NAME}"),
        "has_pet",
        False,
        False,
    ),
    (
        re.compile(rf"\b[Mm]y\s+{_PET}(?:\'s name)?\s+is\s+(?:called\s+|named\s+)?{_NAME}{_END}"),
        "has_pet",
        False,
        False,
    ),
    (
        re.compile(rf"\b[Mm]y\s+{_PET},?\s+{_NAME}(?=\s*[,.;!)]|\s+(?:is|was|has|and)\b)"),
        "has_pet",
        False,
        False,
    ),
    (
        re.compile(
            rf"{_I}\s+have\s+(?P<obj>\d+|two|three|four|five|six)\s+(?:kids|children)", re.I
        ),
        "number_of_children",
        True,
        False,
    ),
    (
        re.compile(
            rf"{_I}{_ADV}\s+(?:no longer|don\'t|do not|stopped|quit)"
            rf"\s+(?:eat|eating)\s+{_THING}{_END}",
            re.I,
        ),
        "eats",
        False,
        True,
    ),
    (
        re.compile(rf"{_I}(?:\'m| am){_ADV}\s+(?:an?\s+)?{_DIETS}\b", re.I),
        "has_diet",
        True,
        False,
    ),
    (
        re.compile(rf"{_I}(?:\'m| am){_ADV}\s+allergic\s+to\s+{_THING}{_END}", re.I),
        "is_allergic_to",
        False,
        False,
    ),
    (
        re.compile(rf"{_I}\s+(?:lost|quit|left)\s+my\s+job\s+at\s+{_PLACE}"),
        "works_at",
        True,
        True,
    ),
    (
        re.compile(rf"\bchanged\s+my\s+name\s+to\s+{_NAME}"),
        "is_called",
        True,
        False,
    ),
    (
        re.compile(rf"\b[Mm]y\s+name\s+is\s+{_NAME}{_END}"),
        "is_called",
        True,
        False,
    ),
    (
        re.compile(rf"(?:^|\b)(?:[Pp]lease\s+)?[Cc]all\s+me\s+{_NAME}{_END}"),
        "is_called",
        True,
        False,
    ),
    (
        re.compile(rf"{_I}(?:\'m| am)\s+(?P<obj>\d{{1,3}})\s+years\s+old", re.I),
        "age",
        True,
        False,
    ),
    (
        re.compile(
            rf"{_I}{_ADV}\s+(?:own|bought|purchased)\s+(?:an?\s+|my"
            rf"\s+(?:first\s+)?)(?:new\s+)?{_THING}{_END}",
            re.I,
        ),
        "owns",
        False,
        False,
    ),
    (
        re.compile(
            rf"{_I}(?:\'m| am){_ADV}\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+{_THING}{_END}", re.I
        ),
        "likes",
        False,
        False,
    ),
    (
        re.compile(
            rf"{_I}{_ADV}\s+(?:hate|dislike|detest|can't stand|cannot stand|"
            rf"don't like|do not like)\s+{_THING}{_END}",
            re.I,
        ),
        "dislikes",
        False,
        False,
    ),
    (
        re.compile(rf"{_I}{_ADV}\s+(?:love|like|enjoy|adore)\s+{_THING}{_END}", re.I),
        "likes",
        False,
        False,
    ),
]
_PLAN = re.compile(
    rf"{_I}(?:'m| am)\s+(?:going|planning|flying|driving|traveling|travelling|heading)\s+"
    r"(?:to\s+)?(?P<what>[^.!?;]{3,80})",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def speaker_of(turn: Memory) -> str | None:
    """Who a turn's first person is: its ``speaker``, ``"user"`` for a user turn without
    one, None for anyone else's turn (an assistant's "I" is no fact about the user)."""
    if turn.speaker:
        return turn.speaker
    return "user" if turn.role == "user" else None


def sentences(text: str) -> Iterator[str]:
    """The sentences of ``text`` that state something: questions and hypotheticals go."""
    for m in _SENTENCE.finditer(text):
        s = m.group(0).strip()
        if not s or s.endswith("?") or _HYPOTHETICAL_START.match(s):
            continue
        yield s


_TRAILING = re.compile(
    r"\s+(?:anymore|any more|anyway|now|too|either|a lot|very much|so much|lately|"
    r"these days|nowadays|as well)$",
    re.IGNORECASE,
)


def _clean(obj: str) -> str | None:
    obj = _TRAILING.sub("", obj.strip(" ,.'\"")).removeprefix("the ").strip()
    obj = obj.removeprefix("to ").strip() if obj != "to" else ""
    words = obj.split()
    if not words or words[0].lower() in _PRONOUNS or len(obj) > 60:
        return None
    return obj


_TASTES = {"likes", "dislikes"}
# A taste is a general one ("I love hiking", "I like to collect jerseys"), not a reply
# to what was just said ("I like the idea", "I love your cake", "I love how ...").
_REACTION = re.compile(
    r"^(?:the|your|his|her|their|our|this|that|these|those|it|them|you|how|when|what|"
    r"where|why|being|seeing|hearing|reading about|all|some|any|a|an|to help)\b",
    re.IGNORECASE,
)


def _taste(obj: str) -> bool:
    return _REACTION.match(obj.strip()) is None


class RuleExtractor:
    """Offline rules (English): first-person statements into facts about the speaker."""

    def extract(self, turns: Sequence[Memory], known: Sequence[Fact]) -> Extraction:
        """Facts and notes ``turns`` state about their speakers (``known`` unused: the
        rules need nothing believed to read a statement)."""
        facts: list[FactCandidate] = []
        notes: list[NoteCandidate] = []
        for t in turns:
            who = speaker_of(t)
            if who is None:
                continue
            for s in sentences(t.content):
                f, n = self.statement(s, who, (t.id,))
                facts.extend(f)
                notes.extend(n)
        return Extraction(tuple(facts), tuple(notes))

    def statement(
        self, s: str, who: str, sources: tuple[str, ...]
    ) -> tuple[list[FactCandidate], list[NoteCandidate]]:
        """The facts and notes one sentence states about ``who``."""
        if _HYPOTHETICAL_INNER.search(s):
            return [], []
        facts: list[FactCandidate] = []
        taken: list[tuple[int, int]] = []
        for pattern, predicate, single, negated in _RULES:
            for m in pattern.finditer(s):
                if any(a < m.end() and m.start() < b for a, b in taken):
                    continue  # one span, one reading: "I no longer live in" is not "live in"
                obj = _clean(m.group("obj"))
                if obj is None or (predicate in _TASTES and not _taste(m.group("obj"))):
                    continue
                if not negated and _NEGATION.search(s[max(0, m.start() - 12) : m.start() + 4]):
                    continue  # "I don't really like ..." read by a positive rule
                pred, one = predicate, single
                if predicate == "has_":
                    rel = m.group("rel").lower()
                    pred, one = f"has_{rel.replace(' ', '_')}", rel in _SINGLE_RELATIONS
                elif predicate == "has_pet":
                    obj = f"{m.group('kind').lower()} named {obj}"
                taken.append((m.start(), m.end()))
                facts.append(FactCandidate(who, pred, obj, sources, CONFIDENCE, one, negated))
        notes: list[NoteCandidate] = []
        plan = _PLAN.search(s)
        if plan and _DATE.search(plan.group("what")) and not _NEGATION.search(s):
            text = s if s.endswith((".", "!")) else s + "."
            notes.append(NoteCandidate(f"{who} said: {text}", (who,), sources, CONFIDENCE))
        return facts, notes


__all__ = ["RuleExtractor", "sentences", "speaker_of"]
