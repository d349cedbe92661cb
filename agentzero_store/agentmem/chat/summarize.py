"""Summaries of chat messages without an LLM: the ``Summarizer`` protocol and the default
extractive summarizer.

The summarizing chat (``chat.limits.SummarizingChat``) folds old messages into one
summary instead of deleting them. Any object with ``summarize(messages) -> str`` will do
(an LLM call, for one); the default picks sentences that are already there, so it needs
no model, adds no words of its own and gives the same summary for the same messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ...base.errors import InvalidArgumentError
from ...embed.vectors import Embedder, as_vectors

if TYPE_CHECKING:
    from .messages import ChatMessage

# A sentence ends at . ! or ? (a closing quote or bracket after it stays with it) before
# whitespace, or at a line break: the summaries this module writes are one sentence per line.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\n+")


@runtime_checkable
class Summarizer(Protocol):
    """Turns the messages a chat is about to drop into the text of one summary."""

    def summarize(self, messages: Sequence[ChatMessage]) -> str:
        """A non-blank summary of ``messages`` (oldest first; an earlier summary among
        them is a message like the others, with ``summary=True``)."""
        ...


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, in order, stripped, blanks left out."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


class ExtractiveSummarizer:
    """Keeps up to ``max_sentences`` sentences of the messages, in conversation order.

    With an embedder: the most central sentences, i.e. those whose embeddings are most
    similar to the mean of all of them (the gist, not the digressions). Without one: the
    first sentence of each message (of an earlier summary, every sentence), the longest
    ones when there are more than ``max_sentences`` (a long first sentence usually says
    more than "ok."). Ties go to the earlier sentence, so the result is deterministic.
    """

    def __init__(self, embedder: Embedder | None = None, *, max_sentences: int = 5) -> None:
        if isinstance(max_sentences, bool) or not isinstance(max_sentences, int):
            raise InvalidArgumentError(f"max_sentences must be an int, got {max_sentences!r}")
        if max_sentences < 1:
            raise InvalidArgumentError(f"max_sentences must be at least 1, got {max_sentences}")
        self.embedder = embedder
        self.max_sentences = max_sentences

    def summarize(self, messages: Sequence[ChatMessage]) -> str:
        """One sentence per line (see the class)."""
        if self.embedder is not None:
            pool = [s for m in messages for s in sentences(m.content)]
            chosen = self._central(pool)
        else:
            pool = [
                s
                for m in messages
                for s in (sentences(m.content) if m.summary else sentences(m.content)[:1])
            ]
            chosen = self._longest(pool)
        return "\n".join(pool[i] for i in sorted(chosen))

    def _longest(self, pool: Sequence[str]) -> list[int]:
        order = sorted(range(len(pool)), key=lambda i: (-len(pool[i]), i))
        return order[: self.max_sentences]

    def _central(self, pool: Sequence[str]) -> list[int]:
        if len(pool) <= self.max_sentences:
            return list(range(len(pool)))
        assert self.embedder is not None
        v = as_vectors(self.embedder.embed(list(pool)), self.embedder.dimension)
        centre = v.mean(axis=0)
        # float64 and rounding: a last-bit difference between two BLAS runs must not
        # reorder two sentences that are equally central.
        score = np.round((v.astype(np.float64) @ centre.astype(np.float64)), 9)
        order = sorted(range(len(pool)), key=lambda i: (-float(score[i]), i))
        return order[: self.max_sentences]


__all__ = ["ExtractiveSummarizer", "Summarizer", "sentences"]
