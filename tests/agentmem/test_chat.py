"""ChatHistory: one conversation's messages as episodic turns of a real AgentMemory
(SQLCipher files on disk), TnsAI's MemoryStore contract (issue 17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentzero_store import (
    AgentMemory,
    ChatHistory,
    ChatMessage,
    InvalidArgumentError,
    LocalEmbedder,
)
from agentzero_store.agentmem.chat.history import ChatMemory
from agentzero_store.agentmem.chat.messages import choose_by_tokens
from agentzero_store.agentmem.tokens import count_tokens, estimate_tokens
from agentzero_store.base.config import Layout
from tests.conftest import FAST, PASSPHRASE
from tests.support.sqlcipher_pages import find_plaintext

from .conftest import Clock, open_memory
from .test_erase_proof import halves, plaintext_left


@pytest.fixture
def mem(bmem: AgentMemory) -> AgentMemory:
    """This module's tests on both backends (``where``)."""
    return bmem


def say(h: ChatMemory, clock: Clock, role: str, text: str) -> ChatMessage:
    """A message one second after the previous one (as a real clock would space them)."""
    clock.advance(seconds=1)
    return h.add_message(role, text)


def texts(h: ChatMemory) -> list[str]:
    return [m.content for m in h.history()]


# ---------------------------------------------------------------------- writing, reading
def test_messages_round_trip_in_order_and_survive_reopen(data_dir: Path, clock: Clock) -> None:
    with open_memory(data_dir, clock) as mem:
        h = ChatHistory(mem, "c1")
        a = say(h, clock, "system", "You are terse.")
        b = h.add_message({"role": "user", "content": "Hi there", "name": "ana"})
        c = say(h, clock, "assistant", "Hello.")
        assert isinstance(h, ChatMemory)
        assert h.history() == [a, b, c]
    with ChatHistory.open(
        data_dir,
        conversation_id="c1",
        passphrase=PASSPHRASE,
        config=FAST,
        clock=clock,
        org_id="acme",
        agent_id="a1",
    ) as h2:
        got = h2.history()
        assert [m.as_message() for m in got] == [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi there", "name": "ana"},
            {"role": "assistant", "content": "Hello."},
        ]
        assert [m.id for m in got] == [a.id, b.id, c.id]
        assert got[1].created_at == b.created_at and got[1].extra == {"name": "ana"}
        # Stored as episodic turns of the agent memory: encrypted, recallable, scoped.
        m = h2.memory.get(b.id)
        assert m is not None and (m.type, m.role, m.conversation_id) == ("episodic", "user", "c1")
        assert [x.id for x in h2.memory.recall("hi there", mode="keyword")] == [b.id]


def test_same_content_twice_is_two_messages(mem: AgentMemory) -> None:
    h = ChatHistory(mem, "c1")
    h.add_message("user", "ok")
    h.add_message("user", "ok")
    assert texts(h) == ["ok", "ok"]


def test_recent_is_the_newest_n_oldest_first(mem: AgentMemory, clock: Clock) -> None:
    h = ChatHistory(mem, "c1")
    for i in range(5):
        say(h, clock, "user", f"message {i}")
    assert [m.content for m in h.recent(2)] == ["message 3", "message 4"]
    assert len(h.recent(50)) == 5
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgumentError):
            h.recent(bad)  # type: ignore[arg-type]


def test_results_and_inputs_are_copies(mem: AgentMemory) -> None:
    h = ChatHistory(mem, "c1")
    given: dict[str, Any] = {"role": "tool", "content": "42", "tool_call_id": "t1", "x": {"y": [1]}}
    stored = h.add_message(given)
    given["content"] = "changed"
    given["x"]["y"].append(2)
    stored.extra["x"]["y"].append(3)  # type: ignore[index]
    stored.as_message()["x"]["y"].append(4)
    first = h.history()[0]
    first.extra["x"]["y"].append(5)  # type: ignore[index]
    again = h.history()[0]
    assert again.content == "42" and again.extra == {"tool_call_id": "t1", "x": {"y": [1]}}
    assert again.as_message() == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "t1",
        "x": {"y": [1]},
    }
    with pytest.raises(AttributeError):
        again.content = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("wizard", "secret words"), "role must be one of"),
        (("user", "   "), "content must not be blank"),
        (("user", None), "content is missing"),
        (("user", 5), "content must be a string"),
        (({"role": "user"},), "needs 'content'"),
        (({"content": "secret words"},), "needs 'role'"),
        (({"role": "user", "content": ["secret", "words"]},), "multi-part"),
        (({"role": "user", "content": "secret words", "n": float("nan")},), "message"),
        (({"role": "user", "content": "secret words", "s": {1, 2}},), "message"),
        (({"role": "user", "content": "secret words", 3: "x"},), "keys must be strings"),
        (({"role": "user", "content": "secret words"}, "more"), "not both"),
        ((["user", "secret words"],), "a message is a dict"),
        (("user", "bad \udcff secret words"), "lone surrogate"),
    ],
)
def test_bad_messages_are_refused_clearly_without_echoing_content(
    mem: AgentMemory, args: tuple[Any, ...], says: str
) -> None:
    h = ChatHistory(mem, "c1")
    with pytest.raises(InvalidArgumentError, match=says) as info:
        h.add_message(*args)
    assert "secret" not in str(info.value)
    assert h.history() == []


