"""Agent tools over conversation memory: recall, append, forget.

``SemanticRecallTool`` is the one most agent loops want: hand its ``definition()`` to the
model, pass the model's arguments to ``run`` and give the JSON result back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ...base.limits import MAX_TTL_SECONDS, expires_after
from ...memory.records import KINDS, MemoryEntry, MemoryHit, Source
from ...memory.seam import MemoryStore
from .base import AgentTool, Arg, Result, require_one, scope_args, search_args, search_result

RECALL_DESCRIPTION = (
    "Search this agent's long-term memory of earlier conversations and notes. "
    "Use it before answering when the user refers to something said before, to their "
    "preferences or facts about them, or to past decisions. Returns the best-matching "
    "memories, best first, each with its id, role, content, created_at, score and the "
    "rank it got from each search signal. mode: 'auto' (the default: hybrid when an "
    "embedder is configured, else keyword), 'semantic' (by meaning), 'keyword' (exact "
    "words, BM25) or 'hybrid' (both, fused; best for names and rare terms)."
)
APPEND_DESCRIPTION = (
    "Save one memory (a fact, preference, decision or message worth recalling later) to "
    "this agent's encrypted long-term memory. Keep each memory short and self-contained. "
    "Returns the new memory's id."
)
FORGET_DESCRIPTION = (
    "Delete memories: one by id, a whole conversation (conversation_id), or everything in "
    "this tool's scope (all_in_scope=true). Deleted content is overwritten on disk. "
    "Returns how many memories were deleted."
)


def hit_json(hit: MemoryHit) -> Result:
    """One recall hit as the tool returns it."""
    e = hit.entry
    return {
        "id": hit.id,
        "role": e.role,
        "content": e.content,
        "created_at": e.created_at.isoformat() if e.created_at else None,
        "conversation_id": e.conversation_id,
        "score": hit.score,
        "ranks": dict(hit.ranks),
    }


class SemanticRecallTool(AgentTool):
    """Recall memories by meaning, keywords or both, within a (possibly pinned) scope.

    Input ``{"query": str, "limit": int = 5, "mode": "auto"|"semantic"|"hybrid"|"keyword",
    "org_id"?, "agent_id"?, "conversation_id"?}``; output ``{"results": [...], "mode",
    "embedder"}``. With ``org_id``/``agent_id`` given here, calls can only read that
    tenant: another value raises ``ScopeViolationError``.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        name: str = "memory_recall",
        max_limit: int = 50,
    ) -> None:
        self.store = store
        self.name = name
        self.description = RECALL_DESCRIPTION
        self.args = (
            *search_args("memories", max_limit, store.embedder is not None, "hybrid here"),
            *scope_args(org_id, agent_id),
        )

    def _run(self, a: dict[str, Any]) -> Result:
        hits = self.store.recall(
            a["query"],
            a["limit"],
            mode=a["mode"],
            org_id=a["org_id"],
            agent_id=a["agent_id"],
            conversation_id=a["conversation_id"],
        )
        return search_result([hit_json(h) for h in hits], a["mode"], self.store.embedder)


class MemoryAppendTool(AgentTool):
    """Append one memory in the tool's scope; embedded when the store has an embedder."""

    writes = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        name: str = "memory_append",
        source: Source = "tool",
        max_chars: int = 32_000,
    ) -> None:
        self.store = store
        self.name = name
        self.source: Source = source
        self.description = APPEND_DESCRIPTION
        self.args = (
            Arg("content", "string", "The text to remember.", required=True, max_length=max_chars),
            Arg(
                "role",
                "string",
                "Who said it: user, assistant, system or tool.",
                default="user",
                max_length=64,
            ),
            Arg(
                "conversation_id",
                "string",
                "The conversation it belongs to.",
                default="default",
                max_length=256,
            ),
            Arg(
                "kind",
                "string",
                "granted (told by the user), recalled, self_noted or archived.",
                default="granted",
                enum=KINDS,
            ),
            Arg("metadata", "object", "Free-form JSON object stored with the memory."),
            Arg(
                "expires_in_seconds",
                "number",
                "Forget it automatically after this many seconds (at most 100 years).",
                minimum=1,
                maximum=MAX_TTL_SECONDS,
            ),
            *scope_args(org_id, agent_id, conversation=False),
        )

    def _run(self, a: dict[str, Any]) -> Result:
        ttl = a["expires_in_seconds"]
        entry = MemoryEntry(
            content=a["content"],
            role=a["role"],
            conversation_id=a["conversation_id"],
            org_id=a["org_id"] or "default",
            agent_id=a["agent_id"] or "default",
            kind=a["kind"],
            source=self.source,
            metadata=a["metadata"] or {},
            expires_at=expires_after(ttl, datetime.now(UTC), "expires_in_seconds") if ttl else None,
        )
        return {"id": self.store.append(entry)}


class MemoryForgetTool(AgentTool):
    """Delete memories by id, by conversation, or all in scope; never outside the scope."""

    writes = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        name: str = "memory_forget",
    ) -> None:
        self.store = store
        self.name = name
        self.description = FORGET_DESCRIPTION
        self.args = (
            Arg("id", "string", "Delete this one memory (an id from memory_recall)."),
            Arg("conversation_id", "string", "Delete every memory of this conversation."),
            Arg("all_in_scope", "boolean", "Delete every memory this tool can see."),
            *scope_args(org_id, agent_id, conversation=False),
        )

    def _run(self, a: dict[str, Any]) -> Result:
        require_one(self.name, a, ("id", "conversation_id", "all_in_scope"))
        if a["id"] is not None:
            entry = self.store.get(a["id"])
            # Out of scope looks exactly like "not found": a caller learns nothing about
            # other tenants' ids.
            in_scope = entry is not None and all(
                a[f] is None or getattr(entry, f) == a[f]
                for f in ("org_id", "agent_id", "conversation_id")
            )
            return {"deleted": int(in_scope and self.store.delete(a["id"]))}
        n = self.store.forget(
            org_id=a["org_id"], agent_id=a["agent_id"], conversation_id=a["conversation_id"]
        )
        return {"deleted": n}
