"""A real ``agentzero serve`` in a subprocess, on a free port, over a real store."""

from __future__ import annotations

import contextlib
import re
import select
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentzero_store.agentmem import AgentMemory
from tests.conftest import AGENTZERO, FAST, PASSPHRASE, child_env

FIRST_LINE = re.compile(r"^(http://127\.0\.0\.1:\d+|unix:\S+) \(bearer token in (.+)\)$")
TEA = "Ana drinks zanzibarquokka tea every morning"
BOT_NOTE = "the bot's own note about quokkas"


@dataclass
class Server:
    """A running server: where it listens, its tokens, its process."""

    base: str
    token: str
    tokens: dict[str, str]  # scoped tokens by file name
    token_file: Path
    data_dir: Path
    proc: subprocess.Popen[str]
    line: str

    def client(self, token: str | None = None) -> httpx.Client:
        """An httpx client sending ``token`` (default: the main one)."""
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=60)

    def rpc(self, method: str, token: str | None = None, **params: object) -> Any:
        """One JSON-RPC call; the whole response object."""
        with self.client(token) as c:
            r = c.post("/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        assert r.status_code == 200, r.text
        return r.json()


def seed(data_dir: Path) -> None:
    """A store with one memory in default/default and one in acme/bot."""
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        mem.remember(TEA, about=["Ana"])
    with AgentMemory.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, org_id="acme", agent_id="bot"
    ) as mem:
        mem.remember(BOT_NOTE)


@contextlib.contextmanager
def running(
    data_dir: Path, token_file: Path, *args: str, passphrase: str = PASSPHRASE
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``agentzero serve`` in a subprocess; yields it and its first stdout line; stops
    it with SIGTERM."""
    env = child_env()
    env["AGENTZERO_PASSPHRASE"] = passphrase
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
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "agentzero serve printed nothing"
        yield proc, proc.stdout.readline().rstrip("\n")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the package's tests (a start costs seconds): the main token, a
    token scoped to acme/bot and a read-only one for it; a 64 KiB body limit."""
    tmp = tmp_path_factory.mktemp("serve")
    data_dir = tmp / "data"
    seed(data_dir)
    token_file = tmp / "cfg" / "main.token"
    bot, ro = tmp / "bot.token", tmp / "bot-ro.token"
    with running(
        data_dir,
        token_file,
        "--scoped-token",
        f"{bot}=acme/bot",
        "--scoped-token",
        f"{ro}=acme/bot/ro",
        "--max-body-kib",
        "64",
    ) as (proc, line):
        m = FIRST_LINE.match(line)
        assert m is not None, line
        assert Path(m.group(2)) == token_file
        yield Server(
            base=m.group(1),
            token=token_file.read_text().strip(),
            tokens={"bot": bot.read_text().strip(), "ro": ro.read_text().strip()},
            token_file=token_file,
            data_dir=data_dir,
            proc=proc,
            line=line,
        )
