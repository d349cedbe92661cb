"""BM25 adapters for the sidecar mechanism: Tantivy over ``(key, text)`` items.

Two ways to keep the index, chosen by ``StoreConfig.bm25_terms``; both analyse text with
Tantivy's ``en_stem`` (``bm25_terms``) and score the same way (BM25, query terms ORed):

- ``"blinded"`` (the default, ``bm25_blinded.BlindedBm25Index``): Tantivy on disk, every
  term a keyed hash. Opens without re-indexing; leaks term statistics, never a word.
- ``"sealed"`` (``SealedBm25Index``, here): Tantivy in RAM over the plain words. Its
  checkpoint is the sealed list of ``(key, text)`` it was built from, re-indexed in Rust
  on open (~50k short docs/s here). Leaks nothing at all on disk, at the cost of that
  re-index on every open and the texts held in RAM.

There is no mode that writes plain words to disk: that would break the promise that no
document text is ever written under the data dir.

The sealed checkpoint blob is kept up to date as items arrive (an append-only record
list: ``key, length, text``, or ``key, DELETED`` for a delete), so a checkpoint copies
one buffer instead of re-encoding every text of the index in Python. Records that no
longer describe a live key (replaced, deleted, and their tombstones) are dropped by
compacting the blob once they outnumber the live keys, which keeps its size within ~2x
the live texts at an amortised constant cost per change.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import tantivy

from ..base.errors import AgentZeroStoreError, SidecarCorruptError, StoreIOError
from .bm25_terms import ANALYZER, PlainTerms

SCHEMA_VERSION = 1
_REC = struct.Struct("<QI")  # key, utf-8 length of the text that follows (or DELETED)
DELETED = 0xFFFF_FFFF  # a tombstone: the key's latest text is gone
HEAP_BYTES = 50_000_000  # Tantivy writer arena
# Tantivy reports an OS error inside its message only: "... (os error 28)" (Rust's
# io::Error Display) or "Os { code: 28, ... }" (its Debug form).
_OS_ERRNO = re.compile(r"os error (\d+)|Os \{ code: (\d+)")
_GONE = {errno.ENOENT, errno.ENOTDIR}  # its files were removed under it: rebuild
# A writer thread that hit an I/O error kills the writer; later calls then say so,
# without the errno.
_KILLED = "writer was killed"


def native_error(doing: str, where: str, exc: BaseException) -> AgentZeroStoreError:
    """A Tantivy error as a typed one: ``StoreIOError`` for an OS error (disk full, EIO,
    read-only), else ``SidecarCorruptError`` (files gone or damaged: rebuild). The
    message names the errno, never Tantivy's raw text."""
    text = str(exc)
    m = _OS_ERRNO.search(text)
    code = int(m.group(1) or m.group(2)) if m else None
    if code in _GONE:
        return SidecarCorruptError(f"the files of the bm25 index in {where} are gone ({doing})")
    if code is not None:
        name = errno.errorcode.get(code, str(code))
        return StoreIOError(
            f"{doing} the bm25 index in {where} failed: {name} ({os.strerror(code)})"
        )
    if _KILLED in text:
        return StoreIOError(f"{doing} the bm25 index in {where} failed: an I/O error")
    return SidecarCorruptError(
        f"Tantivy failed {doing} the bm25 index in {where} ({type(exc).__name__})"
    )


def pin_searcher(index: Any) -> None:
    """Make ``index``'s searcher change only when ``reload()`` is called.

    Tantivy's default reader follows ``meta.json`` on its own (a watcher thread), so a
    merge finishing in Tantivy's threads swaps the searcher between two queries with no
    write in between. A merge drops deleted documents, which BM25 counts until then (doc
    count, average length, document frequencies): the same query then scores and ranks
    differently (seen: a score moved from 1.77663 to 1.77620 and two keys swapped places
    after a merge). Pinned, the searcher is the commit we last loaded: answers change
    only with our writes, and a checkpoint can be made of exactly that commit.
    """
    index.config_reader(reload_policy="manual")


