"""``agentzero ui``: a local memory inspector in the browser, served by the store itself.

Server-rendered pages over one pinned ``AgentMemory`` (``inspector``), behind a gate
that admits only this machine's browser holding the session cookie (``security``);
long actions run as polled background jobs (``jobs``); the SVGs are drawn server-side
(``drawing``). Starlette, Jinja2 and uvicorn are used here and nowhere else.
"""

from .app import create_app
from .inspector import Inspector
from .records import Settings
from .security import Secrets
from .server import bind, serve

__all__ = ["Inspector", "Secrets", "Settings", "bind", "create_app", "serve"]
