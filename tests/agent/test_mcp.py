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

from agentzero_store import AgentMemory, MemoryEntry, SqliteMemoryStore
from agentzero_store.agent.mcp import _protocol_stdout
from agentzero_store.embed.api import ApiEmbedder
from agentzero_store.memory.postgres.store import PgMemoryStore
from agentzero_store.storage.lock import writer_lock

from ..conftest import FAST, PASSPHRASE, child_env
from ..embed.test_api_embedder import KEY, EmbeddingServer

TOOLS = [
    "memory_append",
    "memory_grant",
    "memory_remember",
    "memory_fact",
    "memory_recall",
    "memory_list",
    "memory_context",
    "memory_feedback",
    "memory_archive",
    "memory_forget",
    "memory_undo",
    "memory_extract",
    "rag_ingest",
    "rag_query",
    "rag_delete",
]


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
    with AgentMemory.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, embedder=emb, org_id="o2", agent_id="a1"
    ) as m:
        m.remember("o2's agent memory: the vault code is zebra-77", about=["vault"])
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
            assert tools["rag_query"].input_schema["properties"]["mode"]["default"] == "auto"
            # The embedder is lazy: starting and listing tools embedded nothing.
            assert embed_server.requests == []

            # memory_append (the plain store) and the agent memory's writes, pinned to o1/a1
            r = await s.call_tool(
                "memory_append", {"content": "I am allergic to peanuts", "conversation_id": "c1"}
            )
            assert not r.is_error, r
            appended = result(r)["id"]
            assert embed_server.requests, "the first append loaded the embedder"
            r = await s.call_tool(
                "memory_grant", {"content": "The user is allergic to peanuts", "about": ["user"]}
            )
            grant = result(r)
            assert not r.is_error and grant["status"] == "created", grant
            r = await s.call_tool("memory_grant", {"content": "The user is allergic to peanuts"})
            assert result(r) == {"id": grant["id"], "status": "duplicate", "superseded": []}
            bike = result(
                await s.call_tool(
                    "memory_remember",
                    {"content": "The user's bike is a blue road bike", "confidence": 0.8},
                )
            )["id"]
            old = result(
                await s.call_tool(
                    "memory_fact", {"subject": "Ana", "predicate": "lives_in", "object": "Porto"}
                )
            )
            r = await s.call_tool(
                "memory_fact", {"subject": "Ana", "predicate": "lives_in", "object": "Lisbon"}
            )
            assert result(r)["superseded"] == [old["id"]]

            # memory_recall: AgentMemory.recall, mode auto (an embedder is configured)
            assert tools["memory_recall"].input_schema["properties"]["mode"]["default"] == "auto"
            r = await s.call_tool("memory_recall", {"query": "what food is the user allergic to"})
            rec = result(r)
            assert rec["mode"] == "auto" and rec["embedder"] == "api:mini-embed"
            hits = rec["results"]
            assert hits[0]["id"] == grant["id"] and hits[0]["type"] == "semantic"
            assert "semantic" in hits[0]["ranks"] and hits[0]["about"] == ["user"]
            assert "zebra" not in json.dumps(hits) and "shellfish" not in json.dumps(hits)
            r = await s.call_tool(
                "memory_recall", {"query": "where does Ana live", "explain": True}
            )
            top = result(r)["results"][0]
            assert top["content"] == "Ana lives in Lisbon" and top["explain"]
            r = await s.call_tool("memory_recall", {"query": "bike", "mode": "keyword"})
            assert [h["id"] for h in result(r)["results"]] == [bike]
            # memory_append's row is the agent memory's at once (adopted: an episode)
            r = await s.call_tool("memory_recall", {"query": "I am allergic", "mode": "keyword"})
            found = {h["id"]: h for h in result(r)["results"]}
            assert found[appended]["type"] == "episodic"
            assert found[appended]["conversation_id"] == "c1"

            # memory_list, memory_feedback, memory_archive
            r = await s.call_tool("memory_list", {"limit": 2})
            page = result(r)
            assert [m["content"] for m in page["memories"]] == [
                "Ana lives in Lisbon",
                "The user's bike is a blue road bike",
            ]
            assert page["next_offset"] == 2
            r = await s.call_tool("memory_feedback", {"id": grant["id"], "used": True})
            assert result(r)["id"] == grant["id"]
            assert result(await s.call_tool("memory_archive", {"id": bike})) == {
                "id": bike,
                "archived": True,
            }
            r = await s.call_tool("memory_list", {"archived": "only"})
            assert [m["id"] for m in result(r)["memories"]] == [bike]

            # memory_context: the conversation's turns (and recalled memories) in a budget
            r = await s.call_tool(
                "memory_context", {"conversation_id": "c1", "query": "allergic", "max_tokens": 300}
            )
            pack = result(r)
            assert pack["tokens"] <= 300 and appended in [i["id"] for i in pack["items"]]
            assert pack["text"].startswith("## ")

            # another tenant: refused, with the error's code and hint
            refused: list[tuple[str, dict[str, Any]]] = [
                ("memory_recall", {"query": "vault code", "mode": "keyword", "org_id": "o2"}),
                ("memory_recall", {"query": "vault code", "agent_id": "a9"}),
                ("memory_append", {"content": "planted", "org_id": "o2"}),
                ("memory_grant", {"content": "planted", "org_id": "o2"}),
                ("memory_remember", {"content": "planted", "agent_id": "a2"}),
                ("memory_fact", {"subject": "a", "predicate": "b", "object": "c", "org_id": "o2"}),
                ("memory_list", {"org_id": "o2"}),
                ("memory_context", {"conversation_id": "c1", "org_id": "o2"}),
                ("memory_feedback", {"id": grant["id"], "used": False, "org_id": "o2"}),
                ("memory_archive", {"id": grant["id"], "agent_id": "a2"}),
                ("memory_forget", {"about": "vault", "org_id": "o2"}),
                ("memory_undo", {"token": "t", "org_id": "o2"}),
            ]
            for name, args in refused:
                r = await s.call_tool(name, args)
                err = result(r)
                assert r.is_error and err["error"] == "scope_violation" and err["hint"], name
                assert "zebra" not in json.dumps(err)
            # keyword search over everything the pinned tool sees: o2's rows never appear
            r = await s.call_tool(
                "memory_recall", {"query": "zebra vault launch code", "mode": "keyword"}
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

            # memory_forget: another tenant's id is not found; own memories, soft, undone
            with AgentMemory.open(
                data_dir, passphrase=PASSPHRASE, org_id="o2", agent_id="a1"
            ) as peek:
                o2_id = peek.memories()[0].id
            r = await s.call_tool("memory_forget", {"id": o2_id})
            err = result(r)
            assert r.is_error and err["error"] == "not_found" and "zebra" not in json.dumps(err)
            r = await s.call_tool("memory_forget", {"about": "user"})
            receipt = result(r)
            assert receipt["count"] == 1 and receipt["ids"] == [grant["id"]]
            r = await s.call_tool("memory_recall", {"query": "allergic peanuts"})
            assert grant["id"] not in [h["id"] for h in result(r)["results"]]
            r = await s.call_tool("memory_undo", {"token": receipt["token"]})
            assert result(r) == {"restored": 1}
            r = await s.call_tool("memory_recall", {"query": "allergic peanuts", "mode": "keyword"})
            assert grant["id"] in [h["id"] for h in result(r)["results"]]
            r = await s.call_tool("memory_forget", {"id": bike})
            assert result(r)["count"] == 1

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
    assert "peanuts" not in log and "zebra" not in log and "Lisbon" not in log  # no content

    # The truth on disk: o1/a1 got exactly what the client wrote (less the forgotten
    # bike); o2 is untouched.
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE) as s:
        assert sorted(e.content for e in s.recent(10, org_id="o1")) == [
            "Ana lives in Lisbon",
            "Ana lives in Porto",
            "I am allergic to peanuts",
            "The user is allergic to peanuts",
        ]
        assert s.count(org_id="o2") == 3 and s.count() == 7
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
            keyword_only = ["auto", "keyword", "bm25"]  # auto is keyword without an embedder
            assert tools["rag_query"].input_schema["properties"]["mode"]["enum"] == keyword_only
            # Without an embedder memory_recall offers keyword search only.
            mode = tools["memory_recall"].input_schema["properties"]["mode"]
            assert mode["enum"] == keyword_only and mode["default"] == "auto"
            for org in ("x", "y"):
                r = await s.call_tool(
                    "memory_append", {"content": f"note for {org}", "org_id": org}
                )
                assert not r.is_error
                r = await s.call_tool(
                    "memory_grant", {"content": f"grant for {org}", "org_id": org}
                )
                assert not r.is_error
            r = await s.call_tool("memory_recall", {"query": "note", "mode": "semantic"})
            err = result(r)
            assert r.is_error and err["error"] == "invalid_argument" and err["hint"]
            r = await s.call_tool("memory_recall", {"query": "grant", "org_id": "y"})
            assert [h["content"] for h in result(r)["results"]] == ["grant for y"]
            r = await s.call_tool("memory_recall", {"query": "grant"})  # the default scope
            assert result(r)["results"] == []
            r = await s.call_tool("memory_forget", {"about": "nobody", "org_id": "x"})
            assert result(r)["count"] == 0 and result(r)["token"]
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


