"""``agentzero mcp``: the store as an MCP server over stdio (official ``mcp`` SDK).

Tools: ``memory_append`` (the memory store beneath; the agent memory adopts what it
writes at once), the agent memory's
``memory_grant``, ``memory_remember``, ``memory_fact``, ``memory_recall``,
``memory_list``, ``memory_feedback``, ``memory_archive``, ``memory_forget`` (soft, with
an undo token), ``memory_undo`` and ``memory_extract``, and ``rag_ingest``,
``rag_query``, ``rag_delete`` —
the agent tools of ``agentzero_store.tools``, whose schemas and validation the server
publishes and uses unchanged.

- Scope: ``org_id``/``agent_id`` given at start pin every memory tool to that tenant; a
  client asking for another one gets a ``scope_violation`` tool error, never data.
  (Documents have no tenant: the document store is shared by the whole data dir.)
- Stdout is the protocol channel. The wire gets a private duplicate of fd 1, then fd 1
  and ``sys.stdout`` are pointed at stderr, so a stray print — ours, a library's or a
  native one — can never corrupt the protocol. Logs go to stderr.
- Startup opens only the memory store, as the agent memory of the pinned scope (so a
  wrong credential fails at once, on stderr), and holds it open: recall, list and the
  writes reuse one connection and one HNSW index. An unpinned server opens other
  scopes' agent memories over the same store when a call names them.
  The embedder's model loads on the first call that embeds; the document store is
  opened per call (read-only for queries), so the server never holds the document log's
  writer lock between calls and always sees other processes' writes.
- On PostgreSQL (``agentzero --database-url URL mcp``) the server offers the eleven memory
  tools over ``AgentMemory`` on that database; the ``rag_*`` tools need a data dir and
  are not listed.
- Errors become MCP tool errors (``isError``) carrying the error's code, message and hint.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agentmem import AgentMemory
from ..base.config import StoreConfig
from ..base.errors import AgentZeroStoreError, InvalidArgumentError
from ..embed.factory import embedder_from_env
from ..embed.vectors import Embedder
from ..memory.seam import supports
from ..storage.lock import writer_lock
from .tools import (
    AdoptingAppendTool,
    AgentTool,
    MemoryScopes,
    RagDeleteTool,
    RagIngestTool,
    RagQueryTool,
    agent_memory_tools,
)
from .tools.documents import DocMode, JsonReady

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from rag.store import DocumentStore

log = logging.getLogger(__name__)

SERVER_NAME = "agentzero"
INSTRUCTIONS = (
    "Encrypted local memory and documents for this agent. Use memory_recall before "
    "answering questions about earlier conversations, the user's preferences or facts "
    "about them; memory_grant to keep what the user asks you to remember, memory_fact for "
    "facts that can change (where someone lives, works), memory_remember for your own "
    "notes; memory_feedback after a recalled memory helped (or did not); memory_forget "
    "when the user wants something gone (memory_undo brings it back); rag_query to "
    "search the user's documents."
)


@dataclass(frozen=True)
class McpSettings:
    """Where the store is, how to unlock it, which tenant to pin, which embedder to use.
    ``data_dir``: a data dir, or a PostgreSQL URL (the memory tools only: the documents
    need a data dir)."""

    data_dir: Path | str
    key_file: Path | None = None
    org_id: str | None = None
    agent_id: str | None = None
    embedder: str | None = None  # local | api | none; None: env AGENTZERO_EMBEDDER, else local
    config: StoreConfig = StoreConfig()


class PerCallDocuments:
    """The ``Documents`` the tools use: a ``rag.DocumentStore`` opened for each call.

    Queries open it read-only (no lock); ingest and delete open it for writing and close
    it at once, releasing the log's writer lock for ``agentzero rag ingest`` and the like.
    """

    def __init__(self, settings: McpSettings, embedder: Embedder | None) -> None:
        self._settings = settings
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder (its model is not loaded until it embeds)."""
        return self._embedder

    @contextlib.contextmanager
    def _open(self, *, readonly: bool) -> Iterator[DocumentStore]:
        from rag.store import DocumentStore  # lazily: the engine does not depend on rag

        s = self._settings
        assert isinstance(s.data_dir, Path)  # documents only ever on a data dir (serve)
        with DocumentStore.open(
            s.data_dir,
            key_file=s.key_file,
            embedder=self._embedder,
            create=False,
            readonly=readonly,
            config=s.config,
            prompt=False,
        ) as store:
            yield store

    def query(self, text: str, limit: int = 5, mode: DocMode = "auto") -> Sequence[JsonReady]:
        """Query a fresh read-only view of the documents."""
        with self._open(readonly=True) as store:
            return store.query(text, limit, mode)

    def ingest(
        self,
        doc_id: str,
        text: str,
        *,
        title: str | None = None,
        source_path: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> JsonReady:
        """Ingest one document (writer lock held for this call only)."""
        with self._open(readonly=False) as store:
            return store.ingest(
                doc_id, text, title=title, source_path=source_path, metadata=metadata
            )

    def delete(self, doc_id: str) -> bool:
        """Delete one document (writer lock held for this call only)."""
        with self._open(readonly=False) as store:
            return store.delete(doc_id)


def build_tools(memory: MemoryScopes, documents: PerCallDocuments | None) -> list[AgentTool]:
    """The fourteen tools, memory ones pinned as ``memory`` pins them (``open_memory``:
    the settings' org/agent); without ``documents`` (a store on PostgreSQL) the eleven
    memory tools."""
    tools: list[AgentTool] = [AdoptingAppendTool(memory), *agent_memory_tools(memory)]
    if documents is not None:
        tools += [RagIngestTool(documents), RagQueryTool(documents), RagDeleteTool(documents)]
    return tools


class ToolHost:
    """Runs tool calls one at a time and turns every outcome into a JSON-ready result."""

    def __init__(
        self,
        tools: Sequence[AgentTool],
        write_guard: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.tools = {t.name: t for t in tools}
        self._write_guard = write_guard
        # The stores are used from worker threads; one call at a time keeps the document
        # store's per-call opens and the memory store's connection simple and safe.
        self._lock = threading.Lock()

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[bool, dict[str, Any]]:
        """(ok, result or error dict) of one call; never raises for a tool's failure."""
        tool = self.tools.get(name)
        try:
            if tool is None:
                raise InvalidArgumentError(
                    f"no tool named {name!r}", hint=f"tools: {', '.join(self.tools)}"
                )
            guard = self._write_guard if tool.writes and self._write_guard else nullcontext
            # A long-running server holds the data dir's writer role only while it writes,
            # so CLI writers and `rag watch` run beside it.
            with self._lock, guard():
                return True, tool.run(dict(arguments or {}))
        except AgentZeroStoreError as exc:
            log.info("tool %s: %s", name, exc.code)  # the code only: never content
            return False, exc.to_dict()
        except Exception as exc:
            # Unexpected: log the type (never arguments or content) and answer generically.
            log.error("tool %s failed unexpectedly: %s", name, type(exc).__name__)
            return False, {
                "error": "internal_error",
                "message": f"{name} failed ({type(exc).__name__})",
                "hint": "see the MCP server's log (stderr)",
            }


def make_server(host: ToolHost) -> Server[Any]:
    """A low-level MCP ``Server`` publishing ``host``'s tools with their own schemas."""
    import anyio.to_thread
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from ..base.version import __version__

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.schema())
                for t in host.tools.values()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # Store calls block (SQLite, embedding): run them off the event loop.
        ok, result = await anyio.to_thread.run_sync(host.call, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
            is_error=not ok,
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


@contextlib.contextmanager
def _protocol_stdout() -> Iterator[io.TextIOWrapper]:
    """A private handle on the real stdout for the protocol; fd 1 and sys.stdout → stderr."""
    sys.stdout.flush()
    wire = io.TextIOWrapper(os.fdopen(os.dup(1), "wb"), encoding="utf-8", newline="\n")
    saved_stdout = sys.stdout
    os.dup2(2, 1)  # anything writing to fd 1 (print, C libraries) now lands on stderr
    sys.stdout = sys.stderr
    try:
        yield wire
    finally:
        sys.stdout = saved_stdout
        with contextlib.suppress(OSError, ValueError):
            wire.flush()
            os.dup2(wire.fileno(), 1)  # give fd 1 back to the caller's stdout
        with contextlib.suppress(OSError, ValueError):
            wire.close()


def open_memory(settings: McpSettings, embedder: Embedder | None) -> MemoryScopes:
    """Open the agent memory of the pinned scope (an unpinned org or agent: ``default``)
    over the memory store, never prompting (stdin is the protocol channel)."""
    base = AgentMemory.open(
        settings.data_dir,
        key_file=settings.key_file,
        org_id=settings.org_id or "default",
        agent_id=settings.agent_id or "default",
        embedder=embedder,
        create=False,
        config=settings.config,
        prompt=False,
    )
    return MemoryScopes(base, org_id=settings.org_id, agent_id=settings.agent_id)


def serve(settings: McpSettings, *, on_ready: Callable[[], None] | None = None) -> None:
    """Serve the store over stdio until the client closes the connection."""
    import anyio

    from .mcp_wire import json_lines, protocol_stdin

    # Builds the embedder object (config errors surface now); its model loads lazily.
    embedder = embedder_from_env(settings.embedder)
    if settings.org_id is None or settings.agent_id is None:
        log.warning("scope not fully pinned (--org/--agent): clients may name any tenant")
    with contextlib.closing(open_memory(settings, embedder)) as memory:
        root = settings.data_dir
        if supports(memory.base.store, "data_dir"):
            assert isinstance(root, Path)
            tools = build_tools(memory, PerCallDocuments(settings, embedder))
            host = ToolHost(tools, lambda: writer_lock(root, purpose="agentzero mcp"))
        else:  # PostgreSQL: no documents, and no writer role (many clients write at once)
            log.info("memory store on PostgreSQL: the memory tools only (rag_* need a data dir)")
            host = ToolHost(build_tools(memory, None))
        server = make_server(host)

        async def run() -> None:
            with protocol_stdin() as lines, _protocol_stdout() as wire:
                async with json_lines(lines, anyio.wrap_file(wire)) as (read, write):
                    if on_ready is not None:
                        on_ready()
                    await server.run(read, write, server.create_initialization_options())

        anyio.run(run)


__all__ = ["McpSettings", "PerCallDocuments", "ToolHost", "build_tools", "make_server", "serve"]
