"""``AgentZeroEmbeddings``: LangChain ``Embeddings`` over one of the package's embedders.

So a LangChain vector store or retriever can use the local all-MiniLM-L6-v2
(``LocalEmbedder``: offline, nothing downloaded at run time) or any ``Embedder``
without writing glue.
"""

from __future__ import annotations

import asyncio

from langchain_core.embeddings import Embeddings

from ...embed.local import LocalEmbedder
from ...embed.vectors import Embedder


class AgentZeroEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over an ``Embedder`` (default: ``LocalEmbedder()``).

    Args:
        embedder: any object with ``embed(texts)`` returning one float32 row per text,
            and a ``dimension``; the local model when omitted.

    Example:
        >>> emb = AgentZeroEmbeddings()
        >>> len(emb.embed_query("hello"))
        384
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder: Embedder = embedder if embedder is not None else LocalEmbedder()

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        return self._embedder.dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order (an empty list for no texts)."""
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._embedder.embed(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query text."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """``embed_documents`` in a worker thread: the event loop never waits on it."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """``embed_query`` in a worker thread."""
        return await asyncio.to_thread(self.embed_query, text)
