"""The OpenAI Agents SDK on agentzero_store: ``AgentZeroSession``, a ``SessionABC`` whose
items are encrypted turns of the agent memory (``pip install
"agentzero-store[openai-agents]"``). The SDK is imported here and nowhere else."""

from .._shared import HandleClosedError
from .session import AgentZeroSession

__all__ = ["AgentZeroSession", "HandleClosedError"]
