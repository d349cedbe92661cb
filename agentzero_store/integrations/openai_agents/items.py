"""Agents SDK items as turns of the agent memory, and back, losslessly.

An item (``TResponseInputItem``) is a JSON object: a message, a function call, a tool's
output, a reasoning summary, or a shape this code has never seen. Each becomes one
episodic turn whose text is what recall should find (the message's words, the call's
name and arguments, the output) and whose metadata holds the whole item as its JSON
text, keys in the caller's order, so ``get_items`` returns exactly what was added. When
the text is one string of the item (a message's content, a tool's output: most items),
that string is kept once, as the turn's text, and its place in the item is noted, so a
long message costs no second copy. An item still too large for the metadata cap
(``MAX_METADATA_BYTES``) is kept whole as the turn's text instead: recall then searches
its JSON, and nothing is cut.

No import of the SDK here: the items are plain dicts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ...agentmem import Turn
from ...base.errors import CorruptStoreError, InvalidArgumentError
from ...base.limits import MAX_METADATA_BYTES

KEY = "openai_agents"  # the turn metadata's key for what this module keeps
VERSION = 1
MESSAGE_ROLES = ("user", "assistant", "system", "developer")
# The fields whose strings are words worth recalling; ids, statuses, base64 payloads
# (image_url, file_data, encrypted_content) and the like are left out of the text.
TEXT_KEYS = frozenset(
    {
        "content",
        "text",
        "refusal",
        "output",
        "arguments",
        "name",
        "query",
        "queries",
        "code",
        "command",
        "summary",
        "result",
        "error",
        "input",
        "server_label",
    }
)
_HINT = (
    "an item is a JSON object such as {'role': 'user', 'content': '...'}; pass what the "
    "SDK produces (dicts of str, numbers, booleans, None, lists and dicts)"
)


def item_json(item: Any) -> str:
    """The item as JSON text, checked: a dict with str keys and JSON values only."""
    if not isinstance(item, Mapping):
        raise InvalidArgumentError(
            f"a session item must be a dict, got {type(item).__name__}", hint=_HINT
        )
    try:
        text = json.dumps(dict(item), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # a set, bytes, an object; NaN or infinity
        raise InvalidArgumentError(f"a session item is not JSON: {exc}", hint=_HINT) from None
    except RecursionError:
        raise InvalidArgumentError("a session item nests too deeply", hint=_HINT) from None
    _check_keys(item)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, so it round-trips unchanged
        text = json.dumps(dict(item), allow_nan=False)
    return text


def _check_keys(value: Any) -> None:
    # json.dumps turns an int key into a str silently: the item would come back changed.
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            bad = next((k for k in v if not isinstance(k, str)), None)
            if bad is not None:
                raise InvalidArgumentError(
                    f"a session item has a {type(bad).__name__} key ({bad!r}); JSON keys are "
                    "strings",
                    hint=_HINT,
                )
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)


Path = list[str | int]  # keys and indices from an item down to one of its strings


def _texts(item: Mapping[str, Any]) -> list[tuple[Path, str]]:
    """The strings under ``TEXT_KEYS`` with where each is, in order."""
    found: list[tuple[Path, str]] = []

    def walk(v: Any, key: str | None, path: Path) -> None:
        if isinstance(v, str):
            if key in TEXT_KEYS and v.strip():
                found.append((path, v))
        elif isinstance(v, Mapping):
            for k, sub in v.items():
                walk(sub, k, [*path, k])
        elif isinstance(v, list | tuple):
            for i, sub in enumerate(v):
                walk(sub, key, [*path, i])

    walk(item, None, [])
    return found


def text_of(item: Mapping[str, Any]) -> str:
    """What recall should find of an item: the strings under ``TEXT_KEYS``, in order."""
    text = "\n".join(t for _, t in _texts(item))
    if not text.strip():
        kind = item.get("type") if isinstance(item.get("type"), str) else "item"
        text = f"[{kind}]"
    # A lone surrogate cannot be indexed; the item itself keeps it (see item_json).
    return text.encode("utf-8", "replace").decode("utf-8")


def role_of(item: Mapping[str, Any]) -> str:
    """The turn's role: the message's, ``tool`` for a tool's output, else ``assistant``
    (calls and reasoning are the model's)."""
    role = item.get("role")
    if isinstance(role, str) and role in MESSAGE_ROLES:
        return role
    kind = item.get("type")
    if isinstance(kind, str) and kind.endswith("_output"):
        return "tool"
    return "assistant"


def to_turn(item: Any) -> Turn:
    """The turn that stores ``item`` (see the module). When the item's text is one
    string of it (a message's content, a tool's output), that string is kept once, as
    the turn's text, and its place in the item is noted (``at``)."""
    raw = item_json(item)
    texts = _texts(item)
    text = text_of(item)
    kept: dict[str, Any] = {"v": VERSION, "item": raw}
    if len(texts) == 1 and texts[0][1] == text:
        path = texts[0][0]
        kept = {"v": VERSION, "item": item_json(_with(item, path, None)), "at": path}
    meta = {KEY: kept}
    if len(json.dumps(meta, ensure_ascii=False).encode("utf-8", "replace")) <= MAX_METADATA_BYTES:
        return Turn(role_of(item), text, metadata=meta)
    return Turn(role_of(item), raw, metadata={KEY: {"v": VERSION, "in": "content"}})


def _with(value: Any, path: Path, leaf: Any) -> Any:
    """A copy of ``value`` with what is at ``path`` replaced by ``leaf`` (only the
    containers on the path are copied)."""
    if not path:
        return leaf
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping) and isinstance(head, str) and head in value:
        return {k: (_with(v, rest, leaf) if k == head else v) for k, v in value.items()}
    if isinstance(value, list | tuple) and isinstance(head, int) and 0 <= head < len(value):
        return [(_with(v, rest, leaf) if i == head else v) for i, v in enumerate(value)]
    raise ValueError("the path leads nowhere")


class StoredTurn(Protocol):
    """What ``from_memory`` reads of a turn (a ``Memory`` has it, and ``Kept``)."""

    @property
    def id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Kept:
    """A turn as just written (its id, role, text and metadata), for a session's tail."""

    id: str
    role: str
    content: str
    metadata: Mapping[str, Any]


def from_memory(m: StoredTurn) -> dict[str, Any]:
    """The item a turn stores. A turn written otherwise (``AgentMemory.add_turn``,
    ``ChatHistory``) reads as a message ``{"role", "content"}`` of its text."""
    kept = m.metadata.get(KEY)
    if not isinstance(kept, Mapping):
        role = m.role if m.role in MESSAGE_ROLES else "assistant"
        return {"role": role, "content": m.content}
    raw = kept.get("item") if kept.get("in") != "content" else m.content
    try:
        if not isinstance(raw, str) or kept.get("v") != VERSION:
            raise ValueError("not a version-1 item")
        item = json.loads(raw)
        at = kept.get("at")
        if at is not None:
            if not isinstance(at, list) or not at:
                raise ValueError("a bad path")
            item = _with(item, at, m.content)
        if not isinstance(item, dict):
            raise ValueError("not an object")
    except (ValueError, TypeError, RecursionError) as exc:
        raise CorruptStoreError(
            f"memory {m.id} should hold a session item and does not ({exc})",
            hint="run `agentzero store verify`; the turn is still there (AgentMemory.get)",
        ) from None
    return item


__all__ = [
    "KEY",
    "VERSION",
    "Kept",
    "StoredTurn",
    "from_memory",
    "item_json",
    "role_of",
    "text_of",
    "to_turn",
]
