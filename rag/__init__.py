"""rag: the encrypted document store (sealed JSONL log + BM25/HNSW sidecars)."""

from .chunking import Chunk, ChunkParams, chunk_text
from .query import DocumentHit
from .records import DocumentRecord
from .store import DocInput, DocumentStore, IngestResult

__all__ = [
    "Chunk",
    "ChunkParams",
    "DocInput",
    "DocumentHit",
    "DocumentRecord",
    "DocumentStore",
    "IngestResult",
    "chunk_text",
]
