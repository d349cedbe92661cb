"""``agentzero serve``'s start and stop: credentials, the Unix socket, the rate limit,
SIGTERM, the missing extra."""

from __future__ import annotations

import os
import signal
import socket
import stat
import sys
from pathlib import Path

import httpx
import pytest

from agentzero_store.agentmem import AgentMemory
from agentzero_store.serve import MissingExtraError, require_a2a
from tests.conftest import FAST, PASSPHRASE, run_cli

from .conftest import running, seed


def _call(method: str, **params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def test_wrong_passphrase_serves_nothing_and_writes_no_token(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    seed(data_dir)
    token_file = tmp_path / "t"
    p = run_cli(
        data_dir,
        "serve",
        "--embedder",
        "none",
        "--token-file",
        str(token_file),
        passphrase="wrong",
        check=False,
    )
    assert p.returncode == 3 and p.stdout == ""
    assert "error:" in p.stderr and "hint:" in p.stderr and "Traceback" not in p.stderr
    assert not token_file.exists()


def test_org_without_agent_is_refused(tmp_path: Path) -> None:
    p = run_cli(tmp_path / "d", "serve", "--org", "acme", check=False)
    assert p.returncode == 2 and "hint:" in p.stderr


def test_unix_socket_rate_limit_and_a_clean_stop_on_sigterm(tmp_path: Path) -> None:
    data_dir, token_file, sock = tmp_path / "data", tmp_path / "t", tmp_path / "s.sock"
    seed(data_dir)
    with running(data_dir, token_file, "--unix-socket", str(sock), "--rate", "1") as (proc, line):
        assert line == f"unix:{sock} (bearer token in {token_file})"
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
        transport = httpx.HTTPTransport(uds=str(sock))
        with httpx.Client(transport=transport, base_url="http://localhost", timeout=60) as c:
            made = c.post("/rpc", json=_call("memory_remember", content="kept"), headers=auth)
            assert made.json()["result"]["status"] == "created"
            codes = [
                c.post("/rpc", json=_call("memory_list"), headers=auth).status_code
                for _ in range(3)
            ]
            assert codes[0] == 200 and codes[-1] == 429  # burst 2, then 1/s
            limited = c.post("/rpc", json=_call("memory_list"), headers=auth)
            assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
            assert c.post("/rpc", json=_call("memory_list")).status_code == 401
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0  # a clean stop, not death by the signal
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    assert not sock.exists()  # removed on the way out
    # The writer role and the store are free again, and the acknowledged write is there.
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        assert "kept" in [m.content for m in mem.memories(limit=50)]


def test_without_the_extra_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "a2a.server.routes", None)  # import → ImportError
    with pytest.raises(MissingExtraError) as e:
        require_a2a()
    assert "agentzero-store[serve]" in (e.value.hint or "")


def test_the_listening_socket_says_tcp_so_nagle_is_off() -> None:
    # asyncio sets TCP_NODELAY on accepted sockets only when their proto is IPPROTO_TCP
    # (a socket made with proto 0 kept Nagle on: ~40 ms on every kept-alive request).
    from agentzero_store.ui.server import bind

    sock = bind(0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
