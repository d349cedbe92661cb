"""``ItemStore``: a sealed key–value store of JSON items with namespaces, in a data dir.

Items are (namespace, key) → a JSON object (and optional bytes), with creation and
update times, an optional time to live, optional vectors per field (cosine similarity,
exact, one dimension per collection) and optional text for keyword search. They live in
``memory.db`` beside the memories (``schema``), so SQLCipher encrypts every byte, the
data dir's key rotation, backup and verify cover them, and every write takes the data
dir's writer role and is acknowledged in its ledger like any other.

A *collection* keeps one user's items apart from another's in one data dir (a LangGraph
store, a LangChain vector store, a checkpointer): each sees only its own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from ..base.config import StoreConfig
from ..base.errors import InvalidArgumentError, StoreClosedError
from ..base.limits import MAX_RESULTS, check_limit
from ..memory.records import to_us
from ..memory.sqlite.store import SqliteMemoryStore
from . import schema
from .batch import ItemBatch, check_vectors
from .filters import check_filter, matches
from .namespaces import NamespaceMatch, list_namespaces
from .records import (
    Item,
    ItemHit,
    Namespace,
    check_key,
    check_namespace,
    check_segment,
    ns_text,
)
from .repository import ItemRepository, Order, row_to_item
from .search import Page, ranked_page
from .vector_cache import VectorCache

Clock = Callable[[], datetime]
Ranking = Literal["vector", "hybrid"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ItemStore:
    """The items of one collection in a data dir's ``memory.db``."""

    def __init__(
        self,
        store: SqliteMemoryStore,
        collection: str = "default",
        *,
        clock: Clock | None = None,
        _own_store: bool = False,
    ) -> None:
        if not isinstance(store, SqliteMemoryStore):
            raise InvalidArgumentError(
                f"ItemStore needs a SqliteMemoryStore, got {type(store).__name__}",
                hint="ItemStore.open(data_dir, ...) opens one",
            )
        check_segment(collection, "collection")
        if not collection:
            raise InvalidArgumentError("the collection name must not be empty")
        self._store = store
        self._own = _own_store
        self._clock = clock or _utcnow
        self._closed = False
        self.collection = collection
        schema.migrate(store)
        self._repo = ItemRepository(store, collection)
        self._vectors = VectorCache()

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        collection: str = "default",
        passphrase: str | None = None,
        key: bytes | str | None = None,
        key_file: Path | str | None = None,
        create: bool = True,
        config: StoreConfig | None = None,
        clock: Clock | None = None,
        prompt: bool | None = False,
    ) -> ItemStore:
        """Open (or, with ``create``, create) the data dir and the item tables in it.

        Args:
            data_dir: The data dir (``~`` is expanded).
            collection: The item collection (a store may hold several, each with its
                own vector dimension).
            passphrase: The store's passphrase (or give ``key`` or ``key_file``).
            key: A raw 32-byte key, or its hex.
            key_file: A file holding the key.
            create: Create the data dir when it does not exist.
            config: Tuning (KDF, lock timeouts).
            clock: What "now" is, for TTLs (tests pass a fixed clock).
            prompt: Ask for a passphrase on the terminal when none is given.

        Returns:
            The open item store; ``close`` closes the memory store it opened.

        Raises:
            WrongKeyError: The credential does not open this store; no byte under the
                data dir changes (it is checked first).
            StoreNotFoundError: ``create`` is false and there is no store.
            InvalidArgumentError: An invalid collection name.
        """
        store = SqliteMemoryStore.open(
            data_dir,
            passphrase=passphrase,
            key=key,
            key_file=key_file,
            create=create,
            config=config,
            prompt=prompt,
            hnsw=False,  # items never touch memory rows: no vector index to keep in step
        )
        try:
            return cls(store, collection, clock=clock, _own_store=True)
        except BaseException:
            store.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    @property
    def store(self) -> SqliteMemoryStore:
        """The memory store the items live in."""
        return self._store

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._closed

    def close(self) -> None:
        """Close the handle (and the memory store if ``open`` opened it). Idempotent;
        any later call raises ``StoreClosedError``."""
        if not self._closed:
            self._closed = True
            if self._own:
                self._store.close()

    def __enter__(self) -> ItemStore:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _now(self) -> int:
        if self._closed:
            raise StoreClosedError(
                "the item store is closed", hint="open it again with ItemStore.open(...)"
            )
        if self._clock is _utcnow:  # the usual clock, without building a datetime
            return time.time_ns() // 1000
        return to_us(self._clock())

    # ------------------------------------------------------------------ writes
    @contextlib.contextmanager
    def batch(self) -> Iterator[ItemBatch]:
        """``with items.batch() as b: b.put(...); b.delete(...)`` — every write of the
        block commits together when it ends, or none if it raises (or the process dies)."""
        now = self._now()
        with self._store.transaction() as tx:
            yield ItemBatch(self._repo, tx, now)

    def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        data: bytes | None = None,
        vectors: Mapping[str, Sequence[float]] | None = None,
        text: str | None = None,
        ttl: float | None = None,
        if_absent: bool = False,
    ) -> bool:
        """Store one item, durable when it returns (one ``batch`` of one ``put``).

        Args:
            namespace: The item's namespace, a non-empty tuple of names.
            key: Its key within the namespace.
            value: A JSON object (sealed in ``memory.db``).
            data: Bytes kept beside the value.
            vectors: Field name → vector, for similarity search (every vector has the
                collection's dimension, fixed by its first vector).
            text: Words for keyword (hybrid) search.
            ttl: Seconds until the item expires (None: never).
            if_absent: Write only if no live item is at (namespace, key).

        Returns:
            Whether it was written (False only with ``if_absent`` and an item there).

        Raises:
            InvalidArgumentError: An empty namespace or key, a value that is not a JSON
                object, a non-finite vector or a negative ``ttl``.
            DimensionMismatchError: A vector of another dimension than the collection's.
            StoreClosedError: The item store was closed.
        """
        with self.batch() as b:
            return b.put(
                namespace,
                key,
                value,
                data=data,
                vectors=vectors,
                text=text,
                ttl=ttl,
                if_absent=if_absent,
            )

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        """Delete one item; whether there was one. Its bytes are zeroed in memory.db's
        pages (``secure_delete``)."""
        with self.batch() as b:
            return b.delete(namespace, key)

    def delete_under(self, prefix: Sequence[str], *, exact: bool = False) -> int:
        """Delete every item in ``prefix`` and (unless ``exact``) under it; how many."""
        with self.batch() as b:
            return b.delete_under(prefix, exact=exact)

    def sweep_expired(self) -> int:
        """Delete the collection's expired items (reads never return them anyway);
        how many."""
        now = self._now()
        with self._store.transaction() as tx:
            return self._repo.sweep(tx, now)

    # ------------------------------------------------------------------ reads
    def get(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool = False) -> Item | None:
        """The live item at (namespace, key).

        Args:
            namespace: The item's namespace.
            key: Its key.
            refresh_ttl: Restart the item's time to live, if it has one.

        Returns:
            The item, or None when there is none (also when it expired).
        """
        return self.get_many([(namespace, key)], refresh_ttl=refresh_ttl)[0]

    def get_many(
        self, refs: Sequence[tuple[Sequence[str], str]], *, refresh_ttl: bool = False
    ) -> list[Item | None]:
        """The live item of each (namespace, key), or None, in order. ``refresh_ttl``
        restarts the time to live of the items found that have one."""
        checked = [(check_namespace(ns), check_key(k)) for ns, k in refs]
        now = self._now()
        rows = self._repo.get(checked, now)
        found = [rows.get((ns_text(ns), k)) for ns, k in checked]
        if refresh_ttl:
            self._refresh([r for r in found if r is not None], now)
        return [row_to_item(r) if r is not None else None for r in found]

    def _refresh(self, rows: Sequence[Sequence[Any]], now: int) -> None:
        ids = [int(r[0]) for r in rows if r[8] is not None]
        if ids:
            with self._store.transaction() as tx:
                self._repo.refresh(tx, ids, now)

    def scan(
        self,
        namespace: Sequence[str] = (),
        *,
        exact: bool = False,
        order: Order = "-updated",
        before: str | None = None,
        after: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Item]:
        """Live items in ``namespace`` (exactly) or under it, in ``order`` (newest update
        first, or by key), keys strictly between ``after`` and ``before``, that match
        ``filter`` (``filters``); ``offset`` of them skipped, at most ``limit``."""
        ns = check_namespace(namespace, allow_empty=True, what="namespace prefix")
        flt = check_filter(filter)
        lim = None if limit is None else check_limit(limit)
        off = _offset(offset)
        now = self._now()
        if flt is None:
            want = None if lim is None else lim + off
            rows = self._repo.scan(
                ns, now, exact=exact, order=order, before=before, after=after, limit=want
            )
            return [row_to_item(r) for r in rows[off:]]
        out: list[Item] = []
        seen = 0
        for r in self._repo.scan(ns, now, exact=exact, order=order, before=before, after=after):
            item = row_to_item(r)
            if not matches(item.value, flt):
                continue
            seen += 1
            if seen > off:
                out.append(item)
                if lim is not None and len(out) >= lim:
                    break
        return out

    def search(
        self,
        prefix: Sequence[str] = (),
        *,
        filter: Mapping[str, Any] | None = None,
        vector: Sequence[float] | None = None,
        text: str | None = None,
        ranking: Ranking = "vector",
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool = False,
    ) -> list[ItemHit]:
        """Live items under ``prefix`` that match ``filter``, best first.

        Args:
            prefix: A namespace prefix (``()``: the whole collection).
            filter: Conditions on the value's fields (``items.filters``: equality, or
                ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``).
            vector: Rank by the cosine similarity of each item's best field vector to
                this one (the hit's ``score``), then the items with no vector, newest
                first. Without it: newest update first, no score.
            text: With ``ranking="hybrid"``: the query words for BM25.
            ranking: ``"vector"`` or ``"hybrid"`` (the reciprocal-rank fusion of the
                similarity and the BM25 of ``text``; the score stays the cosine).
            limit: How many hits at most.
            offset: How many to skip first.
            refresh_ttl: Restart the time to live of the items returned.

        Returns:
            The hits, best first.

        Raises:
            InvalidArgumentError: An unknown ``ranking``, a malformed filter, a limit
                or offset out of range, or a ``vector`` of another dimension than the
                collection's.
        """
        ns = check_namespace(prefix, allow_empty=True, what="namespace prefix")
        flt = check_filter(filter)
        lim, off = check_limit(limit), _offset(offset)
        if ranking not in ("vector", "hybrid"):
            raise InvalidArgumentError(f"ranking must be 'vector' or 'hybrid', got {ranking!r}")
        if vector is None:
            items = self.scan(ns, filter=flt, limit=lim, offset=off)
            hits = [ItemHit(i, None) for i in items]
        else:
            q = check_vectors({"query": vector})
            assert q is not None
            hybrid = text if ranking == "hybrid" else None
            page = Page(flt, lim, off, self._now())
            hits = ranked_page(self._repo, self._vectors, ns, q["query"], hybrid, page)
        if refresh_ttl and any(h.item.ttl_s is not None for h in hits):
            self._refresh_items([h.item for h in hits])
        return hits

    def _refresh_items(self, items: Sequence[Item]) -> None:
        now = self._now()
        rows = self._repo.get([(i.namespace, i.key) for i in items if i.ttl_s], now)
        self._refresh(list(rows.values()), now)

    def namespaces(
        self,
        *,
        match: Sequence[NamespaceMatch] = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Namespace]:
        """The namespaces holding live items, sorted, that satisfy every condition of
        ``match`` (("prefix" | "suffix", segments), ``"*"`` matching any one segment),
        cut to ``max_depth`` segments (and deduplicated); ``offset``, then ``limit``."""
        now = self._now()
        return list_namespaces(
            lambda prefix: self._repo.namespaces(prefix, now),
            match,
            max_depth=max_depth,
            limit=check_limit(limit),
            offset=_offset(offset),
        )

    def count(self, prefix: Sequence[str] = ()) -> int:
        """How many live items are under ``prefix`` (every item of the collection)."""
        ns = check_namespace(prefix, allow_empty=True, what="namespace prefix")
        return self._repo.count(ns, self._now())

    @property
    def dims(self) -> int | None:
        """The collection's vector dimension (None before its first vector)."""
        self._now()
        return self._repo.dims()


def _offset(offset: Any) -> int:
    if (
        isinstance(offset, bool)
        or not isinstance(offset, int)
        or not 0 <= offset <= MAX_RESULTS * 100
    ):
        raise InvalidArgumentError(
            f"offset must be a whole number from 0 to {MAX_RESULTS * 100:,}, got {offset!r}"
        )
    return offset


__all__ = ["ItemStore", "Ranking"]
