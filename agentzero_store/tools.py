"""The public home of the agent tools: ``from agentzero_store.tools import ...``.

They live in ``agentzero_store.agent.tools``, beside the MCP server; this module only
names them, as ``agentzero_store/__init__.py`` names the stores.
"""

from .agent.tools import (
    AgentTool,
    Arg,
    Documents,
    MemoryAppendTool,
    MemoryForgetTool,
    RagDeleteTool,
    RagIngestTool,
    RagQueryTool,
    ScopeViolationError,
    SemanticRecallTool,
)

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
