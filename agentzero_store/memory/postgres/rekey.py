"""Re-keying a PostgreSQL memory store's rows under a new master key (a key rotation).

Everything the memory store derives from the master key lives in two tables:

- ``az_memory.sealed``: opened under the old row key, sealed again under the new one
  with the same associated data (store id, id, scope, times), so it reads back exactly;
- ``az_memory.fingerprint``: a keyed hash of the text. Which text: its content, or
  (an archived agent memory, whose content is a pointer) the text a layer above knows
  of. The stored hash is matched against the old key's hash of each candidate and
  computed again from the one that matches, so a row keeps the fingerprint of exactly
  the text it had;
- ``az_terms.term``: keyed hashes of stemmed terms. Each candidate text is analysed
  once, which maps every old hash it yields to the new hash of the same term; the
  stored postings are renamed through that map (``UPDATE ... SET term``: the frequency,
  the row's length, and whatever else a posting row holds stay as they are). A row
  with a posting no candidate text explains is indexed again from its text
  (``write.replace_terms``) and counted.

Rows that fail to open under the old key stop the rotation (``TamperedRecordError``):
it runs in one transaction, which then rolls back and changes nothing.

A layer with columns of its own on ``az_memory`` (the agent memory) plugs in a
``RowExtension``: it reads and rewrites them with each row, in the same UPDATE (a
second UPDATE would write every row, and its vector index entry, twice).

Everything runs in the caller's transaction (``rotation``): big tables are read
through server-side cursors, which see the table as the transaction found it, so the
rows this transaction rewrites are never read a second time.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...base.errors import TamperedRecordError
from ...sidecar.bm25_terms import BlindTerms
from ...storage.keys import StoreKeys
from ..records import MemoryEntry
from . import write
from .rows import COLUMNS, RowCodec

BATCH = 500  # rows per read and per UPDATE
_CURSORS = itertools.count(1)

Advance = Callable[[int], None]


class RekeyTx:
    """The rotation's transaction: statements, and large reads in batches."""

    def __init__(self, conn: Any) -> None:
        self._c = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; returns the cursor."""
        return self._c.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one statement."""
        rows: list[Any] = self._c.execute(sql, params).fetchall()
        return rows

    def batches(
        self, sql: str, params: Sequence[Any] = (), size: int = BATCH
    ) -> Iterator[list[Any]]:
        """The rows of ``sql`` in lists of up to ``size``, from a server-side cursor: it
        reads the snapshot of its opening, never the rows rewritten since."""
        with self._c.cursor(name=f"az_rekey_{next(_CURSORS)}") as cur:
            cur.execute(sql, params)
            while rows := cur.fetchmany(size):
                yield rows

    def update(
        self,
        table: str,
        key: Sequence[tuple[str, str]],
        cols: Sequence[tuple[str, str]],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """``UPDATE table SET col = new, ...`` of many rows in one statement: each of
        ``rows`` is its key's values (the ``key`` columns, with their SQL types) then its
        new values (``cols``), sent as one array per column. Every row must exist."""
        if not rows:
            return
        keys = [f"k{i}" for i in range(len(key))]
        vals = [f"v{i}" for i in range(len(cols))]
        types = [t for _, t in (*key, *cols)]
        cur = self._c.execute(
            f"UPDATE {table} t SET "
            + ", ".join(f"{c} = u.{v}" for (c, _), v in zip(cols, vals, strict=True))
            + " FROM unnest("
            + ", ".join(f"%s::{t}[]" for t in types)
            + f") AS u({', '.join([*keys, *vals])}) WHERE "
            + " AND ".join(f"t.{c} = u.{k}" for (c, _), k in zip(key, keys, strict=True)),
            [list(col) for col in zip(*rows, strict=True)],
        )
        if cur.rowcount != len(rows):
            # Never expected (writers wait for the rotation): fail, and roll back all.
            raise AssertionError(f"{table}: {cur.rowcount} of {len(rows)} rows re-keyed")


@dataclass(frozen=True)
class MemoryRow:
    """One ``az_memory`` row as the rotation read it: the entry opened under the old key,
    and the extension's columns as stored."""

    label: int
    id: str
    org_id: str
    agent_id: str
    entry: MemoryEntry
    extra: tuple[Any, ...]


@dataclass(frozen=True)
class RowChange:
    """What an extension says of one row: other texts its fingerprint and terms may
    have been computed from (its archived text), and its columns under the new key."""

    texts: tuple[str, ...] = ()
    values: tuple[Any, ...] = ()


class RowExtension(Protocol):
    """A layer's columns on ``az_memory``, re-keyed with the memory store's own."""

    reads: tuple[str, ...]  # columns read with each row (``MemoryRow.extra``)
    writes: tuple[tuple[str, str], ...]  # (column, SQL type) rewritten (``RowChange.values``)

    def rekey(self, rows: Sequence[MemoryRow]) -> list[RowChange]:
        """One ``RowChange`` per row of ``rows``, in order (under the old key)."""
        ...


@dataclass
class MemoryRekey:
    """What the rotation rewrote of the memory store: rows and postings renamed, and the
    rows whose fingerprint or terms had to be computed again (no candidate text
    explained the stored ones)."""

    rows: int = 0
    postings: int = 0
    fingerprints_recomputed: list[int] = field(default_factory=list)
    terms_reindexed: list[int] = field(default_factory=list)


def count_rows(tx: RekeyTx) -> int:
    """How many ``az_memory`` rows a rotation re-seals (its progress total)."""
    return int(tx.query("SELECT count(*) FROM az_memory")[0][0])


def rekey_memory(
    tx: RekeyTx,
    old: StoreKeys,
    new: StoreKeys,
    *,
    extension: RowExtension | None = None,
    advance: Advance | None = None,
    batch: int = BATCH,
) -> MemoryRekey:
    """Re-seal every ``az_memory`` row, its fingerprint and its postings from the keys
    ``old`` to ``new``, in ``tx`` (see the module)."""
    codecs = (RowCodec(old), RowCodec(new))
    terms = (BlindTerms(old.subkey("pg-bm25-terms")), BlindTerms(new.subkey("pg-bm25-terms")))
    reads = tuple(extension.reads) if extension is not None else ()
    writes = tuple(extension.writes) if extension is not None else ()
    extra = "".join(f", {c}" for c in reads)
    report = MemoryRekey()
    sql = f"SELECT {COLUMNS}, fingerprint{extra} FROM az_memory ORDER BY label"
    for rows in tx.batches(sql, size=batch):
        _rekey_batch(tx, rows, codecs, terms, extension, writes, report)
        if advance is not None:
            advance(len(rows))
    return report


def _open(codec: RowCodec, row: Sequence[Any]) -> MemoryEntry:
    try:
        return codec.open(row)
    except TamperedRecordError as exc:
        raise TamperedRecordError(
            f"{exc.message}: it does not open under the current master key, so it cannot "
            "be re-sealed; the rotation changed nothing",
            hint="delete the row (`agentzero memory delete ID`) or restore the database "
            "from a backup, then rotate again",
        ) from exc


def _rekey_batch(
    tx: RekeyTx,
    rows: Sequence[Any],
    codecs: tuple[RowCodec, RowCodec],
    terms: tuple[BlindTerms, BlindTerms],
    extension: RowExtension | None,
    writes: tuple[tuple[str, str], ...],
    report: MemoryRekey,
) -> None:
    old_codec, new_codec = codecs
    n = len(COLUMNS.split(","))
    opened = [
        MemoryRow(
            int(r[0]), str(r[1]), str(r[2]), str(r[3]), _open(old_codec, r[:n]), tuple(r[n + 1 :])
        )
        for r in rows
    ]
    changes = extension.rekey(opened) if extension is not None else [RowChange()] * len(rows)
    postings: dict[int, list[str]] = {}
    for label, term in tx.query(
        "SELECT label, term FROM az_terms WHERE label = ANY(%s::bigint[])",
        ([m.label for m in opened],),
    ):
        postings.setdefault(int(label), []).append(str(term))
    updates: list[tuple[Any, ...]] = []
    renamed: list[tuple[int, str, str]] = []
    reindex: list[tuple[int, str]] = []
    for r, m, change in zip(rows, opened, changes, strict=True):
        e = m.entry
        texts = (e.content, *change.texts)
        preferred = texts[-1]  # an archived row's words are its archived text's
        stored_fp = bytes(r[n])
        fp = next((t for t in texts if old_codec.fingerprint_text(t) == stored_fp), None)
        if fp is None:
            report.fingerprints_recomputed.append(m.label)
        sealed = new_codec.seal(e, m.id, int(r[5]), r[6], e.embedding_model)
        updates.append(
            (
                m.label,
                sealed,
                new_codec.fingerprint_text(fp if fp is not None else preferred),
                *change.values,
            )
        )
        mapping: dict[str, str] = {}
        for t in texts:
            mapping.update(zip(terms[0].terms(t), terms[1].terms(t), strict=True))
        mine = postings.get(m.label, [])
        if all(p in mapping for p in mine):
            renamed.extend((m.label, p, mapping[p]) for p in mine)
        else:
            reindex.append((m.label, preferred))
    tx.update(
        "az_memory",
        [("label", "bigint")],
        [("sealed", "bytea"), ("fingerprint", "bytea"), *writes],
        updates,
    )
    # A new hash equal to another posting's of the same row (2^-64 a pair) fails on the
    # primary key: the rotation rolls back, and running it again draws another key.
    tx.update("az_terms", [("label", "bigint"), ("term", "text")], [("term", "text")], renamed)
    for label, text in reindex:
        write.replace_terms(tx, label, text, terms[1])
        report.terms_reindexed.append(label)
    report.rows += len(rows)
    report.postings += len(renamed)


__all__ = [
    "BATCH",
    "MemoryRekey",
    "MemoryRow",
    "RekeyTx",
    "RowChange",
    "RowExtension",
    "count_rows",
    "rekey_memory",
]
