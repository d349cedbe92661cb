"""The inspector's actions: POST forms that change the memory (pin, archive, forget,
undo, erase, grant), switch the scope shown, or start a job. Each carries the CSRF token
and is answered by a redirect (post/redirect/get); erase is asked twice first."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ..base.errors import InvalidArgumentError, NotFoundError
from .inspector import Inspector, Selector
from .render import Render
from .security import Secrets

Handler = Callable[[Request], Awaitable[Response]]
ERASE_WORD = "ERASE"  # the second confirmation: typed by hand


def action_routes(inspector: Inspector, keys: Secrets, page: Render) -> list[Route]:
    """The routes of the actions (and of erase's confirmation page), in match order."""

    def posted(fn: Callable[[Request, FormData], Awaitable[Response]]) -> Handler:
        """A state-changing route: 403 unless the form carries this server's CSRF token."""

        @functools.wraps(fn)
        async def handler(request: Request) -> Response:
            form = await request.form()
            if not keys.csrf_ok(form.get("csrf")):
                raise HTTPException(403, "missing or wrong CSRF token: reload the page")
            return await fn(request, form)

        return handler

    def back(request: Request, form: FormData, default: str = "/") -> RedirectResponse:
        to = str(form.get("next") or default)
        # Only back into this app: browsers read "//host" and "/\\host" as another site.
        if not to.startswith("/") or to.startswith("//") or "\\" in to or not to.isprintable():
            to = default
        return RedirectResponse(to, status_code=303)

    def text(form: FormData, name: str) -> str:
        value = form.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgumentError(f"the form field {name!r} is missing")
        return value.strip()

    def selector(form: FormData) -> tuple[Selector, str]:
        by = str(form.get("by") or "id")
        if by not in ("id", "conversation_id", "about"):
            raise InvalidArgumentError("choose what to select by: id, conversation_id or about")
        return by, text(form, "value")  # type: ignore[return-value]

    @posted
    async def pin(request: Request, form: FormData) -> Response:
        on = request.path_params["verb"] == "pin"
        await run_in_threadpool(inspector.pin, text(form, "id"), on)
        return back(request, form)

    @posted
    async def archive(request: Request, form: FormData) -> Response:
        on = request.path_params["verb"] == "archive"
        await run_in_threadpool(inspector.archive, text(form, "id"), on)
        return back(request, form)

    @posted
    async def forget(request: Request, form: FormData) -> Response:
        by, value = selector(form)
        await run_in_threadpool(inspector.forget, by, value)
        return back(request, form)

    @posted
    async def undo(request: Request, form: FormData) -> Response:
        await run_in_threadpool(inspector.undo, text(form, "token"))
        return back(request, form)

    def erase_confirm(request: Request) -> HTMLResponse:
        q = request.query_params
        by = q.get("by") or "id"
        value = q.get("value") or ""
        return page(request, "erase.html", by=by, value=value, erase_word=ERASE_WORD)

    @posted
    async def erase(request: Request, form: FormData) -> Response:
        by, value = selector(form)
        # Asked twice: the checkbox and the typed word. Either missing: nothing is erased.
        if form.get("understand") != "yes" or form.get("confirm_word") != ERASE_WORD:
            return page(
                request,
                "erase.html",
                status=400,
                by=by,
                value=value,
                erase_word=ERASE_WORD,
                problem="nothing was erased: tick the box and type the word to confirm",
            )
        n = await run_in_threadpool(inspector.erase, by, value)
        return page(request, "erased.html", count=n)

    @posted
    async def grant(request: Request, form: FormData) -> Response:
        on = request.path_params["verb"] == "grant"
        await run_in_threadpool(inspector.grant, text(form, "namespace"), text(form, "agent"), on)
        return back(request, form, "/namespaces")

    @posted
    async def switch_scope(request: Request, form: FormData) -> Response:
        try:
            org, agent = json.loads(text(form, "scope"))
        except (ValueError, TypeError):
            raise InvalidArgumentError("the scope field must be a JSON [org, agent] pair") from None
        await run_in_threadpool(inspector.switch, str(org), str(agent))
        return RedirectResponse("/", status_code=303)

    @posted
    async def start_job(request: Request, form: FormData) -> Response:
        name = request.path_params["name"]
        if name == "verify":
            job_id = await run_in_threadpool(inspector.start_verify)
        elif name == "consolidate":
            job_id = await run_in_threadpool(
                inspector.start_consolidate, form.get("dry_run") == "1"
            )
        else:
            raise NotFoundError(f"no job {name!r}")
        return RedirectResponse(f"/jobs/{quote(job_id, safe='')}", status_code=303)

    return [
        Route("/erase", erase_confirm),
        Route(
            "/action/{verb:str}",
            _dispatch(
                pin=pin,
                unpin=pin,
                archive=archive,
                restore=archive,
                forget=forget,
                undo=undo,
                erase=erase,
                grant=grant,
                revoke=grant,
            ),
            methods=["POST"],
        ),
        Route("/jobs/start/{name}", start_job, methods=["POST"]),
        Route("/scope", switch_scope, methods=["POST"]),
    ]


def _dispatch(**verbs: Handler) -> Handler:
    async def route(request: Request) -> Response:
        handler = verbs.get(request.path_params["verb"])
        if handler is None:
            raise HTTPException(404, "no such action")
        return await handler(request)

    return route


__all__ = ["ERASE_WORD", "action_routes"]
