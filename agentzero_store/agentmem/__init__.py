"""The agent-memory layer: ``AgentMemory`` on the encrypted memory store (see
``memory``); its SQL is in ``repository``, its math in ``fsrs`` and ``dedup``. Over it:
a plain chat history (``chat``, its records in ``chat_messages``, limits in
``chat_limits``) and skills (``skills``, their SQL in ``skill_repository``)."""

from .chat import ChatHistory, ChatMemory
from .chat_limits import CapacityLimitedChat, SummarizingChat, TokenLimitedChat
from .chat_messages import ChatMessage, Removal
from .memory import AgentMemory
from .records import (
    ConsolidationReport,
    Edge,
    EraseReport,
    Fact,
    ForgetReceipt,
    HistoryEntry,
    Memory,
    Procedure,
    RecallHit,
    Turn,
    WriteResult,
)
from .skill_records import Skill, SkillExport, SkillImport
from .skills import SkillStore
from .summarize import ExtractiveSummarizer, Summarizer
from .tokens import TokenCounter, count_tokens

__all__ = [
    "AgentMemory",
    "CapacityLimitedChat",
    "ChatHistory",
    "ChatMemory",
    "ChatMessage",
    "ConsolidationReport",
    "Edge",
    "EraseReport",
    "ExtractiveSummarizer",
    "Fact",
    "ForgetReceipt",
    "HistoryEntry",
    "Memory",
    "Procedure",
    "RecallHit",
    "Removal",
    "Skill",
    "SkillExport",
    "SkillImport",
    "SkillStore",
    "SummarizingChat",
    "Summarizer",
    "TokenCounter",
    "TokenLimitedChat",
    "Turn",
    "WriteResult",
    "count_tokens",
]
