"""``/mcp``: the MCP Python SDK's streamable HTTP client, and the TypeScript SDK from npm
under Node (a desktop agent's view)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from .conftest import BOT_NOTE, TEA, Server


async def _session_calls(url: str, token: str) -> tuple[list[str], Any, Any, bool]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        tools = [t.name for t in (await s.list_tools()).tools]
        hit = await s.call_tool("memory_recall", {"query": "zanzibarquokka tea"})
        bad = await s.call_tool(
            "memory_recall", {"query": "tea", "org_id": "other", "agent_id": "x"}
        )
        return tools, hit.structured_content or {}, bad.structured_content or {}, bad.is_error


def test_python_sdk_over_streamable_http(server: Server) -> None:
    tools, hit, bad, is_error = anyio.run(_session_calls, server.base + "/mcp", server.token)
    assert {"memory_recall", "memory_remember", "rag_query", "memory_append"} <= set(tools)
    assert TEA in [h["content"] for h in hit["results"]]
    # Unpinned server: another tenant is allowed, and empty for it.
    assert not is_error and bad["results"] == []


def test_python_sdk_with_a_scoped_read_only_token(server: Server) -> None:
    tools, hit, bad, is_error = anyio.run(_session_calls, server.base + "/mcp", server.tokens["ro"])
    assert "memory_recall" in tools and "memory_remember" not in tools and "rag_query" not in tools
    assert [h["content"] for h in hit["results"]] == [] or BOT_NOTE in json.dumps(hit)
    assert is_error and bad["error"] == "scope_violation" and bad["hint"]


def test_mcp_needs_the_token(server: Server) -> None:
    r = httpx2.post(
        server.base + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    assert r.status_code == 401


TS_CLIENT = r"""
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "desktop-agent", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
const made = await client.callTool({
  name: "memory_remember", arguments: { content: "Node remembers kiwis" },
});
const hit = await client.callTool({ name: "memory_recall", arguments: { query: "kiwis" } });
console.log(JSON.stringify({ tools, made: made.structuredContent, hit: hit.structuredContent }));
await client.close();
"""


def _npm_install(where: Path) -> str | None:
    """Install the TypeScript SDK into ``where``; None, or why it could not be."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "node or npm is not on PATH"
    (where / "package.json").write_text('{"name": "t", "version": "1.0.0", "type": "module"}')
    p = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--silent", "@modelcontextprotocol/sdk"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=240,
    )
    if p.returncode != 0:
        return f"npm install @modelcontextprotocol/sdk failed: {p.stderr.strip()[-300:]}"
    return None


def test_typescript_sdk_under_node(server: Server, tmp_path: Path) -> None:
    why = _npm_install(tmp_path)
    if why is not None:
        pytest.skip(why)
    (tmp_path / "client.mjs").write_text(TS_CLIENT)
    p = subprocess.run(
        ["node", "client.mjs", server.base + "/mcp", server.token],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert "memory_recall" in out["tools"] and out["made"]["status"] == "created"
    assert "Node remembers kiwis" in [h["content"] for h in out["hit"]["results"]]
