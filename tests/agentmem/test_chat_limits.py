"""The chat-history decorators (capacity, tokens, summaries) and the extractive
summarizer, over a real AgentMemory (issue 17)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agentzero_store import (
    AgentMemory,
    CapacityLimitedChat,
    ChatHistory,
    ChatMessage,
    ExtractiveSummarizer,
    InvalidArgumentError,
    LocalEmbedder,
    SummarizingChat,
    TokenLimitedChat,
)
from agentzero_store.agentmem.chat.history import ChatMemory
from agentzero_store.agentmem.chat.summarize import Summarizer, sentences

from .conftest import Clock, open_memory
from .test_chat import say, texts


@pytest.fixture
def mem(bmem: AgentMemory) -> AgentMemory:
    """This module's tests on both backends (``where``)."""
    return bmem


def test_capacity_keeps_the_system_prompt_and_the_newest(mem: AgentMemory, clock: Clock) -> None:
    h = CapacityLimitedChat(ChatHistory(mem, "c1"), 3)
    assert isinstance(h, ChatMemory) and h.init("a1") is h
    say(h, clock, "system", "You are a gardener.")
    for i in range(5):
        say(h, clock, "user", f"q{i}")
        assert len(h.history()) <= 3
    assert texts(h) == ["You are a gardener.", "q3", "q4"]
    assert [m.content for m in h.memory.recall("q1", mode="keyword")] == []  # forgotten


def test_capacity_oldest_first_lets_the_prompt_go(mem: AgentMemory, clock: Clock) -> None:
    h = CapacityLimitedChat(ChatHistory(mem, "c1"), 2, strategy="oldest_first")
    say(h, clock, "system", "You are a gardener.")
    for i in range(3):
        say(h, clock, "user", f"q{i}")
    assert texts(h) == ["q1", "q2"]


def test_capacity_of_one_keeps_just_the_newest(mem: AgentMemory, clock: Clock) -> None:
    h = CapacityLimitedChat(ChatHistory(mem, "c1"), 1)
    say(h, clock, "system", "You are a gardener.")
    say(h, clock, "user", "hello")
    assert texts(h) == ["hello"]


def test_limits_are_checked(mem: AgentMemory) -> None:
    inner = ChatHistory(mem, "c1")
    for make in (
        lambda: CapacityLimitedChat(inner, 0),
        lambda: CapacityLimitedChat(inner, True),  # type: ignore[arg-type]
        lambda: CapacityLimitedChat(inner, 3, strategy="random"),  # type: ignore[arg-type]
        lambda: TokenLimitedChat(inner, -1),
        lambda: SummarizingChat(inner),
        lambda: SummarizingChat(inner, max_messages=1),
        lambda: SummarizingChat(inner, object(), max_messages=4),  # type: ignore[arg-type]
        lambda: CapacityLimitedChat("history", 3),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidArgumentError):
            make()


def test_token_limit_prunes_after_each_message(mem: AgentMemory, clock: Clock) -> None:
    h = TokenLimitedChat(ChatHistory(mem, "c1"), 20)
    say(h, clock, "system", "Be brief and kind.")  # 6 tokens (estimated)
    for i in range(6):
        say(h, clock, "user", f"question {i} about the garden")  # 7 tokens each
        assert sum(h.token_counts(h.history())) <= 20
    assert texts(h) == [
        "Be brief and kind.",
        "question 4 about the garden",
        "question 5 about the garden",
    ]
    # One message larger than the whole budget stays: the newest message never goes.
    say(h, clock, "user", " ".join(["word"] * 30))
    assert [m.role for m in h.history()] == ["user"]


def test_decorators_compose(mem: AgentMemory, clock: Clock) -> None:
    h = TokenLimitedChat(CapacityLimitedChat(ChatHistory(mem, "c1"), 4), 1_000)
    for i in range(6):
        say(h, clock, "user", f"q{i}")
    assert texts(h) == ["q2", "q3", "q4", "q5"]
    assert h.clear().count == 4 and h.history() == []


