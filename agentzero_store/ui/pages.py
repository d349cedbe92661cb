"""The inspector's pages: GET routes that read (timeline, search, a memory, facts, the
decay list, an entity's graph, namespaces, documents, the health page and its jobs)."""

from __future__ import annotations

import re
from datetime import datetime

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from ..agentmem.memory import Archived
from ..agentmem.records import MEMORY_TYPES
from ..base.errors import InvalidArgumentError, NotFoundError
from ..memory.records import KINDS, parse_datetime
from .actions import ERASE_WORD
from .inspector import MODES, Inspector
from .render import Render


def page_routes(inspector: Inspector, page: Render) -> list[Route]:
    """The routes of the pages, in the order they are matched."""

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

    return [
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
    ]


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


__all__ = ["page_routes"]