def test_the_layers_own_conversations_are_refused(mem: AgentMemory) -> None:
    for cid in ("facts", "memories", "", "  "):
        with pytest.raises(InvalidArgumentError):
            ChatHistory(mem, cid)
    with pytest.raises(InvalidArgumentError, match="AgentMemory"):
        ChatHistory("not a memory", "c1")  # type: ignore[arg-type]


def test_init_binds_to_the_memorys_agent_and_keeps_or_clears(
    mem: AgentMemory, clock: Clock
) -> None:
    h = ChatHistory(mem, "c1")
    say(h, clock, "user", "remember me")
    assert h.init("a1") is h and texts(h) == ["remember me"]  # a restart keeps the history
    with pytest.raises(InvalidArgumentError, match="another agent"):
        h.init("a2")
    assert texts(h) == ["remember me"]
    h.init("a1", fresh=True)
    assert h.history() == []


def test_archived_messages_stay_in_the_history_with_their_text(
    mem: AgentMemory, clock: Clock
) -> None:
    h = ChatHistory(mem, "c1")
    a = say(
        h,
        clock,
        "user",
        "the gate code is 4417",
    )
    say(h, clock, "assistant", "noted")
    assert mem.archive(a.id)  # what consolidation does to a faded memory
    assert texts(h) == ["the gate code is 4417", "noted"]
    assert h.history()[0] == a


# ---------------------------------------------------------------------- scope
def test_other_agents_and_orgs_never_see_a_message(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock) as mem:
        say(ChatHistory(mem, "c1"), clock, "user", "the vault opens at noon")
    for org, agent in (("acme", "a2"), ("other", "a1")):
        with open_memory(where, clock, org_id=org, agent_id=agent) as mem:
            h = ChatHistory(mem, "c1")
            assert h.history() == [] and h.recent(5) == [] and h.search("vault") == []
            say(h, clock, "user", "my own vault")
            assert h.clear().count == 1
    with open_memory(where, clock) as mem:
        h = ChatHistory(mem, "c1")
        assert texts(h) == ["the vault opens at noon"]
        assert [m.content for m in h.search("vault")] == ["the vault opens at noon"]


def test_search_stays_in_its_conversation(mem: AgentMemory, clock: Clock) -> None:
    h1, h2 = ChatHistory(mem, "c1"), ChatHistory(mem, "c2")
    a = say(h1, clock, "user", "the boiler makes a knocking noise")
    say(h1, clock, "user", "lunch was fine")
    say(h2, clock, "user", "the boiler was serviced in May")
    mem.remember("boiler warranty ends in 2027", conversation_id="c1")  # a note, not a message
    assert h1.search("boiler") == [a]
    assert [m.content for m in h2.search("boiler", limit=3)] == ["the boiler was serviced in May"]
    with pytest.raises(InvalidArgumentError):
        h1.search("boiler", limit=0)


