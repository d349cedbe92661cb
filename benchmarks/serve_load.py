"""``agentzero serve`` under load (issue 33): recall over ``/rpc`` and ``/mcp`` beside the
same call in-process and over ``agentzero mcp`` (stdio), on loopback.

    .venv/bin/python benchmarks/serve_load.py            # 30 s per row, ~5 min
    .venv/bin/python benchmarks/serve_load.py --quick    # 2 s per row, ~1 min
    .venv/bin/python benchmarks/serve_load.py --json out.json

The store holds ``--n`` memories (keyword recall: no embedder, so the figures are the
transport's and the store's, not the model's). Each row runs its clients for
``--seconds`` and reports the latency p50 / p95 of one ``memory_recall`` (limit 5) and
the calls per second:

- in-process: ``ToolHost.call`` on the tools ``agentzero mcp`` publishes (the floor);
- stdio: the MCP Python SDK's client over ``agentzero mcp`` (one client: stdio has one);
- ``/rpc``: plain ``httpx.AsyncClient``s, 1, 8 and 32 at once;
- ``/mcp``: the MCP Python SDK's streamable HTTP client, 1, 8 and 32 sessions at once;
- ``/rpc`` with an unknown method, 1 client: the HTTP path without the store (the floor
  of the transport: client, uvicorn's h11 parser, the gate, routing, JSON, a thread hop).

The HTTP overhead is ``/rpc`` p50 at 1 client minus the in-process p50 (goal: ≤ 2 ms).
Under 32 clients every 10th call of each client is a ``memory_remember`` of a unique
text; after the server stops, every acknowledged write is looked up in the store (goal:
no error, no lost write). The server runs with ``--rate 0`` (the default 500 requests/s
per token would otherwise be what the 32-client rows measure).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentzero_store import StoreConfig
from agentzero_store.agent.mcp import McpSettings, ToolHost, build_tools, open_memory
from agentzero_store.agentmem import AgentMemory
from agentzero_store.base.config import FAST_KDF_FOR_TESTS

CONFIG = StoreConfig(kdf=FAST_KDF_FOR_TESTS)  # the KDF runs once per open: not measured
PASSPHRASE = "bench"
AGENTZERO = str(Path(sys.executable).parent / "agentzero")
TOPICS = ("tea", "Lisbon", "the quarterly report", "bees", "the dentist", "a red bicycle")
QUERIES = ("tea", "report", "bicycle", "Lisbon bees", "dentist appointment")


@dataclass
class Row:
    """One surface at one concurrency."""

    surface: str
    clients: int
    calls: int
    seconds: float
    p50_ms: float
    p95_ms: float
    errors: int = 0
    writes_acked: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        """Calls per second over the row."""
        return self.calls / self.seconds


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))] * 1000


def seed(data_dir: Path, n: int) -> None:
    """``n`` short memories in default/default."""
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=CONFIG, embedder=None) as mem:
        for i in range(n):
            mem.remember(f"note {i}: the user mentioned {TOPICS[i % len(TOPICS)]} on day {i}")


def in_process(data_dir: Path, seconds: float) -> Row:
    """``ToolHost.call`` on the tools of ``agentzero mcp``, one caller."""
    os.environ["AGENTZERO_PASSPHRASE"] = PASSPHRASE
    settings = McpSettings(data_dir, embedder="none", config=CONFIG)
    memory = open_memory(settings, None)
    try:
        host = ToolHost(build_tools(memory, None))
        lat: list[float] = []
        end = time.perf_counter() + seconds
        i = 0
        while time.perf_counter() < end:
            t = time.perf_counter()
            ok, _ = host.call("memory_recall", {"query": QUERIES[i % len(QUERIES)], "limit": 5})
            lat.append(time.perf_counter() - t)
            assert ok
            i += 1
    finally:
        memory.close()
    return Row("in-process", 1, len(lat), seconds, _pct(lat, 0.5), _pct(lat, 0.95))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTZERO_")}
    env["AGENTZERO_PASSPHRASE"] = PASSPHRASE
    return env


async def stdio(data_dir: Path, seconds: float) -> Row:
    """The MCP Python SDK's stdio client over ``agentzero mcp``."""
    params = StdioServerParameters(
        command=AGENTZERO,
        args=["--data-dir", str(data_dir), "mcp", "--embedder", "none"],
        env=_env(),
    )
    lat: list[float] = []
    errors = 0
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            end = time.perf_counter() + seconds
            i = 0
            while time.perf_counter() < end:
                t = time.perf_counter()
                r = await s.call_tool(
                    "memory_recall", {"query": QUERIES[i % len(QUERIES)], "limit": 5}
                )
                lat.append(time.perf_counter() - t)
                errors += bool(r.is_error)
                i += 1
    return Row(
        "stdio (agentzero mcp)", 1, len(lat), seconds, _pct(lat, 0.5), _pct(lat, 0.95), errors
    )


