"""Agent recall, mode auto: the ``role`` signal. A first-person question ("how many plants
did I buy") is answered by the user's turns, not the assistant's on-topic reply; "what did
you recommend" by the assistant's replies; a store whose turns are all one party's gets no
list; the repository's ``roles_of`` never reads another scope's rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentzero_store import AgentMemory, LocalEmbedder, Turn
from agentzero_store.agentmem import RecallHit
from agentzero_store.agentmem.recall import signals as sig
from agentzero_store.base.errors import InvalidArgumentError

from .conftest import Clock, open_memory

# (question, the party whose turns answer it: None for either or neither)
ASKED = [
    ("How many plants did I buy?", "user"),
    ("Where do I keep my passport?", "user"),
    ("What did I tell you about my sister?", "user"),  # told, but by me
    ("I'm trying to remember the name of that bakery", "user"),
    # a request to the assistant, not something it said
    ("Can you suggest a case for my phone?", "user"),
    ("What would you recommend for my dry skin?", "user"),
    ("What did you recommend for dinner?", "assistant"),
    ("Did you say the museum opens at 9?", "assistant"),
    ("What was your advice on the lease?", "assistant"),
    ("Which hotel had you mentioned for Porto?", "assistant"),
    ("Can you remind me what you recommended for my phone?", "assistant"),
    # about the conversation itself: either party's turns
    ("remind me of the restaurant", None),
    ("Remind me what I bought", None),
    ("I'm looking back at our previous chat about Lisbon, which hotel was it?", None),
    ("In our last conversation, what was the book?", None),
    # no party: a third person, or no person at all
    ("Who gave me a stand mixer for my birthday?", "user"),  # me, the object
    ("How long did it take me to assemble the shelf?", "user"),
    ("What did we name our puppy?", None),  # we: both parties, or me and another
    ("What did we decide about the trip?", None),
    ("Tell me what Caroline researched", None),  # a request, not a question about me
    ("Show me what Ana said about Lisbon", None),
    ("What did the user say about the refund?", "user"),  # as an agent asks
    ("user's diet: what did the user tell me?", "user"),
    ("What did the assistant suggest for the trip?", "assistant"),
    ("Which plan did the agent propose?", "assistant"),
    ("What did I tell the user about the refund?", "assistant"),  # the agent speaking
    ("Remind me what the user asked for", "user"),  # a named party beats "remind me"
    ("Did the user ask the assistant for a refund?", "user"),  # the one named first
    ("What did Caroline research?", None),
    ("When did Ana move to Lisbon?", None),
    ("What is the capital of France?", None),
]


@pytest.mark.parametrize(("query", "party"), ASKED)
def test_the_party_a_question_asks_about(query: str, party: str | None) -> None:
    assert sig.asked_role(query) == party


def test_the_other_party_is_left_out_and_neither_partys_turns_are_kept() -> None:
    roles = {1: "user", 2: "assistant", 3: "memory", 4: "tool", 5: "user", 6: "assistant"}
    roles |= {7: "fact", 8: "procedure"}  # assert_fact's and record_outcome's rows
    order = [6, 5, 4, 3, 2, 1, 7, 8]
    assert sig.by_role("user", roles, order) == [5, 4, 3, 1, 7, 8]
    assert sig.by_role("assistant", roles, order) == [6, 4, 3, 2, 7, 8]
    assert sig.by_role("user", roles, [2, 1, 9, 4]) == [1, 9, 4]  # 9: no role known
    assert sig.by_role("assistant", roles, [2, 1, 3]) == [2, 3]


def test_a_role_list_that_tells_nothing_apart_is_empty() -> None:
    one_party = {1: "user", 2: "user", 3: "memory", 4: "tool"}
    assert sig.by_role("user", one_party, [1, 2, 3, 4]) == []  # nothing left out
    assert sig.by_role("assistant", {1: "user", 2: "user"}, [1, 2]) == []  # all left out
    assert sig.by_role("user", {}, []) == []


def _rank(hits: list[RecallHit], memory_id: str) -> int:
    ids = [h.id for h in hits]
    assert memory_id in ids, (memory_id, [(h.memory.role, h.memory.content) for h in hits])
    return ids.index(memory_id)


def _chatter(mem: AgentMemory) -> None:
    """Other conversations, both parties', a remembered fact and a tool result: the
    candidates the question's turns are ranked among."""
    for i, text in enumerate(
        [
            "the train to Porto leaves at nine",
            "my sister visits in June",
            "the dentist moved my appointment to Friday",
            "I should renew my passport",
            "the printer is out of ink",
        ]
    ):
        mem.add_turns(f"c{i}", [Turn("user", text), Turn("assistant", f"Noted: {text}.")])
    mem.remember("The user's balcony faces south.")
    mem.add_tool_result("c9", "weather", "Sunny, 21 degrees, light wind.")


# (question, the conversation, the turn that answers it, the closest text to the
# question — by meaning and by words — that does not: the other party's)
DECOYED = {
    "what I did": (
        "How many plants did I buy?",
        [
            Turn(
                "user",
                "I picked up three plants at the garden centre on Saturday: a fern,"
                " a basil and a lemon tree.",
            ),
            Turn(
                "assistant",
                "How many plants did you buy? Buying plants is fun: when you buy plants,"
                " count how many plants you bought and water each plant you buy.",
            ),
            Turn("user", "Thanks, I will water them on Sundays."),
        ],
        0,
        1,
    ),
    "what you said": (
        "What did you recommend for my dry skin?",
        [
            Turn("user", "My skin is so dry this winter. What do you recommend for dry skin?"),
            Turn(
                "assistant",
                "For dry skin I recommend a fragrance-free moisturiser with ceramides,"
                " applied twice a day after a lukewarm shower.",
            ),
            Turn("user", "Thanks, I will look for one."),
        ],
        1,
        0,
    ),
}


