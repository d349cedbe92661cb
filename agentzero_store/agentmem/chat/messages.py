"""The messages of a chat history: the ``ChatMessage`` and ``Removal`` records, how a
message given to ``add_message`` is checked and copied, and which messages a limit
drops first (``droppable``). No store here: ``chat.ChatHistory`` does the storing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from ...base.errors import InvalidArgumentError
from ...base.limits import check_text, metadata_json
from ..records import Memory

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = get_args(Role)
SYSTEM_ROLES = ("system", "developer")  # the prompts ``keep_system`` keeps
Strategy = Literal["oldest_first", "keep_system"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)


@dataclass(frozen=True)
class ChatMessage:
    """One message of a chat history, as stored (a copy: changing it changes nothing).

    ``extra``: the other fields of the message dict it was added with (``name``,
    ``tool_call_id``, ...). ``summary``: written by ``SummarizingChat`` in place of
    ``summarized`` earlier messages.
    """

    id: str
    role: str
    content: str
    created_at: datetime
    extra: Mapping[str, Any] = field(default_factory=dict)
    summary: bool = False
    summarized: int = 0

    @property
    def is_system_prompt(self) -> bool:
        """A system (or developer) prompt: what ``keep_system`` keeps. Summaries are
        system messages too, but not prompts: a later summary folds them in."""
        return self.role in SYSTEM_ROLES and not self.summary

    def as_message(self) -> dict[str, Any]:
        """The message for an LLM API: ``{"role", "content", **extra}`` (a new dict)."""
        return {"role": self.role, "content": self.content, **_copy(self.extra)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "id": self.id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "extra": _copy(self.extra),
            "summary": self.summary,
            "summarized": self.summarized,
        }


@dataclass(frozen=True)
class Removal:
    """What a ``clear``, ``prune`` or ``remove`` took out of the history: the memory ids,
    the undo tokens of the soft forgets (``AgentMemory.undo``; none when erased), and,
    for an erase, whether old pages still wait for a reader (see ``EraseReport``)."""

    ids: tuple[str, ...] = ()
    undo_tokens: tuple[str, ...] = ()
    erased: bool = False
    pending: bool = False

    @property
    def count(self) -> int:
        """How many memories were removed."""
        return len(self.ids)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "count": self.count,
            "ids": list(self.ids),
            "undo_tokens": list(self.undo_tokens),
            "erased": self.erased,
            "pending": self.pending,
        }


# ---------------------------------------------------------------------- choosing
def droppable(messages: Sequence[ChatMessage], strategy: Strategy) -> list[ChatMessage]:
    """The messages in the order they may go: oldest first, never the newest; with
    ``keep_system``, every other message before the first system prompt."""
    if strategy not in STRATEGIES:
        raise InvalidArgumentError(
            f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}"
        )
    body = list(messages[:-1])
    if strategy == "oldest_first":
        return body
    return [m for m in body if not m.is_system_prompt] + [m for m in body if m.is_system_prompt]


def choose_by_tokens(
    messages: Sequence[ChatMessage],
    counts: Sequence[int],
    max_tokens: int,
    strategy: Strategy = "keep_system",
) -> list[ChatMessage]:
    """Which messages to drop so the rest fit in ``max_tokens`` (see ``droppable``)."""
    size = {m.id: c for m, c in zip(messages, counts, strict=True)}
    total = sum(counts)
    drop: list[ChatMessage] = []
    for m in droppable(messages, strategy):
        if total <= max_tokens:
            break
        drop.append(m)
        total -= size[m.id]
    return drop


def choose_by_count(
    messages: Sequence[ChatMessage], max_messages: int, strategy: Strategy = "keep_system"
) -> list[ChatMessage]:
    """Which messages to drop so at most ``max_messages`` stay (see ``droppable``)."""
    excess = len(messages) - max_messages
    return droppable(messages, strategy)[:excess] if excess > 0 else []


# ---------------------------------------------------------------------- messages
def parse_message(
    message: str | Mapping[str, Any], content: str | None
) -> tuple[str, str, dict[str, Any]]:
    """(role, content, extra) of ``add_message``'s arguments, validated; ``extra`` is a
    deep copy (JSON round trip), so the caller's dict is never stored or changed."""
    if isinstance(message, Mapping):
        if content is not None:
            raise InvalidArgumentError(
                "give add_message a message dict, or a role and content, not both"
            )
        missing = [k for k in ("role", "content") if k not in message]
        if missing:
            raise InvalidArgumentError(
                f"a message dict needs {' and '.join(repr(k) for k in missing)}",
                hint='{"role": "user", "content": "..."}',
            )
        bad_keys = [k for k in message if not isinstance(k, str)]
        if bad_keys:
            raise InvalidArgumentError(
                f"message keys must be strings, got a {type(bad_keys[0]).__name__}"
            )
        role, text = message["role"], message["content"]
        rest = {k: v for k, v in message.items() if k not in ("role", "content")}
        extra: dict[str, Any] = json.loads(metadata_json(rest, "message")) if rest else {}
    elif isinstance(message, str):
        if content is None:
            raise InvalidArgumentError(
                "add_message(role, content): the content is missing",
                hint='add_message("user", "...") or add_message({"role": ..., "content": ...})',
            )
        role, text, extra = message, content, {}
    else:
        raise InvalidArgumentError(
            f"a message is a dict with role and content, or add_message(role, content); "
            f"got a {type(message).__name__}"
        )
    if not isinstance(role, str) or role not in ROLES:
        shown = repr(role)[:40] if isinstance(role, str) else f"a {type(role).__name__}"
        raise InvalidArgumentError(f"role must be one of {', '.join(ROLES)}; got {shown}")
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"content must be a string, got a {type(text).__name__}",
            hint="multi-part content (a list of parts) is not supported: send its text",
        )
    if not text.strip():
        raise InvalidArgumentError("content must not be blank")
    check_text("content", text)
    return role, text, extra


def _copy(value: Mapping[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(value))
    return copied


def message_of(
    mid: str, role: str, text: str, at: datetime, metadata: Mapping[str, Any]
) -> ChatMessage:
    """The chat message of a stored turn; ``metadata["chat"]`` holds its extra fields or,
    for a summary, how many messages it replaced."""
    chat = metadata.get("chat")
    chat = chat if isinstance(chat, Mapping) else {}
    extra = chat.get("extra")
    count = chat.get("summary")
    return ChatMessage(
        id=mid,
        role=role,
        content=text,
        created_at=at,
        extra=_copy(extra) if isinstance(extra, Mapping) else {},
        summary=isinstance(count, int),
        summarized=count if isinstance(count, int) else 0,
    )


def from_memory(m: Memory) -> ChatMessage:
    """The chat message of an episodic memory (its metadata says extra or summary)."""
    # m is a fresh record built from the database: its metadata is nobody else's.
    return message_of(m.id, m.role, m.content, m.created_at, m.metadata)


__all__ = [
    "ROLES",
    "STRATEGIES",
    "SYSTEM_ROLES",
    "ChatMessage",
    "Removal",
    "Role",
    "Strategy",
    "choose_by_count",
    "choose_by_tokens",
    "droppable",
    "from_memory",
    "message_of",
    "parse_message",
]
