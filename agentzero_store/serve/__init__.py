"""``agentzero serve``: the store served to agents in any language, on this machine only.

One process holds the store open and serves, behind one gate (``gate``: Host, Origin,
bearer token, rate and size limits):

- ``/mcp``: MCP over the streamable HTTP transport (``agent/mcp_http.py``: the tools of
  ``agentzero mcp``);
- ``/rpc``: JSON-RPC 2.0 whose methods are those tools (``rpc``);
- ``/.well-known/agent-card.json`` and ``/a2a``: A2A, the ``agent-memory`` skill
  (``a2a_skill``; needs the ``serve`` extra, ``a2a-sdk``).

``tokens`` makes the tokens and their scopes, ``hosts`` the tool hosts over the one open
store, ``app`` the routes, ``server`` the socket and the loop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..agent.mcp import McpSettings
from ..base.errors import AgentZeroStoreError, InvalidArgumentError
from .gate import Limits
from .tokens import TokenScope, TokenTable, default_token_file, issue


class MissingExtraError(AgentZeroStoreError):
    """An optional dependency of this command is not installed."""

    code = "missing_extra"
    exit_code = 2
    default_hint = "pip install 'agentzero-store[serve]'"


@dataclass(frozen=True)
class ServeSettings:
    """What to serve and how: the store (``mcp``: data dir or URL, key, pins, embedder),
    where to listen (``port`` on 127.0.0.1, or ``unix_socket``), the main token's file and
    scope, tokens of their own scope (``scoped``: file and scope), the limits."""

    mcp: McpSettings
    port: int = 0
    unix_socket: Path | None = None
    token_file: Path | None = None  # None: default_token_file()
    read_only: bool = False
    scoped: Sequence[tuple[Path, TokenScope]] = ()
    limits: Limits = field(default_factory=Limits)


def require_a2a() -> None:
    """Raise ``MissingExtraError`` unless ``a2a-sdk`` imports."""
    try:
        import a2a.server.routes  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(
            f"agentzero serve needs the a2a-sdk package ({exc.name or 'a2a'} is missing)",
        ) from None


def serve(settings: ServeSettings, *, announce: Callable[[str], None] | None = None) -> None:
    """Open the store, listen, write the tokens, print the first line (the URL and the
    token file), and serve until SIGTERM or Ctrl-C; the store is closed on the way out."""
    require_a2a()
    from .app import ServeApp
    from .hosts import Hosts
    from .server import bind, bind_unix, run

    main_scope = TokenScope(
        settings.mcp.org_id if settings.mcp.agent_id is not None else None,
        settings.mcp.agent_id if settings.mcp.org_id is not None else None,
        read_only=settings.read_only,
    )
    token_file = (settings.token_file or default_token_file()).expanduser()
    # The tokens are written after the store opened (a wrong key writes nothing) and
    # before the line naming them is printed.
    files = [token_file, *(p.expanduser() for p, _ in settings.scoped)]
    if len({f.resolve() for f in files}) != len(files) or len({f.name for f in files}) != len(
        files
    ):
        raise InvalidArgumentError(
            "two tokens would share a token file (or a file name)",
            hint="give each token a file of its own name",
        )
    all_scopes = [main_scope, *(s for _, s in settings.scoped)]
    scopes = dict(zip((f.name for f in files), all_scopes, strict=True))
    sock = None
    hosts = None
    try:
        hosts = Hosts(settings.mcp, scopes)
        if settings.unix_socket is not None:
            sock = bind_unix(settings.unix_socket)
            port, base_url, where = None, "http://localhost", f"unix:{settings.unix_socket}"
        else:
            try:
                sock = bind(settings.port)
            except OSError as exc:
                raise InvalidArgumentError(
                    f"cannot listen on 127.0.0.1:{settings.port} ({exc.strerror})",
                    hint="choose another --port, or --port 0 for a free one",
                ) from None
            port = sock.getsockname()[1]
            base_url = where = f"http://127.0.0.1:{port}"
        grants = [issue(f, scopes[f.name]) for f in files]
        app = ServeApp(hosts, TokenTable(grants), base_url, port, settings.limits)
        (announce or _print)(f"{where} (bearer token in {token_file})")
        run(app, sock)
    finally:
        if sock is not None:
            sock.close()
            if settings.unix_socket is not None:
                settings.unix_socket.unlink(missing_ok=True)
        if hosts is not None:
            hosts.close()


def _print(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


__all__ = [
    "Limits",
    "MissingExtraError",
    "ServeSettings",
    "TokenScope",
    "require_a2a",
    "serve",
]
