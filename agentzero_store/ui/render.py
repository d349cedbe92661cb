"""How the inspector's pages are rendered: the Jinja2 environment (autoescaped, strict)
with its filters, and ``renderer``, which gives every page the context each needs (the
CSRF token, the scope shown and the scopes to switch to, this session's forgets)."""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote, urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from .inspector import Inspector
from .security import Secrets


class Render(Protocol):
    """Render template ``name`` as the page answering ``request``."""

    def __call__(
        self, request: Request, name: str, status: int = 200, **ctx: Any
    ) -> HTMLResponse: ...


def environment() -> jinja2.Environment:
    """The templates of this package, every value escaped, a missing one an error."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agentzero_store.ui", "templates"),
        autoescape=True,  # every value, memory text above all, is escaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = lambda d: "" if d is None else d.strftime("%Y-%m-%d %H:%M UTC")
    env.filters["pct"] = lambda r: f"{100 * r:.0f}%"
    env.filters["num"] = lambda x, n=2: f"{x:.{n}f}"
    env.filters["qs"] = lambda d: urlencode({k: v for k, v in d.items() if v not in (None, "")})
    # An id in a link's path, "/" included: a document's id is its path in the folder it
    # came from ("travel/lisbon.md"); a raw "/" would split it (and "a/../b" would be
    # resolved away by the browser). The routes take the rest of the path (":path").
    env.filters["seg"] = lambda s: quote(str(s), safe="")
    return env


def renderer(inspector: Inspector, keys: Secrets) -> Render:
    """The page renderer of one app: ``page(request, name, status, **ctx)``."""
    env = environment()

    def page(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        scopes = [] if inspector.settings.pinned else inspector.scopes()
        ctx.update(
            csrf=keys.csrf,
            scope=inspector.scope,
            scope_pinned=inspector.settings.pinned,
            scopes=scopes,
            scope_listed=any((o, a) == inspector.scope for o, a, _ in scopes),
            receipts=inspector.receipts,
            path=request.url.path,
        )
        return HTMLResponse(env.get_template(name).render(**ctx), status_code=status)

    return page


__all__ = ["Render", "environment", "renderer"]
