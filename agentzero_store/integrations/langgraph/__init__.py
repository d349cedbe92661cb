"""LangGraph on an encrypted data dir: ``AgentZeroStore`` (a ``BaseStore``) and
``AgentZeroSaver`` (a ``BaseCheckpointSaver``).

Both keep everything in the data dir's SQLCipher ``memory.db`` through the public
``ItemStore``: values, namespaces, vectors, checkpoints, their metadata and pending
writes are encrypted at rest, writes are durable when a call returns, and a wrong key
changes no byte. Needs the extra: ``pip install "agentzero-store[langgraph]"``.

    from agentzero_store.integrations.langgraph import AgentZeroSaver, AgentZeroStore

    store = AgentZeroStore("~/.agent-data", passphrase=..., index={"dims": 384, "embed": e})
    saver = AgentZeroSaver("~/.agent-data", passphrase=...)
    graph = builder.compile(checkpointer=saver, store=store)
"""

from .errors import InvalidNamespace, UnsupportedOperation
from .saver import AgentZeroSaver
from .store import AgentZeroStore

__all__ = ["AgentZeroSaver", "AgentZeroStore", "InvalidNamespace", "UnsupportedOperation"]
