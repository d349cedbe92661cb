"""Serving the inspector: uvicorn on a socket bound to 127.0.0.1, nothing else.

The socket is bound before anything is printed, so the printed URL names the real port
(``--port 0``: one the OS picks). Uvicorn's access log is off: a request line could
carry the one-time token, and logs never carry content.
"""

from __future__ import annotations

import socket

import uvicorn

from .security import ASGIApp

HOST = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:``port`` (0: a free port)."""
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets
    # whose proto says TCP, and accepted sockets inherit it. With Nagle on, an answer
    # written in two pieces (head, body) waits for the client's delayed ACK: ~40 ms on
    # every request of a kept-alive connection.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def make_server(app: ASGIApp) -> uvicorn.Server:
    """A uvicorn server for ``app``: no access log, no server header, HTTP only."""
    config = uvicorn.Config(
        app,
        access_log=False,
        log_config=None,
        log_level="warning",
        server_header=False,
        date_header=False,
        lifespan="off",
        ws="none",
    )
    return uvicorn.Server(config)


def serve(app: ASGIApp, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until interrupted (Ctrl-C, SIGTERM)."""
    make_server(app).run(sockets=[sock])


__all__ = ["HOST", "bind", "make_server", "serve"]
