"""The inspector's gate: only this machine's browser, holding the cookie, gets in.

One pure ASGI middleware, before any route runs:

- **Host**: ``127.0.0.1:PORT`` or ``localhost:PORT`` only, else 400. A page on another
  site that rebinds its DNS name to 127.0.0.1 sends its own name as Host and is refused.
- **Token → cookie**: the URL printed at start carries a one-time random token; the first
  request holding it gets an HttpOnly, SameSite=Strict session cookie and a redirect to
  the URL without it. The token then stops working: a URL left in a shell history or a
  browser's history opens nothing. Every other request without the cookie: 401.
- **Headers on every answer** (errors too): a strict Content-Security-Policy (no inline
  script or style, nothing from another origin, no framing), nosniff, no referrer, no
  caching. No CORS header is ever sent, so other origins cannot read an answer.

The CSRF token of state-changing requests is checked by the routes (``check_csrf``):
a form field is only known once the body is read.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "agentzero_ui"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)


@dataclass
class Secrets:
    """This server's random secrets; they live in its memory only, never on disk."""

    port: int
    login_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    _used: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __repr__(self) -> str:
        return f"Secrets(port={self.port})"  # never the secrets

    @property
    def url(self) -> str:
        """The URL to print: the one way in, good once."""
        return f"http://127.0.0.1:{self.port}/?token={self.login_token}"

    def redeem(self, token: str) -> bool:
        """True the first time the right login token is shown, False ever after."""
        with self._lock:
            if self._used or not hmac.compare_digest(token, self.login_token):
                return False
            self._used = True
            return True

    def allowed_hosts(self) -> frozenset[bytes]:
        """The Host headers this server answers to."""
        return loopback_hosts(self.port)

    def csrf_ok(self, value: object) -> bool:
        """Whether a submitted CSRF token is this server's."""
        return isinstance(value, str) and hmac.compare_digest(value, self.csrf)


def loopback_hosts(port: int) -> frozenset[bytes]:
    """The Host headers a server on 127.0.0.1:``port`` answers to: any other name is a
    page that rebound its DNS name to this machine."""
    return frozenset({f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()})


class Gate:
    """The ASGI middleware described in the module docstring."""

    def __init__(self, app: ASGIApp, keys: Secrets) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: none served
        headers = dict(scope.get("headers") or [])
        if headers.get(b"host", b"") not in self.keys.allowed_hosts():
            await plain_response(
                send, 400, "refused: this server answers only to 127.0.0.1 / localhost"
            )
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        token = query.pop("token", None)
        if token is not None and scope["method"] == "GET":
            # The answer is built in full before the token is spent: a path it could not
            # carry must never burn the one way in.
            start = _redirect_start(_location(scope["path"], query), self._cookie())
            if not self.keys.redeem(token):
                await plain_response(
                    send, 401, "this link was used already: start `agentzero ui` again"
                )
                return
            await send(start)
            await send({"type": "http.response.body", "body": b""})
            return
        if not self._has_cookie(headers.get(b"cookie", b"")):
            await plain_response(send, 401, "not signed in: open the URL `agentzero ui` printed")
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _cookie(self) -> bytes:
        return f"{COOKIE}={self.keys.session}; Path=/; HttpOnly; SameSite=Strict".encode()

    def _has_cookie(self, raw: bytes) -> bool:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw.decode("latin-1"))
        except Exception:  # a malformed Cookie header is no cookie
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value, self.keys.session)


async def plain_response(send: Send, status: int, text: str, *extra: tuple[bytes, bytes]) -> None:
    """A short text/plain answer carrying the security headers (and ``extra``)."""
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _location(path: str, query: dict[str, str]) -> str:
    """Where the login redirect leads: the same path and query without the token, as
    ASCII (the path percent-encoded again), and only within this app."""
    if not path.startswith("/") or path.startswith("//"):
        path = "/"  # "//host/..." in a Location header is another site
    rest = urlencode(query)
    return quote(path, safe="/!$&'()*+,;=:@-._~") + (f"?{rest}" if rest else "")


def _redirect_start(location: str, cookie: bytes) -> Message:
    return {
        "type": "http.response.start",
        "status": 303,
        "headers": [
            (b"location", location.encode("ascii")),
            (b"set-cookie", cookie),
            (b"content-length", b"0"),
            *SECURITY_HEADERS,
        ],
    }


__all__ = [
    "COOKIE",
    "CSP",
    "SECURITY_HEADERS",
    "Gate",
    "Secrets",
    "loopback_hosts",
    "plain_response",
]
