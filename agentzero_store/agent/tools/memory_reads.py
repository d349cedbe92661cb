"""The reading agent tools over ``AgentMemory``: ``memory_recall`` and ``memory_list``."""

from __future__ import annotations

from typing import Any

from ...agentmem import AgentMemory
from ...base.errors import InvalidArgumentError
from ...base.modes import search_mode
from ...memory.records import KINDS, parse_datetime
from .base import Arg, Result, mode_arg
from .memory_scopes import (
    MemoryScopes,
    ScopedTool,
    about_arg,
    as_scopes,
    hit_json,
    memory_json,
    types_arg,
)

RECALL_DESCRIPTION = (
    "Search this agent's long-term memory: earlier conversation turns, facts and notes, "
    "and procedures (what worked before). Call it before answering whenever the user "
    "refers to something said earlier ('what did I tell you about my sister?'), to their "
    "preferences, to facts about them or their work, or to a past decision. Results come "
    "best first, each with id, type, content, created_at, confidence, score and its rank "
    "per search signal; use an id with memory_feedback, memory_archive or memory_forget. "
    "mode 'auto' (the default; keyword alone without an embedder) combines meaning, exact "
    "words, neighbouring turns, named entities and memory type; 'keyword' finds exact "
    "words (names, codes); 'semantic' matches meaning only. Narrow with types (e.g. "
    '["semantic"] for facts only) or about (e.g. ["Ana"]); as_of (ISO 8601, e.g. '
    "2025-06-01T00:00:00Z) shows what was believed then."
)
LIST_DESCRIPTION = (
    "List this agent's memories newest first, without a query (to browse, or to review "
    "what was saved in a conversation). Filter by types, conversation_id or kind (how it "
    "came to be remembered: granted = given by the user or the host). Archived memories "
    "only with archived='include' or 'only'. Page with limit and offset: the answer's "
    "next_offset is the offset of the next page (null on the last one). Use memory_recall "
    "instead to search."
)


class AgentRecallTool(ScopedTool):
    """``memory_recall`` over ``AgentMemory.recall`` (multi-signal, mode ``auto``)."""

    def __init__(
        self,
        memory: AgentMemory | MemoryScopes,
        *,
        name: str = "memory_recall",
        max_limit: int = 50,
    ) -> None:
        scopes = as_scopes(memory)
        super().__init__(
            scopes,
            name,
            Arg(
                "query",
                "string",
                "What to look for, in plain words.",
                required=True,
                max_length=4_096,
            ),
            Arg(
                "limit",
                "integer",
                "How many memories to return, best first.",
                default=5,
                minimum=1,
                maximum=max_limit,
            ),
            mode_arg(scopes.embedder_id is not None, "every signal fused"),
            types_arg("memories"),
            about_arg("the memories must be about (any of them)"),
            Arg(
                "as_of",
                "string",
                "See memory as it was at this time (ISO 8601 with a timezone, e.g. "
                "2025-06-01T12:00:00+00:00): facts believed then, memories made by then.",
                max_length=64,
            ),
            Arg(
                "include_archived",
                "boolean",
                "Also search archived (faded or put-away) memories.",
                default=False,
            ),
            Arg(
                "explain",
                "boolean",
                "Add each hit's rank, weight and score share per signal.",
                default=False,
            ),
        )
        self.description = RECALL_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        as_of = None
        if a["as_of"] is not None:
            try:
                as_of = parse_datetime(a["as_of"])
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(
                    f"as_of: {exc.message}",
                    hint="as_of is ISO 8601 with a timezone, e.g. 2025-06-01T12:00:00+00:00",
                ) from None
        hits = self.memory(a).recall(
            a["query"],
            a["limit"],
            mode=a["mode"],
            types=a["types"],
            about=a["about"],
            as_of=as_of,
            include_archived=a["include_archived"],
            explain=a["explain"],
        )
        mode = search_mode(a["mode"])
        if self.scopes.embedder_id is None:
            mode = "keyword"  # what auto is without an embedder (the mode that ran)
        return {
            "results": [hit_json(h) for h in hits],
            "mode": mode,
            "embedder": self.scopes.embedder_id if mode != "keyword" else None,
        }


class AgentListTool(ScopedTool):
    """``memory_list`` over ``AgentMemory.memories`` (newest first, in pages)."""

    def __init__(
        self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_list", max_limit: int = 100
    ) -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "limit",
                "integer",
                "How many memories per page.",
                default=20,
                minimum=1,
                maximum=max_limit,
            ),
            Arg(
                "offset",
                "integer",
                "Skip this many (the next_offset of the previous page).",
                default=0,
                minimum=0,
                maximum=2**53,
            ),
            types_arg("memories"),
            Arg("conversation_id", "string", "Only memories of this conversation.", max_length=256),
            Arg(
                "kind",
                "string",
                "Only memories of this kind: granted (given by the user or host), recalled, "
                "self_noted or archived.",
                enum=KINDS,
            ),
            Arg(
                "archived",
                "string",
                "exclude archived memories (default), include them, or list only them.",
                default="exclude",
                enum=("exclude", "include", "only"),
            ),
        )
        self.description = LIST_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        found = self.memory(a).memories(
            kind=a["kind"],
            types=a["types"],
            conversation_id=a["conversation_id"],
            archived=a["archived"],
            limit=a["limit"],
            offset=a["offset"],
        )
        more = len(found) == a["limit"]
        return {
            "memories": [memory_json(m) for m in found],
            "offset": a["offset"],
            "next_offset": a["offset"] + len(found) if more else None,
        }


CONTEXT_DESCRIPTION = (
    "Load what to keep in mind for the next turn of a conversation, in one call, within a "
    "token budget: pinned memories, the agent's core facts, the latest turns, a summary of "
    "earlier turns and (with query) memories recalled for it; each memory once, highest "
    "priority first. Call it at the start of a turn (e.g. conversation_id='support-42', "
    "query=the user's message, max_tokens=1500) and put the returned text in your "
    "context. Use memory_recall instead to search for something specific."
)


class AgentContextTool(ScopedTool):
    """``memory_context`` over ``AgentMemory.context`` (a ``ContextPack``)."""

    def __init__(
        self,
        memory: AgentMemory | MemoryScopes,
        *,
        name: str = "memory_context",
        max_tokens: int = 32_000,
    ) -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "conversation_id",
                "string",
                "The conversation whose next turn this is.",
                required=True,
                max_length=256,
            ),
            Arg(
                "query",
                "string",
                "Also recall memories for this (the user's message).",
                max_length=4_000,
            ),
            Arg(
                "max_tokens",
                "integer",
                "The pack's budget in tokens (the embedder's tokenizer, else an estimate).",
                default=2_000,
                minimum=0,
                maximum=max_tokens,
            ),
        )
        self.description = CONTEXT_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        pack = self.memory(a).context(
            a["conversation_id"], query=a["query"], max_tokens=a["max_tokens"]
        )
        return pack.to_dict()


__all__ = ["AgentContextTool", "AgentListTool", "AgentRecallTool"]
