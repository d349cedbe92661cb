"""The public home of the agent tools: ``from agentzero_store.tools import ...``.

They live in ``agentzero_store.agent.tools``, beside the MCP server; this module only
re-exports its public names, as ``agentzero_store/__init__.py`` names the stores.
"""

from .agent.tools import *  # noqa: F403  (exactly agent.tools.__all__)
from .agent.tools import __all__ as __all__
