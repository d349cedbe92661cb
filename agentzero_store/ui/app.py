"""The inspector's routes: server-rendered pages (Jinja2, autoescaped) and POST forms.

Reads are GET pages; every change is a POST form carrying the CSRF token, answered by a
redirect (post/redirect/get). The store's errors become a page with the message and
its hint, never a traceback. Nothing is loaded from another origin: the one stylesheet
and the one script (job polling) are served from this package.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..agentmem.memory import Archived
from ..agentmem.records import MEMORY_TYPES
from ..base.errors import (
    AccessDeniedError,
    AgentZeroStoreError,
    InvalidArgumentError,
    NotFoundError,
)
from ..memory.records import KINDS, parse_datetime
from .inspector import MODES, Inspector, Selector
from .security import Gate, Secrets

Handler = Callable[[Request], Awaitable[Response]]
ERASE_WORD = "ERASE"  # the second confirmation: typed by hand


def _environment() -> jinja2.Environment:
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


def create_app(inspector: Inspector, keys: Secrets) -> Gate:
    """The ASGI app: the routes behind the gate (host, cookie, headers)."""
    env = _environment()

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

    # -------------------------------------------------------------- pages
    def timeline(request: Request) -> HTMLResponse:
        q = request.query_params
        type_ = q.get("type") or None
        kind = q.get("kind") or None
        conversation = q.get("conversation") or None
        archived = q.get("archived") or "exclude"
        if archived not in ("exclude", "include", "only"):
            raise InvalidArgumentError("archived must be exclude, include or only")
        if kind == "archived" and archived == "exclude":
            archived = "only"  # kind "archived" without the archived ones: always empty
        page_no = _int(q.get("page"), 0)
        which: Archived = archived  # type: ignore[assignment]
        memories, more = inspector.timeline(
            type_=type_, kind=kind, conversation=conversation, archived=which, page=page_no
        )
        pinned, core = inspector.marks()
        filters = {"type": type_, "kind": kind, "conversation": conversation, "archived": archived}
        return page(
            request,
            "timeline.html",
            memories=memories,
            more=more,
            page_no=page_no,
            filters=filters,
            types=MEMORY_TYPES,
            kinds=KINDS,
            pinned=pinned,
            core=core,
        )

    def search(request: Request) -> HTMLResponse:
        q = request.query_params
        query = q.get("q", "").strip()
        mode = q.get("mode") or ""
        k = _int(q.get("k"), 10)
        type_ = q.get("type") or None
        include_archived = q.get("include_archived") == "1"
        hits = (
            inspector.search(query, mode=mode, k=k, type_=type_, include_archived=include_archived)
            if query
            else []
        )
        return page(
            request,
            "search.html",
            query=query,
            mode=mode,
            k=k,
            type_=type_,
            include_archived=include_archived,
            hits=hits,
            modes=MODES,
            types=MEMORY_TYPES,
        )

    def memory(request: Request) -> HTMLResponse:
        view = inspector.memory(request.path_params["memory_id"])
        return page(request, "memory.html", v=view, m=view.memory, erase_word=ERASE_WORD)

    def facts(request: Request) -> HTMLResponse:
        q = request.query_params
        subject = q.get("subject") or None
        predicate = q.get("predicate") or None
        as_of_text = q.get("as_of") or None
        as_of = _as_of(as_of_text)
        believed, chains = inspector.facts(subject, predicate, as_of)
        return page(
            request,
            "facts.html",
            believed=believed,
            chains=chains,
            subject=subject or "",
            predicate=predicate or "",
            as_of=as_of_text or "",
        )

    def fact(request: Request) -> HTMLResponse:
        fid = request.path_params["fact_id"]
        entries = inspector.fact_history(fid)
        believed, chains = inspector.facts(None, None, None)
        chain = next((c for c in chains if any(f.id == fid for f in c.versions)), None)
        if chain is None:
            raise NotFoundError(f"no fact {fid!r} in this scope")
        sources = inspector.sources([f.id for f in chain.versions])
        return page(request, "fact.html", chain=chain, entries=entries, fid=fid, sources=sources)

    def entity_graph(request: Request) -> HTMLResponse:
        entity = request.query_params.get("entity", "").strip()
        if not entity:
            raise InvalidArgumentError("name an entity: /graph?entity=NAME")
        g, drawn, more = inspector.entity_graph(entity)
        return page(request, "graph.html", g=g, entity=entity, drawn=drawn, more=more)

    def decay(request: Request) -> HTMLResponse:
        page_no = _int(request.query_params.get("page"), 0)
        rows, more = inspector.decay(page_no)
        return page(request, "decay.html", rows=rows, more=more, page_no=page_no)

    def namespaces(request: Request) -> HTMLResponse:
        return page(request, "namespaces.html", spaces=inspector.namespaces())

    def documents(request: Request) -> HTMLResponse:
        q = request.query_params
        query = q.get("q", "").strip()
        mode = q.get("mode") or "auto"
        hits = inspector.search_documents(query, mode, _int(q.get("k"), 10)) if query else []
        return page(request, "documents.html", query=query, mode=mode, modes=MODES, hits=hits)

    def document(request: Request) -> HTMLResponse:
        doc = inspector.document(request.path_params["doc_id"])
        q = request.query_params
        start, end = _int(q.get("start"), 0), _int(q.get("end"), 0)
        start, end = max(0, min(start, len(doc.text))), max(0, min(end, len(doc.text)))
        parts = (doc.text[:start], doc.text[start:end], doc.text[end:]) if end > start else None
        return page(request, "document.html", doc=doc, parts=parts)

    def health(request: Request) -> HTMLResponse:
        return page(
            request,
            "health.html",
            indexes=inspector.index_status(),
            backup=inspector.last_backup(),
            jobs=inspector.jobs.all(),
            can_verify=inspector.settings.verify is not None,
        )

    def job(request: Request) -> HTMLResponse:
        found = inspector.jobs.get(request.path_params["job_id"])
        if found is None:
            raise NotFoundError("no such job (jobs live as long as this server)")
        return page(request, "job.html", job=found)

    def job_json(request: Request) -> JSONResponse:
        found = inspector.jobs.get(request.path_params["job_id"])
        if found is None:
            return JSONResponse({"error": "not_found"}, status_code=404)
        return JSONResponse(found.to_dict())

    # -------------------------------------------------------------- actions
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
        Route("/", timeline),
        Route("/search", search),
        Route("/memory/{memory_id:path}", memory),
        Route("/facts", facts),
        Route("/facts/{fact_id:path}", fact),
        Route("/decay", decay),
        Route("/graph", entity_graph),
        Route("/namespaces", namespaces),
        Route("/documents", documents),
        Route("/documents/{doc_id:path}", document),
        Route("/health", health),
        Route("/jobs/{job_id}.json", job_json),  # before the page's route, which would match
        Route("/jobs/{job_id}", job),
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
        Mount("/static", static, name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={AgentZeroStoreError: store_error, HTTPException: http_error},
    )
    return Gate(app, keys)


def _dispatch(**verbs: Handler) -> Handler:
    async def route(request: Request) -> Response:
        handler = verbs.get(request.path_params["verb"])
        if handler is None:
            raise HTTPException(404, "no such action")
        return await handler(request)

    return route


def _int(text: str | None, default: int) -> int:
    try:
        return max(0, int(text)) if text else default
    except ValueError:
        raise InvalidArgumentError(f"not a whole number: {text!r}") from None


def _as_of(text: str | None) -> datetime | None:
    if not text:
        return None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):  # a date picker's value: the day's end
        text += "T23:59:59+00:00"
    try:
        return parse_datetime(text)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(
            f"as of: {exc.message}", hint="e.g. 2025-06-01T12:00:00+00:00"
        ) from None


__all__ = ["ERASE_WORD", "create_app"]
