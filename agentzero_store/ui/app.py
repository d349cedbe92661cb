"""The inspector's routes: server-rendered pages (Jinja2, autoescaped) and POST forms.

Reads are GET pages; every change is a POST form carrying the CSRF token, answered by a
redirect (post/redirect/get). The store's errors become a page with the message and
its hint, never a traceback. Nothing is loaded from another origin: the one stylesheet
and the one script (job polling) are served from this package.
"""

from __future__ import annotations

from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from ..base.errors import AccessDeniedError, AgentZeroStoreError, NotFoundError
from .actions import action_routes
from .inspector import Inspector
from .pages import page_routes
from .render import renderer
from .security import Gate, Secrets


def create_app(inspector: Inspector, keys: Secrets) -> Gate:
    """The ASGI app: the routes behind the gate (host, cookie, headers)."""
    page = renderer(inspector, keys)

    # -------------------------------------------------------------- errors
    async def store_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AgentZeroStoreError)
        status = (
            404
            if isinstance(exc, NotFoundError)
            else 403
            if isinstance(exc, AccessDeniedError)
            else 400
        )
        return page(request, "error.html", status=status, message=exc.message, hint=exc.hint)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return Response(f"{exc.detail}\n", status_code=exc.status_code, media_type="text/plain")

    static = StaticFiles(directory=str(resources.files("agentzero_store.ui") / "static"))
    routes = [
        *page_routes(inspector, page),
        *action_routes(inspector, keys, page),
        Mount("/static", static, name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={AgentZeroStoreError: store_error, HTTPException: http_error},
    )
    return Gate(app, keys)


__all__ = ["create_app"]
