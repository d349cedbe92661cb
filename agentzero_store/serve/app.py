"""The server's ASGI app: ``/rpc``, ``/mcp`` and the A2A routes behind the gate.

Each route serves the caller's token (the gate put its grant in the scope): its host
(tools, scope, read-only) for ``/rpc`` and A2A, and its own MCP session manager for
``/mcp``.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..agent.mcp_http import http_session_manager
from ..ui.security import ASGIApp, Receive, Scope, Send, plain_response
from .a2a_skill import a2a_routes
from .gate import GRANT_KEY, Limits, ServeGate
from .hosts import Hosts, Served
from .rpc import RpcEndpoint
from .tokens import Grant, TokenTable

RPC_PATH = "/rpc"
MCP_PATH = "/mcp"


class McpDispatch:
    """``/mcp``: each token's request to its own MCP app (its tools, its scope)."""

    def __init__(self, apps: Mapping[str, ASGIApp]) -> None:
        self._apps = apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._apps.get(scope[GRANT_KEY].name)
        if app is None:  # cannot happen: every grant has an app
            await plain_response(send, 500, "no MCP app for this token")
            return
        await app(scope, receive, send)


class ServeApp:
    """The app and what must run beside it (the MCP session managers: ``managers``)."""

    def __init__(
        self, hosts: Hosts, tokens: TokenTable, base_url: str, port: int | None, limits: Limits
    ) -> None:
        self.hosts = hosts
        self.managers = {
            name: http_session_manager(s.host, max_body=limits.max_body)
            for name, s in hosts.served.items()
        }
        self._rpc = {name: RpcEndpoint(s) for name, s in hosts.served.items()}
        routes: list[BaseRoute] = [
            Route(RPC_PATH, self._rpc_endpoint, methods=["POST"]),
            Route(MCP_PATH, McpDispatch({n: m.handle_request for n, m in self.managers.items()})),
            *a2a_routes(base_url, self._served),
        ]
        self.app: ASGIApp = ServeGate(Starlette(routes=routes), tokens, port, limits)

    def _served(self, grant: Grant) -> Served:
        """The host of ``grant``'s token."""
        return self.hosts.served[grant.name]

    async def _rpc_endpoint(self, request: Request) -> Response:
        endpoint = self._rpc[request.scope[GRANT_KEY].name]
        body = await request.body()
        # The calls block (SQLite, embedding): off the event loop, the batch as one.
        answer = await run_in_threadpool(endpoint.answer, body)
        if answer is None:
            return Response(status_code=204)
        return Response(answer, media_type="application/json")


__all__ = ["MCP_PATH", "RPC_PATH", "McpDispatch", "ServeApp"]
