"""``PgMemoryStore``: the memory store's public API on PostgreSQL + pgvector.

The server never sees the text: content and metadata are sealed on the client
(``rows``), keyword search runs over keyed hashes of stemmed terms, and the key header
lives in a table (``az_keys``) in the format of a data dir's keys.json, unwrapped by the
same code (``storage.keys``). What the server does see: vectors, scope ids, times, and
term-hash statistics.

Many clients may write at once: there is no file lock; transactions and constraints keep
the invariants (see ``write``). A layer above (the agent memory) gets shared write
transactions (``transaction``, ``tx.PgWriteTx``). What the SQLite store offers beyond
that (its HNSW sidecar, change feed) raises ``UnsupportedByBackendError`` here, never a
silent no-op.

A handle keeps the keys it unlocked; a key rotation by another client makes them stale.
Every write transaction shares the key lock and checks the key version first, and a
read that a rotation may have overtaken raises ``KeyRotatedError`` rather than a
tampered-record error or an empty result (``keyguard``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ...base.config import StoreConfig
from ...base.errors import (
    AgentZeroStoreError,
    EmbedderMismatchError,
    NoEmbedderError,
    StoreClosedError,
    StoreExistsError,
    StoreIOError,
    StoreNotFoundError,
    WrongKeyError,
)
from ...base.limits import check_text
from ...embed.vectors import Embedder, Vector
from ...sidecar.bm25_terms import BlindTerms
from ...storage.credentials import resolve_credential
from ...storage.key_header import parse_header
from ...storage.keys import StoreKeys, new_header, unlock_header
from ..backfill import Backfill
from ..front import StoreFront, result_count
from ..records import MemoryEntry, MemoryHit, Scope
from ..rows import positive
from ..seam import Capability
from . import export, keyguard, recall, schema, write
from .backfill import PgBackfill, without_vector
from .rows import COLUMNS, RowCodec
from .sqlite_only import SqliteOnlyParts
from .tx import PgWriteTx

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg

# psycopg is imported where a connection is made, not with the package: it costs ~0.1-0.2 s,
# which every ``import agentzero_store`` (the CLI's cold start) would pay for nothing.

Clock = Callable[[], datetime]
T = TypeVar("T")
WRITE_ATTEMPTS = 5  # a write transaction PostgreSQL aborted to break a deadlock is re-run
EF_SEARCH_MAX = 1_000  # pgvector's upper bound of hnsw.ef_search


def _utcnow() -> datetime:
    return datetime.now(UTC)


def redact(url: str) -> str:
    """``url`` without its password (for messages and reprs)."""
    import psycopg
    from psycopg import conninfo

    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://<unparsable url>"
    host, port, db = parts.get("host", ""), parts.get("port", ""), parts.get("dbname", "")
    return f"postgresql://{host}{':' + str(port) if port else ''}/{db}"


@contextlib.contextmanager
def _translated(where: str) -> Iterator[None]:
    """PostgreSQL's errors as the store's typed ones (never raw ``psycopg`` errors)."""
    import psycopg

    try:
        yield
    except AgentZeroStoreError:
        raise
    except psycopg.OperationalError as exc:
        raise StoreIOError(
            f"PostgreSQL at {where} failed: {str(exc).strip().splitlines()[0]}",
            hint="check that the server is running and reachable, and the URL",
        ) from exc
    except psycopg.Error as exc:
        raise StoreIOError(
            f"PostgreSQL at {where} refused an operation: {type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
            hint="the transaction was rolled back: nothing of this call was written; "
            "check the server's log and the role's privileges",
        ) from exc


def _unlock(header: Mapping[str, Any], cred: Any, where: str) -> StoreKeys:
    """The keys ``header`` gives ``cred``; ``WrongKeyError`` (nothing written) if none."""
    try:
        keys, _slot = unlock_header(header, cred, where=where, path="az_keys")
    except WrongKeyError as exc:
        raise WrongKeyError(
            exc.message,
            hint="check the passphrase or key; no row in the database was changed",
        ) from None
    return keys


class PgMemoryStore(StoreFront, SqliteOnlyParts):
    """Encrypted conversation memory in PostgreSQL, with semantic, keyword and hybrid
    recall: the same public API as ``SqliteMemoryStore``."""

    # Beyond the seam's MemoryStore (memory/seam.py): the vector index built once after a
    # bulk load. The SQLite store's extras answer with a typed refusal (SqliteOnlyParts).
    capabilities: frozenset[Capability] = frozenset({"bulk_load"})
    _erase_all_hint = "to erase everything, drop the database"

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        keys: StoreKeys,
        url: str,
        *,
        embedder: Embedder | None,
        config: StoreConfig,
        clock: Clock,
        key_version: int = 0,
    ) -> None:
        self._conn = conn
        self._keys = keys
        self.url = redact(url)
        self.embedder = embedder
        self.config = config
        self._clock = clock
        self._closed = False
        self._key_version = key_version  # the version of the master key ``keys`` holds
        self._guarded = False  # in a write transaction that checked the key version
        self._rotation_heard = False  # a rotation's notification came in (``keyguard``)
        conn.add_notify_handler(self._heard)
        self._codec = RowCodec(keys, on_fail=self.check_key_version)
        self._terms = BlindTerms(keys.subkey("pg-bm25-terms"))
        self._dim: int | None = None
        self._exact = False  # hnsw=False: exact semantic recall, never the HNSW index
        self._defer_index = False  # in bulk_load(): the HNSW index is built at the end
        self.backfill: Backfill | None = None  # set by open() when it runs

    def __repr__(self) -> str:
        return f"PgMemoryStore({self.url!r})"

    @classmethod
    def open(
        cls,
        url: str,
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
        key_header: Mapping[str, Any] | None = None,
    ) -> PgMemoryStore:
        """Open (or create) the memory store in the PostgreSQL database at ``url``.

        The credential is checked against the key header in ``az_keys`` before anything
        is written: a wrong one raises ``WrongKeyError`` and no row changes. The database
        must exist and allow ``CREATE EXTENSION vector`` (pgvector >= 0.8) on create.
        ``hnsw``: None or True, pgvector's HNSW index serves semantic recall; False,
        semantic recall is exact (a scan of the scope's vectors, as ``SqliteMemoryStore``
        with ``hnsw=False``); the index is kept up to date either way.
        ``key_header``: create the store with this existing key header (a data dir's
        keys.json, parsed) instead of a fresh one, so a store moved between backends
        keeps its store id and master key and opens with the same credentials; a
        database that already holds a store must hold that same store.
        """
        config = config or StoreConfig()
        cred = resolve_credential(
            passphrase=passphrase, key=key, key_file=key_file, prompt=prompt, confirm=False
        )
        import psycopg

        where = redact(url)
        with _translated(where):
            conn = psycopg.connect(url, autocommit=True)
        try:
            with _translated(where):
                # Listening before the key header is read: a rotation that commits after
                # the read is always heard. (A hot standby refuses LISTEN; nothing is
                # written there, and values that do not open are still checked.)
                with contextlib.suppress(psycopg.errors.ReadOnlySqlTransaction):
                    keyguard.listen(conn)
                keys, version = cls._unlock_or_create(conn, cred, where, create, config, key_header)
        except BaseException:
            conn.close()
            raise
        store = cls(
            conn,
            keys,
            url,
            embedder=embedder,
            config=config,
            clock=clock or _utcnow,
            key_version=version,
        )
        store._exact = hnsw is False
        if embedder is not None and config.backfill_batch > 0:
            # Memories stored without a vector get one, off the hot path, on a
            # connection of the thread's own (``backfill``).
            work = PgBackfill(store.sibling)
            store.backfill = Backfill(work.step, config.backfill_batch, work.close)
            store.backfill.start()
        return store

    @staticmethod
    def exists(url: str) -> bool:
        """Whether the database at ``url`` holds a memory store (no credential needed:
        it reads only whether the key table is there)."""
        import psycopg

        with _translated(redact(url)), psycopg.connect(url, autocommit=True) as conn:
            return schema.exists(conn)

    @staticmethod
    def _unlock_or_create(
        conn: psycopg.Connection[Any],
        cred: Any,
        where: str,
        create: bool,
        config: StoreConfig,
        key_header: Mapping[str, Any] | None,
    ) -> tuple[StoreKeys, int]:
        """The keys ``cred`` unlocks and their key version (``keyguard``)."""
        if not schema.exists(conn):
            if not create:
                raise StoreNotFoundError(
                    f"no memory store in {where}",
                    hint="open it with create=True, or check the URL",
                )
            with conn.transaction():
                # Two clients creating at once: the second waits here, then unlocks the
                # first one's header instead of writing its own.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (schema.SCHEMA_LOCK,))
                if not schema.exists(conn):
                    if key_header is None:
                        keys, header = new_header(cred, kdf=config.kdf)
                    else:  # unlocked first: a header the credential cannot open is refused
                        header = dict(key_header)
                        keys = _unlock(header, cred, where)
                    schema.create(conn, json.dumps(header, sort_keys=True), keys.store_id)
                    return keys, 0
        # Read only until the credential fits: a wrong one changes no row. The header and
        # its key version come from one snapshot (a rotation in between cannot split them).
        raw, version = keyguard.read_header(conn)
        keys = _unlock(parse_header(raw, "az_keys"), cred, where)
        schema.check(conn, keys.store_id)
        if key_header is not None and key_header.get("store_id") != keys.store_id:
            raise StoreExistsError(
                f"{where} already holds another memory store ({keys.store_id})",
                hint="migrate into an empty database, or into the one this store was "
                "migrated to before",
            )
        # Only now, with the credential checked: a wrong one changes no row.
        schema.upgrade(conn)
        return keys, version

    # ----------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Close the connection. Further calls raise ``StoreClosedError``."""
        if not self._closed:
            if self.backfill is not None:
                self.backfill.stop()  # its batch in hand commits or not, whole
            self._closed = True
            self._conn.close()

    def _live(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise StoreClosedError("the memory store is closed")
        return self._conn

    @contextlib.contextmanager
    def _tx(
        self, *, write: bool = False, snapshot: bool = False
    ) -> Iterator[psycopg.Connection[Any]]:
        """One transaction, with PostgreSQL's errors translated (nested: a savepoint).

        ``write``: the key lock is shared and the key version checked first, so nothing
        is written under a rotated key (``KeyRotatedError``, rolled back). A read checks
        at its end whether a rotation was heard meanwhile. ``snapshot``: one read-only
        REPEATABLE READ snapshot for every statement (outermost only)."""
        conn = self._live()
        from psycopg.pq import TransactionStatus

        outer = conn.info.transaction_status == TransactionStatus.IDLE
        guard = write and not self._guarded
        with _translated(self.url):
            try:
                with conn.transaction():
                    if snapshot:
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    if guard:
                        keyguard.enter_write(conn, self._key_version)
                        self._guarded = True
                    yield conn
            finally:
                if guard:  # the lock goes with the transaction (or the savepoint's rollback)
                    self._guarded = False
            if outer and not write:
                self._check_heard()

    def _heard(self, notify: Any) -> None:
        """psycopg calls this with each notification the connection receives."""
        if notify.channel == keyguard.CHANNEL:
            self._rotation_heard = True

    def _check_heard(self) -> None:
        """After a read: if a rotation was announced, confirm it with the key version
        (``KeyRotatedError``); a notification that changed nothing is forgotten."""
        if self._rotation_heard:
            keyguard.check(self._live(), self._key_version)
            self._rotation_heard = False

    def check_key_version(self) -> None:
        """``KeyRotatedError`` if the store's master key was rotated since this handle
        unlocked it. The codecs call it when a sealed value fails to open: under a
        rotated key that is not tampering. (Inside a write transaction the version was
        checked under the key lock already: a value that does not open is damaged.)"""
        if self._guarded:
            return
        with _translated(self.url):
            keyguard.check(self._live(), self._key_version)

    @property
    def key_version(self) -> int:
        """The version of the master key this handle unlocked (bumped by each rotation)."""
        return self._key_version

    @property
    def store_id(self) -> str:
        """Random id of this store (from the key header)."""
        return self._keys.store_id

    @property
    def keys(self) -> StoreKeys:
        """The unlocked keys."""
        return self._keys

    def key_header(self) -> dict[str, Any]:
        """The key header in ``az_keys`` (the keys.json format: wrapped keys, no secret)."""
        with self._tx() as c:
            return parse_header(schema.read_header(c), "az_keys")

    def embedding_info(self) -> tuple[str | None, int | None]:
        """(model id, dimension) of the vectors stored so far, or (None, None)."""
        with self._tx() as c:
            meta = schema.get_meta(c)
        dim = meta.get("embedding_dim")
        return meta.get("embedding_model"), int(dim) if dim else None

    def without_vector(self) -> int:
        """How many live memories have no vector (``backfill``)."""
        return without_vector(self)

    def sibling(self) -> PgMemoryStore:
        """This store on a connection of its own (same database, keys, embedder and
        settings): for work in another thread (``backfill``). Close it when done."""
        import psycopg

        info = self._live().info
        with _translated(self.url):
            # The password the handle connected with (psycopg keeps it), never stored here.
            conn = psycopg.connect(info.dsn, password=info.password, autocommit=True)
        try:
            with _translated(self.url):
                keyguard.listen(conn)
        except BaseException:
            conn.close()
            raise
        twin = PgMemoryStore(
            conn,
            self._keys,
            self.url,
            embedder=self.embedder,
            config=self.config,
            clock=self._clock,
            key_version=self._key_version,
        )
        twin._exact, twin._defer_index = self._exact, self._defer_index
        return twin

    def _vector_dim(self) -> int | None:
        if self._dim is None:  # never changes once set
            self._dim = self.embedding_info()[1]
        return self._dim

    def _check_embedder(self) -> str:
        if self.embedder is None:
            raise NoEmbedderError("this call needs an embedder and the store has none")
        model, dim = self.embedding_info()
        e = self.embedder
        if (model and model != e.model_id) or (dim and dim != e.dimension):
            raise EmbedderMismatchError(
                f"this store's vectors were built with {model} ({dim}-d); "
                f"the configured embedder is {e.model_id} ({e.dimension}-d)",
                hint=f"open the store with {model}",
            )
        return e.model_id

    # ----------------------------------------------------------------- a layer above
    # What a layer with its own tables (the agent memory) needs: its statements in the
    # store's transactions, with memory rows written exactly as the store writes them.
    @property
    def row_codec(self) -> RowCodec:
        """Seals and opens this store's memory rows."""
        return self._codec

    @property
    def blind_terms(self) -> BlindTerms:
        """The keyed hashes of stemmed terms the keyword index holds."""
        return self._terms

    def prepare(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> write.Batch:
        """Validate ``entries``, choose their ids and compute their vectors, outside any
        transaction, for ``PgWriteTx.insert``."""
        self._live()
        model = self._check_embedder() if vectors is None and self.embedder else None
        return write.prepare(
            entries, vectors, embedder=self.embedder, model_id=model, now=self._clock()
        )

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PgWriteTx]:
        """One write transaction shared with a layer's own tables (committed when the
        block ends, rolled back if it raises)."""
        with self._tx(write=True) as c:
            yield PgWriteTx(c, self._codec, self._terms, vector_index=not self._defer_index)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[PgWriteTx]:
        """One read-only transaction whose statements all read one snapshot (REPEATABLE
        READ), for a read made of several statements that must agree. Not nested."""
        with self._tx(snapshot=True) as c:
            yield PgWriteTx(c, self._codec, self._terms)

    def query_no_rows(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement that returns no rows (maintenance: ``ANALYZE``), on its
        own."""
        conn = self._live()
        with _translated(self.url):
            conn.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one read statement (``%s`` parameters), its own transaction (one
        statement on the autocommit connection: one round trip, not three)."""
        conn = self._live()
        with _translated(self.url):
            rows: list[Any] = conn.execute(sql, params).fetchall()
            self._check_heard()
        return rows

    def nearest(
        self, query_vector: Any, k: int, scope: Scope, now_us: int, *, exact: bool = False
    ) -> list[tuple[int, float]]:
        """Up to ``k`` (label, cosine) nearest ``query_vector`` in ``scope``, unexpired,
        best first (pgvector's HNSW index unless ``exact`` or the store was opened with
        ``hnsw=False``)."""
        q = self._query_vector(query_vector)
        if q is None:
            return []
        k = positive(k)
        # Pipelined: BEGIN, the two SET LOCALs and the query go out in one round trip.
        with self._tx() as c, c.pipeline():
            return recall.semantic_scored(
                c, q, k, scope, now_us, self._ef_search(k), exact=exact or self._exact
            )

    def keyword_scored(
        self, terms: Sequence[str], k: int, scope: Scope, now_us: int
    ) -> list[tuple[int, float]]:
        """Up to ``k`` (label, BM25 score) of blinded ``terms`` (``blind_terms``) in
        ``scope``, unexpired at ``now_us``, best first."""
        with self._tx() as c:
            return recall.keyword_scored(c, terms, k, scope, now_us)

    def connection(self) -> psycopg.Connection[Any]:
        """The open connection (autocommit; ``transaction`` for writes), for a layer's
        schema migrations."""
        return self._live()

    # ----------------------------------------------------------------- writes
    def append_many(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> list[str]:
        """Store many entries in one transaction (all or none); returns their ids.

        A re-send of a stored memory with its id writes nothing and succeeds; any other
        reuse of an id raises ``DuplicateIdError`` and writes nothing of the batch.
        """
        self._live()
        model = self._check_embedder() if vectors is None and self.embedder else None
        batch = write.prepare(
            entries, vectors, embedder=self.embedder, model_id=model, now=self._clock()
        )
        if not batch.entries:
            return []
        index = not self._defer_index
        return self._write(
            lambda c: write.insert(c, batch, self._codec, self._terms, vector_index=index)
        )

    @contextlib.contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many vectors into a store that has none yet, then build the HNSW index
        once (pgvector builds it far faster than it updates it row by row).

        If the store already has its index, this changes nothing. Otherwise the index is
        made when the block ends without an error; until then (or after a crash: run
        the load again) semantic recall scans the vectors exactly (right, but slower).
        Building it needs the table's owner, as fixing the dimension does.
        """
        with self._tx() as c:
            indexed = schema.has_vector_index(c)
        if indexed:
            yield
            return
        self._defer_index = True
        try:
            yield
        finally:
            self._defer_index = False
        with self._tx() as c:
            if schema.get_meta(c).get("embedding_dim") is not None:
                schema.create_vector_index(c)

    def delete(self, entry_id: str) -> bool:
        """Delete one entry and its terms. True if it existed."""
        return self._delete_where("id = %s", (check_text("id", entry_id),)) > 0

    def _forget_scope(self, scope: Scope) -> int:
        where, params = recall.scope_where(scope, now_us=None)
        return self._delete_where(where, params)

    def gc_expired(self) -> int:
        """Delete entries whose expiry has passed; returns how many."""
        return self._delete_where(
            "expires_at_us IS NOT NULL AND expires_at_us <= %s", (self._now_us(),)
        )

    def _delete_where(self, where: str, params: Sequence[Any]) -> int:
        return self._write(lambda c: write.delete_where(c, where, params))

    def _write(self, body: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run ``body`` in one write transaction, again from the start if PostgreSQL broke
        a deadlock by aborting it (two batches taking the same ids, or forgets of
        overlapping scopes, in different orders): the whole transaction rolled back, so
        running it again is safe, and an acknowledged write never depends on luck."""
        from psycopg import errors

        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self._tx(write=True) as c:
                    return body(c)
            except StoreIOError as exc:
                aborted = errors.DeadlockDetected | errors.SerializationFailure
                if not isinstance(exc.__cause__, aborted) or attempt == WRITE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    # ----------------------------------------------------------------- reads
    def get(self, entry_id: str) -> MemoryEntry | None:
        """The live entry with this id, or None (also for deleted or expired entries)."""
        with self._tx() as c:
            row = c.execute(
                f"SELECT {COLUMNS} FROM az_memory WHERE id = %s"
                " AND (expires_at_us IS NULL OR expires_at_us > %s)",
                (check_text("id", entry_id), self._now_us()),
            ).fetchone()
        return self._codec.open(row) if row is not None else None

    def recent(
        self,
        limit: int = 20,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryEntry]:
        """The newest live entries in a scope, newest first."""
        where, params = recall.scope_where(Scope(org_id, agent_id, conversation_id), self._now_us())
        with self._tx() as c:
            rows = c.execute(
                f"SELECT {COLUMNS} FROM az_memory WHERE {where}"
                " ORDER BY created_at_us DESC, label DESC LIMIT %s",
                (*params, positive(limit)),
            ).fetchall()
        return [self._codec.open(r) for r in rows]

    def count(
        self,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Number of live entries in a scope."""
        where, params = recall.scope_where(Scope(org_id, agent_id, conversation_id), self._now_us())
        with self._tx() as c:
            row = c.execute(f"SELECT count(*) FROM az_memory WHERE {where}", params).fetchone()
        return int(row[0]) if row is not None else 0

    def scopes(self) -> list[tuple[str, str, int]]:
        """Every (org_id, agent_id) holding live memories, with how many, in order."""
        with self._tx() as c:
            return export.scopes(c, self._now_us())

    def entries_after(
        self, label: int, limit: int
    ) -> list[tuple[int, MemoryEntry, npt.NDArray[np.float32] | None]]:
        """Up to ``limit`` live entries stored after ``label``, in the order they were
        stored, each as (label, entry, its vector or None): a whole store read page by
        page (``ops.migrate``). Labels are this store's own; another store's differ."""
        with self._tx() as c:
            rows = export.rows_after(c, label, positive(limit), self._now_us())
        return [(int(r[0]), self._codec.open(r[:-1]), export.vector(r[-1])) for r in rows]

    def _query_vector(self, query_vector: Any) -> str | None:
        dim = self._vector_dim()
        return None if dim is None else write.vector_text(query_vector, dim)

    def _ef_search(self, k: int) -> int:
        # PostgreSQL refuses hnsw.ef_search above 1,000; the iterative scan goes on past
        # it until k rows pass the filter, so a larger k still gets k rows.
        return min(max(4 * k, self.config.hnsw_ef_search_min, 40), EF_SEARCH_MAX)

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
        scope = Scope(org_id, agent_id, conversation_id)
        q = self._query_vector(query_vector)
        if q is None:
            return []  # no vector stored yet
        now = self._now_us()
        with self._tx() as c:
            scored = recall.semantic_scored(
                c, q, n, scope, now, self._ef_search(n), exact=self._exact
            )
            return recall.hits(c, scored, "semantic", scope, now, self._codec)

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
        """BM25 keyword recall over blinded terms, computed by the server, scoped
        (``k=`` is the deprecated name of ``limit``)."""
        n = positive(result_count(limit, k, "keyword_recall"))
        terms = self._terms.query_terms(check_text("query text", query_text))
        scope = Scope(org_id, agent_id, conversation_id)
        now = self._now_us()
        with self._tx() as c:
            scored = recall.keyword_scored(c, terms, n, scope, now)
            return recall.hits(c, scored, "keyword", scope, now, self._codec)

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
        """Semantic and keyword recall fused with weighted Reciprocal Rank Fusion (the
        weights and constant of ``StoreConfig``, as ``SqliteMemoryStore.hybrid_recall``).
        Without ``query_vector`` the store's embedder embeds ``query_text``."""
        limit = positive(limit)
        check_text("query text", query_text)
        scope = Scope(org_id, agent_id, conversation_id)
        if query_vector is None:
            query_vector = self.embed_query(query_text)
        q = self._query_vector(query_vector)
        candidates = limit * self.config.hybrid_candidates_factor
        terms = self._terms.query_terms(query_text)
        now = self._now_us()
        with self._tx() as c:
            sem = (
                recall.semantic_scored(
                    c, q, candidates, scope, now, self._ef_search(candidates), exact=self._exact
                )
                if q is not None
                else []
            )
            kw = recall.keyword_scored(c, terms, candidates, scope, now)
            return recall.fuse(
                c,
                sem,
                kw,
                scope,
                now,
                self._codec,
                limit=limit,
                rrf_k=self.config.recall_seed_k,
                weights={
                    "semantic": self.config.weight_semantic,
                    "keyword": self.config.weight_keyword,
                },
            )

    def embed_query(self, text: str) -> Vector:
        """Embed one query text with the store's embedder."""
        self._live()
        self._check_embedder()
        assert self.embedder is not None
        vector: Vector = self.embedder.embed([check_text("query text", text)])[0]
        return vector


__all__ = ["Clock", "PgMemoryStore", "redact"]
