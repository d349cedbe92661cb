"""``/rpc``: JSON-RPC 2.0 over the MCP tools, through plain httpx, and the gate."""

from __future__ import annotations

import json
import os
import stat

from .conftest import BOT_NOTE, TEA, Server


def _ids(result: object) -> list[str]:
    assert isinstance(result, dict)
    return [h["content"] for h in result["results"]]


def test_first_line_names_the_url_and_a_private_token_file(server: Server) -> None:
    assert server.line == f"{server.base} (bearer token in {server.token_file})"
    assert stat.S_IMODE(os.stat(server.token_file).st_mode) == 0o600
    assert len(server.token) >= 40
    assert server.token not in server.line


def test_remember_then_recall(server: Server) -> None:
    made = server.rpc("memory_remember", content="Ana's sister Bea lives in Braga")
    assert made["id"] == 1 and made["result"]["status"] == "created"
    got = server.rpc("memory_recall", query="Bea Braga")
    assert "Ana's sister Bea lives in Braga" in _ids(got["result"])


def test_a_batch_answers_in_order_without_notifications(server: Server) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "memory_recall", "params": {"query": "tea"}},
        {"jsonrpc": "2.0", "method": "memory_list", "params": {}},  # notification
        {"jsonrpc": "2.0", "id": 7, "method": "no_such_tool"},
        {"jsonrpc": "2.0", "id": 8, "method": "memory_recall", "params": ["tea"]},
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "memory_recall",
            "params": {"query": "tea", "limit": "x"},
        },
        {"id": 10, "method": "memory_recall"},
    ]
    with server.client() as c:
        r = c.post("/rpc", json=batch)
    assert r.status_code == 200
    a, missing, positional, bad, no_version = r.json()
    assert a["id"] == "a" and TEA in _ids(a["result"])
    assert missing["error"]["code"] == -32601 and missing["id"] == 7
    assert missing["error"]["data"]["code"] == "method_not_found"
    assert "memory_recall" in missing["error"]["data"]["hint"]
    assert positional["error"]["code"] == -32602
    # The store's own error: our code and hint in data.
    assert bad["error"]["code"] == -32602
    assert bad["error"]["data"]["code"] == "invalid_argument" and bad["error"]["data"]["hint"]
    assert no_version["error"]["code"] == -32600


def test_protocol_errors(server: Server) -> None:
    with server.client() as c:
        parse = c.post("/rpc", content=b"{not json")
        assert parse.json()["error"]["code"] == -32700 and parse.json()["id"] is None
        assert c.post("/rpc", json=[]).json()["error"]["code"] == -32600
        only_notes = c.post("/rpc", json=[{"jsonrpc": "2.0", "method": "memory_list"}])
        assert only_notes.status_code == 204 and only_notes.content == b""
        deep = (
            b'{"jsonrpc":"2.0","id":1,"method":"memory_remember","params":{"content":"x","m":'
            + b"[" * 5000
            + b"]" * 5000
            + b"}}"
        )
        assert c.post("/rpc", content=deep).json()["error"]["code"] in (-32700, -32602)
        lone = (
            b'{"jsonrpc":"2.0","id":2,"method":"memory_remember","params":{"content":"a\\ud800b"}}'
        )
        err = c.post("/rpc", content=lone).json()["error"]
        assert err["data"]["code"] == "invalid_argument"


def test_a_wrong_or_missing_token_is_401_and_writes_nothing(server: Server) -> None:
    before = server.rpc("memory_list", limit=100)["result"]
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "memory_remember",
        "params": {"content": "intruder"},
    }
    for headers in ({"Authorization": "Bearer " + "x" * 43}, {}, {"Authorization": server.token}):
        import httpx

        r = httpx.post(server.base + "/rpc", json=call, headers=headers, timeout=30)
        assert r.status_code == 401, headers
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "access-control-allow-origin" not in r.headers
    assert server.rpc("memory_list", limit=100)["result"] == before


def test_host_and_origin_are_checked(server: Server) -> None:
    with server.client() as c:
        assert c.post("/rpc", json={}, headers={"Host": "evil.example:80"}).status_code == 400
        r = c.post("/rpc", json={}, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        own = c.post(
            "/rpc",
            json={"jsonrpc": "2.0", "id": 1, "method": "memory_list"},
            headers={"Origin": server.base},
        )
        assert own.status_code == 200 and "access-control-allow-origin" not in own.headers


def test_a_body_over_the_limit_is_413(server: Server) -> None:
    big = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory_remember",
            "params": {"content": "x" * 70_000},
        }
    )
    with server.client() as c:
        assert c.post("/rpc", content=big).status_code == 413


def test_a_scoped_token_reaches_its_agent_only(server: Server) -> None:
    bot = server.tokens["bot"]
    got = server.rpc("memory_recall", bot, query="quokkas tea")
    assert _ids(got["result"]) == [BOT_NOTE]  # never default/default's tea
    other = server.rpc("memory_recall", bot, query="tea", org_id="default", agent_id="default")
    assert other["error"]["data"]["code"] == "scope_violation"
    docs = server.rpc("rag_query", bot, query="tea")
    assert docs["error"]["code"] == -32601  # documents: not a tenant's


def test_a_read_only_token_reads_and_never_writes(server: Server) -> None:
    ro = server.tokens["ro"]
    assert _ids(server.rpc("memory_recall", ro, query="quokkas")["result"]) == [BOT_NOTE]
    refused = server.rpc("memory_remember", ro, content="should not land")
    assert refused["error"]["data"]["code"] == "read_only"
    listed = server.rpc("memory_list", server.tokens["bot"], limit=100)["result"]
    assert "should not land" not in json.dumps(listed)
