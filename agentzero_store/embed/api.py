"""``ApiEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint, through httpx.

Batching, timeouts, retries with exponential backoff on 429 and 5xx (honouring
``Retry-After``), and one typed error per failure a user can act on: bad credentials,
unknown model, wrong dimension, unreachable server. The API key comes from the argument
or ``AGENTZERO_EMBED_API_KEY`` and never appears in reprs, logs or error messages.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from ..base.errors import DimensionMismatchError, EmbedderError
from .vectors import Vector

log = logging.getLogger(__name__)

ENV_URL = "AGENTZERO_EMBED_URL"
ENV_MODEL = "AGENTZERO_EMBED_MODEL"
ENV_KEY = "AGENTZERO_EMBED_API_KEY"
ENV_DIM = "AGENTZERO_EMBED_DIMENSIONS"


class EmbedderAuthError(EmbedderError):
    """The embedding server refused the API key."""

    code = "embedder_auth"
    exit_code = 3
    default_hint = f"check the API key (argument or {ENV_KEY})"


class EmbedderUnavailableError(EmbedderError):
    """The embedding server could not be reached or kept failing."""

    code = "embedder_unavailable"
    default_hint = f"check that the server at {ENV_URL} is running and reachable"


class EmbedderModelError(EmbedderError):
    """The server does not know the requested model, or rejected the request."""

    code = "embedder_model"
    exit_code = 2
    default_hint = f"check the model name ({ENV_MODEL}) against the server's models"


class ApiEmbedder:
    """Embeds texts with an OpenAI-compatible embeddings API."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = base_url or os.environ.get(ENV_URL)
        name = model or os.environ.get(ENV_MODEL)
        if not url or not name:
            raise EmbedderError(
                "the API embedder needs a base URL and a model",
                hint=f"set {ENV_URL} (e.g. http://127.0.0.1:8080/v1) and {ENV_MODEL}",
            )
        env_dim = os.environ.get(ENV_DIM)
        self.base_url = url.rstrip("/")
        self.model = name
        self.requested_dimensions = dimensions or (int(env_dim) if env_dim else None)
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff = backoff
        key = api_key if api_key is not None else os.environ.get(ENV_KEY)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._dimension = self.requested_dimensions

    def __repr__(self) -> str:
        return f"ApiEmbedder(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def model_id(self) -> str:
        """``api:<model>`` plus ``@<dimensions>`` when a reduced dimension was requested."""
        suffix = f"@{self.requested_dimensions}" if self.requested_dimensions else ""
        return f"api:{self.model}{suffix}"

    @property
    def dimension(self) -> int:
        """The vector length (asked for, or learnt from one probe request)."""
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed ``texts`` in batches; returns float32 of shape (len(texts), dimension)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._request(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        out = np.concatenate(parts, axis=0)
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        elif out.shape[1] != self._dimension:
            raise DimensionMismatchError(
                f"{self.model_id} returned {out.shape[1]}-d vectors, expected {self._dimension}"
            )
        return out

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def _request(self, batch: list[str]) -> Vector:
        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.requested_dimensions:
            body["dimensions"] = self.requested_dimensions
        url = f"{self.base_url}/embeddings"
        for attempt in range(self.max_retries + 1):
            try:
                r = self._client.post(url, json=body)
            except httpx.TransportError as exc:
                if attempt == self.max_retries:
                    raise EmbedderUnavailableError(
                        f"cannot reach {url}: {type(exc).__name__}"
                    ) from exc
                self._sleep(attempt, None)
                continue
            if r.status_code == 429 or r.status_code >= 500:
                if attempt == self.max_retries:
                    raise EmbedderUnavailableError(
                        f"{url} answered {r.status_code} after {attempt + 1} attempts"
                    )
                log.info("embedding server answered %d; retrying", r.status_code)
                self._sleep(attempt, r.headers.get("retry-after"))
                continue
            return self._parse(r, len(batch))
        raise AssertionError("unreachable")  # pragma: no cover

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * (2**attempt)
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = max(delay, min(float(retry_after), 30.0))
        time.sleep(delay)

    def _parse(self, r: httpx.Response, n: int) -> Vector:
        if r.status_code in (401, 403):
            raise EmbedderAuthError(f"{self.base_url} refused the credentials ({r.status_code})")
        if r.status_code == 404 or (r.status_code == 400 and "model" in r.text.lower()):
            raise EmbedderModelError(
                f"{self.base_url} rejected model {self.model!r} ({r.status_code}): "
                f"{_error_message(r)}"
            )
        if r.status_code != 200:
            raise EmbedderModelError(
                f"{self.base_url} answered {r.status_code}: {_error_message(r)}"
            )
        try:
            data = sorted(r.json()["data"], key=lambda d: d["index"])
            out = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"{self.base_url} sent a malformed embeddings response") from exc
        if out.ndim != 2 or out.shape[0] != n:
            raise EmbedderError(f"{self.base_url} returned {out.shape[0]} vectors for {n} texts")
        if self.requested_dimensions and out.shape[1] != self.requested_dimensions:
            raise DimensionMismatchError(
                f"asked {self.model!r} for {self.requested_dimensions}-d vectors, "
                f"got {out.shape[1]}"
            )
        return out


def _error_message(r: httpx.Response) -> str:
    try:
        err = r.json().get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        return str(msg)[:200] if msg else r.reason_phrase
    except ValueError:
        return r.reason_phrase
