"""``memory_extract``: ``AgentMemory.extract`` as an agent tool — what the speakers of
the agent's turns stated about themselves becomes facts (the handle's extractor, else
the offline rules), each naming the turns it came from."""

from __future__ import annotations

from typing import Any

from ...agentmem import AgentMemory
from .base import Arg, Result
from .memory_scopes import MemoryScopes, ScopedTool

EXTRACT_DESCRIPTION = (
    "Turn what the user (and other speakers) stated about themselves in the conversation "
    "into facts: 'I moved to Oslo' becomes (user, lives_in, Oslo), replacing where they "
    "lived before; questions and hypotheticals give nothing. Each fact names its source "
    "turns. dry_run: only show what would be written. Returns {turns, facts, notes}."
)


class AgentExtractTool(ScopedTool):
    """``memory_extract``: ``AgentMemory.extract`` (optionally one conversation)."""

    writes = True

    def __init__(self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_extract") -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "conversation_id",
                "string",
                "Only this conversation's turns (omitted: all).",
                max_length=256,
            ),
            Arg("dry_run", "boolean", "true: write nothing, show what it would.", default=False),
        )
        self.description = EXTRACT_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        report = self.memory(a).extract(a.get("conversation_id"), dry_run=a["dry_run"])
        return report.to_dict()


__all__ = ["AgentExtractTool"]
