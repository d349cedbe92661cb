"""LangChain on agentzero_store (``pip install "agentzero-store[langchain]"``):
``AgentZeroVectorStore`` (a ``VectorStore``), ``AgentZeroRetriever`` (a ``BaseRetriever``
over ``AgentMemory.recall``) and ``AgentZeroChatMessageHistory`` (a
``BaseChatMessageHistory`` over ``ChatHistory``), and ``AgentZeroEmbeddings`` (LangChain
``Embeddings`` over the local model or any ``Embedder``). langchain_core is imported here and
nowhere else in the package."""

from .._shared import HandleClosedError
from .chat_history import AgentZeroChatMessageHistory
from .embeddings import AgentZeroEmbeddings
from .retriever import AgentZeroRetriever
from .vectorstore import AgentZeroVectorStore

__all__ = [
    "AgentZeroChatMessageHistory",
    "AgentZeroEmbeddings",
    "AgentZeroRetriever",
    "AgentZeroVectorStore",
    "HandleClosedError",
]
