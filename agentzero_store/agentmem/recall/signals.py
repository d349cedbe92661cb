"""The ranking signals of agent recall (mode ``auto``), as pure functions over
candidates. Each returns a ranked list of labels; ``recall`` fuses them with weighted RRF.

No LLM, no model beyond the embedder: a signal is a cheap fact about a candidate —

- ``seed_scores``: the first-stage fusion of semantic and keyword ranks;
- ``spread``: spreading activation over temporal edges — a turn next to a strong hit is
  activated (LoCoMo's answers often sit in the reply to the turn that matches);
- ``entity``: memories about, or said by, an entity the query names;
- ``activation``: ACT-R base-level activation B = ln Σ t_j^−d from the access log;
- ``intent``: the memory type a question asks for ("how do I" → procedural, ...);
- ``role``: the party a question asks about — "what did I buy" is answered by the
  user's turns, not the assistant's replies; "what did you recommend" by the replies;
- ``confidence``: the memory's stored confidence;
- ``surprise``: rare but relevant — close to the query, unlike the rest of the pool;
- ``when`` (module ``when``): time expressions in the query against ``created_at``.

A signal that cannot tell the candidates apart on a query (every candidate equal, or
none) returns an empty list and drops out of that query's fusion, so a flat signal never
dilutes the strong ones (Pensyve's rule). The semantic and keyword lists drop out the same
way when they hold every candidate with one score (``flat_lists``, ``is_flat``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

ACT_R_DECAY = 0.5  # d in B = ln sum t_j^-d (ACT-R's standard value)
_MIN_AGE_S = 1.0  # an access this instant still counts as one second old

_INTENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\b(how (do|can|should|to)|what steps|which command|procedure)\b", re.I),
        "procedural",
    ),
    (
        re.compile(
            r"\b(what happened|when did|when was|where did|who (said|told)|last time)\b", re.I
        ),
        "episodic",
    ),
    (
        re.compile(
            r"\b(prefer|prefers|favou?rite|likes?|allergic|what is|who is|does \w+ "
            r"(like|have|own|work))\b",
            re.I,
        ),
        "semantic",
    ),
)
_WORDS = re.compile(r"\w+")
# The assistant's words: "you recommended ...", "did you say ...", "your advice".
_SAID = (
    "mentioned|recommended|told|said|suggested|gave|listed|provided|shared|explained|"
    "described|named|proposed|advised"
)
_ASKS_ASSISTANT = re.compile(
    rf"\byou( \w+)? ({_SAID})\b"
    r"|\bdid you (say|mention|recommend|suggest|tell|give|list|name|decide)\b"
    r"|\byour (recommendation|suggestion|advice|list)",
    re.I,
)
# About the conversation itself ("remind me ...", "our previous chat", "what did we
# decide"): either party's.
_ASKS_CONVERSATION = re.compile(
    r"\bremind me\b|\bwe\b"
    r"|\b(our|the|that) (previous|last|earlier) (conversation|chat|discussion)\b",
    re.I,
)
# A request to the assistant ("tell me what Caroline said") is not a question about me.
_REQUEST = re.compile(r"\b(tell|show|give|let) me\b", re.I)
_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself)\b", re.I)
# A party named in the third person, as an agent's own query names them ("what did the
# user say about the refund"); "I told the user" is the assistant speaking.
_NAMED = re.compile(r"\bthe (?P<party>user|assistant|agent)\b", re.I)
_I_SAID = re.compile(
    rf"\bI( \w+)? ({_SAID})\b|\bdid I (say|tell|mention|recommend|suggest|give|promise)\b",
    re.I,
)
# The party each asked role is not (a remembered fact, a tool result: neither party's).
_OTHER_PARTY = {"user": "assistant", "assistant": "user"}


def seed_scores(lists: Iterable[Sequence[int]], k: int) -> dict[int, float]:
    """Σ 1/(k + rank) of each label over ``lists`` (the first-stage order)."""
    out: dict[int, float] = {}
    for ranked in lists:
        for rank, label in enumerate(ranked, start=1):
            out[label] = out.get(label, 0.0) + 1.0 / (k + rank)
    return out


def ordered(scores: Mapping[int, float]) -> list[int]:
    """Labels by score, best first; ties by label (deterministic)."""
    return [lab for lab, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))]


def spread(
    seeds: Mapping[int, float],
    neighbours: Mapping[int, Sequence[tuple[int, int]]],
    *,
    top: int,
    decay: float,
) -> dict[int, float]:
    """Activation each neighbour receives from the ``top`` best seeds: the seed's score
    times ``decay`` per turn of distance beyond the first (a seed does not activate
    itself: its own rank is already counted)."""
    act: dict[int, float] = {}
    for lab in ordered(seeds)[:top]:
        for other, distance in neighbours.get(lab, ()):
            act[other] = act.get(other, 0.0) + seeds[lab] * decay ** (distance - 1)
    return act


def query_ngrams(query: str, longest: int = 3) -> list[str]:
    """Every run of 1..``longest`` words of the query, case-folded (entity candidates)."""
    words = [w.casefold() for w in _WORDS.findall(query)]
    return list(
        dict.fromkeys(
            " ".join(words[i : i + n])
            for n in range(1, longest + 1)
            for i in range(len(words) - n + 1)
        )
    )


def subset_in_order(order: Sequence[int], members: set[int]) -> list[int]:
    """``order`` restricted to ``members``; empty if that tells nothing apart (all or
    none of the candidates)."""
    picked = [lab for lab in order if lab in members]
    return [] if len(picked) in (0, len(order)) else picked


def activation(
    accesses: Mapping[int, Sequence[int]], now_us: int, candidates: Sequence[int]
) -> list[int]:
    """Candidates with an access history, by ACT-R base-level activation
    B = ln Σ t_j^−d (t_j: seconds since each access), best first."""
    scored = {}
    for lab in candidates:
        times = accesses.get(lab)
        if times:
            total = sum(max(_MIN_AGE_S, (now_us - t) / 1e6) ** -ACT_R_DECAY for t in times)
            scored[lab] = math.log(total)
    if len(set(scored.values())) <= 1 and len(scored) == len(candidates):
        return []  # flat
    return ordered(scored)


def intent(query: str) -> str | None:
    """The memory type the question asks for, by rules (None: no clear intent)."""
    for pattern, type_ in _INTENTS:
        if pattern.search(query):
            return type_
    return None


def asked_role(query: str) -> str | None:
    """The party whose turns a question asks about, by rules: ``"assistant"`` for what
    "you" said ("what did you recommend"), ``"user"`` for a first-person question ("how
    many plants did I buy", "who gave me"), the party it names ("what did the user
    say", "what did the assistant suggest"; "what I told the user": the assistant), None
    when it asks about the conversation ("remind me", "our last chat", "what did we
    decide") or names no party ("tell me what Caroline said")."""
    if _ASKS_ASSISTANT.search(query):
        return "assistant"
    if named := _NAMED.search(query):  # the party named first is the one asked about
        if named["party"].lower() != "user" or _I_SAID.search(query):
            return "assistant"
        return "user"
    if _ASKS_CONVERSATION.search(query) or not _FIRST_PERSON.search(_REQUEST.sub("", query)):
        return None
    return "user"


def by_role(asked: str, roles: Mapping[int, str], order: Sequence[int]) -> list[int]:
    """``order`` without the other party's turns (the assistant's replies for a
    question about the user); empty if that tells nothing apart (no such turn, or only
    such)."""
    other = _OTHER_PARTY[asked]
    return subset_in_order(order, {lab for lab in order if roles.get(lab) != other})


def by_value(values: Mapping[int, float], order: Sequence[int]) -> list[int]:
    """Candidates by a stored value, highest first (ties keep ``order``); empty if every
    candidate has the same value."""
    if len({values.get(lab) for lab in order}) <= 1:
        return []
    pos = {lab: i for i, lab in enumerate(order)}
    return sorted(order, key=lambda lab: (-values.get(lab, 0.0), pos[lab]))


def surprise(
    query: npt.NDArray[np.float32],
    vectors: Mapping[int, npt.NDArray[np.float32]],
    order: Sequence[int],
) -> list[int]:
    """Candidates that are rare but relevant, best first: cosine to the query minus
    cosine to the candidates' centroid (what is close to the query but unlike the rest
    of the pool). Candidates without a vector are left out; empty if flat."""
    labs = [lab for lab in order if lab in vectors]
    if len(labs) < 2:
        return []
    m = np.stack([vectors[lab] for lab in labs])
    centroid = m.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    typical = m @ (centroid / norm) if norm > 0 else np.zeros(len(labs), dtype=np.float32)
    scores = {lab: float(s) for lab, s in zip(labs, m @ query - typical, strict=True)}
    if is_flat(scores.values()):
        return []
    return ordered(scores)


def is_flat(scores: Iterable[float], rel_tol: float = 1e-6) -> bool:
    """True if ``scores`` cannot tell anything apart: none, or all equal (within
    ``rel_tol`` of the largest magnitude, so float32 rounding is no distinction). The
    tolerance is relative only: FTS5's BM25 of a term most rows hold is about 1e-6, and
    its differences still rank."""
    values = list(scores)
    if not values:
        return True
    top = max(abs(v) for v in values)
    return max(values) - min(values) <= rel_tol * top


def final_k(base_k: int, candidates: int) -> int:
    """The final RRF k, scaled with the candidate pool (``base_k`` at 200 candidates):
    a small pool keeps the top ranks apart, a large one smooths them."""
    return max(1, min(60, round(base_k * candidates / 200)))


__all__ = [
    "activation",
    "asked_role",
    "by_role",
    "by_value",
    "final_k",
    "intent",
    "is_flat",
    "ordered",
    "query_ngrams",
    "seed_scores",
    "spread",
    "subset_in_order",
    "surprise",
]
