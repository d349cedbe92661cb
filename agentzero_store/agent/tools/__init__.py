"""Agent tools: JSON-in, JSON-out objects for agent loops and the MCP server.

Each tool has a ``name``, a ``description`` written for a language model, a JSON Schema
(``schema()``), and ``run(arguments)`` that validates the arguments (typed errors with a
hint; unknown keys refused) and returns a JSON-ready dict.
"""

from .base import AgentTool, Arg, ScopeViolationError
from .documents import Documents, RagDeleteTool, RagIngestTool, RagQueryTool
from .memory import MemoryAppendTool, MemoryForgetTool, SemanticRecallTool

__all__ = [
    "AgentTool",
    "Arg",
    "Documents",
    "MemoryAppendTool",
    "MemoryForgetTool",
    "RagDeleteTool",
    "RagIngestTool",
    "RagQueryTool",
    "ScopeViolationError",
    "SemanticRecallTool",
]
