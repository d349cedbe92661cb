"""``AgentZeroChatMessageHistory``: LangChain messages round-trip unchanged through
``ChatHistory`` (type, content, additional_kwargs, tool calls ...), sync and async, with
typed errors for what cannot be stored and nothing of it written."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from agentzero_store import AgentMemory, ChatHistory, InvalidArgumentError
from agentzero_store.base.limits import MAX_METADATA_BYTES
from agentzero_store.integrations import _shared
from agentzero_store.integrations.langchain import (
    AgentZeroChatMessageHistory,
    HandleClosedError,
)

from ..conftest import FAST, PASSPHRASE
from .adapter_support import canary, plaintext_hits


def open_history(data_dir: Path, sid: str = "chat-1", **kw: Any) -> AgentZeroChatMessageHistory:
    return AgentZeroChatMessageHistory(
        sid, data_dir=data_dir, passphrase=PASSPHRASE, config=FAST, **kw
    )


MESSAGES: list[BaseMessage] = [
    SystemMessage("You are terse."),
    HumanMessage("Weather in Paris?", additional_kwargs={"lang": "en"}, id="h1", name="ann"),
    AIMessage(
        "",
        tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "call_1"}],
        response_metadata={"model": "fake", "tokens": 12},
        usage_metadata={"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
    ),
    ToolMessage("sunny, 21 C", tool_call_id="call_1", artifact={"raw": [1, 2]}),
    AIMessage([{"type": "text", "text": "It is sunny."}, {"type": "text", "text": "21 C."}]),
    FunctionMessage("42", name="answer"),
    ChatMessage(role="developer", content="be brief"),
    ChatMessage(role="critic", content="an unknown role"),
    AIMessageChunk("a chunk", id="chunk-1"),
    HumanMessage("x" * (MAX_METADATA_BYTES * 2)),  # a long text: stored once, as the text
]


def test_messages_round_trip_unchanged(data_dir: Path) -> None:
    with open_history(data_dir) as h:
        assert h.messages == []
        h.add_messages(MESSAGES)
        h.add_user_message("and one more")
        got = h.messages
    assert got[:-1] == MESSAGES
    assert [type(m) for m in got[:-1]] == [type(m) for m in MESSAGES]
    assert got[-1] == HumanMessage("and one more")
    with open_history(data_dir) as again:  # another object, after the memory was closed
        assert again.messages == got


async def test_async_methods(data_dir: Path) -> None:
    with open_history(data_dir) as h:
        await h.aadd_messages(MESSAGES[:4])
        assert await h.aget_messages() == MESSAGES[:4]
        await h.aclear()
        assert await h.aget_messages() == []


async def test_concurrent_async_adds_keep_each_batch_together(data_dir: Path) -> None:
    with open_history(data_dir) as h:
        await asyncio.gather(
            *(h.aadd_messages([HumanMessage(f"q{i}"), AIMessage(f"a{i}")]) for i in range(50))
        )
        got = [m.content for m in await h.aget_messages()]
    assert len(got) == 100
    pairs = list(zip(got[::2], got[1::2], strict=True))
    assert sorted(pairs) == sorted((f"q{i}", f"a{i}") for i in range(50))


def test_clear_and_sessions_apart(data_dir: Path) -> None:
    with open_history(data_dir, "a") as a, open_history(data_dir, "b") as b:
        a.add_messages([HumanMessage("for a")])
        b.add_messages([HumanMessage("for b")])
        a.clear()
        assert a.messages == []
        assert b.messages == [HumanMessage("for b")]


def test_messages_are_recallable_and_cleared_ones_are_not(data_dir: Path) -> None:
    kept, cleared = canary("kept"), canary("cleared")
    with open_history(data_dir, "a") as a, open_history(data_dir, "b") as b:
        a.add_messages([HumanMessage(f"note {kept}")])
        b.add_messages([AIMessage(f"note {cleared}")])
        b.clear()
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        assert [h.memory.content for h in mem.recall(kept)] == [f"note {kept}"]
        assert mem.recall(cleared) == []


def test_erase_leaves_no_plaintext_and_nothing_is_plaintext(data_dir: Path) -> None:
    kept, erased = canary("kept"), canary("erased")
    with open_history(data_dir, "keep") as k, open_history(data_dir, "gone", erase=True) as g:
        k.add_messages([HumanMessage(f"keep {kept}", additional_kwargs={"tag": kept})])
        g.add_messages([HumanMessage(f"erase {erased}")])
        g.clear()
        assert k.messages[0].content == f"keep {kept}"
    assert plaintext_hits(data_dir, [kept, erased]) == []


def test_messages_written_otherwise_read_as_their_role(data_dir: Path) -> None:
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        chat = ChatHistory(mem, "chat-1")
        chat.add_message("user", "hello")
        chat.add_message("assistant", "hi")
        chat.add_message("tool", "result")
        ids = [m.id for m in chat.history()]
    with open_history(data_dir) as h:
        assert h.messages == [
            HumanMessage("hello", id=ids[0]),
            AIMessage("hi", id=ids[1]),
            ChatMessage(role="tool", content="result", id=ids[2]),
        ]


@pytest.mark.parametrize(
    "bad",
    [
        [HumanMessage("ok"), "not a message"],
        [HumanMessage("ok"), HumanMessage("x", additional_kwargs={"raw": b"bytes"})],
        [HumanMessage("ok"), HumanMessage("x", additional_kwargs={"n": float("inf")})],
        [HumanMessage("ok"), AIMessage([{"type": "text", "text": "y" * MAX_METADATA_BYTES}])],
        HumanMessage("one message, not a list"),
    ],
    ids=["str", "bytes", "inf", "huge-list-content", "not-a-list"],
)
def test_bad_messages_are_typed_and_store_nothing(data_dir: Path, bad: Any) -> None:
    with open_history(data_dir) as h:
        h.add_messages([HumanMessage("before")])
        with pytest.raises(InvalidArgumentError) as err:
            h.add_messages(bad)
        assert err.value.hint
        assert h.messages == [HumanMessage("before")]


def test_closed_history_raises(data_dir: Path) -> None:
    h = open_history(data_dir)
    h.close()
    with pytest.raises(HandleClosedError):
        _ = h.messages
    with pytest.raises(HandleClosedError):
        h.add_messages([HumanMessage("x")])
    with pytest.raises(HandleClosedError):
        h.clear()
    assert _shared.open_count() == 0


def test_reserved_conversation_is_refused_and_released(data_dir: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        open_history(data_dir, "facts")
    assert _shared.open_count() == 0
