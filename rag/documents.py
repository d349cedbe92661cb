"""A document as a caller hands it in (``DocInput``), and what ingesting it did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentzero_store.base.limits import check_optional_text, check_text, metadata_json


@dataclass(frozen=True)
class IngestResult:
    """What ingesting one document did."""

    id: str
    seq: int | None  # the log seq written; None when unchanged
    chunks: int
    changed: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class DocInput:
    """One document to ingest."""

    id: str
    text: str
    title: str | None = None
    source_path: str | None = None
    metadata: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        # Checked here, before chunking, hashing or embedding touch the text: a lone
        # surrogate cannot be encoded, and NaN or oversized metadata cannot be stored.
        check_optional_text("document id", self.id)
        if isinstance(self.text, str):  # a missing text is named by ingest_many
            check_text("document text", self.text)
        check_optional_text("title", self.title)
        check_optional_text("source_path", self.source_path)
        if self.metadata:
            metadata_json(self.metadata)


__all__ = ["DocInput", "IngestResult"]
