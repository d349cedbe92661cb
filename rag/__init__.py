"""rag: the encrypted document store (sealed JSONL log + BM25/HNSW sidecars)."""

from .chunking import Chunk, ChunkParams, chunk_text
from .documents import DocInput, IngestResult
from .files import DirReport
from .folder import MAX_FILE_BYTES, FileIssue
from .query import DocumentHit
from .records import DocumentRecord
from .store import DocumentStore

__all__ = [
    "MAX_FILE_BYTES",
    "Chunk",
    "ChunkParams",
    "DirReport",
    "DocInput",
    "DocumentHit",
    "DocumentRecord",
    "DocumentStore",
    "FileIssue",
    "IngestResult",
    "chunk_text",
]
