"""The MCP server through a real client session: the SDK's stdio client launches
``python -m agentzero_store ... mcp`` on a real encrypted store and calls every tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_types import TextContent

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.agent.mcp import _protocol_stdout
from agentzero_store.embed.api import ApiEmbedder
from agentzero_store.storage.lock import writer_lock

from .conftest import FAST, PASSPHRASE, child_env
from .test_api_embedder import KEY, EmbeddingServer

TOOLS = ["memory_append", "memory_recall", "memory_forget", "rag_ingest", "rag_query", "rag_delete"]


@pytest.fixture
def embed_server() -> Iterator[EmbeddingServer]:
    s = EmbeddingServer()
    yield s
    s.stop()


def api_env(server: EmbeddingServer) -> dict[str, str]:
    return {
        "AGENTZERO_EMBEDDER": "api",
        "AGENTZERO_EMBED_URL": server.url,
        "AGENTZERO_EMBED_MODEL": "mini-embed",
        "AGENTZERO_EMBED_API_KEY": KEY,
    }


def server_params(data_dir: Path, *args: str, env: dict[str, str]) -> StdioServerParameters:
    base = child_env()
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentzero_store", "--data-dir", str(data_dir), "mcp", *args],
        env={**base, "AGENTZERO_PASSPHRASE": PASSPHRASE, **env},
    )


def result(r: Any) -> dict[str, Any]:
    """A tool result's JSON (the text content and the structured content agree)."""
    assert isinstance(r.content[0], TextContent)
    data: dict[str, Any] = json.loads(r.content[0].text)
    assert r.structured_content == data
    return data


@pytest.fixture
def tenant_store(data_dir: Path, embed_server: EmbeddingServer) -> Path:
    """A store holding another tenant's (o2) memories, embedded by the loopback API."""
    emb = ApiEmbedder(embed_server.url, "mini-embed", api_key=KEY, backoff=0)
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, embedder=emb) as s:
        s.append_many(
            [
                MemoryEntry(
                    content="Acme launch code is zebra-42",
                    org_id="o2",
                    agent_id="a1",
                    conversation_id="secret",
                ),
                MemoryEntry(
                    content="o2 user is allergic to shellfish",
                    org_id="o2",
                    agent_id="a1",
                    conversation_id="secret",
                ),
            ]
        )
    embed_server.requests.clear()
    return data_dir


