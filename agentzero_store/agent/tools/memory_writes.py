"""The writing agent tools over ``AgentMemory``: grant, remember, fact, feedback,
archive, forget (soft, with an undo token) and undo.

Every one is marked ``writes``: a host (the MCP server) takes the data dir's writer role
around each call.
"""

from __future__ import annotations

from typing import Any

from ...agentmem import AgentMemory
from ...base.limits import MAX_TTL_SECONDS
from .base import Arg, Result, require_one
from .memory_scopes import MemoryScopes, ScopedTool, about_arg, memory_json

MAX_NOTE_CHARS = 32_000

GRANT_DESCRIPTION = (
    "Remember something the user told you or explicitly asked you to keep: a preference, "
    "a fact about them or the people and things in their life, a standing instruction. "
    "Use it when the user says e.g. 'remember that I'm vegetarian', 'my sister is called "
    "Ana', 'always answer in French'. Write one short, self-contained statement in the "
    "third person or as the user said it ('The user is vegetarian'), and name who or "
    "what it is about in about. Saving the same text again changes nothing (status "
    "'duplicate'). Returns {id, status}."
)
REMEMBER_DESCRIPTION = (
    "Save a note you decided is worth keeping, with its type: semantic (a fact or "
    "conclusion, the default), episodic (something that happened) or procedural (how to "
    "do something, what worked). Give confidence below 1 for a guess, ttl_seconds for "
    "something that stops mattering (e.g. 86400 for 'the user is travelling today'). "
    "Use memory_grant instead for what the user asked you to remember, and memory_fact "
    "for a subject-predicate-object fact that may change later. Returns {id, status}."
)
FACT_DESCRIPTION = (
    "Record a fact as subject, predicate, object, e.g. ('Ana', 'lives_in', 'Lisbon'). A "
    "new object for the same subject and predicate replaces the old one (it is kept in "
    "the history, marked superseded; the answer lists the ids it superseded), so use it "
    "for things that change: where someone lives or works, a current project, a "
    "preference. Set multi_valued=true when several objects hold at once (e.g. "
    "('Ana', 'speaks', 'Portuguese') and ('Ana', 'speaks', 'English')). Returns {id, "
    "status, superseded}."
)
FEEDBACK_DESCRIPTION = (
    "Say whether a memory you got from memory_recall was useful. used=true when it "
    "helped you answer: it becomes easier to recall and fades more slowly. used=false "
    "when it was off the point. Only this strengthens a memory; recalling does not. "
    "Returns the memory."
)
ARCHIVE_DESCRIPTION = (
    "Put a memory away: it stops showing up in memory_recall and memory_list unless "
    "archived ones are asked for, but nothing is lost (the user can restore it). Use it "
    "for memories that are outdated or no longer relevant but not wrong. To remove "
    "something the user wants gone, use memory_forget. Returns {id, archived} (false if "
    "it was archived already)."
)
FORGET_DESCRIPTION = (
    "Forget memories the user wants gone: one by id, a whole conversation "
    "(conversation_id), or everything about someone or something (about, e.g. 'Ana'). "
    "Give exactly one. They vanish from every search at once, but can be brought back "
    "with memory_undo and the returned token until recoverable_until (tell the user). "
    "Returns {token, count, recoverable_until, ids}."
)
UNDO_DESCRIPTION = (
    "Bring back what a memory_forget removed, given the token it returned, within its "
    "undo window: use it when the user changes their mind ('no wait, keep that') or a "
    "forget took more than they meant. Returns {restored}: how many memories came back."
)


class AgentGrantTool(ScopedTool):
    """``memory_grant``: ``AgentMemory.remember`` of a semantic memory (kind granted)."""

    writes = True

    def __init__(self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_grant") -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "content",
                "string",
                "The statement to remember, short and self-contained.",
                required=True,
                max_length=MAX_NOTE_CHARS,
            ),
            about_arg("it is about"),
        )
        self.description = GRANT_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        return self.memory(a).remember(a["content"], about=a["about"] or ()).to_dict()


