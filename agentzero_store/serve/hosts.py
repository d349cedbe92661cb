"""The store, opened once, and one tool host per token.

The server opens the agent memory as ``agentzero mcp`` does (``open_memory``) and holds
it: every token's tools share its one connection and HNSW index. A token of the
server's scope gets the thirteen tools ``agentzero mcp`` publishes; a token pinned to
one org/agent gets the memory tools of that tenant only (the documents are shared by the
whole data dir: no tenant's token reaches them); a read-only token gets the tools that
write nothing. All calls of all tokens run one at a time (one lock): one writer, many
clients.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent.mcp import McpSettings, PerCallDocuments, ToolHost, build_tools, open_memory
from ..agent.tools import AgentTool, MemoryScopes, agent_memory_tools
from ..base.errors import InvalidArgumentError
from ..embed.factory import embedder_from_env
from ..memory.sqlite.store import SqliteMemoryStore
from ..storage.lock import writer_lock
from .tokens import TokenScope


class SharedLockHost(ToolHost):
    """A ``ToolHost`` whose calls also hold a lock shared with every other token's host."""

    def __init__(
        self,
        tools: Sequence[AgentTool],
        write_guard: Callable[[], AbstractContextManager[object]] | None,
        shared: threading.Lock,
    ) -> None:
        super().__init__(tools, write_guard)
        self._shared = shared

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[bool, dict[str, Any]]:
        """As ``ToolHost.call``, one call of the whole server at a time."""
        with self._shared:
            return super().call(name, arguments)


@dataclass(frozen=True)
class Served:
    """What one token reaches: its host, and every tool name of its scope (``known``:
    a read-only token's refused writes are named as such)."""

    scope: TokenScope
    host: ToolHost
    known: tuple[str, ...]

    def refusal(self, name: str) -> dict[str, Any] | None:
        """The error of calling ``name`` when this token may not (a write on a read-only
        token); None when the host may run it (or says itself that it has no such tool)."""
        if name in self.host.tools or name not in self.known:
            return None
        return {
            "error": "read_only",
            "message": f"{name} writes, and this token is read-only",
            "hint": "use a token that may write (one issued without /ro or --read-only)",
        }


class Hosts:
    """The open store and a ``Served`` per token name; ``close`` closes the store."""

    def __init__(self, settings: McpSettings, scopes: Mapping[str, TokenScope]) -> None:
        embedder = embedder_from_env(settings.embedder)
        self.memory = open_memory(settings, embedder)
        self._tenants: list[MemoryScopes] = []
        self._lock = threading.Lock()
        try:
            self.served = {n: self._serve(settings, embedder, s) for n, s in scopes.items()}
        except BaseException:
            self.close()
            raise

    def _serve(self, settings: McpSettings, embedder: Any, s: TokenScope) -> Served:
        base = self.memory.base
        sqlite = isinstance(base.store, SqliteMemoryStore)
        guard = None
        if sqlite:
            root = settings.data_dir
            assert isinstance(root, Path)
            guard = lambda: writer_lock(root, purpose="agentzero serve")  # noqa: E731
        if s.org_id is None or s.agent_id is None:
            docs = PerCallDocuments(settings, embedder) if sqlite else None
            tools = build_tools(self.memory, docs)
        else:
            for pin, want, what in (
                (settings.org_id, s.org_id, "org"),
                (settings.agent_id, s.agent_id, "agent"),
            ):
                if pin is not None and pin != want:
                    raise InvalidArgumentError(
                        f"a token scoped to {what} {want!r} on a server pinned to {pin!r}",
                        hint="scope tokens within the server's --org/--agent, or start it unpinned",
                    )
            if (s.org_id, s.agent_id) == (base.org_id, base.agent_id):
                tenant = MemoryScopes(base, org_id=s.org_id, agent_id=s.agent_id)
            else:
                tenant = MemoryScopes(
                    base.for_scope(s.org_id, s.agent_id), org_id=s.org_id, agent_id=s.agent_id
                )
                self._tenants.append(tenant)
            tools = agent_memory_tools(tenant)
        known = tuple(t.name for t in tools)
        if s.read_only:
            tools = [t for t in tools if not t.writes]
        return Served(s, SharedLockHost(tools, guard, self._lock), known)

    def close(self) -> None:
        """Close every tenant's memory, then the store."""
        try:
            for tenant in self._tenants:
                tenant.base.close()  # opened with for_scope: the store stays open
        finally:
            self.memory.close()


__all__ = ["Hosts", "Served", "SharedLockHost"]
