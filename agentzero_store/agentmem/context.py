"""Tiers and context packing (issue 17): what an agent loads turn by turn.

- **Hot** (``HotTier``): per handle, the last ``hot_turns`` turns of each conversation
  read so far, in a ring buffer, and the latest tool result. It is a cache of
  ``memory.db``: ``add_turns`` appends to it under the write lock, and every read first
  compares the change feed's newest seq with the one the cache was built at (one index
  lookup), so another process's write, a forget or an erase rebuilds it instead of
  serving stale turns. Pins (``am_pin``) are read from the database.
- **Warm**: a summary of the turns before the hot ones. Extractive by default
  (``extractive``: MMR over the turns' vectors — central to the conversation, not
  redundant with each other), or the text of a caller's ``TurnSummarizer`` (an LLM, say).
  Stored with a TTL (``warm_ttl_days``); a summary whose source was forgotten is never
  used (its text could quote it), and erase deletes it.
- **Cold**: part 1's memories, reached by ``recall``.
- **Core facts** (``am_core``) load at every spawn; ``recall`` reaches the archival rest.

``pack`` fills a ``ContextPack`` in priority order — pinned, core facts, hot turns, warm
summary, recalled memories — each item labelled, each memory once (by id and by text
fingerprint), never more than ``max_tokens`` counted by ``Budget`` (``tokens``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from ..base.errors import InvalidArgumentError
from ..embed.vectors import Embedder
from .records import Memory
from .tokens import TokenCounter, count_tokens

SECTIONS = ("pinned", "core", "hot", "warm", "recalled")
_TITLES = {
    "pinned": "Pinned",
    "core": "Core facts",
    "hot": "Recent turns",
    "warm": "Earlier in this conversation",
    "recalled": "Recalled memories",
}


class TurnSummarizer(Protocol):
    """Turns a conversation's earlier turns into a warm summary's text (e.g. an LLM
    call); ``summarize.Summarizer`` is its twin for chat messages."""

    def summarize(self, turns: Sequence[Memory]) -> str:
        """The summary of ``turns`` (oldest first)."""
        ...


class Budget:
    """Counts a pack's tokens with ``tokens.count_tokens`` (the embedder's tokenizer, else
    the 4/3-per-word estimate) and says which in ``method``."""

    def __init__(self, embedder: Embedder | None) -> None:
        self._embedder = embedder
        self.method = (
            f"tokenizer of {embedder.model_id}"
            if embedder is not None and isinstance(embedder, TokenCounter)
            else "estimate: 4 tokens per 3 words"
        )

    def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text (no special tokens)."""
        return count_tokens(texts, self._embedder)


@dataclass(frozen=True)
class ContextItem:
    """One labelled piece of a context pack."""

    section: str  # one of SECTIONS
    text: str
    tokens: int
    id: str | None = None  # the memory's id (None for an abstractive summary)
    role: str | None = None
    speaker: str | None = None

    def line(self) -> str:
        """How the item reads in ``ContextPack.text``."""
        who = self.speaker or (self.role if self.section == "hot" else None)
        return f"- {who}: {self.text}" if who else f"- {self.text}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "section": self.section,
            "id": self.id,
            "text": self.text,
            "tokens": self.tokens,
            "role": self.role,
            "speaker": self.speaker,
        }


@dataclass(frozen=True)
class ContextPack:
    """What to put in front of the model: labelled items, highest priority first, within
    ``max_tokens`` (``tokens`` counts ``text()``). ``left_out``: items per section that
    did not fit."""

    items: tuple[ContextItem, ...]
    tokens: int
    max_tokens: int
    counted_with: str
    left_out: dict[str, int] = field(default_factory=dict)

    def section(self, name: str) -> list[ContextItem]:
        """The items of one section, in order."""
        return [i for i in self.items if i.section == name]

    def text(self) -> str:
        """The pack as Markdown: one heading per non-empty section, one line per item."""
        return render(self.items)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "tokens": self.tokens,
            "max_tokens": self.max_tokens,
            "counted_with": self.counted_with,
            "left_out": dict(self.left_out),
            "items": [i.to_dict() for i in self.items],
            "text": self.text(),
        }


def render(items: Sequence[ContextItem]) -> str:
    """Markdown of ``items`` (see ``ContextPack.text``)."""
    out: list[str] = []
    current = None
    for item in items:
        if item.section != current:
            current = item.section
            out.append(f"## {_TITLES[current]}")
        out.append(item.line())
    return "\n".join(out)