Call = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, dict[str, Any]]]]


async def _client_loop(
    call: Call,
    client: int,
    end: float,
    write: bool,
    lat: list[float],
    acked: list[str],
    method: str = "memory_recall",
) -> int:
    errors = 0
    i = 0
    while time.perf_counter() < end:
        if write and i % 10 == 9:
            text = f"load write {uuid.uuid4().hex}: a unique note"
            ok, res = await call("memory_remember", {"content": text})
            if ok and res.get("status") == "created":
                acked.append(res["id"])
            else:
                errors += 1
        else:
            t = time.perf_counter()
            ok, _ = await call(method, {"query": QUERIES[(client + i) % len(QUERIES)], "limit": 5})
            lat.append(time.perf_counter() - t)
            errors += not ok and method == "memory_recall"
        i += 1
    return errors


async def _run_clients(
    surface: str,
    make: Callable[[], Any],
    clients: int,
    seconds: float,
    write: bool,
    method: str = "memory_recall",
) -> tuple[Row, list[str]]:
    lat: list[float] = []
    acked: list[str] = []
    async with make() as factory:
        calls = [await factory() for _ in range(clients)]
        end = time.perf_counter() + seconds
        errors = await asyncio.gather(
            *(_client_loop(c, k, end, write, lat, acked, method) for k, c in enumerate(calls))
        )
    row = Row(
        surface,
        clients,
        len(lat),
        seconds,
        _pct(lat, 0.5),
        _pct(lat, 0.95),
        sum(errors),
        len(acked),
    )
    return row, acked