def test_every_tool_through_a_real_client_session(
    tenant_store: Path, embed_server: EmbeddingServer, tmp_path: Path
) -> None:
    data_dir = tenant_store
    params = server_params(data_dir, "--org", "o1", "--agent", "a1", env=api_env(embed_server))
    errlog = (tmp_path / "server-stderr.log").open("w")

    async def session() -> None:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as s,
        ):
            init = await s.initialize()
            assert init.server_info.name == "agentzero"
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert list(tools) == TOOLS
            recall_schema = tools["memory_recall"].input_schema
            assert recall_schema["properties"]["org_id"]["const"] == "o1"
            assert recall_schema["properties"]["agent_id"]["const"] == "a1"
            assert tools["rag_query"].input_schema["properties"]["mode"]["default"] == "hybrid"
            # The embedder is lazy: starting and listing tools embedded nothing.
            assert embed_server.requests == []

            # memory_append / memory_recall, pinned to o1/a1
            r = await s.call_tool(
                "memory_append", {"content": "I am allergic to peanuts", "conversation_id": "c1"}
            )
            assert not r.is_error, r
            own_id = result(r)["id"]
            await s.call_tool(
                "memory_append", {"content": "My bike is a blue road bike", "conversation_id": "c2"}
            )
            assert embed_server.requests, "the first append loaded the embedder"
            r = await s.call_tool("memory_recall", {"query": "allergic", "limit": 10})
            hits = result(r)["results"]
            assert hits[0]["id"] == own_id and hits[0]["ranks"] == {"semantic": 1}
            assert "zebra" not in json.dumps(hits) and "shellfish" not in json.dumps(hits)
            r = await s.call_tool("memory_recall", {"query": "allergic", "mode": "hybrid"})
            assert [h["content"] for h in result(r)["results"]][0] == "I am allergic to peanuts"

            # another tenant: refused, with the error's code and hint
            refused: list[tuple[str, dict[str, Any]]] = [
                ("memory_recall", {"query": "launch code", "mode": "keyword", "org_id": "o2"}),
                ("memory_recall", {"query": "launch code", "agent_id": "a9"}),
                ("memory_append", {"content": "planted", "org_id": "o2"}),
                ("memory_forget", {"all_in_scope": True, "org_id": "o2"}),
            ]
            for name, args in refused:
                r = await s.call_tool(name, args)
                err = result(r)
                assert r.is_error and err["error"] == "scope_violation" and err["hint"]
                assert "zebra" not in json.dumps(err)
            # keyword search over everything the pinned tool sees: o2's row never appears
            r = await s.call_tool(
                "memory_recall", {"query": "zebra launch code", "mode": "keyword"}
            )
            assert result(r)["results"] == []

            # validation errors and unknown tools are tool errors too
            r = await s.call_tool("memory_recall", {"query": "x", "limit": 0})
            err = result(r)
            assert r.is_error and err["error"] == "invalid_argument" and err["hint"]
            r = await s.call_tool("memory_recall", {"query": "x", "top_k": 3})
            assert r.is_error and "top_k" in result(r)["message"]
            r = await s.call_tool("drop_tables", {})
            assert r.is_error and "memory_recall" in result(r)["hint"]

            # memory_forget: another tenant's id deletes nothing; own conversation does
            with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE) as peek:
                o2_id = peek.recent(1, org_id="o2")[0].id
            r = await s.call_tool("memory_forget", {"id": o2_id})
            assert result(r) == {"deleted": 0}
            r = await s.call_tool("memory_forget", {"conversation_id": "c2"})
            assert result(r) == {"deleted": 1}

            # documents
            r = await s.call_tool(
                "rag_ingest", {"id": "tea", "title": "Tea", "text": "Brew green tea at 80 degrees."}
            )
            assert result(r)["changed"] is True
            await s.call_tool("rag_ingest", {"id": "tyres", "text": "Road bike tyres take 6 bar."})
            r = await s.call_tool("rag_query", {"query": "green tea temperature"})
            q = result(r)
            assert q["results"][0]["id"] == "tea" and q["mode"] == "hybrid"
            assert q["embedder"] == "api:mini-embed"
            r = await s.call_tool("rag_query", {"query": "tyres", "mode": "bm25"})
            assert [h["id"] for h in result(r)["results"]] == ["tyres"]
            # Between calls the server holds no writer role: another writer gets it at once.
            with writer_lock(data_dir, timeout=0):
                pass
            r = await s.call_tool("rag_delete", {"id": "tea"})
            assert result(r) == {"id": "tea", "deleted": True}
            r = await s.call_tool("rag_query", {"query": "green tea", "mode": "bm25"})
            assert "tea" not in [h["id"] for h in result(r)["results"]]

    with errlog:
        anyio.run(session)
    log = (tmp_path / "server-stderr.log").read_text()
    assert "peanuts" not in log and "zebra" not in log  # logs never carry content

    # The truth on disk: o1/a1 got exactly what the client wrote; o2 is untouched.
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE) as s:
        assert [e.content for e in s.recent(10, org_id="o1")] == ["I am allergic to peanuts"]
        assert s.count(org_id="o2") == 2 and s.count() == 3
        assert all(e.agent_id == "a1" for e in s.recent(10, org_id="o1"))
    from rag.store import DocumentStore

    with DocumentStore.open(data_dir, passphrase=PASSPHRASE) as docs:
        assert [d.id for d in docs.documents()] == ["tyres"]


def test_unpinned_server_without_embedder(data_dir: Path, tmp_path: Path) -> None:
    SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST).close()
    params = server_params(data_dir, env={"AGENTZERO_EMBEDDER": "none"})
    errlog = (tmp_path / "stderr.log").open("w")

    async def session() -> None:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert "const" not in tools["memory_recall"].input_schema["properties"]["org_id"]
            assert tools["rag_query"].input_schema["properties"]["mode"]["enum"] == ["bm25"]
            for org in ("x", "y"):
                r = await s.call_tool(
                    "memory_append", {"content": f"note for {org}", "org_id": org}
                )
                assert not r.is_error
            r = await s.call_tool("memory_recall", {"query": "note"})
            err = result(r)
            assert r.is_error and err["error"] == "no_embedder" and err["hint"]
            r = await s.call_tool(
                "memory_recall", {"query": "note", "mode": "keyword", "org_id": "y"}
            )
            assert [h["content"] for h in result(r)["results"]] == ["note for y"]
            r = await s.call_tool("rag_query", {"query": "anything"})
            assert result(r)["results"] == []

    with errlog:
        anyio.run(session)
    assert "not fully pinned" in (tmp_path / "stderr.log").read_text()


def test_wrong_credential_fails_at_start_on_stderr(data_dir: Path) -> None:
    SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST).close()
    env = child_env()
    proc = subprocess.run(
        [sys.executable, "-m", "agentzero_store", "--data-dir", str(data_dir), "mcp"],
        env={**env, "AGENTZERO_PASSPHRASE": "wrong", "AGENTZERO_EMBEDDER": "none"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3
    assert proc.stdout == ""  # stdout is the protocol channel: nothing else goes there
    assert "hint" in proc.stderr


def test_stray_output_never_reaches_the_protocol_channel(capfd: pytest.CaptureFixture[str]) -> None:
    with _protocol_stdout() as wire:
        print("stray print")
        os.write(1, b"stray native write\n")
        wire.write('{"jsonrpc": "2.0"}\n')
        wire.flush()
    out, err = capfd.readouterr()
    assert out == '{"jsonrpc": "2.0"}\n'
    assert "stray print" in err and "stray native write" in err
