"""A LangGraph agent that remembers a user's facts across threads and restarts, with
everything encrypted in one data dir: ``AgentZeroSaver`` keeps each thread's messages,
``AgentZeroStore`` the user's long-term facts (semantic search).

Offline: the "model" is a scripted function (no LLM, no network) and the embedder a
small bag-of-words hash, so the example runs anywhere. Swap in a real chat model and
``agentzero_store.LocalEmbedder`` (or any LangChain ``Embeddings``) for real use.

    python examples/langgraph_memory.py DATA_DIR tell "My favorite tea is oolong"
    python examples/langgraph_memory.py DATA_DIR ask "What is my favorite tea?"

Each call is a fresh process and a fresh thread: the answer comes from the store.
The passphrase comes from ``AGENTZERO_PASSPHRASE`` (or ``--passphrase``).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import re
import uuid
from collections.abc import Sequence

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime

from agentzero_store.integrations.langgraph import AgentZeroSaver, AgentZeroStore

DIMS = 64


def embed(texts: Sequence[str]) -> list[list[float]]:
    """A tiny offline embedder: hashed words, normalised (stands in for a real model)."""
    out = []
    for text in texts:
        vec = [0.0] * DIMS
        for word in re.findall(r"\w+", text.lower()):
            vec[hashlib.sha256(word.encode()).digest()[0] % DIMS] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out


def scripted_model(state: MessagesState, config: RunnableConfig, runtime: Runtime) -> dict:
    """The agent's turn. A real agent would call a chat model with memory tools; this
    one follows a script: "My ... is X" is remembered, a question is answered from
    memory."""
    assert runtime.store is not None
    user = config["configurable"]["user_id"]
    facts = ("users", user, "facts")
    text = str(state["messages"][-1].content)
    if text.rstrip().endswith("?"):
        hits = runtime.store.search(facts, query=text, limit=1)
        reply = f"You told me: {hits[0].value['text']}" if hits else "I don't know yet."
    else:
        runtime.store.put(facts, str(uuid.uuid4()), {"text": text})
        reply = "Noted."
    return {"messages": [AIMessage(reply)]}


def build(saver: AgentZeroSaver, store: AgentZeroStore):  # type: ignore[no-untyped-def]
    """The graph: one node, checkpointed by ``saver``, with ``store`` for memories."""
    builder = StateGraph(MessagesState)
    builder.add_node("agent", scripted_model)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver, store=store)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    parser.add_argument("mode", choices=["tell", "ask"])
    parser.add_argument("message")
    parser.add_argument("--user", default="alice")
    parser.add_argument("--thread", default=None, help="a thread id (default: a new one)")
    parser.add_argument("--passphrase", default=os.environ.get("AGENTZERO_PASSPHRASE"))
    args = parser.parse_args()
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    with (
        AgentZeroSaver(args.data_dir, passphrase=args.passphrase) as saver,
        AgentZeroStore(args.data_dir, passphrase=args.passphrase, index=index) as store,
    ):
        graph = build(saver, store)
        thread = args.thread or str(uuid.uuid4())
        config: RunnableConfig = {"configurable": {"thread_id": thread, "user_id": args.user}}
        result = graph.invoke({"messages": [HumanMessage(args.message)]}, config)
        print(f"[{thread}] {result['messages'][-1].content}")
        print(f"[{thread}] messages in this thread: {len(result['messages'])}")


if __name__ == "__main__":
    main()
