"""LangChain on agentzero_store (``pip install "agentzero-store[langchain]"``):
``AgentZeroVectorStore`` (a ``VectorStore``), ``AgentZeroRetriever`` (a ``BaseRetriever``
over ``AgentMemory.recall``) and ``AgentZeroChatMessageHistory`` (a
``BaseChatMessageHistory`` over ``ChatHistory``). langchain_core is imported here and
nowhere else in the package."""

from .._shared import HandleClosedError
from .chat_history import AgentZeroChatMessageHistory
from .retriever import AgentZeroRetriever
from .vectorstore import AgentZeroVectorStore

__all__ = [
    "AgentZeroChatMessageHistory",
    "AgentZeroRetriever",
    "AgentZeroVectorStore",
    "HandleClosedError",
]