def schema(tokenizer: str) -> Any:
    """Ids and one analysed body: no text is ever stored, only the key comes back. Term
    frequencies but no positions: BM25 needs no more, and queries are never phrases."""
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("key", stored=True, indexed=True, fast=True)
    sb.add_text_field("body", stored=False, tokenizer_name=tokenizer, index_option="freq")
    return sb.build()


class TantivyBm25:
    """What both adapters share: live keys, upserts and deletes, lazy commits, search.

    A subclass opens ``self._index`` / ``self._writer`` and says how a text becomes the
    indexed body (``_body``) and a query its terms (``_query_terms``).
    """

    kind = "bm25"

    def __init__(self, tantivy_schema: Any, *, heap_bytes: int = HEAP_BYTES) -> None:
        self._heap = heap_bytes
        self._schema = tantivy_schema
        self._keys: set[int] = set()
        self._dirty = False
        self._index: Any = None
        self._writer: Any = None
        self._broken: str | None = None  # why the index cannot be trusted any more

    def _where(self) -> str:
        return "memory"

    def _failed(self, error: AgentZeroStoreError) -> None:
        """Hook: a Tantivy call just failed with ``error`` (already marked broken)."""

    @contextlib.contextmanager
    def _native(self, doing: str) -> Iterator[None]:
        """Translate Tantivy's errors at the boundary (see ``native_error``).

        Tantivy raises ``ValueError``, and ``pyo3_runtime.PanicException`` (a
        ``BaseException``) on some damaged files. After any failure the index is marked
        broken until the next reset: a writer whose commit failed drops the documents it
        held and silently drops later ones (measured), so it must be rebuilt, not trusted.
        """
        try:
            yield
        except AgentZeroStoreError:
            raise
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
                raise
            error = native_error(doing, self._where(), exc)
            self._broken = error.message
            self._failed(error)
            raise error from exc

    def _body(self, text: str) -> str:
        raise NotImplementedError

    def _query_terms(self, text: str) -> list[str]:
        raise NotImplementedError

    def _key_term(self, key: int) -> Any:
        return tantivy.Query.term_query(self._schema, "key", key)

    def _index_items(self, items: Sequence[tuple[int, str]]) -> None:
        keys, writer, body = self._keys, self._writer, self._body
        with self._native("indexing"):
            for key, text in items:
                if key in keys:
                    writer.delete_documents_by_query(self._key_term(key))
                    self._replaced()
                doc = tantivy.Document()
                doc.add_unsigned("key", key)
                doc.add_text("body", body(text))
                writer.add_document(doc)
                keys.add(key)
        self._dirty = self._dirty or bool(items)

    def _replaced(self) -> None:
        """Hook: a key's previous text was just replaced."""

    def _delete_keys(self, keys: Sequence[int]) -> list[int]:
        """Remove the live ones of ``keys`` from the index; returns them."""
        gone = []
        with self._native("deleting from"):
            for key in keys:
                if key in self._keys:
                    self._keys.remove(key)
                    self._writer.delete_documents_by_query(self._key_term(key))
                    gone.append(key)
        self._dirty = self._dirty or bool(gone)
        return gone

    def count(self) -> int:
        """Number of live keys."""
        return len(self._keys)

    def _commit(self) -> None:
        # Commit lazily, before a search or a checkpoint: replaying thousands of changes
        # one commit each would dominate ingest.
        if self._dirty:
            with self._native("committing"):
                self._writer.commit()
                self._index.reload()
            self._dirty = False

    def search(self, query_text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best keys for ``query_text`` by BM25 (its terms ORed), best first."""
        terms = self._query_terms(query_text)
        if not terms or k <= 0 or not self._keys:
            return []
        self._commit()
        with self._native("searching"):
            # Built from analysed terms, never parsed: no user text is query syntax.
            should = tantivy.Occur.Should
            query = tantivy.Query.boolean_query(
                [(should, tantivy.Query.term_query(self._schema, "body", t, "freq")) for t in terms]
            )
            searcher = self._index.searcher()
            hits = searcher.search(query, k, count=False).hits
            return [(int(searcher.doc(addr)["key"][0]), float(score)) for score, addr in hits]


class SealedBm25Index(TantivyBm25):
    """A ``SidecarIndex[str]`` held in RAM; its checkpoint is its sealed texts."""

    def __init__(self, *, heap_bytes: int = HEAP_BYTES) -> None:
        super().__init__(schema(ANALYZER), heap_bytes=heap_bytes)
        self._terms = PlainTerms()
        self._blob = bytearray()  # what dump() returns: see the module docstring
        self._dead = 0  # records in the blob that no longer describe a live key
        self.reset()

    def params(self) -> Mapping[str, Any]:
        """Schema and analyzer: a checkpoint built with others is rebuilt."""
        return {"schema": SCHEMA_VERSION, "tokenizer": ANALYZER}

    def _body(self, text: str) -> str:
        return text  # Tantivy runs en_stem itself

    def _query_terms(self, text: str) -> list[str]:
        return self._terms.query_terms(text)

    def reset(self) -> None:
        """An empty RAM index."""
        with self._native("creating"):
            self._index = tantivy.Index(self._schema)
            pin_searcher(self._index)
            self._writer = self._index.writer(heap_size=self._heap, num_threads=1)
        self._broken = None
        self._keys = set()
        self._blob = bytearray()
        self._dead = 0
        self._dirty = False

    def insert(self, items: Sequence[tuple[int, str]]) -> None:
        """Add or replace the text of each key."""
        blob = self._blob
        for key, text in items:
            raw = text.encode("utf-8")
            blob += _REC.pack(key, len(raw))
            blob += raw
        self._index_items(items)

    def _replaced(self) -> None:
        self._dead += 1  # the record of its previous text

    def delete(self, keys: Sequence[int]) -> None:
        """Remove keys (unknown keys are ignored)."""
        for key in self._delete_keys(keys):
            self._blob += _REC.pack(key, DELETED)
            self._dead += 2  # its last text and this tombstone

    def dump(self) -> dict[str, bytes]:
        """The indexed texts, as one explicit length-prefixed byte string."""
        if self._dead > len(self._keys):
            self._compact()
        return {"texts": bytes(self._blob)}

    def _compact(self) -> None:
        live, _ = _parse(self._blob)
        blob = bytearray()
        for key, text in live.items():
            blob += _REC.pack(key, len(text))
            blob += text
        self._blob, self._dead = blob, 0

    def load(self, files: Mapping[str, bytes]) -> None:
        """Re-index the texts of an authenticated checkpoint."""
        self.load_buffers({name: bytearray(b) for name, b in files.items()})

    def load_buffers(self, files: dict[str, bytearray]) -> None:
        """``load``, keeping the decrypted blob as the index's own (``LoadsBuffers``)."""
        blob = files.get("texts")
        if blob is None:
            raise SidecarCorruptError("bm25 checkpoint lacks its texts")
        self.reset()
        live, records = _parse(blob)
        try:
            items = [(key, raw.decode("utf-8")) for key, raw in live.items()]
        except UnicodeDecodeError as exc:
            raise SidecarCorruptError("bm25 checkpoint is malformed") from exc
        self._index_items(items)
        self._blob = blob
        self._dead = records - len(live)


def _records(blob: bytes | bytearray) -> Iterator[tuple[int, bytes | None]]:
    """``(key, utf-8 text or None for a tombstone)`` of each record of a checkpoint blob."""
    view, pos, end = memoryview(blob), 0, len(blob)
    try:
        while pos < end:
            key, n = _REC.unpack_from(view, pos)
            pos += _REC.size
            if n == DELETED:
                yield key, None
                continue
            if pos + n > end:
                raise SidecarCorruptError("bm25 checkpoint is truncated")
            yield key, bytes(view[pos : pos + n])
            pos += n
    except struct.error as exc:
        raise SidecarCorruptError("bm25 checkpoint is malformed") from exc


def _parse(blob: bytes | bytearray) -> tuple[dict[int, bytes], int]:
    """The live ``key -> utf-8 text`` a checkpoint blob describes, and its record count."""
    live: dict[int, bytes] = {}
    records = 0
    for key, raw in _records(blob):
        records += 1
        if raw is not None:
            live.pop(key, None)  # a replacement is indexed where it was written
            live[key] = raw
        elif live.pop(key, None) is None:
            # Only a live key is ever deleted: anything else was not written by dump().
            raise SidecarCorruptError("bm25 checkpoint deletes a key it never held")
    return live, records