@pytest.mark.parametrize("case", sorted(DECOYED))
def test_the_asked_partys_turn_beats_the_other_partys_closer_one(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder, case: str
) -> None:
    q, turns, answer_at, decoy_at = DECOYED[case]
    party = turns[answer_at].role
    other = turns[decoy_at].role
    assert sig.asked_role(q) == party != other
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = mem.add_turns("s1", turns)
        answer, decoy = ids[answer_at], ids[decoy_at]
        _chatter(mem)
        without = mem.recall(q, k=20, explain=True, log=False, weights={"role": 0})
        assert _rank(without, decoy) < _rank(without, answer)  # what the signal changes
        assert all("role" not in h.ranks for h in without)
        # without it, spreading activation reaches the other party's turn next to the answer
        assert "temporal" in without[_rank(without, decoy)].ranks
        hits = mem.recall(q, k=20, explain=True, log=False)
        assert _rank(hits, answer) < _rank(hits, decoy)
        for h in hits:
            assert h.explain is not None
            # every candidate but the other party's turns is in the list (the fact, the
            # tool's result too: neither party's); spreading activation, which would lift
            # the other party's replies, stays out of a question the role list answers
            assert ("role" in h.explain) == (h.memory.role != other), h.memory
            assert "temporal" not in h.ranks, h.memory
            if h.memory.role != other:
                assert h.explain["role"]["weight"] == mem.config.weight_role
        assert {"user", "assistant", "memory", "tool"} <= {h.memory.role for h in hits}


@pytest.mark.parametrize(
    "query", ["What did I say about the puppy's name?", "What did you say the puppy is called?"]
)
def test_a_store_of_one_partys_turns_gets_no_role_list(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder, query: str
) -> None:
    """LoCoMo's shape: every turn is role "user", the speakers tell people apart."""
    with open_memory(where, clock, embedder=local_embedder) as mem:
        mem.add_turns(
            "s1",
            [
                Turn("user", "Bo: what did you name the new puppy?", speaker="Bo"),
                Turn("user", "Ana: we called her Biscuit", speaker="Ana"),
                Turn("user", "Bo: cute! is the garden fenced?", speaker="Bo"),
            ],
        )
        for i in range(12):
            mem.add_turn(f"s{i % 3 + 2}", "user", f"Ana: chatter number {i} about trains")
        assert sig.asked_role(query) is not None  # the signal is asked, and finds nothing
        hits = mem.recall(query, k=10, explain=True, log=False)
        assert len(hits) == 10
        assert all(h.explain is not None and "role" not in h.explain for h in hits)
        without = mem.recall(query, k=10, explain=True, log=False, weights={"role": 0})
        assert [(h.id, h.ranks, h.score) for h in hits] == [
            (h.id, h.ranks, h.score) for h in without
        ]


def test_roles_of_reads_only_its_own_scope(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    def labels(mem: AgentMemory, ids: list[str]) -> dict[int, str]:
        """Each memory's label, with the role it was written with."""
        out = {}
        for i in ids:
            row = mem.repo.by_id(i, mem.now_us())
            assert row is not None
            out[row.label] = row.memory.role
        return out

    turns = [Turn("user", "I bought a fern"), Turn("assistant", "Ferns like shade")]
    with (
        open_memory(where, clock, embedder=local_embedder) as mem,
        open_memory(where, clock, embedder=local_embedder, org_id="other") as org,
        open_memory(where, clock, embedder=local_embedder, agent_id="a2") as agent,
    ):
        mem.namespace("team")  # created, owned by mem's agent: a scope of its own
        team = mem.shared("team")
        scopes = [mem, org, agent, team]
        try:
            own = []
            for n, m in enumerate(scopes):
                ids = m.add_turns("s1", turns)
                ids.append(m.remember(f"note {n}").id)
                ids.append(m.add_tool_result("s1", "search", f"result {n}"))
                own.append(labels(m, ids))
            everything = [lab for each in own for lab in each]
            # one table holds every scope's rows: each scope answers for its own only
            for m, mine in zip(scopes, own, strict=True):
                assert set(mine.values()) == {"user", "assistant", "memory", "tool"}
                assert m.repo.roles_of(everything) == mine
                theirs = [lab for lab in everything if lab not in mine]
                assert theirs and m.repo.roles_of(theirs) == {}
                assert m.repo.roles_of([]) == {}
        finally:
            team.close()


def test_the_role_weight_is_checked_like_the_others(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        mem.add_turns(
            "s1",
            [
                Turn("user", "I bought a fern and a basil"),
                Turn("assistant", "Ferns like shade; basil wants sun"),
                Turn("user", "My sister prefers cacti"),
            ],
        )
        q = "Which plants did I buy?"
        hits = mem.recall(q, k=3, explain=True, log=False, weights={"role": 2.5})
        weighted = [h.explain["role"] for h in hits if h.explain and "role" in h.explain]
        assert weighted and all(e["weight"] == 2.5 for e in weighted)
        for bad in (
            {"role": -1.0},
            {"role": float("nan")},
            {"role": float("inf")},
            {"role": True},
            {"role": "1"},
            {"roles": 1.0},  # not a signal's name
            {"party": 1.0},
        ):
            with pytest.raises(InvalidArgumentError):
                mem.recall(q, weights=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="role"):  # named among the signals
            mem.recall(q, weights={"speaker": 1.0})
