"""Consolidation recognises a fact said again in other words (issue 29): by the cosine of
the memories' real MiniLM vectors, guarded so that negation, numbers, dates, quantities
and names keep facts apart; deterministic across runs and processes, idempotent, on
both backends, and a derived memory names its sources, which take it along when they
are forgotten."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import LocalEmbedder
from agentzero_store.agentmem.consolidation.meaning import Entities, exact_cosine, recurring_groups
from agentzero_store.base.config import StoreConfig

from . import recurrence_labels as labels
from .conftest import Clock, open_memory

OAT = [
    "Ana drinks oat milk in her coffee",
    "Ana always has oat milk in her coffee",
    "Ana takes her coffee with oat milk",
]
COSINE = StoreConfig().recurrence_cosine
JACCARD = StoreConfig().near_duplicate_jaccard

# Each pair is close in meaning by cosine (checked below: the guard is what keeps them
# apart) but states two different facts.
APART = [
    ("I really like spicy Thai curry", "I don't really like spicy Thai curry"),
    ("My sister has 3 kids and a dog", "My sister has 2 kids and a dog"),
    ("We moved into the new flat in May 2022", "We moved into the new flat in May 2021"),
    ("We moved into the new flat last June", "We moved into the new flat last April"),
    ("Ana drinks oat milk in her coffee", "Sophie drinks oat milk in her coffee"),
    ("I go for a long run every morning", "I go for a long run every evening"),
    ("I have a few close friends at work", "I have many close friends at work"),
    ("I love hiking", "I hate hiking"),
    ("I used to play tennis", "I play tennis"),
    ("I want to learn the guitar", "I learned the guitar"),
]


def _items(
    embedder: LocalEmbedder, texts: list[str], prefix: str = "m"
) -> list[tuple[str, str, bytes | None]]:
    vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    return [(f"{prefix}{i}", t, vecs[i].tobytes()) for i, t in enumerate(texts)]


def _groups(
    items: list[tuple[str, str, bytes | None]],
    *,
    jaccard: float = JACCARD,
    cosine: float = COSINE,
    entities: Entities | None = None,
) -> list[list[str]]:
    """``recurring_groups`` of (id, text, vector bytes or None) items."""
    table = {i: v for i, _, v in items if v is not None}
    return recurring_groups(
        [(i, t) for i, t, _ in items],
        jaccard=jaccard,
        cosine=cosine,
        vectors=lambda ids: {i: table[i] for i in ids if i in table},
        entities=entities,
    )


def test_the_same_fact_in_three_wordings_is_one_group(local_embedder: LocalEmbedder) -> None:
    items = _items(local_embedder, OAT)
    assert _groups(items) == [["m0", "m1", "m2"]]
    # Today's rule alone (no cosine) sees three different sentences.
    assert _groups(items, cosine=1.5) == []


@pytest.mark.parametrize(("a", "b"), APART)
def test_different_facts_close_in_meaning_never_merge(
    local_embedder: LocalEmbedder, a: str, b: str
) -> None:
    items = _items(local_embedder, [a, b])
    va, vb = (np.frombuffer(v or b"", np.float32) for _, _, v in items)
    assert float(va @ vb) >= 0.78  # close: a cosine alone would take them for one fact
    assert _groups(items) == []
    # Nor at a lower cosine: the words that decide the fact differ.
    assert _groups(items, cosine=0.5) == []


def test_the_lexical_rule_keeps_a_negated_near_duplicate_apart() -> None:
    said = "I like to read long science fiction novels on the train to work every day"
    items = [("a", said, None), ("b", said.replace("I like", "I don't like"), None)]
    assert _groups(items, jaccard=0.8) == []
    items = [("a", said, None), ("b", said.replace("train", "bus"), None)]
    assert _groups(items, jaccard=0.8) == [["a", "b"]]


def test_groups_are_the_same_in_another_process(
    local_embedder: LocalEmbedder, tmp_path: Path
) -> None:
    texts = OAT + [a for pair in APART for a in pair] + OAT[:1]
    items = _items(local_embedder, texts)
    here = _groups(items)
    assert here == _groups(items)
    dump = tmp_path / "items.json"
    dump.write_text(json.dumps([[i, t, (v or b"").hex()] for i, t, v in items]))
    code = (
        "import json, sys\n"
        "from agentzero_store.agentmem.consolidation.meaning import recurring_groups\n"
        "items = json.load(open(sys.argv[1]))\n"
        "table = {i: bytes.fromhex(v) for i, _, v in items}\n"
        "print(json.dumps(recurring_groups([(i, t) for i, t, _ in items], "
        f"jaccard={JACCARD}, cosine={COSINE}, vectors=lambda ids: {{i: table[i] for i in ids}})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(dump)], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == here
    assert here == [[f"m{i}" for i, t in enumerate(texts) if t in OAT]]


def test_a_pair_exactly_at_the_threshold_is_decided_by_theexact_cosine(
    local_embedder: LocalEmbedder,
) -> None:
    """At the threshold's last bit the verdict is the correctly rounded cosine's, not
    whatever a CPU's summation order gave (the same on every machine)."""
    items = _items(local_embedder, OAT[:2])
    va, vb = (np.frombuffer(v or b"", np.float32) for _, _, v in items)
    at = exact_cosine(va, vb)
    assert _groups(items, cosine=at) == [["m0", "m1"]]
    assert _groups(items, cosine=math.nextafter(at, 2.0)) == []