def test_memory_tools_on_postgresql_through_a_real_client_session(
    pg_url: str, tmp_path: Path
) -> None:
    """``agentzero --database-url URL mcp``: the ten memory tools over the agent memory on
    PostgreSQL (the documents need a data dir, so no rag_* tool is listed), pinned as on
    a data dir, and what they wrote is there for the next client."""
    base = child_env()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentzero_store", "--database-url", pg_url, "mcp"]
        + ["--org", "acme", "--agent", "a1"],
        env={**base, "AGENTZERO_PASSPHRASE": PASSPHRASE, "AGENTZERO_EMBEDDER": "none"},
    )
    PgMemoryStore.open(pg_url, passphrase=PASSPHRASE, config=FAST).close()
    errlog = (tmp_path / "stderr.log").open("w")

    async def session() -> None:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            names = sorted(t.name for t in (await s.list_tools()).tools)
            assert names == sorted(n for n in TOOLS if not n.startswith("rag_"))
            r = await s.call_tool("memory_remember", {"content": "Ana likes green tea"})
            assert not r.is_error, result(r)
            r = await s.call_tool("memory_append", {"content": "a turn about otters"})
            assert not r.is_error, result(r)
            r = await s.call_tool("memory_recall", {"query": "otters"})
            assert [h["content"] for h in result(r)["results"]] == ["a turn about otters"]
            r = await s.call_tool("memory_recall", {"query": "tea", "org_id": "other"})
            assert r.is_error and result(r)["error"] == "scope_violation"

    with errlog:
        anyio.run(session)
    with AgentMemory.open(
        pg_url, passphrase=PASSPHRASE, config=FAST, org_id="acme", agent_id="a1"
    ) as mem:
        assert [h.memory.content for h in mem.recall("green tea", mode="keyword")] == [
            "Ana likes green tea"
        ]
