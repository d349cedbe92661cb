"""``agentzero serve``: the store over MCP (streamable HTTP), JSON-RPC and A2A on
127.0.0.1 (``agentzero_store.serve``). The first line on stdout names the URL and the
token file; logs go to stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..base.errors import InvalidArgumentError
from .common import STATE, EmbedderOpt, cli_command, memory_target, store_config


@cli_command
def serve(
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")
    ] = 0,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="Where to write the bearer token (0600, a new one each start; default: "
            "serve.token in the user's config dir).",
        ),
    ] = None,
    org: Annotated[
        str | None, typer.Option("--org", help="Pin every memory tool to this org.")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Pin every memory tool to this agent.")
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="The main token may only read (recall, list).")
    ] = False,
    scoped_token: Annotated[
        list[str] | None,
        typer.Option(
            "--scoped-token",
            help="FILE=ORG/AGENT (or FILE=ORG/AGENT/ro): one more token, written to FILE, "
            "reaching only that agent's memory (ro: read-only). Repeatable.",
        ),
    ] = None,
    unix_socket: Annotated[
        Path | None,
        typer.Option("--unix-socket", help="Listen on this Unix socket (0600) instead of TCP."),
    ] = None,
    rate: Annotated[
        float,
        typer.Option("--rate", min=0, help="Requests per second per token (0: no limit)."),
    ] = 500.0,
    max_body_kib: Annotated[
        int, typer.Option("--max-body-kib", min=1, help="Largest request body, in KiB.")
    ] = 4096,
    embedder: EmbedderOpt = None,
) -> None:
    """Serve the store to local agents: MCP at /mcp (streamable HTTP), JSON-RPC 2.0 at
    /rpc, A2A (agent card, the agent-memory skill) at /a2a.

    Listens on 127.0.0.1 only; every request needs the bearer token written to the token
    file. Stop it with Ctrl-C or SIGTERM."""
    from ..agent.mcp import McpSettings
    from ..serve import Limits, ServeSettings, TokenScope
    from ..serve import serve as run_server

    if (org is None) != (agent is None):
        raise InvalidArgumentError(
            "--org and --agent pin the server together",
            hint="give both, or neither (then a client names the tenant per call)",
        )
    scoped: list[tuple[Path, TokenScope]] = []
    for spec in scoped_token or []:
        path, sep, scope = spec.rpartition("=")
        if not sep or not path:
            raise InvalidArgumentError(
                f"not a scoped token: {spec!r}", hint="write FILE=ORG/AGENT or FILE=ORG/AGENT/ro"
            )
        scoped.append((Path(path), TokenScope.parse(scope)))
    mcp = McpSettings(memory_target(), STATE.key_file, org, agent, embedder, store_config())
    run_server(
        ServeSettings(
            mcp,
            port=port,
            unix_socket=unix_socket,
            token_file=token_file,
            read_only=read_only,
            scoped=scoped,
            limits=Limits(max_body=max_body_kib * 1024, rate=rate, burst=max(1, int(rate * 2))),
        )
    )


__all__ = ["serve"]
