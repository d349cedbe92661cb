"""The server's gate: one pure ASGI middleware in front of every route.

In this order, before any route runs (the UI's model, with a bearer token instead of a
cookie):

- **Host** (TCP only): ``127.0.0.1:PORT`` or ``localhost:PORT``, else 400: a page that
  rebinds its DNS name to 127.0.0.1 sends its own name and is refused. An ``Origin``
  header, when a client sends one, must name this server too (403): browsers send it.
- **Token**: ``Authorization: Bearer <token>``; missing or wrong: 401 and nothing runs,
  so nothing changes.
- **Rate**: a token bucket per token (429 with ``Retry-After``).
- **Size**: a body longer than the limit is refused (413) before a route sees it.
- **Headers** on every answer: nosniff, no caching, no referrer, a CSP forbidding
  everything. No CORS header is ever sent, so no other origin reads an answer.

The matched grant is put in the ASGI scope (``GRANT_KEY``) for the routes.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from ..ui.security import (
    SECURITY_HEADERS,
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    loopback_hosts,
    plain_response,
)
from .tokens import Grant, TokenTable

GRANT_KEY = "agentzero.grant"


@dataclass(frozen=True)
class Limits:
    """Per-request and per-token limits."""

    max_body: int = 4 * 1024 * 1024  # bytes of one request body
    rate: float = 500.0  # requests per second per token (0: no limit)
    burst: int = 1000  # requests a token may make at once before the rate applies


class TokenBuckets:
    """One token bucket per grant: ``take`` answers 0 (go) or the seconds to wait."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(max(burst, 1))
        self._state: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Spend one request of ``key``'s bucket; 0.0 if allowed, else seconds to wait."""
        if self._rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            level, then = self._state.get(key, (self._burst, now))
            level = min(self._burst, level + (now - then) * self._rate)
            if level < 1.0:
                self._state[key] = (level, now)
                return (1.0 - level) / self._rate
            self._state[key] = (level - 1.0, now)
            return 0.0


class ServeGate:
    """The middleware described in the module docstring. ``port`` None: a Unix socket
    (no Host to check: a browser cannot reach one)."""

    def __init__(self, app: ASGIApp, tokens: TokenTable, port: int | None, limits: Limits) -> None:
        self.app = app
        self.tokens = tokens
        self.limits = limits
        self._hosts = loopback_hosts(port) if port is not None else None
        self._origins = (
            frozenset(b"http://" + h for h in self._hosts) if self._hosts is not None else None
        )
        self._buckets = TokenBuckets(limits.rate, limits.burst)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: none served
        headers = dict(scope.get("headers") or [])
        if self._hosts is not None and headers.get(b"host", b"") not in self._hosts:
            await plain_response(send, 400, "refused: this server answers only to 127.0.0.1")
            return
        origin = headers.get(b"origin")
        if origin is not None and (self._origins is None or origin not in self._origins):
            await plain_response(send, 403, "refused: requests from web pages are not served")
            return
        grant = self._grant(headers.get(b"authorization", b""))
        if grant is None:
            await plain_response(
                send,
                401,
                "a bearer token is required: Authorization: Bearer $(cat TOKEN_FILE)",
                (b"www-authenticate", b'Bearer realm="agentzero"'),
            )
            return
        wait = self._buckets.take(grant.name)
        if wait > 0:
            await plain_response(
                send,
                429,
                "too many requests for this token: slow down",
                (b"retry-after", str(max(1, math.ceil(wait))).encode()),
            )
            return
        body = await self._read_body(headers, receive)
        if body is None:
            await plain_response(
                send, 413, f"request body larger than {self.limits.max_body} bytes"
            )
            return
        scope[GRANT_KEY] = grant
        await self.app(scope, _replay(body, receive), _with_headers(send))

    def _grant(self, raw: bytes) -> Grant | None:
        scheme, _, value = raw.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return None
        return self.tokens.match(value.strip())

    async def _read_body(self, headers: dict[bytes, bytes], receive: Receive) -> bytes | None:
        """The whole body, or None when it is over the limit (read no further)."""
        declared = headers.get(b"content-length")
        if declared is not None and (
            not declared.isdigit() or int(declared) > self.limits.max_body
        ):
            return None
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away; the route sees an empty body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body:
                return None
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the buffered body over once, then the real one."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return sending


__all__ = ["GRANT_KEY", "Limits", "ServeGate", "TokenBuckets"]
