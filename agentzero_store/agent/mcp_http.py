"""The MCP server of ``agent/mcp.py`` over the streamable HTTP transport (``agentzero serve``).

The same low-level ``Server`` (same tools, schemas, errors) behind the SDK's
``StreamableHTTPSessionManager``, stateless (every request stands alone: no session to
steal, nothing kept between calls) and answering in plain JSON. The SDK's own Host and
Origin checks are off on purpose: the server's gate (``serve/gate.py``) checks both, the
bearer token and the body size before a request reaches this app, for every route alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .mcp import ToolHost, make_server

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager


def http_session_manager(host: ToolHost, *, max_body: int) -> StreamableHTTPSessionManager:
    """A session manager serving ``host``'s tools; run it (``async with m.run()``) while
    its ``handle_request`` is an ASGI app."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    return StreamableHTTPSessionManager(
        make_server(host),
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=max_body,
    )


__all__ = ["http_session_manager"]