def pack(
    candidates: Sequence[tuple[str, Sequence[ContextItem]]],
    max_tokens: int,
    counter: Budget,
    fingerprint: Callable[[str], str],
) -> ContextPack:
    """Fill a pack from ``(section, items)`` in priority order: each memory once (by id,
    then by text fingerprint), an item only while the whole pack stays within
    ``max_tokens``. Token counts add up (a heading, then one line per item, joined by
    newlines); the final text is counted again, and trimmed if a tokenizer disagreed."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise InvalidArgumentError(f"max_tokens must be a whole number >= 0, got {max_tokens!r}")
    heads = dict(zip(SECTIONS, counter.count([f"## {_TITLES[s]}" for s in SECTIONS]), strict=True))
    seen_ids: set[str] = set()
    seen_text: set[str] = set()
    kept: list[ContextItem] = []
    left: dict[str, int] = {}
    total = 0
    for section, items in candidates:
        fresh = []
        for item in items:
            fp = fingerprint(item.text)
            if (item.id is not None and item.id in seen_ids) or fp in seen_text:
                continue
            fresh.append((item, fp))
        lines = counter.count([i.line() for i, _ in fresh])
        opened = False
        for (item, fp), n in zip(fresh, lines, strict=True):
            cost = n + (0 if opened else heads[section])
            if total + cost > max_tokens:
                left[section] = left.get(section, 0) + 1
                continue
            kept.append(ContextItem(item.section, item.text, n, item.id, item.role, item.speaker))
            total += cost
            opened = True
            seen_text.add(fp)
            if item.id is not None:
                seen_ids.add(item.id)
    actual = counter.count([render(kept)])[0] if kept else 0
    while kept and actual > max_tokens:  # never over budget, whatever the tokenizer
        dropped = kept.pop()
        left[dropped.section] = left.get(dropped.section, 0) + 1
        actual = counter.count([render(kept)])[0] if kept else 0
    return ContextPack(tuple(kept), actual, max_tokens, counter.method, left)


def items(section: str, memories: Sequence[Memory]) -> list[ContextItem]:
    """Memories as context items of one section (token counts filled in by ``pack``)."""
    return [ContextItem(section, m.content, 0, m.id, m.role, m.speaker) for m in memories]


def extractive(vectors: np.ndarray[Any, Any], n: int, mmr_lambda: float) -> list[int]:
    """Indices (ascending) of ``n`` rows chosen by MMR: relevance is the cosine to the
    rows' centroid (what the conversation is about), redundancy the highest cosine to
    a row already chosen. Deterministic (ties: the earlier row)."""
    count = len(vectors)
    if count <= n:
        return list(range(count))
    v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    centre = v.mean(axis=0)
    norm = float(np.linalg.norm(centre))
    relevance = v @ (centre / norm) if norm > 0 else np.zeros(count)
    chosen: list[int] = []
    redundancy = np.full(count, -math.inf)
    for _ in range(n):
        score = mmr_lambda * relevance - (1 - mmr_lambda) * np.maximum(redundancy, 0.0)
        score[chosen] = -math.inf
        pick = int(np.argmax(score))
        chosen.append(pick)
        redundancy = np.maximum(redundancy, v @ v[pick])
    return sorted(chosen)


def spaced(count: int, n: int) -> list[int]:
    """``n`` evenly spaced indices of ``count`` rows (no vectors to choose by)."""
    if count <= n:
        return list(range(count))
    return sorted({round(i * (count - 1) / max(1, n - 1)) for i in range(n)})


class HotTier:
    """The hot turns of one handle: a ring buffer per conversation, valid while the
    change feed's newest seq is the one it was filled at (see the module docstring)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._seq: int | None = None
        self._turns: dict[str, deque[Memory]] = {}
        self._tool: dict[str, Memory | None] = {}

    def valid_at(self, seq: int) -> bool:
        """Whether the cache still holds at feed seq ``seq`` (else it is emptied)."""
        if seq != self._seq:
            self._turns.clear()
            self._tool.clear()
            self._seq = seq
            return False
        return True

    def get(self, conversation_id: str) -> tuple[list[Memory], Memory | None] | None:
        """The cached (turns, latest tool result) of a conversation, None if not cached."""
        turns = self._turns.get(conversation_id)
        if turns is None:
            return None
        return list(turns), self._tool.get(conversation_id)

    def fill(self, conversation_id: str, turns: Sequence[Memory], tool: Memory | None) -> None:
        """Cache a conversation's hot turns as read from the database."""
        self._turns[conversation_id] = deque(turns, maxlen=self.size)
        self._tool[conversation_id] = tool

    def appended(
        self,
        conversation_id: str,
        seq_before: int,
        seq_after: int,
        earliest: datetime,
        tail: Callable[[int], tuple[list[Memory], Memory | None]],
    ) -> None:
        """Turns this handle just wrote (the feed went from ``seq_before`` to
        ``seq_after`` under the write lock), the earliest created at ``earliest``:
        appended if the cache was current and they come last in the conversation's
        order, else the conversation is read again. ``tail(n)`` builds only what the ring
        keeps: the last ``n`` turns written and the latest tool result among them (a batch
        of 1,000 turns builds 12 records, not 1,000)."""
        if self._seq != seq_before:
            self.valid_at(seq_after)  # someone else wrote in between: start over
            return
        self._seq = seq_after
        ring = self._turns.get(conversation_id)
        if ring is None:
            return
        if ring and earliest < ring[-1].created_at:
            del self._turns[conversation_id]  # written into the past: re-read in order
            return
        turns, tool = tail(self.size)
        ring.extend(turns)
        if tool is not None:
            self._tool[conversation_id] = tool


__all__ = [
    "SECTIONS",
    "ContextItem",
    "ContextPack",
    "Budget",
    "HotTier",
    "TurnSummarizer",
    "extractive",
    "items",
    "pack",
    "spaced",
]