def test_search_is_hybrid_with_an_embedder(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        h = ChatHistory(mem, "c1")
        say(h, clock, "user", "My daughter starts school in September.")
        dog = say(h, clock, "user", "The dog needs a walk twice a day.")
        say(h, clock, "assistant", "The quarterly report is due Friday.")
        assert h.search("puppy exercise", limit=1) == [dog]  # no word in common


# ---------------------------------------------------------------------- removal
def test_clear_is_a_soft_forget_that_undo_brings_back(mem: AgentMemory, clock: Clock) -> None:
    h = ChatHistory(mem, "c1")
    other = ChatHistory(mem, "c2")
    for i in range(3):
        say(h, clock, "user", f"kiwi number {i}")
    say(other, clock, "user", "kiwi elsewhere")
    before = h.history()
    removal = h.clear()
    assert removal.count == 3 and not removal.erased and len(removal.undo_tokens) == 1
    assert h.history() == [] and h.search("kiwi") == []
    assert [x.memory.content for x in mem.recall("kiwi", mode="keyword")] == ["kiwi elsewhere"]
    assert texts(other) == ["kiwi elsewhere"]
    assert mem.undo(removal.undo_tokens[0]) == 3
    assert h.history() == before
    assert h.clear().to_dict()["count"] == 3 and ChatHistory(mem, "c1").clear().count == 0


def test_prune_keeps_system_prompts_and_the_newest_message(mem: AgentMemory, clock: Clock) -> None:
    h = ChatHistory(mem, "c1")
    say(h, clock, "system", "Be brief and kind.")  # 4 words: 6 tokens (estimated)
    for i in range(4):
        say(h, clock, "user", f"question {i} about the garden")  # 5 words: 7 tokens
    counts = h.token_counts(h.history())
    assert counts == [6, 7, 7, 7, 7] == [estimate_tokens(m.content) for m in h.history()]
    removal = h.prune(19)  # 34 tokens: three questions must go (two leave exactly 20)
    assert removal.count == 3 and len(removal.undo_tokens) == 3
    assert texts(h) == ["Be brief and kind.", "question 3 about the garden"]
    # Only the newest message left besides the prompt: a tighter budget takes the prompt
    # before the newest message, and never the newest.
    assert h.prune(7).count == 1 and texts(h) == ["question 3 about the garden"]
    assert h.prune(0).count == 0 and len(h.history()) == 1
    for token in removal.undo_tokens:
        mem.undo(token)
    assert len(h.history()) == 4
    for bad in (-1, 2.0, True, "9"):
        with pytest.raises(InvalidArgumentError):
            h.prune(bad)  # type: ignore[arg-type]


def test_prune_oldest_first_takes_the_prompt_too(mem: AgentMemory, clock: Clock) -> None:
    h = ChatHistory(mem, "c1")
    say(h, clock, "system", "Be brief and kind.")
    say(h, clock, "user", "question about the garden")
    say(h, clock, "user", "another question about roses")
    h.prune(14, strategy="oldest_first")
    assert texts(h) == ["question about the garden", "another question about roses"]
    with pytest.raises(InvalidArgumentError, match="strategy"):
        h.prune(1, strategy="newest_first")  # type: ignore[arg-type]


def test_tokens_are_counted_with_the_embedders_tokenizer(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    words = ["antidisestablishmentarianism", "supercalifragilistic", "hello"]
    wordpiece = local_embedder.count_tokens(words)
    assert wordpiece[2] == 1 and wordpiece[0] > 2  # the estimate says 2 for any one word
    assert count_tokens(words) == [2, 2, 2]
    assert count_tokens(words, local_embedder) == wordpiece
    with open_memory(where, clock, embedder=local_embedder) as mem:
        h = ChatHistory(mem, "c1")
        for w in words:
            say(h, clock, "user", w)
        msgs = h.history()
        assert h.token_counts(msgs) == wordpiece
        budget = wordpiece[1] + wordpiece[2]  # with the estimate all three would fit
        assert choose_by_tokens(msgs, count_tokens(words), budget) == []
        assert h.prune(budget).ids == (msgs[0].id,)


def test_remove_takes_only_this_conversations_messages(mem: AgentMemory, clock: Clock) -> None:
    h, other = ChatHistory(mem, "c1"), ChatHistory(mem, "c2")
    a = say(h, clock, "user", "mine")
    b = say(other, clock, "user", "theirs")
    note = mem.remember("a note in c1", conversation_id="c1").id
    for ids in ([a.id, b.id], [note], ["no-such-id"]):
        with pytest.raises(InvalidArgumentError, match="not messages of conversation 'c1'"):
            h.remove(ids)
    assert texts(h) == ["mine"] and texts(other) == ["theirs"]
    assert h.remove(a.id).ids == (a.id,)  # type: ignore[arg-type]
    assert h.history() == [] and mem.get(note) is not None


def test_erased_messages_leave_no_text_on_disk(data_dir: Path, clock: Clock) -> None:
    """clear() of a history opened with erase=True: the text is on no page of memory.db,
    its WAL or the archive (decrypted page by page), archived messages included."""
    word = "quixotebarnacle"
    with open_memory(data_dir, clock) as mem:
        keys = mem.store.keys
        h = ChatHistory(mem, "c1", erase=True)
        assert h.erases
        a = say(h, clock, "user", f"my locker word is {word}")
        say(h, clock, "assistant", f"{word.upper()} noted, stored safely")
        say(h, clock, "user", f"and the spare is {word}2")
        mem.archive(a.id)
        kept = say(ChatHistory(mem, "c2"), clock, "user", "the office plant needs water")
        needles = sorted({h for w in (word, word.upper()) for h in halves(w.encode())})
        found = {
            n for _, _, n in find_plaintext(Layout(data_dir).memory_db, keys.sqlcipher_key, needles)
        }
        assert word.encode() in found  # the scan sees the text before the erase
        removal = h.clear()
        assert removal.erased and removal.count == 3 and not removal.pending
        assert removal.undo_tokens == ()
        assert h.history() == [] and mem.recall(word, mode="keyword") == []
        assert plaintext_left(data_dir, keys, needles) == []
    assert plaintext_left(data_dir, keys, needles) == []
    with open_memory(data_dir, clock) as mem:
        assert ChatHistory(mem, "c2").history() == [kept]
        assert [t["count"] for t in mem.tombstones()] == [3]
