"""A LangChain retrieval chain on agentzero_store — offline, every byte encrypted.

- ``AgentZeroVectorStore`` holds a few documents (embedded by ``FakeHashEmbeddings``, a
  stand-in that hashes words: no model download, no network) and serves as the chain's
  retriever;
- ``AgentZeroChatMessageHistory`` keeps the conversation the prompt is given;
- ``AgentZeroRetriever`` then recalls from the agent memory what was said;
- the chat model is LangChain's scripted ``FakeListChatModel`` (no LLM).

    python examples/langchain_retriever_chain.py [DATA_DIR]

Prints one JSON line: the answers, the documents retrieved, what recall found.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnablePassthrough

from agentzero_store import AgentMemory
from agentzero_store.integrations.langchain import (
    AgentZeroChatMessageHistory,
    AgentZeroRetriever,
    AgentZeroVectorStore,
)

PASSPHRASE = os.environ.get("AGENTZERO_PASSPHRASE", "example passphrase, change me")


class FakeHashEmbeddings(Embeddings):
    """A fake embedding for an offline example: each word hashed into one of 64 slots."""

    def _embed(self, text: str) -> list[float]:
        v = [0.0] * 64
        for word in text.lower().replace("?", " ").replace(".", " ").split():
            v[hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
        return v

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


DOCUMENTS = [
    Document("The office kettle is descaled every Monday.", metadata={"team": "facilities"}),
    Document("Expense reports are due on the fifth of each month.", metadata={"team": "finance"}),
    Document("The staging database is refreshed every night.", metadata={"team": "platform"}),
]


def format_docs(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs)


def main(data_dir: str) -> dict[str, Any]:
    # The swap from LangChain's InMemoryVectorStore(embeddings) / SQLChatMessageHistory:
    store = AgentZeroVectorStore(FakeHashEmbeddings(), data_dir=data_dir, passphrase=PASSPHRASE)
    history = AgentZeroChatMessageHistory("employee-7", data_dir=data_dir, passphrase=PASSPHRASE)
    try:
        store.add_documents(DOCUMENTS, ids=["kettle", "expenses", "staging"])
        retriever = store.as_retriever(search_kwargs={"k": 1})
        prompt = ChatPromptTemplate.from_messages(
            [
                ("system", "Answer from this context:\n{context}"),
                MessagesPlaceholder("history"),
                ("human", "{question}"),
            ]
        )
        model = FakeListChatModel(
            responses=["Expense reports are due on the fifth.", "On the fifth, every month."]
        )
        chain = (
            RunnablePassthrough.assign(
                context=lambda x: format_docs(retriever.invoke(x["question"]))
            )
            | prompt
            | model
            | StrOutputParser()
        )
        questions = ["When are expense reports due?", "Remind me: expense reports?"]
        answers = []
        for q in questions:
            answer = chain.invoke({"question": q, "history": history.messages})
            history.add_messages([HumanMessage(q), AIMessage(answer)])
            answers.append(answer)
        retrieved = [d.id for d in retriever.invoke(questions[0])]
        stored = [str(m.content) for m in history.messages]
    finally:
        store.close()
        history.close()

    with AgentMemory.open(data_dir, passphrase=PASSPHRASE) as memory:
        recalled = [
            d.page_content for d in AgentZeroRetriever(memory=memory, k=2).invoke("expense")
        ]
    return {
        "answers": answers,
        "retrieved": retrieved,
        "history": stored,
        "recalled": recalled,
        "documents": [d.page_content for d in DOCUMENTS],
    }


if __name__ == "__main__":
    where = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="agentzero-example-")
    print(json.dumps(main(where), ensure_ascii=False))
