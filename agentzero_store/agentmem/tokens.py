"""How many tokens a text is: the one counter of the agent-memory layer.

A budget in tokens (``ChatHistory.prune``, the token-limited chat) is counted with the
embedder's own tokenizer when the embedder has one (any embedder with a
``count_tokens(texts)`` method, e.g. ``LocalEmbedder``: all-MiniLM-L6-v2's WordPiece),
else estimated as 4/3 tokens per whitespace-separated word, rounded up, the estimate
``AgentMemory.prune`` uses. Neither is the tokenizer of the LLM the text is sent to: a
budget is a guide, so leave the model some headroom.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..base.errors import EmbedderError


@runtime_checkable
class TokenCounter(Protocol):
    """An embedder that can count tokens with its own tokenizer."""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text (no special tokens, not truncated to the model's window)."""
        ...


def estimate_tokens(text: str) -> int:
    """4/3 tokens per whitespace-separated word, rounded up (English prose averages about
    0.75 words per token in GPT-style tokenizers)."""
    return -(-len(text.split()) * 4 // 3)


def count_tokens(texts: Sequence[str], embedder: Any = None) -> list[int]:
    """Tokens of each text: with ``embedder``'s tokenizer if it is a ``TokenCounter``,
    else ``estimate_tokens``."""
    if not texts:
        return []
    if isinstance(embedder, TokenCounter):
        counts = embedder.count_tokens(list(texts))
        if len(counts) != len(texts) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts
        ):
            raise EmbedderError(
                f"{type(embedder).__name__}.count_tokens returned {len(counts)} counts for "
                f"{len(texts)} texts, or a count that is not a whole number >= 0"
            )
        return list(counts)
    return [estimate_tokens(t) for t in texts]


__all__ = ["TokenCounter", "count_tokens", "estimate_tokens"]
