"""LangChain messages as ``ChatHistory`` messages, and back, losslessly.

A message is stored as one chat message: its role (``human`` is ``user``, ``ai`` is
``assistant`` ...), its text (what recall finds: the content, or for list content its
text parts, or for a tool-calling AI message with no text the calls), and in ``extra``
the whole message as LangChain serialises it (``message_to_dict``: type, content,
``additional_kwargs``, ``response_metadata``, tool calls, name, id, usage), as JSON text.
A string content is kept once, as the stored text, and put back on reading, so a long
message costs no second copy and fits however long it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    message_to_dict,
    messages_from_dict,
)

from ...agentmem import ChatMessage as StoredMessage
from ...agentmem.chat.messages import ROLES
from ...base.errors import CorruptStoreError, InvalidArgumentError
from ...base.limits import MAX_METADATA_BYTES

KEY = "langchain"  # the stored message's extra field that holds the LangChain message
_ROLE = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
}
_HINT = (
    "LangChain messages are stored as JSON: additional_kwargs, response_metadata and "
    "list content must hold JSON values only (str, numbers, booleans, None, lists, dicts)"
)


def _base_type(message: BaseMessage) -> str:
    kind = message.type
    return kind[: -len("MessageChunk")].lower() if kind.endswith("MessageChunk") else kind


def role_of(message: BaseMessage) -> str:
    """The chat role a message is stored under."""
    kind = _base_type(message)
    if kind == "chat":
        role = getattr(message, "role", None)
        return role if isinstance(role, str) and role in ROLES else "user"
    return _ROLE.get(kind, "user")


def text_of(message: BaseMessage) -> str:
    """What recall should find of a message (never blank: stored text must not be)."""
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        parts = [p if isinstance(p, str) else p.get("text") for p in content]
        text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    if not text.strip():
        calls = getattr(message, "tool_calls", None) or []
        text = "\n".join(f"{c['name']}({json.dumps(c.get('args', {}))})" for c in calls)
    if not text.strip():
        text = f"[{message.type} message]"
    return text.encode("utf-8", "replace").decode("utf-8")


def to_stored(message: Any) -> dict[str, Any]:
    """The ``ChatHistory.add_message`` dict that stores ``message``."""
    if not isinstance(message, BaseMessage):
        raise InvalidArgumentError(
            f"a chat history stores LangChain messages, got {type(message).__name__}",
            hint="HumanMessage('...'), AIMessage('...'), or add_user_message('...')",
        )
    text = text_of(message)
    whole = message_to_dict(message)
    data = whole["data"]
    if isinstance(data.get("content"), str) and data["content"] == text:
        del data["content"]  # kept once: it is the stored text
    try:
        raw = json.dumps(whole, ensure_ascii=False, allow_nan=False)
        raw.encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"a message is not JSON: {exc}", hint=_HINT) from None
    size = len(json.dumps(raw, ensure_ascii=False).encode("utf-8", "replace"))
    if size > MAX_METADATA_BYTES - 1024:  # the rest of the stored metadata: far less
        raise InvalidArgumentError(
            f"a {message.type} message's fields besides its text content are {size:,} bytes"
            f" as JSON; at most {MAX_METADATA_BYTES - 1024:,} fit",
            hint="a long text content is fine; keep additional_kwargs, response_metadata,"
            " tool calls and list content small",
        )
    return {"role": role_of(message), "content": text, KEY: raw}


def from_stored(m: StoredMessage) -> BaseMessage:
    """The LangChain message a stored chat message holds. One written otherwise
    (``ChatHistory.add_message``, a summary) becomes the message of its role."""
    raw = m.extra.get(KEY)
    if raw is None:
        return _plain(m)
    try:
        whole = json.loads(raw) if isinstance(raw, str) else None
        if not isinstance(whole, Mapping) or not isinstance(whole.get("data"), Mapping):
            raise ValueError("not a serialised message")
        data = dict(whole["data"])
        data.setdefault("content", m.content)
        return messages_from_dict([{"type": whole.get("type"), "data": data}])[0]
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptStoreError(
            f"chat message {m.id} should hold a LangChain message and does not ({exc})",
            hint="run `agentzero store verify`; the message is still there (ChatHistory)",
        ) from None


def _plain(m: StoredMessage) -> BaseMessage:
    if m.role == "user":
        return HumanMessage(content=m.content, id=m.id)
    if m.role == "assistant":
        return AIMessage(content=m.content, id=m.id)
    if m.role == "system":
        return SystemMessage(content=m.content, id=m.id)
    return ChatMessage(role=m.role, content=m.content, id=m.id)


__all__ = ["KEY", "from_stored", "role_of", "text_of", "to_stored"]
