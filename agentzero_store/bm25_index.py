"""BM25 adapter for the sidecar mechanism: a Tantivy index held in RAM.

Tantivy's on-disk segments hold the term dictionary (every word a user wrote) and any
stored field in plaintext. So the Tantivy index never touches disk: it lives in a RAM
directory, and its checkpoint is the sealed list of ``(key, text)`` it was built from,
which the sidecar mechanism encrypts and verifies like any other checkpoint. Loading a
checkpoint re-indexes in Rust (~50k short docs/s here), which is cheaper than a rebuild
from the source (no log replay, no chunking) and leaks no term statistics at all (unlike
blinded terms on disk). The schema stores ids only; text comes back from the source.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import tantivy

from .errors import SidecarCorruptError

SCHEMA_VERSION = 1
TOKENIZER = "en_stem"  # lowercase + Snowball English stemmer (BM25 nDCG@10 0.664 on SciFact)
_WORD = re.compile(r"\w+", re.UNICODE)
_REC = struct.Struct("<QI")  # key, utf-8 length


def _schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("key", stored=True, indexed=True, fast=True)
    sb.add_text_field("body", stored=False, tokenizer_name=TOKENIZER)
    return sb.build()


class Bm25Index:
    """A ``SidecarIndex[str]``: BM25 over the text of each key (e.g. a document chunk)."""

    kind = "bm25"

    def __init__(self, *, heap_bytes: int = 50_000_000) -> None:
        self._heap = heap_bytes
        self._schema = _schema()
        self._texts: dict[int, str] = {}
        self.reset()

    def params(self) -> Mapping[str, Any]:
        """Schema and analyzer: a checkpoint built with others is rebuilt."""
        return {"schema": SCHEMA_VERSION, "tokenizer": TOKENIZER}

    def reset(self) -> None:
        """An empty RAM index."""
        self._index = tantivy.Index(self._schema)
        self._writer = self._index.writer(heap_size=self._heap, num_threads=1)
        self._texts = {}
        self._dirty = False

    def _key_term(self, key: int) -> Any:
        return tantivy.Query.term_query(self._schema, "key", key)

    def insert(self, items: Sequence[tuple[int, str]]) -> None:
        """Add or replace the text of each key."""
        for key, text in items:
            if key in self._texts:
                self._writer.delete_documents_by_query(self._key_term(key))
            doc = tantivy.Document()
            doc.add_unsigned("key", key)
            doc.add_text("body", text)
            self._writer.add_document(doc)
            self._texts[key] = text
        self._dirty = self._dirty or bool(items)

    def delete(self, keys: Sequence[int]) -> None:
        """Remove keys (unknown keys are ignored)."""
        for key in keys:
            if self._texts.pop(key, None) is not None:
                self._writer.delete_documents_by_query(self._key_term(key))
                self._dirty = True

    def count(self) -> int:
        """Number of live keys."""
        return len(self._texts)

    def _commit(self) -> None:
        # Commit lazily, before a search: a RAM-directory commit is cheap but not free,
        # and replaying thousands of changes one commit each would dominate ingest.
        if self._dirty:
            self._writer.commit()
            self._index.reload()
            self._dirty = False

    def search(self, query_text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best keys for ``query_text`` by BM25 (words ORed), best first."""
        words = [w.lower() for w in _WORD.findall(query_text)]
        if not words or k <= 0 or not self._texts:
            return []
        self._commit()
        # Only \\w characters reach the parser, lowercased: no user text is query syntax.
        query = self._index.parse_query(" ".join(words), ["body"])
        searcher = self._index.searcher()
        hits = searcher.search(query, k).hits
        return [(int(searcher.doc(addr)["key"][0]), float(score)) for score, addr in hits]

    def dump(self) -> dict[str, bytes]:
        """The indexed texts, as one explicit length-prefixed byte string."""
        parts = []
        for key, text in self._texts.items():
            raw = text.encode("utf-8")
            parts.append(_REC.pack(key, len(raw)))
            parts.append(raw)
        return {"texts": b"".join(parts)}

    def load(self, files: Mapping[str, bytes]) -> None:
        """Re-index the texts of an authenticated checkpoint."""
        blob = files.get("texts")
        if blob is None:
            raise SidecarCorruptError("bm25 checkpoint lacks its texts")
        self.reset()
        items: list[tuple[int, str]] = []
        view, pos = memoryview(blob), 0
        try:
            while pos < len(blob):
                key, n = _REC.unpack_from(view, pos)
                pos += _REC.size
                if pos + n > len(blob):
                    raise SidecarCorruptError("bm25 checkpoint is truncated")
                items.append((key, bytes(view[pos : pos + n]).decode("utf-8")))
                pos += n
        except (struct.error, UnicodeDecodeError) as exc:
            raise SidecarCorruptError("bm25 checkpoint is malformed") from exc
        self.insert(items)
