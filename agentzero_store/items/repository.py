"""Every SQL statement of the item store, over one collection.

Reads go through the memory store's ``database`` (one connection, shared by threads
behind its lock), writes through a ``WriteTx`` of ``SqliteMemoryStore.transaction()``.
Expired rows are never read: every read carries ``LIVE`` with the caller's clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..base.errors import DimensionMismatchError
from ..memory.records import from_us
from .records import Item, Namespace, ns_text, ns_tuple, prefix_range

if TYPE_CHECKING:
    from ..memory.sqlite.store import SqliteMemoryStore
    from ..memory.sqlite.tx import WriteTx

Order = Literal["-updated", "key", "-key"]
Row = Sequence[Any]

_COLS = "id, ns, key, value, data, created_at_us, updated_at_us, expires_at_us, ttl_s"
_LIVE = "(expires_at_us IS NULL OR expires_at_us > ?)"
_ORDER = {"-updated": "updated_at_us DESC, id DESC", "key": "key ASC", "-key": "key DESC"}
_CHUNK = 500  # ids per IN (...) list


def row_to_item(r: Row) -> Item:
    """An ``Item`` from a row of ``_COLS`` (the one place rows become items)."""
    return Item(
        namespace=ns_tuple(str(r[1])),
        key=str(r[2]),
        value=json.loads(r[3]),
        data=bytes(r[4]) if r[4] is not None else None,
        created_at=from_us(int(r[5])),
        updated_at=from_us(int(r[6])),
        expires_at=from_us(int(r[7])) if r[7] is not None else None,
        ttl_s=float(r[8]) if r[8] is not None else None,
    )


def _where(prefix: Namespace, exact: bool, col: str = "ns") -> tuple[str, list[Any]]:
    """The namespace condition: exactly ``prefix``, or it and everything under it (one
    index range)."""
    if exact:
        return f" AND {col} = ?", [ns_text(prefix)]
    rng = prefix_range(prefix)
    if rng is None:
        return "", []
    return f" AND {col} >= ? AND {col} < ?", list(rng)


class ItemRepository:
    """The item tables of one collection in ``memory.db``."""

    def __init__(self, store: SqliteMemoryStore, collection: str) -> None:
        self._store = store
        self.collection = collection

    def _q(self, sql: str, params: Sequence[Any], tx: WriteTx | None = None) -> list[Any]:
        if tx is not None:
            return tx.query(sql, params)
        return self._store.database.query(sql, params)

    # ------------------------------------------------------------------ reads
    def get(
        self, refs: Sequence[tuple[Namespace, str]], now_us: int, tx: WriteTx | None = None
    ) -> dict[tuple[str, str], Row]:
        """The live rows of ``refs``, by (ns_text, key)."""
        found: dict[tuple[str, str], Row] = {}
        by_ns: dict[str, list[str]] = {}
        for ns, key in refs:
            by_ns.setdefault(ns_text(ns), []).append(key)
        for text, keys in by_ns.items():
            uniq = list(dict.fromkeys(keys))
            for i in range(0, len(uniq), _CHUNK):
                part = uniq[i : i + _CHUNK]
                rows = self._q(
                    f"SELECT {_COLS} FROM az_item WHERE collection = ? AND ns = ?"
                    f" AND key IN ({','.join('?' * len(part))}) AND {_LIVE}",
                    (self.collection, text, *part, now_us),
                    tx,
                )
                found.update(((str(r[1]), str(r[2])), r) for r in rows)
        return found

    def by_ids(self, ids: Sequence[int], now_us: int) -> dict[int, Row]:
        """The live rows with these ids."""
        out: dict[int, Row] = {}
        for i in range(0, len(ids), _CHUNK):
            part = list(ids[i : i + _CHUNK])
            rows = self._q(
                f"SELECT {_COLS} FROM az_item WHERE id IN ({','.join('?' * len(part))})"
                f" AND {_LIVE}",
                (*part, now_us),
            )
            out.update((int(r[0]), r) for r in rows)
        return out

    def scan(
        self,
        prefix: Namespace,
        now_us: int,
        *,
        exact: bool = False,
        order: Order = "-updated",
        before: str | None = None,
        after: str | None = None,
        limit: int | None = None,
        columns: str = _COLS,
    ) -> list[Row]:
        """Live rows under ``prefix`` (or in it exactly), in ``order``; ``before`` /
        ``after`` bound the key (exclusive)."""
        where, params = _where(prefix, exact)
        if before is not None:
            where += " AND key < ?"
            params.append(before)
        if after is not None:
            where += " AND key > ?"
            params.append(after)
        sql = (
            f"SELECT {columns} FROM az_item WHERE collection = ?{where} AND {_LIVE}"
            f" ORDER BY {_ORDER[order]}"
        )
        args = [self.collection, *params, now_us]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return self._q(sql, args)

    def vectors(self) -> list[tuple[int, str, bytes]]:
        """(item id, namespace text, float32 bytes) of every field vector of the
        collection, live or not, in insertion order (equal scores then rank as
        LangGraph's InMemoryStore ranks them)."""
        return [
            (int(r[0]), str(r[1]), bytes(r[2]))
            for r in self._q(
                "SELECT v.item_id, i.ns, v.vector FROM az_item i JOIN az_item_vector v"
                " ON v.item_id = i.id WHERE i.collection = ? ORDER BY v.item_id",
                (self.collection,),
            )
        ]

    def version(self) -> int:
        """The collection's write counter (0 before its first write)."""
        rows = self._q("SELECT version FROM az_item_collection WHERE name = ?", (self.collection,))
        return int(rows[0][0]) if rows else 0

    def unvectored(self, prefix: Namespace, now_us: int) -> list[int]:
        """Ids of the live items under ``prefix`` without any vector, newest first."""
        where, params = _where(prefix, False)
        return [
            int(r[0])
            for r in self._q(
                f"SELECT id FROM az_item WHERE collection = ?{where} AND {_LIVE} AND NOT EXISTS"
                " (SELECT 1 FROM az_item_vector v WHERE v.item_id = az_item.id)"
                " ORDER BY updated_at_us DESC, id DESC",
                (self.collection, *params, now_us),
            )
        ]

    def keyword(self, match: str, prefix: Namespace, now_us: int, limit: int) -> list[int]:
        """Ids of live items under ``prefix`` whose indexed text matches the FTS5
        expression ``match``, best BM25 first."""
        where, params = _where(prefix, False, "i.ns")
        return [
            int(r[0])
            for r in self._q(
                "SELECT i.id FROM az_item_text t JOIN az_item i ON i.id = t.rowid"
                f" WHERE az_item_text MATCH ? AND i.collection = ?{where}"
                " AND (i.expires_at_us IS NULL OR i.expires_at_us > ?)"
                " ORDER BY bm25(az_item_text) LIMIT ?",
                (match, self.collection, *params, now_us, limit),
            )
        ]

    def namespaces(self, prefix: Namespace, now_us: int) -> list[Namespace]:
        """Every namespace holding a live item under ``prefix``."""
        where, params = _where(prefix, False)
        return [
            ns_tuple(str(r[0]))
            for r in self._q(
                f"SELECT DISTINCT ns FROM az_item WHERE collection = ?{where} AND {_LIVE}",
                (self.collection, *params, now_us),
            )
        ]

    def count(self, prefix: Namespace, now_us: int) -> int:
        """How many live items are under ``prefix``."""
        where, params = _where(prefix, False)
        rows = self._q(
            f"SELECT count(*) FROM az_item WHERE collection = ?{where} AND {_LIVE}",
            (self.collection, *params, now_us),
        )
        return int(rows[0][0])

    def dims(self, tx: WriteTx | None = None) -> int | None:
        """The collection's vector dimension, None before its first vector."""
        rows = self._q("SELECT dims FROM az_item_collection WHERE name = ?", (self.collection,), tx)
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    # ------------------------------------------------------------------ writes
    def upsert(
        self,
        tx: WriteTx,
        ns: Namespace,
        key: str,
        value_json: str,
        data: bytes | None,
        now_us: int,
        ttl_s: float | None,
        *,
        vectors: Mapping[str, np.ndarray] | None,
        text: str | None,
        if_absent: bool,
    ) -> bool:
        """Insert or replace one item (an expired one counts as absent: it is replaced
        and gets a new creation time); with ``if_absent`` a live item is left as it is.
        The item's vectors and text are replaced by ``vectors`` and ``text``. False when
        nothing was written."""
        expires = None if ttl_s is None else now_us + int(ttl_s * 1_000_000)
        guard = (
            " WHERE az_item.expires_at_us IS NOT NULL"
            " AND az_item.expires_at_us <= excluded.updated_at_us"
            if if_absent
            else ""
        )
        rows = tx.query(
            "INSERT INTO az_item (collection, ns, key, value, data, created_at_us,"
            " updated_at_us, expires_at_us, ttl_s) VALUES (?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT (collection, ns, key) DO UPDATE SET value = excluded.value,"
            " data = excluded.data, updated_at_us = excluded.updated_at_us,"
            " expires_at_us = excluded.expires_at_us, ttl_s = excluded.ttl_s,"
            " created_at_us = CASE WHEN az_item.expires_at_us IS NOT NULL AND"
            " az_item.expires_at_us <= excluded.updated_at_us THEN excluded.created_at_us"
            f" ELSE az_item.created_at_us END{guard} RETURNING id",
            (self.collection, ns_text(ns), key, value_json, data, now_us, now_us, expires, ttl_s),
        )
        tx.wrote = True
        if not rows:
            return False
        item_id = int(rows[0][0])
        self._drop_index(tx, [item_id])  # what the old value indexed, if it was an update
        self._bump(tx)
        if vectors:
            self._check_dims(tx, {len(v) for v in vectors.values()})
            tx.executemany(
                "INSERT INTO az_item_vector (item_id, field, vector) VALUES (?,?,?)",
                [
                    (item_id, f, np.asarray(v, dtype=np.float32).tobytes())
                    for f, v in vectors.items()
                ],
            )
        if text:
            tx.execute("INSERT INTO az_item_text (rowid, text) VALUES (?, ?)", (item_id, text))
        return True

    def _check_dims(self, tx: WriteTx, sizes: set[int]) -> None:
        have = self.dims(tx)
        want = have if have is not None else next(iter(sizes))
        if sizes != {want}:
            raise DimensionMismatchError(
                f"the collection {self.collection!r} holds vectors of {want} dimensions; "
                f"got {sorted(sizes)}",
                hint="use one embedding model per collection (dims is fixed by the first vector)",
            )
        if have is None:
            tx.execute(
                "INSERT INTO az_item_collection (name, dims) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET dims = excluded.dims",
                (self.collection, want),
            )

    def _bump(self, tx: WriteTx) -> None:
        """Move the collection's version: cached vectors of it are stale."""
        tx.execute(
            "INSERT INTO az_item_collection (name, version) VALUES (?, 1)"
            " ON CONFLICT (name) DO UPDATE SET version = version + 1",
            (self.collection,),
        )

    def _drop_index(self, tx: WriteTx, ids: Iterable[int]) -> None:
        rows = [(i,) for i in ids]
        tx.executemany("DELETE FROM az_item_vector WHERE item_id = ?", rows)
        tx.executemany("DELETE FROM az_item_text WHERE rowid = ?", rows)

    def _delete_ids(self, tx: WriteTx, ids: list[int]) -> int:
        if ids:
            self._bump(tx)
            self._drop_index(tx, ids)
            tx.executemany("DELETE FROM az_item WHERE id = ?", [(i,) for i in ids])
        return len(ids)

    def delete(self, tx: WriteTx, ns: Namespace, key: str) -> bool:
        """Delete one item (live or expired); whether it was live."""
        rows = tx.query(
            "SELECT id, expires_at_us FROM az_item WHERE collection = ? AND ns = ? AND key = ?",
            (self.collection, ns_text(ns), key),
        )
        self._delete_ids(tx, [int(r[0]) for r in rows])
        return bool(rows)

    def delete_under(self, tx: WriteTx, prefix: Namespace, *, exact: bool = False) -> int:
        """Delete every item under ``prefix`` (or in it exactly); how many."""
        where, params = _where(prefix, exact)
        ids = [
            int(r[0])
            for r in tx.query(
                f"SELECT id FROM az_item WHERE collection = ?{where}", (self.collection, *params)
            )
        ]
        return self._delete_ids(tx, ids)

    def refresh(self, tx: WriteTx, ids: Sequence[int], now_us: int) -> None:
        """Restart the time to live of these items (those that have one and are live)."""
        tx.executemany(
            "UPDATE az_item SET expires_at_us = ? + CAST(ttl_s * 1000000 AS INTEGER)"
            f" WHERE id = ? AND ttl_s IS NOT NULL AND {_LIVE}",
            [(now_us, i, now_us) for i in ids],
        )

    def sweep(self, tx: WriteTx, now_us: int) -> int:
        """Delete this collection's expired items; how many."""
        ids = [
            int(r[0])
            for r in tx.query(
                "SELECT id FROM az_item WHERE collection = ? AND expires_at_us IS NOT NULL"
                " AND expires_at_us <= ?",
                (self.collection, now_us),
            )
        ]
        return self._delete_ids(tx, ids)


__all__ = ["ItemRepository", "Order", "row_to_item"]
