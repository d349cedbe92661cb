"""Decorators of a chat history that keep it within a limit, with the same interface.

Each wraps any ``ChatMemory`` (a ``ChatHistory`` or another decorator) and, after every
``add_message``, enforces its limit through the wrapped history:

- ``CapacityLimitedChat``: at most ``max_messages`` messages;
- ``TokenLimitedChat``: at most ``max_tokens`` tokens (``ChatHistory.prune``);
- ``SummarizingChat``: over either limit, the oldest messages become one summary
  (``summarize.Summarizer``; the default is extractive, no LLM) instead of going.

What goes first is chosen by ``chat.droppable``: oldest first, never the newest message,
and with the ``keep_system`` strategy (the default) system prompts last. Removal is the
wrapped history's: a soft forget, or an erase for a history opened with ``erase=True``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter
from types import TracebackType
from typing import Any

from ...base.errors import InvalidArgumentError
from ..memory import AgentMemory
from ..namespaces import one_call
from ..tokens import count_tokens
from .history import ChatMemory
from .messages import ChatMessage, Removal, Strategy, choose_by_count, droppable
from .summarize import ExtractiveSummarizer, Summarizer


def _whole(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidArgumentError(f"{name} must be a whole number >= {least}, got {value!r}")
    return value


_call = one_call(attrgetter("memory.gate"))  # one grant check per public call


class ChatDecorator:
    """Passes every call to the wrapped history; subclasses enforce a limit after
    ``add_message`` (``enforce``)."""

    def __init__(self, inner: ChatMemory, strategy: Strategy = "keep_system") -> None:
        if not isinstance(inner, ChatMemory):
            raise InvalidArgumentError(
                f"a chat decorator wraps a ChatHistory, got {type(inner).__name__}"
            )
        droppable([], strategy)  # validates the strategy
        self.inner = inner
        self.strategy: Strategy = strategy

    @property
    def conversation_id(self) -> str:
        """The conversation of the wrapped history."""
        return self.inner.conversation_id

    @property
    def memory(self) -> AgentMemory:
        """The agent memory of the wrapped history."""
        return self.inner.memory

    def init(self, agent_id: str, *, fresh: bool = False) -> ChatDecorator:
        """The wrapped history's ``init``; returns this decorator."""
        self.inner.init(agent_id, fresh=fresh)
        return self

    @_call
    def add_message(
        self, message: str | Mapping[str, Any], content: str | None = None
    ) -> ChatMessage:
        """Add the message, then enforce the limit; returns the stored message."""
        msg = self.inner.add_message(message, content)
        self.enforce()
        return msg

    def enforce(self) -> Any:
        """Bring the history within the limit (nothing here: a plain pass-through)."""
        return None

    def history(self) -> list[ChatMessage]:
        """Every message, oldest first."""
        return self.inner.history()

    def recent(self, n: int) -> list[ChatMessage]:
        """The newest ``n`` messages, oldest first."""
        return self.inner.recent(n)

    def clear(self) -> Removal:
        """Remove the whole conversation."""
        return self.inner.clear()

    def prune(self, max_tokens: int, *, strategy: Strategy = "keep_system") -> Removal:
        """The wrapped history's ``prune``."""
        return self.inner.prune(max_tokens, strategy=strategy)

    def search(self, query: str, limit: int = 5) -> list[ChatMessage]:
        """The messages most relevant to ``query``, best first."""
        return self.inner.search(query, limit)

    def remove(self, ids: Sequence[str]) -> Removal:
        """Remove these messages of the conversation."""
        return self.inner.remove(ids)

    def add_summary(self, text: str, replaces: Sequence[ChatMessage]) -> ChatMessage:
        """Store a summary in place of ``replaces``."""
        return self.inner.add_summary(text, replaces)

    def token_counts(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Tokens of each message's content."""
        return self.inner.token_counts(messages)

    def close(self) -> None:
        """Close the wrapped history."""
        self.inner.close()

    def __enter__(self) -> ChatDecorator:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class CapacityLimitedChat(ChatDecorator):
    """Keeps at most ``max_messages`` messages: after each new one, the oldest go
    (``oldest_first``), or the oldest that are not system prompts (``keep_system``)."""

    def __init__(
        self, inner: ChatMemory, max_messages: int, *, strategy: Strategy = "keep_system"
    ) -> None:
        super().__init__(inner, strategy)
        self.max_messages = _whole("max_messages", max_messages, 1)

    @_call
    def enforce(self) -> Removal:
        """Remove what is over capacity; returns what went."""
        drop = choose_by_count(self.inner.history(), self.max_messages, self.strategy)
        return self.inner.remove([m.id for m in drop]) if drop else Removal()


class TokenLimitedChat(ChatDecorator):
    """Keeps the history within ``max_tokens``: after each new message, ``prune``."""

    def __init__(
        self, inner: ChatMemory, max_tokens: int, *, strategy: Strategy = "keep_system"
    ) -> None:
        super().__init__(inner, strategy)
        self.max_tokens = _whole("max_tokens", max_tokens, 0)

    @_call
    def enforce(self) -> Removal:
        """Prune to the budget; returns what went."""
        return self.inner.prune(self.max_tokens, strategy=self.strategy)


class SummarizingChat(ChatDecorator):
    """Over ``max_messages`` or ``max_tokens`` (at least one is needed), the oldest
    messages are folded into one summary, a system message that takes their place; an
    earlier summary is folded into the next one like any old message.

    By count, enough messages go that the summary fits too. By tokens, the fewest that
    make the rest and the summary fit; when even all but the newest message do not, all
    of those are folded and the history stays over the budget by what is left.
    ``summarizer``: any ``Summarizer``; by default an ``ExtractiveSummarizer`` with the
    memory's embedder (or none). If it fails or returns blank text, nothing is removed
    and the error is raised (the new message is stored all the same).
    """

    def __init__(
        self,
        inner: ChatMemory,
        summarizer: Summarizer | None = None,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        strategy: Strategy = "keep_system",
    ) -> None:
        super().__init__(inner, strategy)
        if max_messages is None and max_tokens is None:
            raise InvalidArgumentError("SummarizingChat needs max_messages or max_tokens")
        # A summary takes a slot itself: below two, folding could never make room.
        self.max_messages = (
            None if max_messages is None else _whole("max_messages", max_messages, 2)
        )
        self.max_tokens = None if max_tokens is None else _whole("max_tokens", max_tokens, 0)
        if summarizer is not None and not isinstance(summarizer, Summarizer):
            raise InvalidArgumentError(
                f"summarizer must have summarize(messages) -> str, got {type(summarizer).__name__}"
            )
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer(
            inner.memory.store.embedder
        )

    @_call
    def enforce(self) -> list[ChatMessage]:
        """Fold what is over the limits into summaries; returns the summaries written."""
        made = []
        if self.max_messages is not None and (s := self._fold_by_count(self.max_messages)):
            made.append(s)
        if self.max_tokens is not None and (s := self._fold_by_tokens(self.max_tokens)):
            made.append(s)
        return made

    def _fold_by_count(self, max_messages: int) -> ChatMessage | None:
        messages = self.inner.history()
        if len(messages) <= max_messages:
            return None
        candidates = droppable(messages, self.strategy)
        drop = candidates[: len(messages) - max_messages + 1]
        return self._fold(messages, drop) if len(drop) >= 2 else None

    def _fold_by_tokens(self, max_tokens: int) -> ChatMessage | None:
        messages = self.inner.history()
        counts = dict(zip((m.id for m in messages), self.inner.token_counts(messages), strict=True))
        total = sum(counts.values())
        if total <= max_tokens:
            return None
        candidates = droppable(messages, self.strategy)
        d, rest = 0, total
        while d < len(candidates) and rest > max_tokens:  # fewest to drop before summarizing
            rest -= counts[candidates[d].id]
            d += 1
        while d <= len(candidates):
            drop = candidates[:d]
            # Only an earlier summary: re-summarizing it alone frees nothing; take more.
            if any(not m.summary for m in drop):
                text = self._summarize(messages, drop)
                rest = total - sum(counts[m.id] for m in drop)
                if rest + self._tokens(text) <= max_tokens or d == len(candidates):
                    return self.inner.add_summary(text, drop)
            d += 1
        return None

    def _fold(self, messages: Sequence[ChatMessage], drop: Sequence[ChatMessage]) -> ChatMessage:
        return self.inner.add_summary(self._summarize(messages, drop), drop)

    def _summarize(self, messages: Sequence[ChatMessage], drop: Sequence[ChatMessage]) -> str:
        chosen = {m.id for m in drop}
        in_order = [m for m in messages if m.id in chosen]  # conversation order
        text = self.summarizer.summarize(in_order)
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError(
                f"{type(self.summarizer).__name__}.summarize returned no text; nothing was removed"
            )
        return text

    def _tokens(self, text: str) -> int:
        return count_tokens([text], self.inner.memory.store.embedder)[0]


__all__ = [
    "CapacityLimitedChat",
    "ChatDecorator",
    "SummarizingChat",
    "TokenLimitedChat",
]
