"""LangMem's memory tools work on ``AgentZeroStore`` unchanged: create, search, update
and delete memories, sync and async, with a static namespace and with the per-user
template resolved inside a LangGraph graph (no LLM: the tools are called directly)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

langmem = pytest.importorskip("langmem")

from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402

from agentzero_store.integrations.langgraph import AgentZeroStore  # noqa: E402

from ..conftest import FAST  # noqa: E402
from .langgraph_support import DIMS, KEY, fake_embed  # noqa: E402


@pytest.fixture
def store(data_dir: Path) -> Iterator[AgentZeroStore]:
    s = AgentZeroStore(
        data_dir,
        key=KEY,
        config=FAST,
        index={"dims": DIMS, "embed": fake_embed, "fields": ["content"]},
    )
    yield s
    s.close()


def _id(result: str) -> str:
    return result.rsplit(" ", 1)[-1]


def test_manage_and_search_tools(store: AgentZeroStore) -> None:
    manage = langmem.create_manage_memory_tool(namespace=("memories", "alice"), store=store)
    search = langmem.create_search_memory_tool(namespace=("memories", "alice"), store=store)
    first = manage.invoke({"content": "Alice drinks oolong tea every morning"})
    assert first.startswith("created memory ")
    manage.invoke({"content": "Alice's dog is called Rex"})
    found = json.loads(search.invoke({"query": "what tea does alice drink"}))
    assert found[0]["value"] == {"content": "Alice drinks oolong tea every morning"}
    assert found[0]["key"] == _id(first) and found[0]["score"] > found[1]["score"]
    assert found[0]["namespace"] == ["memories", "alice"]
    updated = manage.invoke(
        {"content": "Alice switched to green tea", "action": "update", "id": _id(first)}
    )
    assert updated == f"updated memory {_id(first)}"
    assert store.get(("memories", "alice"), _id(first)).value == {  # type: ignore[union-attr]
        "content": "Alice switched to green tea"
    }
    manage.invoke({"action": "delete", "id": _id(first)})
    assert store.get(("memories", "alice"), _id(first)) is None
    left = json.loads(search.invoke({"query": "tea", "limit": 5}))
    assert [m["value"]["content"] for m in left] == ["Alice's dog is called Rex"]


async def test_tools_async(store: AgentZeroStore) -> None:
    manage = langmem.create_manage_memory_tool(namespace=("memories", "bob"), store=store)
    search = langmem.create_search_memory_tool(
        namespace=("memories", "bob"), store=store, response_format="content_and_artifact"
    )
    created = await manage.ainvoke({"content": "Bob is allergic to peanuts"})
    msg = await search.ainvoke(
        {"type": "tool_call", "id": "1", "name": search.name, "args": {"query": "peanuts allergy"}}
    )
    assert msg.artifact[0].key == _id(created)
    assert json.loads(msg.content)[0]["value"] == {"content": "Bob is allergic to peanuts"}


def test_tools_in_a_graph_with_the_user_template(store: AgentZeroStore) -> None:
    manage = langmem.create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    search = langmem.create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"))

    def node(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        text = str(state["messages"][-1].content)
        if text.endswith("?"):
            return {"messages": [("ai", search.invoke({"query": text}))]}
        return {"messages": [("ai", manage.invoke({"content": text}))]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", node)
    builder.add_edge(START, "agent")
    graph = builder.compile(store=store)
    for user, fact in [("u1", "u1 likes jazz"), ("u2", "u2 likes metal")]:
        config: RunnableConfig = {"configurable": {"langgraph_user_id": user}}
        graph.invoke({"messages": [("user", fact)]}, config)
    answer = graph.invoke(
        {"messages": [("user", "what music?")]}, {"configurable": {"langgraph_user_id": "u1"}}
    )
    found = json.loads(answer["messages"][-1].content)
    assert [m["value"]["content"] for m in found] == ["u1 likes jazz"]  # u2's stays apart
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "u1"), ("memories", "u2")]
