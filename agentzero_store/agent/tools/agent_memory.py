"""The agent tools over ``AgentMemory``, as one set: ``agent_memory_tools(memory)``.

Hand their ``definition()`` to a model, pass its arguments to ``run`` and give the JSON
back. Built on one ``AgentMemory``, every tool is pinned to its org/agent.
"""

from __future__ import annotations

from ...agentmem import AgentMemory
from .base import AgentTool
from .memory_extract import AgentExtractTool
from .memory_reads import AgentContextTool, AgentListTool, AgentRecallTool
from .memory_scopes import MemoryScopes
from .memory_writes import (
    AgentArchiveTool,
    AgentFactTool,
    AgentFeedbackTool,
    AgentForgetTool,
    AgentGrantTool,
    AgentRememberTool,
    AgentUndoTool,
)


def agent_memory_tools(memory: AgentMemory | MemoryScopes) -> list[AgentTool]:
    """Every agent-memory tool, in the order a host publishes them: memory_grant,
    memory_remember, memory_fact, memory_recall, memory_list, memory_context, memory_feedback,
    memory_archive, memory_forget, memory_undo, memory_extract."""
    return [
        AgentGrantTool(memory),
        AgentRememberTool(memory),
        AgentFactTool(memory),
        AgentRecallTool(memory),
        AgentListTool(memory),
        AgentContextTool(memory),
        AgentFeedbackTool(memory),
        AgentArchiveTool(memory),
        AgentForgetTool(memory),
        AgentUndoTool(memory),
        AgentExtractTool(memory),
    ]


__all__ = ["agent_memory_tools"]
