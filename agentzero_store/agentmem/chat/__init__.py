"""A plain chat history over an ``AgentMemory`` (``history``), its messages (``messages``),
decorators that keep it within a limit (``limits``) and summaries without an LLM
(``summarize``)."""

from .history import DEFAULT_CHAT, ChatHistory, ChatMemory
from .limits import CapacityLimitedChat, SummarizingChat, TokenLimitedChat
from .messages import ChatMessage, Removal
from .summarize import ExtractiveSummarizer, Summarizer

__all__ = [
    "DEFAULT_CHAT",
    "CapacityLimitedChat",
    "ChatHistory",
    "ChatMemory",
    "ChatMessage",
    "ExtractiveSummarizer",
    "Removal",
    "Summarizer",
    "SummarizingChat",
    "TokenLimitedChat",
]
