"""Agent tools: JSON-in, JSON-out objects for agent loops and the MCP server.

Each tool has a ``name``, a ``description`` written for a language model, a JSON Schema
(``schema()``), and ``run(arguments)`` that validates the arguments (typed errors with a
hint; unknown keys refused) and returns a JSON-ready dict.

- over ``AgentMemory`` (``agent_memory_tools``): memory_grant, memory_remember,
  memory_fact, memory_recall, memory_list, memory_feedback, memory_archive,
  memory_forget (soft, with an undo token), memory_undo;
- over the plain ``SqliteMemoryStore``: ``MemoryAppendTool``, ``SemanticRecallTool``,
  ``MemoryForgetTool`` (a hard delete); ``AdoptingAppendTool`` is ``memory_append`` whose
  entries the agent memory adopts at once (the MCP server's);
- over documents: ``RagIngestTool``, ``RagQueryTool``, ``RagDeleteTool``.
"""

from .agent_memory import agent_memory_tools
from .base import AgentTool, Arg, ScopeViolationError
from .documents import Documents, RagDeleteTool, RagIngestTool, RagQueryTool
from .memory import MemoryAppendTool, MemoryForgetTool, SemanticRecallTool
from .memory_extract import AgentExtractTool
from .memory_reads import AgentContextTool, AgentListTool, AgentRecallTool
from .memory_scopes import AdoptingAppendTool, MemoryScopes
from .memory_writes import (
    AgentArchiveTool,
    AgentFactTool,
    AgentFeedbackTool,
    AgentForgetTool,
    AgentGrantTool,
    AgentRememberTool,
    AgentUndoTool,
)

__all__ = [
    "AdoptingAppendTool",
    "AgentArchiveTool",
    "AgentExtractTool",
    "AgentFactTool",
    "AgentFeedbackTool",
    "AgentForgetTool",
    "AgentGrantTool",
    "AgentContextTool",
    "AgentListTool",
    "AgentRecallTool",
    "AgentRememberTool",
    "AgentTool",
    "AgentUndoTool",
    "Arg",
    "Documents",
    "MemoryAppendTool",
    "MemoryForgetTool",
    "MemoryScopes",
    "RagDeleteTool",
    "RagIngestTool",
    "RagQueryTool",
    "ScopeViolationError",
    "SemanticRecallTool",
    "agent_memory_tools",
]