def test_summaries_replace_old_messages_and_fold_into_each_other(
    mem: AgentMemory, clock: Clock
) -> None:
    h = SummarizingChat(ChatHistory(mem, "c1"), max_messages=4)
    say(h, clock, "system", "You plan trips.")
    for i, text in enumerate(
        [
            "We fly to Porto on May 3. The flight leaves early.",
            "Book a hotel near the river. Breakfast included please.",
            "Dinner reservations for two. Somewhere with fish.",
            "Rent a car for the Douro valley. Automatic gearbox.",
            "Pack light. It will be warm.",
        ]
    ):
        say(h, clock, "user", text)
        assert len(h.history()) <= 4, i
    got = h.history()
    assert [m.role for m in got] == ["system", "system", "user", "user"]
    prompt, summary = got[0], got[1]
    assert prompt.content == "You plan trips." and prompt.is_system_prompt
    assert summary.summary and not summary.is_system_prompt and summary.summarized == 3
    # Without an embedder: the first sentence of each folded message (of an earlier
    # summary, every sentence), in conversation order.
    assert summary.content.split("\n") == [
        "We fly to Porto on May 3.",
        "Book a hotel near the river.",
        "Dinner reservations for two.",
    ]
    assert [m.content for m in got[2:]] == [
        "Rent a car for the Douro valley. Automatic gearbox.",
        "Pack light. It will be warm.",
    ]
    # The folded messages were forgotten (soft): recall no longer finds them.
    assert h.memory.recall("Breakfast", mode="keyword") == []
    assert h.search("Porto") == [summary]


def test_summaries_keep_the_history_within_a_token_budget(mem: AgentMemory, clock: Clock) -> None:
    h = SummarizingChat(ChatHistory(mem, "c1"), max_tokens=60)
    for i in range(8):  # 19 tokens each (estimated); a summary of five first sentences: 27
        say(h, clock, "user", f"Note {i} is here. It has filler words that pad it out a lot.")
        assert sum(h.token_counts(h.history())) <= 60
    got = h.history()
    assert got[0].summary and got[0].summarized + len(got) - 1 == 8
    assert all(not m.summary for m in got[1:])


class Failing:
    """A summarizer that fails, or returns nothing."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    def summarize(self, messages: Sequence[ChatMessage]) -> str:
        if self.text is None:
            raise RuntimeError("the LLM is down")
        return self.text


@pytest.mark.parametrize("text", [None, "   "])
def test_a_failing_summarizer_removes_nothing(
    mem: AgentMemory, clock: Clock, text: str | None
) -> None:
    h = SummarizingChat(ChatHistory(mem, "c1"), Failing(text), max_messages=2)
    assert isinstance(h.summarizer, Summarizer)
    say(h, clock, "user", "one")
    say(h, clock, "user", "two")
    with pytest.raises(RuntimeError if text is None else InvalidArgumentError):
        say(h, clock, "user", "three")
    assert texts(h) == ["one", "two", "three"]  # the new message is stored all the same


def test_a_custom_summarizer_sees_the_old_messages_in_order(mem: AgentMemory, clock: Clock) -> None:
    seen: list[list[str]] = []

    class Recording:
        def summarize(self, messages: Sequence[ChatMessage]) -> str:
            seen.append([m.content for m in messages])
            return f"{len(messages)} earlier messages"

    h = SummarizingChat(ChatHistory(mem, "c1"), Recording(), max_messages=3)
    for i in range(5):
        say(h, clock, "user", f"m{i}")
    assert seen == [["m0", "m1"], ["2 earlier messages", "m2"]]
    assert texts(h) == ["2 earlier messages", "m3", "m4"]
    assert h.history()[0].summarized == 3


def test_sentences_split_on_ends_and_lines() -> None:
    assert sentences('He said "go." Then left!  Why?\nNext line') == [
        'He said "go."',
        "Then left!",
        "Why?",
        "Next line",
    ]
    assert sentences("  ") == []


def test_the_extractive_summarizer_is_deterministic_and_picks_the_gist(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        h = ChatHistory(mem, "c1")
        for text in [
            "The sourdough starter needs feeding every day.",
            "My favourite football team lost again on Sunday.",
            "Bake the bread at 240 degrees for forty minutes.",
            "Let the dough rise overnight in the fridge.",
            "Flour, water and salt are all a loaf needs.",
        ]:
            say(h, clock, "user", text)
        msgs = h.history()
    s = ExtractiveSummarizer(local_embedder, max_sentences=3)
    first = s.summarize(msgs)
    assert (
        first
        == s.summarize(msgs)
        == ExtractiveSummarizer(local_embedder, max_sentences=3).summarize(msgs)
    )
    picked = first.split("\n")
    assert len(picked) == 3 and "My favourite football team lost again on Sunday." not in picked
    assert picked == [x for x in (m.content for m in msgs) if x in picked]  # conversation order
    plain = ExtractiveSummarizer(max_sentences=2).summarize(msgs)
    assert plain.split("\n") == [  # without an embedder: the longest first sentences
        "My favourite football team lost again on Sunday.",  # 48 characters
        "Bake the bread at 240 degrees for forty minutes.",  # 48
    ]
    with pytest.raises(InvalidArgumentError):
        ExtractiveSummarizer(max_sentences=0)
