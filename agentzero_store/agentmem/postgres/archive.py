"""The archive on PostgreSQL: archived memories' texts in ``az_am_archive``.

The SQLite layer keeps an archived memory's text in a second file (``agentmem.archive``)
and orders its writes against ``memory.db`` so a crash between the two commits loses
nothing. On PostgreSQL the archive is a table of the same database, so the repository
moves a text in and out of it in the very transaction that changes the memory row
(``PgLifecycleRows.mark_archived``, ``unarchive``, ``erase``, ``schedule_purge``): there
is never a memory without its text, nor a spare copy, nor anything left to clean after
an erase commits. ``PgArchive`` is the interface the facade (``agentmem.lifecycle``)
calls on its ``Archive``: reading texts back checked against the row's digest, and
``put``/``delete`` of their own (idempotent beside the repository's, so the facade's
flow runs unchanged).

Each text is sealed (``codec.LayerCodec``: table ``az_am_archive``, row id = memory id,
the scope) with its metadata JSON; the memory row records ``codec.digest`` of the pair,
a keyed digest (a plain SHA-256 would let the server test a guess of the text).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ...base.errors import CorruptStoreError, UnsupportedByBackendError
from .codec import LayerCodec
from .core import MEMORY_COLUMNS, PgRepositoryCore

if TYPE_CHECKING:
    from ...memory.postgres.store import PgMemoryStore
    from ...memory.postgres.tx import PgWriteTx

TABLE = "az_am_archive"
FORGOTTEN = "az_am_forgotten"
_HINT = "restore the database from a backup (pg_dump of the store's tables)"


def meta_json(metadata: Any) -> str:
    """A memory's metadata JSON as SQLite's memory row stores it."""
    return json.dumps(dict(metadata), sort_keys=True) if metadata else "{}"


def pointer(memory_id: str) -> str:
    """What an archived memory row holds instead of its text (as SQLite's
    ``archived:memory.archive.db/<id>``): a memory entry's content may not be empty."""
    return f"archived:{TABLE}/{memory_id}"


def seal_text(codec: LayerCodec, memory_id: str, content: str, metadata: str) -> bytes:
    """The sealed ``az_am_archive`` value of one memory's text and metadata JSON."""
    return codec.seal(TABLE, memory_id, {"content": content, "metadata": metadata})


def open_text(codec: LayerCodec, memory_id: str, blob: Any) -> tuple[str, str]:
    """(content, metadata JSON) of a sealed ``az_am_archive`` value
    (``TamperedRecordError`` naming the row if it does not open)."""
    value = codec.open(TABLE, memory_id, blob)
    return str(value["content"]), str(value["metadata"])


def store_texts(
    tx: PgWriteTx,
    codec: LayerCodec,
    scope: tuple[str, str],
    rows: Sequence[tuple[str, str, str]],
    now_us: int,
) -> None:
    """Upsert (id, content, metadata JSON) rows of ``scope`` (the codec's) through
    ``tx``. A row of the same id in another scope is left alone (ids are unique in the
    store: it cannot be this memory's text)."""
    org, agent = scope
    tx.executemany(
        f"INSERT INTO {TABLE} (id, org_id, agent_id, sealed, archived_at_us)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET sealed = excluded.sealed,"
        f" archived_at_us = excluded.archived_at_us WHERE {TABLE}.org_id = excluded.org_id"
        f" AND {TABLE}.agent_id = excluded.agent_id",
        [(i, org, agent, seal_text(codec, i, c, m), now_us) for i, c, m in rows],
    )


