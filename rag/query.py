"""Query results of the document store: chunk hits rolled up to documents, fused, and
re-checked against the log (only the live version of a document is ever returned)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentzero_store.base.modes import Mode
from agentzero_store.base.ranking import rrf_fuse

from .feed import ChunkFeed, split_key
from .log_read import LogReader

QueryMode = Mode  # the one vocabulary of every search (``base.modes``)


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


def fuse(
    bm25: Sequence[tuple[int, int, float]],
    sem: Sequence[tuple[int, int, float]],
    *,
    rrf_k: int,
    limit: int,
) -> tuple[list[tuple[int, int, float]], dict[int, dict[str, int]]]:
    """BM25 and semantic document candidates fused with RRF: (rows, each row's ranks)."""
    best = {seq: (index, score) for seq, index, score in (*sem, *bm25)}
    for seq, index, _ in bm25:  # prefer the keyword chunk: it holds the query's words
        best[seq] = (index, best[seq][1])
    fused = rrf_fuse(
        {"keyword": [s for s, _, _ in bm25], "semantic": [s for s, _, _ in sem]},
        k=rrf_k,
        limit=limit,
    )
    rows = [(f.key, best[f.key][0], f.score) for f in fused]
    return rows, {f.key: f.ranks for f in fused}


def hits(
    log: LogReader,
    chunks: ChunkFeed[Any],
    rows: Sequence[tuple[int, int, float]],
    signal: str | None,
    ranks: Mapping[int, Mapping[str, int]] | None = None,
) -> list[DocumentHit]:
    """``DocumentHit`` of each (seq, chunk, score), in order, leaving out every row that
    is not the live version of its document."""
    out: list[DocumentHit] = []
    for rank, (seq, index, score) in enumerate(rows, start=1):
        doc_id = log.doc_id_at(seq)
        if log.seq_of(doc_id) != seq:
            continue  # an older version (the index is re-checked against the log)
        record = log.get(doc_id)
        assert record is not None
        chunk = chunks.chunks_of(seq)[index]
        out.append(
            DocumentHit(
                id=doc_id,
                score=score,
                text=chunk.text,
                start=chunk.start,
                end=chunk.end,
                chunk=index,
                title=record.title,
                source_path=record.source_path,
                metadata=record.metadata,
                ranks=dict(ranks[seq]) if ranks else {signal or "": rank},
            )
        )
    return out
