"""``DocumentStore``: sealed document log + BM25 and HNSW sidecars over its chunks.

The log (``rag/index.jsonl``) is the truth. A BM25 sidecar (Tantivy over blinded terms
on disk, or in RAM with sealed checkpoints) always exists; with an embedder, an HNSW
sidecar over chunk vectors adds ``semantic`` and ``hybrid`` (RRF, k=60) modes. Chunk
vectors are sealed inside the log records, so a lost index is rebuilt without
re-embedding. Every hit is re-checked against the log: only the live version of a
document is ever returned. The sidecars are built and kept in step in ``rag.indexes``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from agentzero_store.base.config import Layout, StoreConfig
from agentzero_store.base.errors import InvalidArgumentError, NoEmbedderError
from agentzero_store.base.limits import check_limit, check_text
from agentzero_store.base.modes import plain_mode
from agentzero_store.embed.vectors import Embedder, as_vector
from agentzero_store.sidecar.hnsw import HnswIndex
from agentzero_store.sidecar.types import Progress, SidecarStatus
from agentzero_store.storage.acks import Ledger
from agentzero_store.storage.datadir import open_data_dir
from agentzero_store.storage.fileio import DEFAULT_IO, FileIO
from agentzero_store.storage.keys import StoreKeys
from agentzero_store.storage.lock import WriterLock, acquire_writer
from agentzero_store.storage.sources import SourceGuard, open_ledger

from . import files
from .chunking import DEFAULT_PARAMS, Chunk, ChunkParams, chunk_text
from .documents import DocInput, IngestResult
from .feed import check_chunk_count
from .files import DirReport
from .folder import MAX_FILE_BYTES
from .indexes import DocumentIndexes, vectors_fit
from .log import DocumentLog
from .query import DocumentHit, QueryMode, fuse, hits, roll_up
from .records import ChunkVectors, DocumentRecord, Upsert, content_hash

log = logging.getLogger(__name__)

CANDIDATES_PER_DOC = 8  # chunk hits asked of an index per document wanted


class DocumentStore:
    """Ingest, delete, get and query documents in an encrypted data dir."""

    def __init__(
        self,
        layout: Layout,
        keys: StoreKeys,
        doclog: DocumentLog,
        *,
        embedder: Embedder | None,
        config: StoreConfig,
        chunking: ChunkParams,
        io: FileIO,
        progress: Progress | None,
    ) -> None:
        self.layout = layout
        self.keys = keys
        self.log = doclog
        self.embedder = embedder
        self.config = config
        self.chunking = chunking
        self._closed = False
        self._ledger: Ledger | None = None  # the acknowledgement ledger, set by open()
        self.indexes = DocumentIndexes(
            layout,
            keys,
            doclog,
            embedder=embedder,
            config=config,
            chunking=chunking,
            io=io,
            progress=progress,
        )
        self.bm25 = self.indexes.bm25
        self.hnsw = self.indexes.hnsw

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        passphrase: str | None = None,
        key: bytes | str | None = None,
        key_file: Path | str | None = None,
        embedder: Embedder | None = None,
        create: bool = True,
        readonly: bool = False,
        config: StoreConfig | None = None,
        chunking: ChunkParams = DEFAULT_PARAMS,
        prompt: bool | None = None,
        io: FileIO = DEFAULT_IO,
        progress: Progress | None = None,
    ) -> DocumentStore:
        """Open (or create) the document store of ``data_dir`` (same keys.json as memory).

        Args:
            data_dir: The data dir (``~`` is expanded); created when ``create`` is true.
            passphrase: The store's passphrase (or give ``key`` or ``key_file``).
            key: A raw 32-byte key, or its hex.
            key_file: A file holding the key (``agentzero keys generate``).
            embedder: Embeds chunks for semantic and hybrid queries; without one the
                store answers keyword queries only.
            create: Create the data dir when it does not exist.
            readonly: Take no writer lock (queries beside a running ``rag watch``).
            config: Tuning (KDF, lock timeouts, fusion); the defaults suit a desktop.
            chunking: How documents are cut into chunks.
            prompt: Ask for a passphrase on the terminal when none is given.
            io: File I/O (a fault-injecting one in tests).
            progress: Called while the indexes catch up or rebuild on open.

        Returns:
            The open store; close it (or use it as a context manager).

        Raises:
            WrongKeyError: The credential does not open this store (no file touched).
            CredentialRequiredError: No passphrase, key or key file, and no prompt.
            StoreNotFoundError: ``create`` is false (or ``readonly``) and there is none.
            CorruptStoreError: The document log is damaged, truncated or replaced.
            StoreLockedError: Another process holds the writer role past the timeout.
        """
        config = config or StoreConfig()
        layout, keys = open_data_dir(
            data_dir,
            passphrase=passphrase,
            key=key,
            key_file=key_file,
            create=create and not readonly,
            kdf=config.kdf,
            prompt=prompt,
            io=io,
        )

        def writer() -> WriterLock:
            return acquire_writer(
                layout.root, timeout=config.writer_lock_timeout_s, purpose="document open"
            )

        # Writable even for a read-only open: a store from before the ledger is recorded
        # by whichever open comes first (under the writer lock); nothing else is written.
        ledger = open_ledger(layout, keys, writable=True, flush_every=config.checkpoint_every)
        doclog: DocumentLog | None = None
        try:
            guard = SourceGuard(ledger, "documents", layout.rag_log, writer=writer)
            if readonly and not layout.rag_log.exists():
                # The store exists (keys.json opened) but has no document log: if the
                # ledger says nothing was ever acknowledged in one, an empty log is the
                # truth and creating it changes no data (a lost log is refused here).
                DocumentLog.open(layout.rag_log, keys, io=io, acks=guard).close()
            # The log belongs to the store: it is created whenever the key header exists.
            doclog = DocumentLog.open(
                layout.rag_log, keys, io=io, create=True, readonly=readonly, acks=guard
            )
            store = cls(
                layout,
                keys,
                doclog,
                embedder=embedder,
                config=config,
                chunking=chunking,
                io=io,
                progress=progress,
            )
        except BaseException:
            if doclog is not None:
                doclog.close()
            ledger.close()
            raise
        store._ledger = ledger
        return store

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Checkpoint the indexes (so the next open replays nothing) and close."""
        if self._closed:
            return
        self._closed = True
        for sidecar in self.indexes.sidecars():
            if sidecar.pending:
                try:
                    sidecar.checkpoint()
                except Exception as exc:  # a failed checkpoint loses nothing: log, go on
                    log.warning("could not checkpoint %s on close: %s", sidecar, exc)
        self.indexes.close()
        self.log.close()
        if self._ledger is not None:
            self._ledger.close()

    def __enter__(self) -> DocumentStore:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ writes
    def ingest(
        self,
        doc_id: str,
        text: str,
        *,
        title: str | None = None,
        source_path: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> IngestResult:
        """Store a document (replacing an earlier version); durable when it returns.

        Re-ingesting identical content, title, source and metadata is a no-op.

        Args:
            doc_id: The document's id (any non-empty text; a path is a good one).
            text: Its content.
            title: Embedded with each chunk, shown with hits.
            source_path: Where it came from (``ingest_file`` and ``rag watch`` set it).
            metadata: JSON-serialisable values kept beside it (sealed like the text).

        Returns:
            What was written: the log sequence number (None when unchanged), the
            number of chunks and whether anything changed.

        Raises:
            InvalidArgumentError: Empty text, or too many chunks for one document.
            EmbedderError: The embedder failed (nothing is written).
            StoreLockedError: Another writer held the data dir past the timeout.
        """
        return self.ingest_many([DocInput(doc_id, text, title, source_path, metadata)])[0]

    def ingest_many(self, docs: Iterable[DocInput]) -> list[IngestResult]:
        """Ingest many documents with one group commit (one write, one fsync).

        Args:
            docs: The documents; an unchanged one is skipped.

        Returns:
            One ``IngestResult`` per document, in order.

        Raises:
            InvalidArgumentError: A document without text, or with too many chunks
                (checked before anything is written).
            EmbedderError: The embedder failed (nothing is written).
        """
        docs = list(docs)
        results: list[IngestResult | None] = [None] * len(docs)
        todo: list[tuple[int, DocInput, list[Chunk]]] = []  # (position, doc, its chunks)
        params, doclog = self.chunking, self.log
        for i, d in enumerate(docs):
            text = d.text
            # (not text.strip(), without copying the text: strip removes str.isspace chars)
            if not isinstance(text, str) or not text or text.isspace():
                raise InvalidArgumentError(f"document {d.id!r} has no text")
            chunks = chunk_text(text, params)
            check_chunk_count(d.id, chunks)
            if d.id in doclog and self._unchanged(d):
                results[i] = IngestResult(d.id, None, len(chunks), False)
            else:
                todo.append((i, d, chunks))
        vectors = self._embed(todo)  # slow: outside the writer role
        with self._writer():
            changes = doclog.append_many(
                [
                    Upsert(d.id, d.text, d.title, d.source_path, d.metadata or {}, v)
                    for (_, d, _), v in zip(todo, vectors, strict=True)
                ]
            )
        # Write-through: the sidecars need not re-read, re-open or re-chunk these.
        self.indexes.chunks.put_many(
            (ch.seq, chunks, ch.record)
            for (_, _, chunks), ch in zip(todo, changes, strict=True)
            if ch is not None
        )
        for (i, d, chunks), ch in zip(todo, changes, strict=True):
            results[i] = IngestResult(d.id, ch.seq if ch else None, len(chunks), True)
        self._catch_up()
        out = [r for r in results if r is not None]
        assert len(out) == len(docs)  # every document was either unchanged or written
        return out

    def _unchanged(self, d: DocInput) -> bool:
        current = self.log.get(d.id)
        if current is None:
            return False
        same = (
            current.content_hash == content_hash(d.text)
            and current.title == d.title
            and current.source_path == d.source_path
            and dict(current.metadata) == dict(d.metadata or {})
        )
        return same and (
            self.embedder is None or vectors_fit(current, self.embedder, self.chunking)
        )

    def _embed(
        self, todo: Sequence[tuple[int, DocInput, list[Chunk]]]
    ) -> list[ChunkVectors | None]:
        if self.embedder is None or not todo:
            return [None] * len(todo)
        texts = [
            f"{d.title}\n{c.text}" if d.title else c.text for _, d, chunks in todo for c in chunks
        ]
        matrix = np.ascontiguousarray(self.embedder.embed(texts), dtype=np.float32)
        dim = self.embedder.dimension
        matrix = np.stack([as_vector(row, dim) for row in matrix]) if len(matrix) else matrix
        out: list[ChunkVectors | None] = []
        row = 0
        for _, _, chunks in todo:
            block = matrix[row : row + len(chunks)]
            row += len(chunks)
            out.append(ChunkVectors(self.embedder.model_id, dim, self.chunking.id, block.tobytes()))
        return out

    def ingest_file(
        self, path: Path | str, doc_id: str | None = None, *, max_bytes: int = MAX_FILE_BYTES
    ) -> IngestResult:
        """Ingest one text file (id: ``doc_id`` or the file name).

        A FIFO, device, folder, anything under /proc, a file over ``max_bytes`` (checked
        before reading) or not UTF-8 is refused (``InvalidArgumentError``); an OS error
        is a ``StoreIOError``.
        """
        d = files.read_document(Path(path), doc_id=doc_id, max_bytes=max_bytes)
        return self.ingest_many([d])[0]

    def ingest_dir(
        self,
        root: Path | str,
        progress: Callable[[int], None] | None = None,
        *,
        max_bytes: int = MAX_FILE_BYTES,
    ) -> DirReport:
        """Ingest every .txt/.md file under ``root`` (ids = relative paths).

        Never leaves ``root``: symlinks out of it, FIFOs, devices, sockets and /proc are
        skipped; a file over ``max_bytes``, not UTF-8 or unreadable fails alone. The
        report lists each such path with a reason (``skipped`` and ``failed``).
        """
        return files.ingest_dir(self, Path(root), progress, max_bytes=max_bytes)

    def delete(self, doc_id: str) -> bool:
        """Delete a document (a tombstone in the log); durable when it returns.

        Args:
            doc_id: The document's id.

        Returns:
            True if it existed, False if there was nothing to delete.
        """
        with self._writer():
            change = self.log.delete(doc_id)
        self._catch_up()
        return change is not None

    def compact(self) -> str:
        """Rewrite the log without superseded and deleted records; indexes rebuild.

        Returns:
            The new log generation's id.
        """
        with self._writer():
            generation = self.log.compact()
        for sidecar in self.indexes.sidecars():
            sidecar.rebuild(reason="the document log was compacted")
        return generation

    def _writer(self) -> WriterLock:
        # The data dir's writer role is held only while writing (never for the life of
        # the store), so `rag watch` or an MCP server do not block memory writers. The
        # log's own lock still keeps a second document writer out for the store's life.
        return acquire_writer(
            self.layout.root, timeout=self.config.writer_lock_timeout_s, purpose="document write"
        )

    def _catch_up(self) -> None:
        self.indexes.catch_up()

    # ------------------------------------------------------------------ reads
    def get(self, doc_id: str) -> DocumentRecord | None:
        """The live version of a document.

        Args:
            doc_id: The document's id.

        Returns:
            Its record (text, title, source, metadata), or None if there is none.
        """
        return self.log.get(doc_id)

    def documents(self) -> list[DocumentRecord]:
        """Every live document (oldest write first)."""
        return [record for _, record in self.log.iter_live()]

    def __len__(self) -> int:
        return len(self.log)

    def query(self, text: str, limit: int = 5, mode: QueryMode = "auto") -> list[DocumentHit]:
        """The ``limit`` best documents for ``text``.

        Args:
            text: The query.
            limit: How many documents at most (a chunk's best hit stands for its
                document).
            mode: ``keyword`` (BM25; ``bm25`` is an alias), ``semantic``, ``hybrid``
                (RRF k=60) or ``auto``, the default: hybrid with an embedder and
                keyword without one (``base.modes``).

        Returns:
            Hits, best first: each document with its best chunk (text and offsets),
            its title, source and metadata, and its rank in each list fused.

        Raises:
            InvalidArgumentError: An empty query, an unknown mode or a limit out of
                range.
            NoEmbedderError: ``semantic`` or ``hybrid`` without an embedder.
        """
        how = plain_mode(mode, has_embedder=self.embedder is not None)
        # Capped: Tantivy and hnswlib allocate per hit asked for (10**9 aborted the process).
        limit = check_limit(limit)
        check_text("query text", text)
        self._catch_up()
        if how == "keyword":
            return self._hits(self._bm25_docs(text, limit), "keyword")
        if how == "semantic":
            return self._hits(self._semantic_docs(text, limit), "semantic")
        n = limit * self.config.hybrid_candidates_factor
        bm25, sem = self._bm25_docs(text, n), self._semantic_docs(text, n)
        rows, ranks = fuse(bm25, sem, rrf_k=self.config.rrf_k, limit=limit)
        return self._hits(rows, None, ranks)

    def _bm25_docs(self, text: str, n: int) -> list[tuple[int, int, float]]:
        return roll_up(self.indexes.bm25_search(text, n * CANDIDATES_PER_DOC))[:n]

    def _semantic_docs(self, text: str, n: int) -> list[tuple[int, int, float]]:
        if self.embedder is None or self.hnsw is None:
            raise NoEmbedderError("semantic and hybrid document queries need an embedder")
        q = as_vector(self.embedder.embed([text])[0], self.embedder.dimension)
        index = self.hnsw.index
        assert isinstance(index, HnswIndex)
        with self.hnsw.lock:
            return roll_up(index.search(q, n * CANDIDATES_PER_DOC))[:n]

    def _hits(
        self,
        rows: Sequence[tuple[int, int, float]],
        signal: str | None,
        ranks: Mapping[int, Mapping[str, int]] | None = None,
    ) -> list[DocumentHit]:
        return hits(self.log, self.indexes.text_feed, rows, signal, ranks)

    # ------------------------------------------------------------------ indexes
    def vector_coverage(self) -> tuple[int, int]:
        """(chunks with vectors from this embedder, chunks in the BM25 index)."""
        return self.indexes.vector_coverage()

    def index_status(self) -> list[SidecarStatus]:
        """Status of each index (for ``agentzero store status``)."""
        return self.indexes.status()

    def rebuild_index(
        self, name: str | None = None, progress: Callable[[int, int], None] | None = None
    ) -> list[str]:
        """Rebuild one index, or all, from the document log.

        Args:
            name: ``bm25`` or ``hnsw``; None rebuilds every index.
            progress: Called with (done, total) as chunks are indexed.

        Returns:
            The names of the indexes rebuilt.

        Raises:
            InvalidArgumentError: An unknown index name.
        """
        return self.indexes.rebuild(name, progress)
