"""A real store and a real inspector server (uvicorn in a thread) for the UI tests."""

from __future__ import annotations

import contextlib
import re
import select
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from agentzero_store.agentmem import AgentMemory
from agentzero_store.embed.vectors import Embedder
from agentzero_store.ops.verify import verify_store
from agentzero_store.storage.credentials import Credential
from agentzero_store.ui import Inspector, Secrets, Settings, bind, create_app
from agentzero_store.ui.server import make_server
from tests.conftest import AGENTZERO, FAST, PASSPHRASE, child_env

SCRIPT = "The user pasted <script>alert(1)</script> into the chat"
NEEDLE = "zanzibarquokka"  # a word no other text holds: what search finds and scans look for
TEA = f"The user drinks {NEEDLE} tea every morning"
DOC_TEXT = (
    "Quarterly report. The heron migration started early this year. "
    "Most herons left the estuary in the first week of March."
)


@dataclass
class Seeded:
    """What the store holds before the server starts."""

    tea: str
    script: str
    porto: str
    lisbon: str


def seed(data_dir: Path, embedder: Embedder | None = None) -> Seeded:
    """A store with a few memories, a superseded fact, a link and a document (the
    memories embedded too when an ``embedder`` is given)."""
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST, embedder=embedder) as mem:
        tea = mem.remember(TEA, about=["tea"]).id
        script = mem.remember(SCRIPT, type="episodic").id
        porto = mem.assert_fact(
            "Ana", "lives_in", "Porto", valid_from=datetime(2020, 1, 1, tzinfo=UTC)
        ).id
        lisbon = mem.assert_fact(
            "Ana", "lives_in", "Lisbon", valid_from=datetime(2024, 1, 1, tzinfo=UTC)
        ).id
        mem.link(tea, script, "causal", confidence=0.8)
    from rag.store import DocumentStore

    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, create=False) as docs:
        docs.ingest("report-1", DOC_TEXT, title="Heron report")
    return Seeded(tea, script, porto, lisbon)


@dataclass
class Served:
    """A running inspector: its base URL, secrets, inspector and the seeded ids."""

    base: str
    keys: Secrets
    inspector: Inspector
    data_dir: Path
    ids: Seeded

    def client(self, *, login: bool = True) -> httpx.Client:
        """An HTTP client; signed in (the token exchanged for the cookie) unless told."""
        c = httpx.Client(base_url=self.base, follow_redirects=False, timeout=60)
        if login:
            r = c.get(f"/?token={self.keys.login_token}")
            assert r.status_code == 303, r.text
        return c


def csrf_of(page: str) -> str:
    """The CSRF token a page's forms carry."""
    m = re.search(r'name="csrf" value="([^"]+)"', page)
    assert m is not None, "no form on this page"
    return m.group(1)


@contextlib.contextmanager
def serving(
    data_dir: Path, ids: Seeded, *, pinned: bool = True, embedder: Embedder | None = None
) -> Iterator[Served]:
    """The inspector of ``data_dir`` served on a free port in this process."""
    cred = Credential.from_passphrase(PASSPHRASE)
    settings = Settings(
        data_dir,
        cred,
        config=FAST,
        pinned=pinned,
        embedder=embedder,
        verify=lambda tell: verify_store(data_dir, cred, tell).to_dict(),
    )
    inspector = Inspector.open(settings)
    sock = bind(0)
    keys = Secrets(port=sock.getsockname()[1])
    server = make_server(create_app(inspector, keys))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(600):  # wait for uvicorn to accept connections (not a timed assertion)
        if server.started:
            started.set()
            break
        started.wait(0.05)
    assert server.started
    try:
        yield Served(f"http://127.0.0.1:{keys.port}", keys, inspector, data_dir, ids)
    finally:
        server.should_exit = True
        thread.join(30)
        inspector.close()
        sock.close()


@pytest.fixture
def served(data_dir: Path) -> Iterator[Served]:
    """Pinned to default / default, as ``agentzero ui --org default --agent default``."""
    with serving(data_dir, seed(data_dir)) as s:
        yield s


@pytest.fixture
def unpinned(data_dir: Path) -> Iterator[Served]:
    """Not pinned, as plain ``agentzero ui``: the page switches between agents."""
    with serving(data_dir, seed(data_dir), pinned=False) as s:
        yield s


@pytest.fixture
def client(served: Served) -> Iterator[httpx.Client]:
    c = served.client()
    try:
        yield c
    finally:
        c.close()


URL_LINE = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{40,})$")


@contextlib.contextmanager
def running_ui(data_dir: Path, *args: str, passphrase: str = PASSPHRASE) -> Iterator[str]:
    """The real ``agentzero ui --no-browser`` in a subprocess; yields its first stdout line."""
    env = child_env()
    env["AGENTZERO_PASSPHRASE"] = passphrase
    proc = subprocess.Popen(
        [AGENTZERO, "--data-dir", str(data_dir), "ui", "--no-browser", "--embedder", "none", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "agentzero ui printed nothing"
        yield proc.stdout.readline().rstrip("\n")
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: uvicorn stops, the memory closes
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
