"""Query results of the document store: chunk hits rolled up to documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .feed import split_key

QueryMode = Literal["bm25", "semantic", "hybrid"]
MODES: tuple[str, ...] = ("bm25", "semantic", "hybrid")


@dataclass(frozen=True)
class DocumentHit:
    """One document answering a query, with its best chunk.

    ``text`` is the best chunk's text; ``start``/``end`` its character offsets in the
    document (``document.text[start:end] == text``).
    """

    id: str
    score: float
    text: str
    start: int
    end: int
    chunk: int
    title: str | None = None
    source_path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    ranks: Mapping[str, int] = field(default_factory=dict)

    def snippet(self, width: int = 200) -> str:
        """The best chunk, on one line, cut to ``width`` characters."""
        flat = " ".join(self.text.split())
        return flat if len(flat) <= width else flat[: width - 1] + "…"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (id, score, text, offsets, title, source, metadata, ranks)."""
        return {
            "id": self.id,
            "score": self.score,
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "chunk": self.chunk,
            "title": self.title,
            "source_path": self.source_path,
            "metadata": dict(self.metadata),
            "ranks": dict(self.ranks),
        }


def roll_up(chunk_hits: Sequence[tuple[int, float]]) -> list[tuple[int, int, float]]:
    """Chunk hits (key, score; best first) → one per document version: (seq, chunk, score).

    A document's score is its best chunk's score; order is kept (best first).
    """
    seen: set[int] = set()
    out: list[tuple[int, int, float]] = []
    for key, score in chunk_hits:
        seq, index = split_key(key)
        if seq not in seen:
            seen.add(seq)
            out.append((seq, index, score))
    return out
