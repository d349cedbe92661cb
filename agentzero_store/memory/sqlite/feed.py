"""The memory store's change feed, and its adapters to the sidecar mechanism.

Every insert and delete in ``memory`` also writes a row of ``changes`` (its own seq, in
the same transaction). ``MemoryFeed`` reads that feed; the two ``Source`` adapters hand
it to ``Sidecar``: ``MemoryVectorSource`` with the float32 vector bytes only, and
``MemoryItemSource`` with the vector plus the row's scope and expiry (what the memory
index needs to filter candidates without reading rows; see ``index``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ...sidecar.types import Change as SourceChange
from ...storage.sqlcipher import Database
from ..records import Change

P = TypeVar("P")

# embedding, org, agent, conversation, expiry: what an item of the feed carries. The
# vector lives in memory_vec (``v``), the scope on the memory row (``m``).
_ITEM = "v.embedding, m.org_id, m.agent_id, m.conversation_id, m.expires_at_us"


@dataclass(frozen=True)
class MemoryItem:
    """What the memory index holds per row: the vector, its scope and its expiry."""

    vector: bytes
    org_id: str
    agent_id: str
    conversation_id: str
    expires_at_us: int | None


class MemoryFeed:
    """Read side of the change feed and of the stored vectors (all short reads)."""

    def __init__(self, live: Callable[[], Database]) -> None:
        self._live = live  # raises StoreClosedError once the store is closed

    def source_seq(self) -> int:
        """The seq of the newest change (0 for an empty store)."""
        rows = self._live().query("SELECT max(seq) FROM changes")
        return int(rows[0][0] or 0)

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with seq > ``seq``, oldest first, at most ``limit``.

        An insert whose row has since been deleted carries no vector; the later delete
        change tells a sidecar to drop it.
        """
        rows = self._live().query(
            f"SELECT c.seq, c.op, c.label, {_ITEM} FROM changes c "
            "LEFT JOIN memory m ON c.op = 'insert' AND m.label = c.label "
            "LEFT JOIN memory_vec v ON v.label = m.label "
            "WHERE c.seq > ? ORDER BY c.seq LIMIT ?",
            (seq, limit),
        )
        return [Change(*r) for r in rows]

    def vector_count(self) -> int:
        """Number of rows (an upper bound on rows holding a vector; index-only, cheap)."""
        return int(self._live().query("SELECT count(*) FROM memory")[0][0])

    def items_after(self, label: int, limit: int) -> list[tuple[int, MemoryItem]]:
        """Up to ``limit`` (label, item) of rows holding a vector with label > ``label``."""
        rows = self._live().query(
            f"SELECT v.label, {_ITEM} FROM memory_vec v JOIN memory m ON m.label = v.label "
            "WHERE v.label > ? ORDER BY v.label LIMIT ?",
            (label, limit),
        )
        return [(int(r[0]), MemoryItem(bytes(r[1]), r[2], r[3], r[4], r[5])) for r in rows]

    def vectors_after(self, label: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (label, float32 bytes) with label > ``label``, by label."""
        rows = self._live().query(
            "SELECT label, embedding FROM memory_vec WHERE label > ? ORDER BY label LIMIT ?",
            (label, limit),
        )
        return [(int(r[0]), bytes(r[1])) for r in rows]

    def iter_vectors(self, batch: int = 10_000) -> Iterable[tuple[int, list[int], bytes]]:
        """Every stored vector for a full rebuild, in batches: (seq covered, labels, bytes).

        The first element is the source seq the batch sequence is consistent with.
        """
        with self._live().snapshot() as c:
            seq = int(c.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])
            cur = c.execute("SELECT label, embedding FROM memory_vec ORDER BY label")
            while rows := cur.fetchmany(batch):
                yield seq, [r[0] for r in rows], b"".join(r[1] for r in rows)


class FeedStore(Protocol):
    """What the sidecar adapters read of a memory store (``SqliteMemoryStore`` is one)."""

    @property
    def store_id(self) -> str:
        """The store's id."""
        ...

    @property
    def feed(self) -> MemoryFeed:
        """The store's change feed."""
        ...

    def source_seq(self) -> int:
        """The seq of the newest change."""
        ...

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with seq > ``seq``, oldest first, at most ``limit``."""
        ...

    def vector_count(self) -> int:
        """An upper bound on the rows holding a vector."""
        ...

    def vectors_after(self, label: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (label, float32 bytes) with label > ``label``, by label."""
        ...


class _FeedSource(Generic[P]):
    """``Source[P]`` over the memory feed; subclasses say how a change becomes a payload."""

    def __init__(self, store: FeedStore) -> None:
        self._store = store

    @property
    def store_id(self) -> str:
        """The store's id."""
        return self._store.store_id

    def source_seq(self) -> int:
        """Newest change seq."""
        return self._store.source_seq()

    def changes_since(self, seq: int, limit: int) -> Sequence[SourceChange[P]]:
        """The memory change feed, as generic changes."""
        return [
            SourceChange(c.seq, c.op, c.label, self._payload(c))
            for c in self._store.changes_since(seq, limit)
        ]

    def item_count(self) -> int:
        """Rows holding a vector (upper bound)."""
        return self._store.vector_count()

    def snapshot(self, batch: int) -> Iterator[Sequence[tuple[int, P]]]:
        """Every stored item, paged by label (each page its own short read, so a long
        rebuild never holds the database lock between pages)."""
        after = 0
        while rows := self._page(after, batch):
            yield rows
            after = rows[-1][0]

    def _payload(self, c: Change) -> P | None:
        raise NotImplementedError

    def _page(self, after: int, batch: int) -> Sequence[tuple[int, P]]:
        raise NotImplementedError


class MemoryVectorSource(_FeedSource[bytes]):
    """``Source[bytes]``: float32 embedding bytes keyed by label."""

    def _payload(self, c: Change) -> bytes | None:
        return c.embedding

    def _page(self, after: int, batch: int) -> Sequence[tuple[int, bytes]]:
        return self._store.vectors_after(after, batch)


class MemoryItemSource(_FeedSource[MemoryItem]):
    """``Source[MemoryItem]``: vector plus scope and expiry, keyed by label."""

    def _payload(self, c: Change) -> MemoryItem | None:
        if c.embedding is None:
            return None  # no vector, or the row is gone (a delete follows)
        return MemoryItem(bytes(c.embedding), *_scope_of(c))

    def _page(self, after: int, batch: int) -> Sequence[tuple[int, MemoryItem]]:
        return self._store.feed.items_after(after, batch)


def _scope_of(c: Change) -> tuple[str, str, str, int | None]:
    assert c.org_id is not None and c.agent_id is not None and c.conversation_id is not None
    return c.org_id, c.agent_id, c.conversation_id, c.expires_at_us


__all__ = [
    "FeedStore",
    "MemoryFeed",
    "MemoryItem",
    "MemoryItemSource",
    "MemoryVectorSource",
]