class AgentRememberTool(ScopedTool):
    """``memory_remember``: ``AgentMemory.remember`` with a type, confidence and TTL."""

    writes = True

    def __init__(
        self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_remember"
    ) -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "content",
                "string",
                "The note, short and self-contained.",
                required=True,
                max_length=MAX_NOTE_CHARS,
            ),
            Arg(
                "type",
                "string",
                "semantic (a fact or conclusion), episodic (an event) or procedural (a how-to).",
                default="semantic",
                enum=("semantic", "episodic", "procedural"),
            ),
            about_arg("it is about"),
            Arg(
                "confidence",
                "number",
                "How sure you are, 0 to 1 (1: certain).",
                default=1.0,
                minimum=0,
                maximum=1,
            ),
            Arg(
                "ttl_seconds",
                "number",
                "Forget it automatically after this many seconds (e.g. 86400 for a day).",
                minimum=1,
                maximum=MAX_TTL_SECONDS,
            ),
        )
        self.description = REMEMBER_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        return (
            self.memory(a)
            .remember(
                a["content"],
                type=a["type"],
                about=a["about"] or (),
                confidence=a["confidence"],
                ttl=a["ttl_seconds"],
            )
            .to_dict()
        )


class AgentFactTool(ScopedTool):
    """``memory_fact``: ``AgentMemory.assert_fact`` (a new object supersedes the old)."""

    writes = True

    def __init__(self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_fact") -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "subject",
                "string",
                "Who or what it is about, e.g. Ana.",
                required=True,
                max_length=512,
            ),
            Arg(
                "predicate",
                "string",
                "The relation, e.g. lives_in, works_at, prefers.",
                required=True,
                max_length=256,
            ),
            Arg("object", "string", "The value, e.g. Lisbon.", required=True, max_length=2_048),
            Arg(
                "confidence",
                "number",
                "How sure you are, 0 to 1.",
                default=0.9,
                minimum=0,
                maximum=1,
            ),
            Arg(
                "multi_valued",
                "boolean",
                "true: several objects can hold at once (a new one replaces nothing).",
                default=False,
            ),
        )
        self.description = FACT_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        return (
            self.memory(a)
            .assert_fact(
                a["subject"],
                a["predicate"],
                a["object"],
                confidence=a["confidence"],
                single_valued=not a["multi_valued"],
            )
            .to_dict()
        )


class AgentFeedbackTool(ScopedTool):
    """``memory_feedback``: ``AgentMemory.feedback`` (only ``used`` strengthens)."""

    writes = True

    def __init__(
        self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_feedback"
    ) -> None:
        super().__init__(
            memory,
            name,
            Arg("id", "string", "The memory's id (from memory_recall).", required=True),
            Arg("used", "boolean", "true: it helped; false: it was off the point.", required=True),
        )
        self.description = FEEDBACK_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        return memory_json(self.memory(a).feedback(a["id"], used=a["used"]))


class AgentArchiveTool(ScopedTool):
    """``memory_archive``: ``AgentMemory.archive`` (soft; ``restore`` undoes it)."""

    writes = True

    def __init__(self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_archive") -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "id",
                "string",
                "The memory's id (from memory_recall or memory_list).",
                required=True,
            ),
        )
        self.description = ARCHIVE_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        return {"id": a["id"], "archived": self.memory(a).archive(a["id"])}


class AgentForgetTool(ScopedTool):
    """``memory_forget``: ``AgentMemory.forget`` (soft; the token undoes it)."""

    writes = True

    def __init__(self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_forget") -> None:
        super().__init__(
            memory,
            name,
            Arg("id", "string", "Forget this one memory (an id from memory_recall)."),
            Arg("conversation_id", "string", "Forget every memory of this conversation."),
            Arg("about", "string", "Forget everything about this person or thing, e.g. Ana."),
        )
        self.description = FORGET_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        require_one(self.name, a, ("id", "conversation_id", "about"))
        receipt = self.memory(a).forget(
            id=a["id"], conversation_id=a["conversation_id"], about=a["about"]
        )
        return receipt.to_dict()


class AgentUndoTool(ScopedTool):
    """``memory_undo``: ``AgentMemory.undo`` of a forget within its window."""

    writes = True

    def __init__(self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_undo") -> None:
        super().__init__(
            memory,
            name,
            Arg(
                "token",
                "string",
                "The token memory_forget returned.",
                required=True,
                max_length=256,
            ),
        )
        self.description = UNDO_DESCRIPTION

    def _run(self, a: dict[str, Any]) -> Result:
        return {"restored": self.memory(a).undo(a["token"])}


__all__ = [
    "AgentArchiveTool",
    "AgentFactTool",
    "AgentFeedbackTool",
    "AgentForgetTool",
    "AgentGrantTool",
    "AgentRememberTool",
    "AgentUndoTool",
]
