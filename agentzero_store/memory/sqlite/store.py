"""``SqliteMemoryStore``: conversation memory in an encrypted SQLCipher database.

The database is the source of truth. Every insert and delete is also written to the
``changes`` table (its own seq), which derived indexes replay (see
``agentzero_store.sidecar``). This module is the facade; the work is done by one module
per concern in this package:

- ``write``: appends and deletes, each with its change-feed entry;
- ``recall``: semantic, keyword and hybrid recall, re-checked in the database;
- ``feed``: the change feed and its adapters to the sidecar mechanism;
- ``hnsw`` / ``index``: the HNSW sidecar with its in-memory scope map.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.config import Layout, StoreConfig
from ...base.errors import InvalidArgumentError, StoreClosedError
from ...base.limits import check_text
from ...embed.vectors import Embedder, Vector, as_vector
from ...storage.datadir import open_data_dir
from ...storage.key_header import read_header
from ...storage.keys import StoreKeys
from ...storage.lock import WriterLock, acquire_writer
from ...storage.sources import SourceGuard
from ...storage.sqlcipher import Database
from ..backfill import Backfill
from ..front import RecallMode, StoreFront, result_count
from ..records import Change, MemoryEntry, MemoryHit, Scope, to_us
from ..rows import positive, row_to_entry
from ..seam import Capability
from . import backfill, recall, write
from .feed import MemoryFeed
from .rows import COLUMNS, rows_after, scope_where
from .source import memory_seq, open_source
from .tx import WriteTx

if TYPE_CHECKING:
    import numpy.typing as npt

    from ...sidecar.types import OpenReport, Progress, SidecarStatus
    from .hnsw import MemoryHnsw

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SqliteMemoryStore(StoreFront):
    """Encrypted conversation memory with semantic, keyword and hybrid recall."""

    # Beyond the seam's MemoryStore (memory/seam.py): a data dir, sidecars, a change feed.
    capabilities: frozenset[Capability] = frozenset({"data_dir", "sidecars", "change_feed"})
    _erase_all_hint = "to erase everything, delete the data dir"

    def __init__(
        self,
        db: Database,
        keys: StoreKeys,
        data_dir: Path,
        *,
        embedder: Embedder | None,
        config: StoreConfig,
        clock: Clock,
    ) -> None:
        self._db = db
        self._keys = keys
        self.data_dir = data_dir
        self.embedder = embedder
        self.config = config
        self._clock = clock
        self._closed = False
        self._hnsw: MemoryHnsw | None = None
        self._dim: int | None = None  # fixed by the first vector ever stored
        self._acks: SourceGuard | None = None  # set by open(): acknowledges each write
        self.backfill: Backfill | None = None  # set by open() when it runs
        self.feed = MemoryFeed(self._live)

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
        config: StoreConfig | None = None,
        clock: Clock | None = None,
        prompt: bool | None = None,
        hnsw: bool | None = None,
    ) -> SqliteMemoryStore:
        """Open (or create) the memory store in ``data_dir``.

        Args:
            data_dir: The data dir (``~`` is expanded).
            passphrase: The store's passphrase (or give ``key`` or ``key_file``).
            key: A raw 32-byte key, or its hex.
            key_file: A file holding the key.
            embedder: Embeds memories and queries; without one, give vectors yourself
                (``append_with_embedding``) or use keyword recall.
            create: Create the data dir when it does not exist.
            config: Tuning (KDF, lock timeouts, fusion weights).
            clock: What "now" is, for expiry and every read (tests pass a fixed one).
            prompt: Ask for a passphrase on the terminal when none is given.
            hnsw: True enables the HNSW index, False never uses it, None (the default)
                enables it if ``memory.hnsw/`` exists.

        Returns:
            The open store; close it (or use it as a context manager).

        Raises:
            WrongKeyError: The credential does not open this store; it is checked
                against keys.json first, and no file is touched.
            CredentialRequiredError: No passphrase, key or key file, and no prompt.
            StoreNotFoundError: ``create`` is false and there is no store.
            CorruptStoreError: memory.db is damaged, truncated or replaced (the ledger
                knows what was acknowledged).
        """
        config = config or StoreConfig()
        layout, keys = open_data_dir(
            data_dir,
            passphrase=passphrase,
            key=key,
            key_file=key_file,
            create=create,
            kdf=config.kdf,
            prompt=prompt,
        )
        db, guard = open_source(layout, keys, config)
        store = cls(db, keys, layout.root, embedder=embedder, config=config, clock=clock or _utcnow)
        store._acks = guard
        try:
            if hnsw or (hnsw is None and layout.memory_hnsw.is_dir()):
                store.enable_hnsw_index()
            if embedder is not None and config.backfill_batch > 0:
                # Memories written while no embedder was given get their vectors, off
                # the hot path (see memory.backfill and sqlite.backfill).
                store.backfill = Backfill(
                    lambda n: backfill.embed_batch(store, n), config.backfill_batch
                )
                store.backfill.start()
        except BaseException:
            store.close()
            raise
        return store

    # ----------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Close the store. Further calls raise ``StoreClosedError``."""
        if not self._closed:
            if self.backfill is not None:
                self.backfill.stop()  # before the database it writes closes
            if self._hnsw is not None:
                self._hnsw.close()  # checkpoints pending changes while the db is open
            self._closed = True
            self._db.close()
            if self._acks is not None:
                self._acks.ledger.close()

    @property
    def database(self) -> Database:
        """The open ``memory.db`` connection, for reads of a layer built on this store
        (its writes go through ``transaction()``)."""
        return self._live()

    def _live(self) -> Database:
        if self._closed:
            raise StoreClosedError("the memory store is closed")
        return self._db

    @property
    def store_id(self) -> str:
        """Random id of this store (from keys.json)."""
        return self._keys.store_id

    @property
    def keys(self) -> StoreKeys:
        """The unlocked keys (for sibling stores and sidecars sharing this data dir)."""
        return self._keys

    def key_header(self) -> dict[str, Any]:
        """The key header in ``keys.json`` (wrapped keys, no secret)."""
        return read_header(Layout(self.data_dir))

    def embedding_info(self) -> tuple[str | None, int | None]:
        """(model id, dimension) of the vectors stored so far, or (None, None)."""
        return write.embedding_info(self._live())

    def without_vector(self) -> int:
        """How many live memories have no vector (written while no embedder was given;
        a store opened with one embeds them: ``memory.backfill``)."""
        return backfill.without_vector(self)

    def _vector_dim(self) -> int | None:
        # The dimension never changes once set: read it once, not on every recall.
        if self._dim is None:
            self._dim = self.embedding_info()[1]
        return self._dim

    # ----------------------------------------------------------------- indexes
    def enable_hnsw_index(
        self,
        dir: Path | str | None = None,
        dim: int | None = None,
        *,
        watch: bool | None = None,
        progress: Progress | None = None,
    ) -> OpenReport | None:
        """Serve semantic recall from an HNSW sidecar in ``dir`` (default ``memory.hnsw/``).

        Loads the verified checkpoint and replays newer changes, or rebuilds it from the
        database. From then on writes go to SQLCipher (the truth) and then the index.
        ``watch`` rebuilds in the background if the directory is deleted while open
        (None: ``StoreConfig.watch_indexes``).
        Returns what opening did (None until the store holds its first vector).
        """
        from .hnsw import MemoryHnsw

        self._live()
        if self._hnsw is None:
            if watch is None:
                watch = self.config.watch_indexes
            self._hnsw = MemoryHnsw.attach(self, dir, dim, watch=watch, progress=progress)
        return self._hnsw.open_report

    @property
    def hnsw_index(self) -> MemoryHnsw | None:
        """The HNSW sidecar, if enabled."""
        return self._hnsw

    def index_status(self) -> list[SidecarStatus]:
        """Status of every sidecar of this store (for ``agentzero store status``)."""
        self._live()
        st = self._hnsw.status() if self._hnsw is not None else None
        return [st] if st is not None else []

    def rebuild_index(self, name: str | None = None, progress: Progress | None = None) -> list[str]:
        """Rebuild sidecars from the database (all, or the one named, e.g. "hnsw")."""
        self._live()
        if name not in (None, "hnsw", "memory.hnsw"):
            raise InvalidArgumentError(f"no index named {name!r}", hint="the memory index is hnsw")
        if self._hnsw is None:
            self.enable_hnsw_index(progress=progress)
        assert self._hnsw is not None
        return ["hnsw"] if self._hnsw.rebuild(progress) else []

    def purge_index(self) -> bool:
        """Drop deleted rows from the HNSW sidecar, in memory and in its checkpoint file
        (enabling the sidecar if its default directory exists): what an erase needs,
        at the cost of one checkpoint instead of ``rebuild_index``'s re-adding every
        vector. False if there is no index."""
        self._live()
        if self._hnsw is None:
            if not Layout(self.data_dir).memory_hnsw.is_dir():
                return False
            self.enable_hnsw_index()
        assert self._hnsw is not None
        return self._hnsw.purge_deleted()

    @contextlib.contextmanager
    def deferred_index_checkpoints(self) -> Iterator[None]:
        """Within the block no sidecar checkpoint is written as changes accumulate; one
        is at its end if due (see ``MemoryHnsw.deferred_checkpoints``)."""
        if self._hnsw is None:
            yield
            return
        with self._hnsw.deferred_checkpoints():
            yield

    def _sync_indexes(self) -> None:
        # After the commit: the write is already durable; the index follows the feed.
        if self._hnsw is not None:
            self._hnsw.sync()

    # ----------------------------------------------------------------- writes
    def append_many(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> list[str]:
        """Store many entries in one transaction (all or none); returns their ids."""
        with self._writer():
            ids = write.append_many(
                self._live(), entries, vectors, embedder=self.embedder, now=self._clock()
            )
            self._acknowledge()
        self._sync_indexes()
        return ids

    def prepare(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> write.Prepared:
        """Entries made ready for ``WriteTx.insert``: validated, ids chosen, vectors
        computed by the store's embedder unless given. Call outside the transaction."""
        return write.prepare(
            self._live(), entries, vectors, embedder=self.embedder, now=self._clock()
        )

    @contextlib.contextmanager
    def transaction(self) -> Iterator[WriteTx]:
        """One write transaction for a layer that keeps its own tables in ``memory.db``.

        Holds the data dir's writer role; memory rows inserted or deleted through the
        ``WriteTx`` and the caller's own statements commit together. After the commit the
        write is acknowledged in the ledger and the indexes follow the change feed.
        """
        with self._writer():
            with self._live().tx() as c:
                tx = WriteTx(c)
                yield tx
                tx.finish()
            if tx.wrote:
                self._acknowledge()
        if tx.rows_changed:
            self._sync_indexes()

    def delete(self, entry_id: str) -> bool:
        """Delete one entry (content overwritten on disk: secure_delete). True if it existed."""
        return self._delete_where("id = ?", (check_text("id", entry_id),)) > 0

    def _forget_scope(self, scope: Scope) -> int:
        where, params = scope_where(scope, now_us=None)
        return self._delete_where(where, params)

    def gc_expired(self) -> int:
        """Delete entries whose expiry has passed; returns how many."""
        return self._delete_where(
            "expires_at_us IS NOT NULL AND expires_at_us <= ?", (to_us(self._clock()),)
        )

    def _writer(self) -> WriterLock:
        # The data dir's writer role, held only while writing (readers never wait for it).
        return acquire_writer(
            self.data_dir, timeout=self.config.writer_lock_timeout_s, purpose="memory write"
        )

    def _acknowledge(self) -> None:
        # After the commit returned (the write is durable): the ledger now says memory.db
        # holds at least this seq, so a later rollback (a lost WAL) is detected on open.
        if self._acks is not None:
            self._acks.acknowledge(memory_seq(self._db))

    def _delete_where(self, where: str, params: Sequence[Any]) -> int:
        with self._writer():
            n = write.delete_where(self._live(), where, params)
            if n:
                self._acknowledge()
        if n:
            self._sync_indexes()
        return n

    # ----------------------------------------------------------------- reads
    def get(self, entry_id: str) -> MemoryEntry | None:
        """The live entry with this id, or None (also for deleted or expired entries)."""
        now = to_us(self._clock())
        rows = self._live().query(
            f"SELECT {COLUMNS} FROM memory WHERE id = ? "
            "AND (expires_at_us IS NULL OR expires_at_us > ?)",
            (check_text("id", entry_id), now),
        )
        return row_to_entry(rows[0]) if rows else None

    def recent(
        self,
        limit: int = 20,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryEntry]:
        """The newest live entries in a scope, newest first."""
        where, params = scope_where(Scope(org_id, agent_id, conversation_id), self._now_us())
        rows = self._live().query(
            f"SELECT {COLUMNS} FROM memory WHERE {where} "
            "ORDER BY created_at_us DESC, label DESC LIMIT ?",
            (*params, positive(limit)),
        )
        return [row_to_entry(r) for r in rows]

    def count(
        self,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Number of live entries in a scope."""
        where, params = scope_where(Scope(org_id, agent_id, conversation_id), self._now_us())
        return int(self._live().query(f"SELECT count(*) FROM memory WHERE {where}", params)[0][0])

    def scopes(self) -> list[tuple[str, str, int]]:
        """Every (org_id, agent_id) holding live memories, with how many, in order (one
        walk of the scope index)."""
        rows = self._live().query(
            "SELECT org_id, agent_id, count(*) FROM memory"
            " WHERE expires_at_us IS NULL OR expires_at_us > ?"
            " GROUP BY org_id, agent_id ORDER BY org_id, agent_id",
            (self._now_us(),),
        )
        return [(str(o), str(a), int(n)) for o, a, n in rows]

    def entries_after(
        self, label: int, limit: int
    ) -> list[tuple[int, MemoryEntry, npt.NDArray[np.float32] | None]]:
        """Up to ``limit`` live entries stored after ``label``, in the order they were
        stored, each as (label, entry, its vector or None): a whole store read page by
        page (``ops.migrate``). Labels are this store's own; another store's differ."""
        rows = rows_after(self._live(), label, positive(limit), self._now_us())
        return [
            (
                int(r[0]),
                row_to_entry(r[:-1]),
                None if r[-1] is None else np.frombuffer(bytes(r[-1]), dtype=np.float32),
            )
            for r in rows
        ]

    def semantic_recall(
        self,
        query_vector: Any,
        limit: int = 5,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        k: int | None = None,
    ) -> list[MemoryHit]:
        """The ``limit`` live entries in scope most similar (cosine) to ``query_vector``
        (``k=`` is the deprecated name of ``limit``)."""
        n = positive(result_count(limit, k, "semantic_recall"))
        return self._semantic(query_vector, n, Scope(org_id, agent_id, conversation_id))

    def _semantic(self, query_vector: Any, k: int, scope: Scope) -> list[MemoryHit]:
        db = self._live()
        dim = self._vector_dim()
        if dim is None:
            return []  # no vector stored yet
        q = as_vector(query_vector, dim)
        return recall.semantic(db, self._hnsw, q, k, scope, self._now_us())

    def keyword_recall(
        self,
        query_text: str,
        limit: int = 5,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        k: int | None = None,
    ) -> list[MemoryHit]:
        """BM25 keyword recall through the encrypted FTS5 index, scoped, best first
        (``k=`` is the deprecated name of ``limit``)."""
        return recall.keyword(
            self._live(),
            check_text("query text", query_text),
            positive(result_count(limit, k, "keyword_recall")),
            Scope(org_id, agent_id, conversation_id),
            self._now_us(),
        )

    def hybrid_recall(
        self,
        query_text: str,
        query_vector: Any = None,
        limit: int = 5,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """Semantic and keyword recall fused with weighted Reciprocal Rank Fusion
        (``StoreConfig.recall_seed_k`` and the semantic and keyword weights: tuned on the
        LoCoMo dev half, where it beats either signal alone; k=60 did not).

        Each signal contributes ``limit * hybrid_candidates_factor`` candidates; results are
        deduplicated on a content fingerprint. Without ``query_vector`` the store's
        embedder embeds ``query_text``.
        """
        limit = positive(limit)
        check_text("query text", query_text)
        scope = Scope(org_id, agent_id, conversation_id)
        if query_vector is None:
            query_vector = self.embed_query(query_text)
        dim = self._vector_dim()
        return recall.hybrid(
            self._live(),
            self._hnsw,
            None if dim is None else as_vector(query_vector, dim),  # None: no vector stored yet
            query_text,
            scope,
            self._now_us(),
            candidates=limit * self.config.hybrid_candidates_factor,
            limit=limit,
            rrf_k=self.config.recall_seed_k,
            weights={
                "semantic": self.config.weight_semantic,
                "keyword": self.config.weight_keyword,
            },
        )

    def embed_query(self, text: str) -> Vector:
        """Embed one query text with the store's embedder."""
        write.check_embedder(self._live(), self.embedder)
        assert self.embedder is not None
        vector: Vector = self.embedder.embed([check_text("query text", text)])[0]
        return vector

    # ----------------------------------------------------------------- change feed
    def source_seq(self) -> int:
        """The seq of the newest change (0 for an empty store)."""
        return self.feed.source_seq()

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with seq > ``seq``, oldest first, at most ``limit`` (see ``MemoryFeed``)."""
        return self.feed.changes_since(seq, limit)

    def vector_count(self) -> int:
        """Number of rows (an upper bound on rows holding a vector; index-only, cheap)."""
        return self.feed.vector_count()

    def vectors_after(self, label: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (label, float32 bytes) with label > ``label``, by label."""
        return self.feed.vectors_after(label, limit)

    def iter_vectors(self, batch: int = 10_000) -> Iterable[tuple[int, list[int], bytes]]:
        """Every stored vector in batches: (seq covered, labels, float32 bytes)."""
        return self.feed.iter_vectors(batch)


__all__ = ["Change", "Clock", "RecallMode", "SqliteMemoryStore"]
