"""The agent-memory repository's forget and undo on PostgreSQL: the undo area
(``az_am_forgotten``, each payload sealed whole under its memory's id) and the forget
payload, filled by name in one place (``PgForgetRows._kept``) and read by name in one
(``PgForgetRows.unforget``); its stored layout is ``rows.encode_payload``'s. Forget,
undo, erase and the purge of old forgets take a per-scope advisory lock
(``_lock_scope``), then recheck under it what the caller selected."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.errors import NotFoundError
from ...memory.postgres.tx import PgWriteTx
from ...memory.postgres.write import Batch
from ..records import entity_key
from ..rows import (
    ForgetPayload,
    Forgotten,
    KeptLayer,
    KeptMemory,
    PayloadTables,
    decode_payload,
    encode_payload,
)
from .archive import FORGOTTEN as _FORGOTTEN
from .archive import PgArchiveRows, meta_json
from .core import MEMORY_COLUMNS

if TYPE_CHECKING:
    from ..seam import LayerTx, PreparedRows

# What forget reads of a memory row, by name: the sealed row ``RowCodec.open`` reads
# first (``MEMORY_COLUMNS``), then its vector and the layer's columns.
_FORGET = (
    ("vector", "m.embedding::real[]"),
    ("type", "m.type"),
    ("speaker", "m.speaker"),
    ("fingerprint", "m.fingerprint"),
    ("confidence", "m.confidence"),
    ("importance", "m.importance"),
    ("salience", "m.salience"),
    ("stability", "m.stability"),
    ("difficulty", "m.difficulty"),
    ("last_review_us", "coalesce(m.last_review_us, m.created_at_us)"),
    ("access_count", "m.access_count"),
    ("last_access_us", "m.last_access_us"),
    ("retrievability", "m.retrievability"),
    ("archived_at_us", "m.archived_at_us"),
    ("archive_digest", "m.archive_digest"),
    ("promoted_to", "m.promoted_to"),
)
_SEALED_ROW = tuple(c.strip().removeprefix("m.") for c in MEMORY_COLUMNS.split(","))
_FORGET_NAMES = (*_SEALED_ROW, *(n for n, _ in _FORGET))
_FORGET_COLUMNS = ", ".join([MEMORY_COLUMNS, *(sql for _, sql in _FORGET)])
# The layer's columns an undo writes back (besides the speaker and its key).
_RESTORED = (
    "type",
    "confidence",
    "importance",
    "salience",
    "stability",
    "difficulty",
    "last_review_us",
    "access_count",
    "last_access_us",
    "retrievability",
    "archived_at_us",
    "archive_digest",
    "promoted_to",
)
# The columns of the tables a forget keeps rows of, in their table order (a payload
# stores each row as a list in this order, a ``bytea`` as ``{"hex": ...}``).
TABLES = PayloadTables(
    fact=(
        "id",
        "org_id",
        "agent_id",
        "sealed",
        "subject_key",
        "predicate_key",
        "object_key",
        "confidence",
        "single_valued",
        "valid_from_us",
        "valid_to_us",
        "superseded_by",
        "retracted",
    ),
    procedure=(
        "id",
        "org_id",
        "agent_id",
        "sealed",
        "action_key",
        "context_key",
        "successes",
        "failures",
        "updated_at_us",
    ),
    edge=("src", "dst", "type", "org_id", "agent_id", "confidence", "created_at_us"),
)
COLLATE_C = 'COLLATE "C"'  # order text ids as SQLite does (bytewise), whatever the db's locale


def _to_json(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    """A table row by column name, as JSON values (a ``bytea`` as ``{"hex": ...}``)."""
    return {
        c: {"hex": bytes(v).hex()} if isinstance(v, bytes | memoryview) else v
        for c, v in zip(columns, row, strict=True)
    }


def _from_json(row: dict[str, Any]) -> tuple[Any, ...]:
    """The values of a ``_to_json`` row, in its columns' order."""
    return tuple(bytes.fromhex(v["hex"]) if isinstance(v, dict) else v for v in row.values())


def _insert(table: str, columns: Sequence[str], conflict: str = "") -> str:
    """An INSERT of ``columns`` (by name: a payload's ``TABLES`` columns)."""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_values(len(columns))}){conflict}"


def _values(n: int) -> str:
    return ",".join(["%s"] * n)