class PgArchiveRows(PgRepositoryCore):
    """The repository's statements of archive and restore (``PgLifecycleRows`` has the
    rest of the lifecycle): the text moves between the memory row and ``az_am_archive``
    inside the caller's transaction."""

    def texts(self, ids: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(id, label, content, metadata JSON) of live, not yet archived memories."""
        if not ids:
            return []
        rows = self._q(
            f"SELECT {MEMORY_COLUMNS} FROM az_memory m WHERE m.id = ANY(%s) AND m.org_id = %s"
            " AND m.agent_id = %s AND m.type IS NOT NULL AND m.archived_at_us IS NULL"
            " ORDER BY m.label",
            (list(ids), *self._scope),
        )
        out = []
        for r in rows:
            e = self._rows.open(r[:8])
            out.append((str(r[1]), int(r[0]), e.content, meta_json(e.metadata)))
        return out

    def mark_archived(
        self, tx: PgWriteTx, rows: Sequence[tuple[str, int, str]], at_us: int
    ) -> None:
        """Move the text of (id, label, digest) rows into ``az_am_archive`` and leave a
        pointer in their memory row (re-sealed; its vector and blinded terms stay), in
        ``tx``: the archive and the row commit together. Their salience is computed
        first if it never was: it needs the text.

        The row records ``codec.digest`` (keyed) of the text it actually held, not the
        caller's ``digest`` (SQLite's plain SHA-256, which would let the server test a
        guess); ``PgArchive.get`` checks against it. Rows archived or deleted by another
        handle meanwhile are skipped."""
        if not rows:
            return
        self.fill_salience(tx, [mid for mid, _, _ in rows])
        found = self._q(
            f"SELECT {MEMORY_COLUMNS} FROM az_memory m WHERE m.label = ANY(%s::bigint[])"
            " AND m.org_id = %s AND m.agent_id = %s AND m.archived_at_us IS NULL"
            " ORDER BY m.label FOR UPDATE",
            ([int(label) for _, label, _ in rows], *self._scope),
            tx,
        )
        texts, updates = [], []
        for r in found:
            mid, e = str(r[1]), self._rows.open(r[:8])
            meta = meta_json(e.metadata)
            texts.append((mid, e.content, meta))
            stub = dataclasses.replace(e, content=pointer(mid), metadata={}, kind="archived")
            sealed = self._rows.seal(stub, mid, int(r[5]), r[6], e.embedding_model)
            updates.append((sealed, at_us, self.codec.digest(e.content, meta), int(r[0])))
        store_texts(tx, self.codec, self._scope, texts, at_us)
        tx.executemany(
            "UPDATE az_memory SET sealed = %s, archived_at_us = %s, archive_digest = %s"
            " WHERE label = %s",
            updates,
        )

    def unarchive(self, tx: PgWriteTx, mid: str, label: int, content: str, metadata: str) -> None:
        """Put an archived memory's text back into its row (kind ``granted``, as SQLite
        does) and delete its ``az_am_archive`` copy, in ``tx``."""
        rows = self._q(
            f"SELECT {MEMORY_COLUMNS} FROM az_memory m WHERE m.label = %s AND m.id = %s"
            " AND m.org_id = %s AND m.agent_id = %s FOR UPDATE",
            (int(label), mid, *self._scope),
            tx,
        )
        if rows:
            r = rows[0]
            e = self._rows.open(r[:8])
            back = dataclasses.replace(
                e, content=content, metadata=json.loads(metadata), kind="granted"
            )
            tx.execute(
                "UPDATE az_memory SET sealed = %s, archived_at_us = NULL, archive_digest = NULL"
                " WHERE label = %s",
                (self._rows.seal(back, mid, int(r[5]), r[6], e.embedding_model), int(label)),
            )
        tx.execute(
            f"DELETE FROM {TABLE} WHERE id = %s AND org_id = %s AND agent_id = %s",
            (mid, *self._scope),
        )

    def all_archived(self) -> dict[str, str]:
        """Every archived id of the store (all scopes, as SQLite's data dir)."""
        return {
            str(r[0]): str(r[1])
            for r in self._q(
                "SELECT id, archive_digest FROM az_memory WHERE type IS NOT NULL"
                " AND archived_at_us IS NOT NULL"
            )
        }

    def archived_payload_ids(self) -> set[str]:
        """Ids in the undo area whose text is in the archive (archived when forgotten:
        it stays there until undone or purged).

        The payload is sealed, so the server cannot read whether it was archived (SQLite
        reads ``$.am_memory[18]``); a forgotten memory with an ``az_am_archive`` row is
        one. That can only over-report a spare copy (an archive write whose row change
        did not commit), which is then kept until the undo or purge (both remove it)."""
        return {
            str(r[0])
            for r in self._q(
                f"SELECT f.memory_id FROM {FORGOTTEN} f WHERE EXISTS"
                f" (SELECT 1 FROM {TABLE} a WHERE a.id = f.memory_id)"
            )
        }


class PgArchive:
    """The archived texts of one scope (org, agent) of a PostgreSQL store, with the
    calls ``agentmem.lifecycle`` makes on ``agentmem.archive.Archive``."""

    path = TABLE  # what errors name (the SQLite archive names its file)

    def __init__(self, store: PgMemoryStore, org_id: str, agent_id: str) -> None:
        self._store = store
        self._scope = (org_id, agent_id)
        self._codec = LayerCodec(store.keys, org_id, agent_id, on_fail=store.check_key_version)

    def __repr__(self) -> str:
        return f"PgArchive({self._store!r})"

    @property
    def db(self) -> NoReturn:
        """SQLite only: the archive file's connection (here the store's ``query``)."""
        raise UnsupportedByBackendError(
            "the PostgreSQL archive has no database file of its own (it is the table "
            f"{TABLE} of the store's database)"
        )

    def _q(self, sql: str, params: Sequence[Any], tx: PgWriteTx | None) -> list[Any]:
        return tx.query(sql, params) if tx is not None else self._store.query(sql, params)

    def digest(self, content: str, metadata: str) -> str:
        """What a memory row records of its archived text: the keyed digest
        (``LayerCodec.digest``)."""
        return self._codec.digest(content, metadata)

    def exists(self) -> bool:
        """True once the layer's tables exist (the archive is one of them)."""
        rows = self._store.query(f"SELECT to_regclass('{TABLE}') IS NOT NULL")
        return bool(rows[0][0])

    def put(
        self, rows: Sequence[tuple[str, str, str]], now_us: int, tx: PgWriteTx | None = None
    ) -> None:
        """Store (id, content, metadata JSON) rows, replacing earlier copies: in ``tx``
        if given, else in a transaction of its own. (``mark_archived`` stores the text
        itself, in the transaction that changes the row: a ``put`` before it is only a
        copy it replaces.)"""
        if not rows:
            return
        if tx is not None:
            store_texts(tx, self._codec, self._scope, rows, now_us)
            return
        with self._store.transaction() as own:
            store_texts(own, self._codec, self._scope, rows, now_us)

    def get(
        self, digests: Mapping[str, str], tx: PgWriteTx | None = None
    ) -> dict[str, tuple[str, str]]:
        """(content, metadata JSON) of each id, checked against the digest its memory
        row recorded; a missing or different text is a ``CorruptStoreError`` naming the
        table, the memory and the digest expected (a blob that does not open, moved from
        another row or scope: ``TamperedRecordError``)."""
        if not digests:
            return {}
        org, agent = self._scope
        found = {
            str(r[0]): open_text(self._codec, str(r[0]), r[1])
            for r in self._q(
                f"SELECT id, sealed FROM {TABLE} WHERE id = ANY(%s) AND org_id = %s"
                " AND agent_id = %s",
                (list(digests), org, agent),
                tx,
            )
        }
        for i, want in digests.items():
            if i not in found:
                raise CorruptStoreError(
                    f"{TABLE} holds no text for memory {i} (expected one with digest "
                    f"{want[:16]}…: its memory row marks it archived); the table was "
                    "rolled back, truncated or restored from an older backup",
                    path=TABLE,
                    hint=_HINT,
                )
            got = self._codec.digest(*found[i])
            if got != want:
                raise CorruptStoreError(
                    f"the archived text of memory {i} in {TABLE} is not the one its memory "
                    f"row recorded (expected digest {want[:16]}…, found {got[:16]}…)",
                    path=TABLE,
                    hint=_HINT,
                )
        return found

    def delete(self, ids: Iterable[str], tx: PgWriteTx | None = None) -> int:
        """Delete these ids' texts of this scope; how many there were. PostgreSQL keeps
        no plaintext to scrub afterwards: the rows were sealed on the client, and their
        dead versions (until VACUUM) and the server's WAL hold only ciphertext."""
        ids = list(ids)
        if not ids:
            return 0
        org, agent = self._scope
        sql = f"DELETE FROM {TABLE} WHERE id = ANY(%s) AND org_id = %s AND agent_id = %s"
        if tx is not None:
            return int(tx.execute(sql, (ids, org, agent)).rowcount)
        with self._store.transaction() as own:
            return int(own.execute(sql, (ids, org, agent)).rowcount)

    def truncate_wal(self) -> bool:
        """Nothing to truncate (no file of ours; see ``delete``): True."""
        return True

    def ids(self) -> set[str]:
        """Every id this scope's archive holds a text for (to find spare copies)."""
        org, agent = self._scope
        return {
            str(r[0])
            for r in self._store.query(
                f"SELECT id FROM {TABLE} WHERE org_id = %s AND agent_id = %s", (org, agent)
            )
        }

    def close(self) -> None:
        """Nothing to close: the archive uses the store's connection."""


__all__ = [
    "FORGOTTEN",
    "TABLE",
    "PgArchive",
    "PgArchiveRows",
    "meta_json",
    "open_text",
    "pointer",
    "seal_text",
    "store_texts",
]
