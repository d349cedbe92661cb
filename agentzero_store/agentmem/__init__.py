"""The agent-memory layer: ``AgentMemory`` (``memory``) on the encrypted memory store.

The tree: the backend seam (``seam/``: Protocols by concern; ``rows``: the records that
cross it), the facade's services at this level (``writes``, ``reads``, ``beliefs``,
``decay``, ``tiers``, ``sessions``, ``lifecycle``) with the shared records and rules
(``records``, ``parts``, ``backends``, ``namespaces``, ``provenance``, ``context``,
``fsrs``); one folder per
concern above them (``recall``, ``consolidation``, ``extract``, ``chat``, ``skills``,
``transfer``); and the two backends side by side under the same file names (``sqlite``,
``postgres``). See docs/architecture.md."""

from .chat import (
    CapacityLimitedChat,
    ChatHistory,
    ChatMemory,
    ChatMessage,
    ExtractiveSummarizer,
    Removal,
    Summarizer,
    SummarizingChat,
    TokenLimitedChat,
)
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
from .skills import Skill, SkillExport, SkillImport, SkillStore
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