class PgForgetRows(PgArchiveRows):
    """Forget and undo (see the module)."""

    def _lock_scope(self, tx: LayerTx) -> None:
        """Serialize this scope's forgets, undos, erases and purges until the commit
        (SQLite's single writer lock; other scopes are not held up, short of a 64-bit
        hash collision)."""
        h = hashlib.blake2b(json.dumps(["az-am-lifecycle", *self._scope]).encode(), digest_size=8)
        tx.execute("SELECT pg_advisory_xact_lock(%s)", (int.from_bytes(h.digest(), signed=True),))

    # ------------------------------------------------------------------ forget, undo
    def forget(
        self,
        tx: LayerTx,
        chosen: Sequence[tuple[str, int]],
        token: str,
        at_us: int,
        until_us: int,
    ) -> None:
        """Move memories into the undo area: every row that holds them is kept there,
        sealed (text, vector, decay state, entities, facts, edges), then deleted
        everywhere, in the caller's one transaction. Memories another handle forgot or
        erased since they were selected are gone already, and skipped."""
        if not chosen:
            return
        self._lock_scope(tx)
        # FOR UPDATE: SQLite read these under its write lock; here a concurrent forget,
        # erase or archive of the same row waits for this commit (or this for its).
        rows = self._q(
            f"SELECT {_FORGET_COLUMNS} FROM az_memory m WHERE m.label = ANY(%s::bigint[])"
            " AND m.org_id = %s AND m.agent_id = %s AND m.type IS NOT NULL"
            " ORDER BY m.label FOR UPDATE",
            ([int(label) for _, label in chosen], *self._scope),
            tx,
        )
        if not rows:
            return
        read = [dict(zip(_FORGET_NAMES, r, strict=True)) for r in rows]
        ids = [str(c["id"]) for c in read]
        about: dict[str, list[tuple[str, str]]] = {}
        for mid, blob in self._q(
            "SELECT memory_id, entity FROM az_am_about WHERE memory_id = ANY(%s)",
            (ids,),
            tx,
        ):
            name = str(self.codec.open("az_am_about", mid, blob))
            about.setdefault(mid, []).append((name, entity_key(name)))
        facts = self._rows_by_id(tx, "az_am_fact", TABLES.fact, ids)
        procs = self._rows_by_id(tx, "az_am_procedure", TABLES.procedure, ids)
        edges = [
            _to_json(TABLES.edge, x)
            for x in self._q(
                f"SELECT {', '.join(TABLES.edge)} FROM az_am_edge"
                " WHERE src = ANY(%s) OR dst = ANY(%s)",
                (ids, ids),
                tx,
            )
        ]
        kept = []
        for r, c in zip(rows, read, strict=True):
            mid = str(c["id"])
            ents = sorted(about.get(mid, []), key=lambda a: a[1])  # SQLite's (memory_id, key)
            payload = self._kept(
                r,
                c,
                ents,
                facts.get(mid),
                procs.get(mid),
                [x for x in edges if mid in (x["src"], x["dst"])],
            )
            skey = payload.layer.speaker_key
            keys = {self.codec.blind(k) for _, k in ents} | (
                {self.codec.blind(skey)} if skey else set()
            )
            vec = None if c["vector"] is None else np.asarray(c["vector"], np.float32).tobytes()
            sealed = self.codec.seal(_FORGOTTEN, mid, encode_payload(payload, TABLES))
            kept.append(
                (
                    mid,
                    token,
                    *self._scope,
                    c["conversation_id"],
                    json.dumps(sorted(keys)),
                    at_us,
                    until_us,
                    sealed,
                    vec,
                )
            )
        tx.executemany(
            f"INSERT INTO {_FORGOTTEN} (memory_id, token, org_id, agent_id, conversation_id,"
            f" about, forgotten_at_us, until_us, payload, vector) VALUES ({_values(10)})",
            kept,
        )
        self._drop_layer_rows(tx, ids)
        tx.delete_labels([int(c["label"]) for c in read])

    def _rows_by_id(
        self, tx: LayerTx, table: str, columns: Sequence[str], ids: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        rows = self._q(
            f"SELECT {', '.join(columns)} FROM {table} WHERE id = ANY(%s)", (list(ids),), tx
        )
        return {str(r[0]): _to_json(columns, r) for r in rows}

    def _kept(
        self,
        r: Sequence[Any],
        c: dict[str, Any],
        about: list[tuple[str, str]],
        fact: dict[str, Any] | None,
        procedure: dict[str, Any] | None,
        edges: list[dict[str, Any]],
    ) -> ForgetPayload:
        """What forget keeps of a memory (``r`` a row of ``_FORGET_COLUMNS``, ``c`` the
        same by name): the one place this backend fills a ``ForgetPayload``. Its speaker
        and entity key are in plain (the payload is sealed whole), its keyed fingerprint
        in hex (an undo computes it again)."""
        mid = str(c["id"])
        e = self._rows.open(r[: len(_SEALED_ROW)])
        speaker = self._speaker(mid, c["speaker"])
        return ForgetPayload(
            KeptMemory(
                id=mid,
                role=e.role,
                content=e.content,
                created_at_us=c["created_at_us"],
                conversation_id=c["conversation_id"],
                org_id=c["org_id"],
                agent_id=c["agent_id"],
                expires_at_us=c["expires_at_us"],
                kind=e.kind,
                source=e.source,
                metadata=meta_json(e.metadata),
                embedding_model=e.embedding_model,
            ),
            KeptLayer(
                id=mid,
                label=c["label"],
                org_id=c["org_id"],
                agent_id=c["agent_id"],
                conversation_id=c["conversation_id"],
                type=c["type"],
                speaker=speaker,
                created_at_us=c["created_at_us"],
                fingerprint=bytes(c["fingerprint"]).hex(),
                **{n: c[n] for n in _RESTORED if n != "type"},
                speaker_key=entity_key(speaker) if speaker is not None else None,
            ),
            tuple(about),
            fact,
            procedure,
            tuple(edges),
        )

    def _drop_layer_rows(self, tx: LayerTx, ids: Sequence[str]) -> None:
        if not ids:
            return
        ids = list(ids)
        tx.execute("DELETE FROM az_am_about WHERE memory_id = ANY(%s)", (ids,))
        tx.execute("DELETE FROM az_am_fact WHERE id = ANY(%s)", (ids,))
        tx.execute("DELETE FROM az_am_procedure WHERE id = ANY(%s)", (ids,))
        tx.execute("DELETE FROM az_am_edge WHERE src = ANY(%s) OR dst = ANY(%s)", (ids, ids))

    def _drop_references(self, tx: LayerTx, ids: Sequence[str]) -> None:
        """Pins, core marks, provenance either way and every summary made from these
        memories (a summary's text may quote them): for erase, and the purge after an
        undo window."""
        if not ids:
            return
        ids = list(ids)
        tx.execute("DELETE FROM az_am_pin WHERE memory_id = ANY(%s)", (ids,))
        tx.execute(
            "DELETE FROM az_am_source WHERE memory_id = ANY(%s) OR source_id = ANY(%s)",
            (ids, ids),
        )
        tx.execute("DELETE FROM az_am_core WHERE memory_id = ANY(%s)", (ids,))
        made = "SELECT summary_id FROM az_am_summary_source WHERE memory_id = ANY(%s)"
        tx.execute(f"DELETE FROM az_am_summary WHERE id IN ({made})", (ids,))
        tx.execute(f"DELETE FROM az_am_summary_source WHERE summary_id IN ({made})", (ids,))

    def forgotten(self, token: str, now_us: int) -> list[Forgotten]:
        """The entries of a forget still within its undo window, by id."""
        rows = self._q(
            f"SELECT memory_id, payload, vector FROM {_FORGOTTEN} WHERE token = %s"
            f" AND org_id = %s AND agent_id = %s AND until_us > %s ORDER BY memory_id {COLLATE_C}",
            (token, *self._scope, now_us),
        )
        return [
            Forgotten(
                str(r[0]),
                decode_payload(self.codec.open(_FORGOTTEN, str(r[0]), r[1]), TABLES),
                None if r[2] is None else bytes(r[2]),
            )
            for r in rows
        ]

    def reinsert(self, tx: LayerTx, prepared: PreparedRows) -> dict[str, int]:
        """Insert the memory rows of forgotten memories again (``unforget`` then puts the
        layer's columns back); id -> label of the rows written."""
        assert isinstance(tx, PgWriteTx) and isinstance(prepared, Batch), "a PostgreSQL store's"
        return dict(tx.insert(prepared))

    def unforget(
        self, tx: LayerTx, payloads: Sequence[ForgetPayload], labels: Sequence[int]
    ) -> None:
        """Put the layer's rows of forgotten memories back (their memory rows were just
        re-inserted through ``tx`` under ``labels``) and empty their undo entries.

        The undo entries are claimed first (deleted, under the scope's lock): if another
        handle undid, erased or purged one of them meanwhile, ``NotFoundError``, and the
        caller's transaction (its re-inserted rows too) rolls back: never restored twice,
        never brought back after an erase."""
        ids = [p.layer.id for p in payloads]
        if not ids:
            return
        self._lock_scope(tx)
        claimed = {
            str(r[0])
            for r in tx.query(
                f"DELETE FROM {_FORGOTTEN} WHERE memory_id = ANY(%s) AND org_id = %s"
                " AND agent_id = %s RETURNING memory_id",
                (ids, *self._scope),
            )
        }
        if gone := sorted(set(ids) - claimed):
            raise NotFoundError(
                f"memory {gone[0]} is no longer in the undo area (undone, erased or purged "
                "by another handle meanwhile); nothing was restored",
            )
        speakers: set[str] = set()
        updates: list[tuple[Any, ...]] = []
        about: list[tuple[Any, ...]] = []
        facts: list[tuple[Any, ...]] = []
        procs: list[tuple[Any, ...]] = []
        edges: list[tuple[Any, ...]] = []
        for p, label in zip(payloads, labels, strict=True):
            kept = p.layer
            mid, speaker = kept.id, kept.speaker
            key = entity_key(speaker) if speaker is not None else None
            updates.append(
                (
                    kept.type,
                    None if speaker is None else self.codec.seal("az_memory.speaker", mid, speaker),
                    None if key is None else self.codec.blind(key),
                    *(getattr(kept, n) for n in _RESTORED[1:]),
                    int(label),
                    *self._scope,
                )
            )
            if key is not None:
                speakers.add(key)
            about.extend(
                (mid, *self._scope, self.codec.seal("az_am_about", mid, e), self.codec.blind(k))
                for e, k in p.about
                if k != key
            )
            if p.fact is not None:
                facts.append(_from_json(p.fact))
            if p.procedure is not None:
                procs.append(_from_json(p.procedure))
            edges.extend(_from_json(e) for e in p.edges)
        cols = ["type", "speaker", "speaker_key", *_RESTORED[1:]]
        tx.executemany(
            f"UPDATE az_memory SET ({', '.join(cols)}) = ({_values(len(cols))})"
            " WHERE label = %s AND org_id = %s AND agent_id = %s",
            updates,
        )
        tx.executemany(
            "INSERT INTO az_am_about (memory_id, org_id, agent_id, entity, key)"
            " VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
            about,
        )
        for table, columns, rows in (
            ("az_am_fact", TABLES.fact, facts),
            ("az_am_procedure", TABLES.procedure, procs),
        ):
            if rows:
                tx.executemany(_insert(table, columns), rows)
        if edges:
            tx.executemany(_insert("az_am_edge", TABLES.edge, " ON CONFLICT DO NOTHING"), edges)
        self._add_speakers(tx, speakers)

    def forgotten_select(self, selector: str, value: str) -> list[str]:
        """Ids in the undo area chosen like ``select`` (erase reaches them too)."""
        cond, arg = {
            "id": ("memory_id = %s", value),
            "conversation_id": ("conversation_id = %s", value),
            "about": ("about::jsonb ? %s", self.codec.blind(value) if selector == "about" else ""),
        }[selector]
        rows = self._q(
            f"SELECT memory_id FROM {_FORGOTTEN} WHERE org_id = %s AND agent_id = %s AND {cond}"
            f" ORDER BY memory_id {COLLATE_C}",
            (*self._scope, arg),
        )
        return [str(r[0]) for r in rows]

    def purgeable(self, now_us: int) -> list[str]:
        """Ids in the undo area whose window has passed."""
        return [
            str(r[0])
            for r in self._q(
                f"SELECT memory_id FROM {_FORGOTTEN} WHERE org_id = %s AND agent_id = %s"
                f" AND until_us <= %s ORDER BY memory_id {COLLATE_C}",
                (*self._scope, now_us),
            )
        ]


__all__ = ["COLLATE_C", "TABLES", "PgForgetRows"]
