"""Every JSON-RPC request to the MCP server gets a reply, even one the SDK cannot read: a
lone surrogate, bytes that are not UTF-8, arguments nested 5,000 deep, a line that is not
JSON (issue 30, item 6). Raw JSON lines over the real server's stdin and stdout."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from agentzero_store import AgentMemory
from agentzero_store.agent.mcp_wire import encode, top_level_id

from ..conftest import FAST, PASSPHRASE, child_env

DEEP = '{"a":' * 5_000 + "1" + "}" * 5_000


class Wire:
    """The real ``agentzero mcp`` in a subprocess, spoken to in raw JSON lines."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def send(self, line: bytes | str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 60) -> dict[str, Any]:
        """The next line the server writes (a bounded wait: a missing reply fails)."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no reply from the MCP server"
        line = self.proc.stdout.readline()
        assert line, "the MCP server closed its stdout"
        got: dict[str, Any] = json.loads(line)
        return got

    def call(self, rid: int, name: str, arguments: str) -> str:
        return (
            f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call",'
            f'"params":{{"name":"{name}","arguments":{arguments}}}}}'
        )


@pytest.fixture
def wire(data_dir: Path, tmp_path: Path) -> Iterator[Wire]:
    AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST).close()
    env = {**child_env(), "AGENTZERO_PASSPHRASE": PASSPHRASE, "AGENTZERO_EMBEDDER": "none"}
    with (tmp_path / "stderr.log").open("wb") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentzero_store", "--data-dir", str(data_dir), "mcp"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
        )
        w = Wire(proc)
        try:
            w.send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-06-18",
                            "capabilities": {},
                            "clientInfo": {"name": "raw", "version": "1"},
                        },
                    }
                )
            )
            assert w.reply()["id"] == 1
            w.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
            yield w
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(60)


def refused(reply: dict[str, Any], rid: int | None, code: int) -> str:
    """The refusal's message, after checking it answers ``rid`` with our code and hint."""
    assert reply["id"] == rid and "result" not in reply, reply
    err = reply["error"]
    assert err["code"] == code and err["data"]["error"] == "invalid_argument"
    assert err["data"]["hint"]
    message: str = err["message"]
    return message


def test_every_request_gets_a_reply(wire: Wire) -> None:
    wire.send(wire.call(2, "memory_remember", '{"content": "tea \\ud800 time"}'))
    assert "not valid Unicode" in refused(wire.reply(), 2, -32600)
    wire.send(wire.call(3, "memory_remember", '{"content": "x", "metadata": ' + DEEP + "}"))
    assert "nested too deeply" in refused(wire.reply(), 3, -32600)
    # The id after the deep arguments: found at the top level, whatever the nesting.
    wire.send(
        '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"memory_remember",'
        '"arguments":{"content":"x","metadata":' + DEEP + '}},"id":"late"}'
    )
    assert refused(wire.reply(), "late", -32600)  # type: ignore[arg-type]
    wire.send(wire.call(4, "memory_remember", '{"content": "caf\xff"}').encode("latin-1"))
    assert "not valid Unicode" in refused(wire.reply(), 4, -32600)
    wire.send('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{')
    assert "not JSON" in refused(wire.reply(), 5, -32700)
    wire.send("garbage")
    refused(wire.reply(), None, -32700)
    # A notification is never answered, even a refused one; the next call is.
    wire.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"x":"\\udc00"}}')
    wire.send(wire.call(6, "memory_recall", '{"query": "tea time"}'))
    ok = wire.reply()
    assert ok["id"] == 6 and ok["result"]["isError"] is False
    assert ok["result"]["structuredContent"]["results"] == []  # nothing refused was stored
    wire.send(wire.call(7, "memory_remember", '{"content": "tea at five"}'))
    assert wire.reply()["result"]["isError"] is False


def test_a_reply_that_cannot_be_encoded_becomes_an_error_for_its_id() -> None:
    reply = types.JSONRPCResponse(jsonrpc="2.0", id=9, result={"text": "a\ud800b"})
    got = json.loads(encode(reply))
    assert got["id"] == 9 and got["error"]["code"] == -32603


def test_the_id_is_read_at_the_top_level_only() -> None:
    assert top_level_id('{"params": {"id": 1, "s": "\\"}"}, "id": 2}') == 2
    assert top_level_id('{"jsonrpc": "2.0", "method": "m"}', with_presence=True) is False
    assert top_level_id('{"id": true}') is None and top_level_id("[1]") is None
    assert top_level_id('{"x": ' + DEEP + ', "id": "z"}') == "z"
