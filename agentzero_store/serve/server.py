"""Running the server: a socket (127.0.0.1, or a Unix socket), uvicorn, and the MCP
session managers for as long as it serves; SIGTERM or Ctrl-C stops it cleanly (uvicorn
finishes the requests in flight, then the store is closed by the caller)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from pathlib import Path

from ..ui.server import bind, make_server
from .app import ServeApp


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at ``path`` (0600: only this user connects). A socket file
    left by a server that died is replaced; any other file there is refused."""
    if path.is_socket():
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def run(app: ServeApp, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until SIGTERM or Ctrl-C, then return (normally)."""

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            for manager in app.managers.values():
                await stack.enter_async_context(manager.run())
            server = make_server(app.app)
            server.config.timeout_graceful_shutdown = 5  # seconds for requests in flight
            await server.serve(sockets=[sock])

    # uvicorn catches SIGINT/SIGTERM while it serves, and on its way out raises the
    # signal again for the handler it found: with Python's defaults, SIGTERM would kill
    # the process before the store is closed (and Ctrl-C become a KeyboardInterrupt).
    # A handler that only returns lets the caller's cleanup run and the exit be clean.
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, _stopped) for s in stops}
    try:
        asyncio.run(main())
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stopped(signum: int, frame: object) -> None:
    """A stop signal after uvicorn is done with it: nothing more to do."""


__all__ = ["bind", "bind_unix", "run"]