def test_three_wordings_promote_to_one_semantic_memory_once(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = []
        for i, text in enumerate(OAT):
            ids.append(mem.add_turn(f"c{i}", "user", text, speaker="Ana"))
            clock.advance(days=2)
        for a, b in APART[:3]:
            mem.add_turn("c8", "user", a, speaker="Ana")
            mem.add_turn("c9", "user", b, speaker="Ana")
        report = mem.consolidate()
        assert (report.promoted, report.linked) == (1, 0)
        (derived,) = mem.memories(conversation_id="memories")
        assert derived.type == "semantic" and derived.content == OAT[0]
        assert derived.sources == tuple(sorted(ids))
        assert derived.about == ("Ana",)
        again = mem.consolidate()
        assert again.promoted == again.linked == 0
        # Said once more in a fourth wording: it joins the memory, nothing new is made.
        fourth = mem.add_turn("c5", "user", "Ana puts oat milk in her coffee", speaker="Ana")
        assert mem.consolidate().linked == 1
        got = mem.get(derived.id)
        assert got is not None and set(got.sources) == {*ids, fourth}
        # Forgetting a source takes what was derived from it along, as for a
        # near-duplicate promotion.
        receipt = mem.forget(id=ids[1])
        assert receipt.derived == (derived.id,) and mem.get(derived.id) is None
        assert mem.undo(receipt.token) == 2 and mem.get(derived.id) is not None


def test_other_speakers_saying_it_are_not_one_fact(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    said = [
        ("Ana", "I drink oat milk in my coffee"),
        ("Ana", "I always have oat milk in my coffee"),
        ("Bo", "I take my coffee with oat milk"),
    ]
    # By their words and vectors alone, the three are one fact...
    items = _items(local_embedder, [t for _, t in said])
    assert _groups(items) == [["m0", "m1", "m2"]]
    # ... but Bo's is about Bo: the store's speakers keep it apart, so no three recur.
    with open_memory(where, clock, embedder=local_embedder) as mem:
        for who, text in said:
            mem.add_turn("c1", "user", text, speaker=who)
        assert mem.consolidate().promoted == 0


def test_memories_without_a_vector_keep_the_lexical_rule(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        for text in OAT:
            mem.add_turn("c1", "user", text, speaker="Ana")
        assert mem.consolidate().promoted == 0
        for _ in range(3):
            mem.add_turn("c2", "user", "I drink my coffee black every morning", speaker="Ana")
        assert mem.consolidate().promoted == 1


@pytest.mark.skipif(
    not (labels.LOCOMO.exists() and labels.LONGMEMEVAL.exists()),
    reason="the dev data (../shared/data/locomo-dev, longmemeval-dev) is absent",
)
def test_precision_on_labelled_dev_pairs(local_embedder: LocalEmbedder) -> None:
    """The rule against 153 hand-labelled pairs of dev turns (``recurrence_labels``):
    what it proposes is the same fact at least 95% of the time, and it finds recurrences
    that the word-set rule (which finds none of these pairs) never could."""
    said = labels.turns({i for a, b, _ in labels.LABELS for i in (a, b)})
    order = sorted(said)
    vecs = dict(
        zip(order, np.asarray(local_embedder.embed([said[i][0] for i in order])), strict=True)
    )

    def speakers(ids: object) -> dict[str, tuple[str, ...]]:
        return {i: (said[i][1],) for i in ids}  # type: ignore[attr-defined]

    def linked(a: str, b: str, cosine: float) -> bool:
        items = [(i, said[i][0], vecs[i].astype(np.float32).tobytes()) for i in (a, b)]
        return bool(_groups(items, cosine=cosine, entities=speakers))

    proposed = [same for a, b, same in labels.LABELS if linked(a, b, COSINE)]
    assert len(labels.LABELS) >= 150
    assert sum(proposed) / len(proposed) >= 0.95, (sum(proposed), len(proposed))
    assert sum(proposed) >= 40  # true recurrences found
    assert not any(linked(a, b, 1.5) for a, b, _ in labels.LABELS)  # words alone: none
