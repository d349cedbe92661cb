"""The agent-memory layer: ``AgentMemory`` on the encrypted memory store (see
``memory``); its SQL is in ``repository``, its math in ``fsrs`` and ``dedup``."""

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

__all__ = [
    "AgentMemory",
    "ConsolidationReport",
    "Edge",
    "EraseReport",
    "Fact",
    "ForgetReceipt",
    "HistoryEntry",
    "Memory",
    "Procedure",
    "RecallHit",
    "Turn",
    "WriteResult",
]