class _Rpc:
    """httpx clients calling ``/rpc``."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token
        self.clients: list[httpx.AsyncClient] = []

    async def __aenter__(self) -> Callable[[], Awaitable[Call]]:
        async def factory() -> Call:
            c = httpx.AsyncClient(
                base_url=self.base, headers={"Authorization": f"Bearer {self.token}"}, timeout=120
            )
            self.clients.append(c)

            async def call(method: str, params: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
                r = await c.post(
                    "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
                )
                if r.status_code != 200:
                    return False, {}
                body = r.json()
                return "result" in body, body.get("result") or {}

            return call

        return factory

    async def __aexit__(self, *exc: object) -> None:
        for c in self.clients:
            await c.aclose()


class _Mcp:
    """MCP Python SDK sessions over streamable HTTP."""

    def __init__(self, base: str, token: str) -> None:
        self.url, self.token = base + "/mcp", token
        self.stack = None

    async def __aenter__(self) -> Callable[[], Awaitable[Call]]:
        from contextlib import AsyncExitStack

        self.stack = AsyncExitStack()
        stack = self.stack

        async def factory() -> Call:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=120)
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(self.url, http_client=http)
            )
            s = await stack.enter_async_context(ClientSession(read, write))
            await s.initialize()

            async def call(method: str, params: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
                r = await s.call_tool(method, params)
                return not r.is_error, r.structured_content or {}

            return call

        return factory

    async def __aexit__(self, *exc: object) -> None:
        assert self.stack is not None
        await self.stack.aclose()


def start_server(data_dir: Path, tmp: Path) -> tuple[subprocess.Popen[str], str, str]:
    """``agentzero serve`` (no rate limit); its base URL and token."""
    token_file = tmp / "serve.token"
    proc = subprocess.Popen(
        [
            AGENTZERO,
            "--data-dir",
            str(data_dir),
            "serve",
            "--embedder",
            "none",
            "--token-file",
            str(token_file),
            "--rate",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    line = proc.stdout.readline() if ready else ""
    m = re.match(r"^(http://127\.0\.0\.1:\d+) ", line)
    if m is None:
        proc.kill()
        raise SystemExit(f"agentzero serve did not start: {line!r}")
    return proc, m.group(1), token_file.read_text().strip()


def lost_writes(data_dir: Path, acked: list[str]) -> int:
    """How many acknowledged write ids the store does not hold."""
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=CONFIG, embedder=None) as mem:
        listed = mem.memories(limit=10_000)  # the most one call returns
        assert len(listed) < 10_000, "more memories than one listing holds: use a smaller --n"
        held = {m.id for m in listed}
    return sum(1 for i in acked if i not in held)


def main(argv: list[str] | None = None) -> int:
    """Run the rows and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s per row, 300 memories")
    ap.add_argument("--seconds", type=float, default=None, help="per row (default 30; quick 2)")
    ap.add_argument("--n", type=int, default=None, help="memories (default 3,000; quick 300)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    seconds = args.seconds or (2.0 if args.quick else 30.0)
    n = args.n or (300 if args.quick else 3000)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        data_dir = tmp / "data"
        seed(data_dir, n)
        rows.append(in_process(data_dir, seconds))
        rows.append(asyncio.run(stdio(data_dir, seconds)))
        for r in rows:
            print(f"  {r.surface}: p50 {r.p50_ms:.2f} ms", file=sys.stderr)
        proc, base, token = start_server(data_dir, tmp)
        acked: list[str] = []
        try:
            # The transport's floor: a call the server answers without the store (an
            # unknown method: gate, routing, JSON, a worker thread, the error object).
            floor_row, _ = asyncio.run(
                _run_clients(
                    "/rpc, no store (unknown method)",
                    lambda: _Rpc(base, token),
                    1,
                    seconds,
                    False,
                    method="no_such_method",
                )
            )
            rows.append(floor_row)
            for clients in (1, 8, 32):
                for surface, make in (("/rpc", _Rpc), ("/mcp", _Mcp)):
                    write = clients == 32
                    row, got = asyncio.run(
                        _run_clients(
                            surface, lambda m=make: m(base, token), clients, seconds, write
                        )
                    )
                    acked += got
                    rows.append(row)
                    print(f"  {surface} x{clients}: p50 {row.p50_ms:.2f} ms", file=sys.stderr)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        lost = lost_writes(data_dir, acked)
    floor = rows[0].p50_ms
    rpc1 = next(r for r in rows if r.surface == "/rpc" and r.clients == 1)
    overhead = rpc1.p50_ms - floor
    print(f"\nrecall over loopback, {n} memories, {seconds:.0f} s per row\n")
    print("| surface | clients | calls/s | p50 ms | p95 ms | errors | writes acked |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.surface} | {r.clients} | {r.per_second:.0f} | {r.p50_ms:.2f} | "
            f"{r.p95_ms:.2f} | {r.errors} | {r.writes_acked} |"
        )
    print(
        f"\nHTTP overhead at 1 client (/rpc p50 − in-process p50): {overhead:.2f} ms "
        f"(goal ≤ 2 ms: {'met' if overhead <= 2 else 'missed'})"
    )
    print(
        f"acknowledged writes under 32 clients: {len(acked)}, lost: {lost}; "
        f"server exit status after SIGTERM: {code}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rows": [asdict(r) | {"per_second": r.per_second} for r in rows],
                    "overhead_ms": overhead,
                    "acked": len(acked),
                    "lost": lost,
                    "exit": code,
                    "n": n,
                    "seconds": seconds,
                },
                indent=2,
            )
        )
    errors = sum(r.errors for r in rows if r.clients == 32)
    return 0 if lost == 0 and errors == 0 and code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
