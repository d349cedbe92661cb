"""ApiEmbedder against a real OpenAI-compatible HTTP server on loopback."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentzero_store import DimensionMismatchError, MemoryEntry, SqliteMemoryStore
from agentzero_store.embed.api import (
    ApiEmbedder,
    EmbedderAuthError,
    EmbedderModelError,
    EmbedderUnavailableError,
)
from agentzero_store.embed.factory import embedder_from_env

from ..conftest import FAST, PASSPHRASE

KEY = "sk-test-123"


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic vector of a text: bag of hashed words (similar texts stay close)."""
    v = np.zeros(dim)
    for w in text.lower().split():
        h = int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "little")
        v[h % dim] += 1.0
    return (v / (np.linalg.norm(v) or 1.0)).tolist()


class EmbeddingServer:
    """A real HTTP server speaking the /v1/embeddings shapes, with scripted failures."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []  # status codes to answer before succeeding
        self.wrong_dim = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(
                self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "no such route"}})
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    return self._send(401, {"error": {"message": "invalid api key"}})
                if server.fail_next:
                    code = server.fail_next.pop(0)
                    return self._send(
                        code,
                        {"error": {"message": "slow down"}},
                        {"Retry-After": "0"} if code == 429 else None,
                    )
                if body["model"] != "mini-embed":
                    return self._send(
                        404, {"error": {"message": f"model {body['model']} not found"}}
                    )
                dim = body.get("dimensions", 64) + (1 if server.wrong_dim else 0)
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(t, dim)}
                    for i, t in reversed(list(enumerate(body["input"])))
                ]
                return self._send(200, {"object": "list", "data": data, "model": body["model"]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join()


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    s = EmbeddingServer()
    yield s
    s.stop()


def test_embeds_in_batches_and_keeps_order(server: EmbeddingServer) -> None:
    e = ApiEmbedder(server.url, "mini-embed", api_key=KEY, batch_size=3, backoff=0)
    texts = [f"text number {i}" for i in range(7)]
    out = e.embed(texts)
    assert out.shape == (7, 64) and out.dtype == np.float32
    assert np.allclose(out[5], fake_vector(texts[5], 64), atol=1e-6)
    assert [len(r["input"]) for r in server.requests] == [3, 3, 1]
    assert e.model_id == "api:mini-embed" and e.dimension == 64
    assert KEY not in repr(e)


def test_dimensions_parameter(server: EmbeddingServer) -> None:
    e = ApiEmbedder(server.url, "mini-embed", api_key=KEY, dimensions=32)
    assert e.embed(["hello"]).shape == (1, 32)
    assert server.requests[-1]["dimensions"] == 32 and e.model_id == "api:mini-embed@32"
    server.wrong_dim = True
    with pytest.raises(DimensionMismatchError):
        e.embed(["hello"])


def test_retries_429_and_5xx_then_succeeds(server: EmbeddingServer) -> None:
    server.fail_next = [429, 503, 500]
    e = ApiEmbedder(server.url, "mini-embed", api_key=KEY, backoff=0.01, max_retries=3)
    assert e.embed(["persistent"]).shape == (1, 64)
    assert len(server.requests) == 4


def test_gives_up_with_typed_error(server: EmbeddingServer) -> None:
    server.fail_next = [503] * 10
    e = ApiEmbedder(server.url, "mini-embed", api_key=KEY, backoff=0.01, max_retries=2)
    with pytest.raises(EmbedderUnavailableError, match="503 after 3 attempts"):
        e.embed(["x"])


def test_auth_model_and_unreachable_errors(server: EmbeddingServer) -> None:
    with pytest.raises(EmbedderAuthError) as info:
        ApiEmbedder(server.url, "mini-embed", api_key="wrong").embed(["x"])
    assert "wrong" not in str(info.value)
    with pytest.raises(EmbedderModelError, match="not found"):
        ApiEmbedder(server.url, "no-such-model", api_key=KEY).embed(["x"])
    port = server.httpd.server_address[1]
    server.stop()
    with pytest.raises(EmbedderUnavailableError, match="cannot reach"):
        ApiEmbedder(
            f"http://127.0.0.1:{port}/v1",
            "mini-embed",
            api_key=KEY,
            max_retries=1,
            backoff=0.01,
            timeout=2,
        ).embed(["x"])


def test_env_configuration_and_store_round_trip(
    server: EmbeddingServer, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTZERO_EMBEDDER", "api")
    monkeypatch.setenv("AGENTZERO_EMBED_URL", server.url)
    monkeypatch.setenv("AGENTZERO_EMBED_MODEL", "mini-embed")
    monkeypatch.setenv("AGENTZERO_EMBED_API_KEY", KEY)
    e = embedder_from_env()
    assert isinstance(e, ApiEmbedder)
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, embedder=e) as s:
        s.append_many(
            [
                MemoryEntry(content=t)
                for t in (
                    "red apples are sweet",
                    "the train leaves at noon",
                    "green apples are sour",
                )
            ]
        )
        assert "train" in s.recall("when does the train leave", 1)[0].entry.content
        assert s.embedding_info() == ("api:mini-embed", 64)
