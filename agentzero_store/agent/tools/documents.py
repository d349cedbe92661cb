"""Agent tools over the document store: query, ingest, delete.

The engine never imports ``rag``: these tools take any object shaped like
``rag.DocumentStore`` (the ``Documents`` protocol), built by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...base.modes import Mode
from ...embed.vectors import Embedder
from .base import AgentTool, Arg, Result, search_args, search_result

DocMode = Mode

QUERY_DESCRIPTION = (
    "Search the user's ingested documents (notes, files, manuals). Returns the best "
    "documents, best first, each with its id, title, the best-matching passage (text, with "
    "start/end character offsets), score and per-signal ranks. mode: 'auto' (the "
    "default: hybrid when an embedder is configured, else keyword), 'keyword' (exact "
    "words, BM25), 'semantic' (meaning) or 'hybrid' (both, fused)."
)
INGEST_DESCRIPTION = (
    "Store a document (or replace the document with the same id) in the encrypted "
    "document store, so rag_query can find it. Re-sending identical content is a no-op."
)
DELETE_DESCRIPTION = "Delete a document by id. Returns whether it existed."


class JsonReady(Protocol):
    """A result with a ``to_dict`` (``DocumentHit``, ``IngestResult``)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        ...


class Documents(Protocol):
    """What the document tools need of ``rag.DocumentStore``."""

    @property
    def embedder(self) -> Embedder | None:
        """The embedder for semantic and hybrid queries, or None."""
        ...

    def query(self, text: str, limit: int = 5, mode: DocMode = "auto") -> Sequence[JsonReady]:
        """The best documents for ``text``."""
        ...

    def ingest(
        self,
        doc_id: str,
        text: str,
        *,
        title: str | None = None,
        source_path: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> JsonReady:
        """Store a document, replacing an earlier version."""
        ...

    def delete(self, doc_id: str) -> bool:
        """Delete a document; True if it existed."""
        ...


class RagQueryTool(AgentTool):
    """Query the document store: ``{"query": str, "limit": int = 5, "mode": ...}``.

    The default mode is ``auto``: ``hybrid`` when the store has an embedder, else
    ``keyword`` (then the only other mode offered).
    """

    def __init__(self, store: Documents, *, name: str = "rag_query", max_limit: int = 20):
        self.store = store
        self.name = name
        self.description = QUERY_DESCRIPTION
        semantic = store.embedder is not None
        self.args = search_args("documents", max_limit, semantic, "hybrid here")

    def _run(self, a: dict[str, Any]) -> Result:
        hits = self.store.query(a["query"], a["limit"], a["mode"])
        return search_result([h.to_dict() for h in hits], a["mode"], self.store.embedder)


class RagIngestTool(AgentTool):
    """Ingest one document: ``{"id": str, "text": str, "title"?, "metadata"?}``."""

    writes = True

    def __init__(self, store: Documents, *, name: str = "rag_ingest", max_chars: int = 2_000_000):
        self.store = store
        self.name = name
        self.description = INGEST_DESCRIPTION
        self.args = (
            Arg(
                "id",
                "string",
                "The document's id (re-using one replaces it).",
                required=True,
                max_length=512,
            ),
            Arg("text", "string", "The document's full text.", required=True, max_length=max_chars),
            Arg("title", "string", "A title (searched with the text).", max_length=1_024),
            Arg("metadata", "object", "Free-form JSON object stored with the document."),
        )

    def _run(self, a: dict[str, Any]) -> Result:
        result = self.store.ingest(a["id"], a["text"], title=a["title"], metadata=a["metadata"])
        return result.to_dict()


class RagDeleteTool(AgentTool):
    """Delete one document: ``{"id": str}`` → ``{"deleted": bool}``."""

    writes = True

    def __init__(self, store: Documents, *, name: str = "rag_delete"):
        self.store = store
        self.name = name
        self.description = DELETE_DESCRIPTION
        self.args = (Arg("id", "string", "The document's id.", required=True),)

    def _run(self, a: dict[str, Any]) -> Result:
        return {"id": a["id"], "deleted": self.store.delete(a["id"])}
