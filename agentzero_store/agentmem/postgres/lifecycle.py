"""The agent-memory repository's lifecycle statements on PostgreSQL: forget and undo,
erase, archive, consolidation's selections and adoption of rows written below the layer.

The same methods as ``sqlite.lifecycle.LifecycleRows`` (SQLite), over ``postgres.schema``:

- a forget's payload (the rows to put back) is sealed whole under the memory's id; its
  ``about`` lists blinded entity keys, so ``forgotten_select`` by entity compares them;
- archiving moves the text into ``az_am_archive`` (``postgres.archive``) and re-seals
  the memory row with a pointer instead, in one transaction; the row keeps its vector
  and blinded terms, so recall still finds it (as SQLite keeps its FTS entry);
- erase deletes every row holding the memories, their archived texts included, in its
  one transaction: nothing of ours outlives the commit (no sidecar, no WAL of ours; the
  server only ever held ciphertext and keyed hashes), so no purge is left pending;
- SQLite serializes writers; here forget, undo, erase and the purge of old forgets take
  a per-scope advisory lock (two scopes never wait for each other), then recheck under it
  what the caller selected before its transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.errors import NotFoundError
from ...memory.records import from_us
from ..records import entity_key
from ..sqlite.core import NewMemory
from .archive import FORGOTTEN as _FORGOTTEN
from .archive import TABLE as ARCHIVE
from .archive import PgArchiveRows, meta_json
from .core import MEMORY_COLUMNS

if TYPE_CHECKING:
    from ...memory.postgres.tx import PgWriteTx

# What forget keeps of a memory row: [0..7] the sealed row (MEMORY_COLUMNS), [8] vector,
# then the layer's columns in ``AM_MEMORY_COLUMNS`` order from type to promoted_to.
_FORGET_COLUMNS = (
    f"{MEMORY_COLUMNS}, m.embedding::real[], m.type, m.speaker, m.fingerprint, m.confidence,"
    " m.importance, m.salience, m.stability, m.difficulty,"
    " coalesce(m.last_review_us, m.created_at_us), m.access_count, m.last_access_us,"
    " m.retrievability, m.archived_at_us, m.archive_digest, m.promoted_to"
)
# The layer's columns an undo writes back, as ``am_memory`` positions of the payload.
_RESTORED = (
    ("type", 5),
    ("confidence", 9),
    ("importance", 10),
    ("salience", 11),
    ("stability", 12),
    ("difficulty", 13),
    ("last_review_us", 14),
    ("access_count", 15),
    ("last_access_us", 16),
    ("retrievability", 17),
    ("archived_at_us", 18),
    ("archive_digest", 19),
    ("promoted_to", 20),
)
_C = 'COLLATE "C"'  # order text ids as SQLite does (bytewise), whatever the db's locale


def _to_json(row: Sequence[Any]) -> list[Any]:
    """A table row as JSON values (a sealed ``bytea`` as ``{"hex": ...}``)."""
    return [{"hex": bytes(v).hex()} if isinstance(v, bytes | memoryview) else v for v in row]


def _from_json(row: Sequence[Any]) -> list[Any]:
    return [bytes.fromhex(v["hex"]) if isinstance(v, dict) else v for v in row]


def _values(n: int) -> str:
    return ",".join(["%s"] * n)


class PgLifecycleRows(PgArchiveRows):
    """Forget, undo, erase, archive, consolidation and adoption (see the module)."""

    def _lock_scope(self, tx: PgWriteTx) -> None:
        """Serialize this scope's forgets, undos, erases and purges until the commit
        (SQLite's single writer lock; other scopes are not held up, short of a 64-bit
        hash collision)."""
        h = hashlib.blake2b(json.dumps(["az-am-lifecycle", *self._scope]).encode(), digest_size=8)
        tx.execute("SELECT pg_advisory_xact_lock(%s)", (int.from_bytes(h.digest(), signed=True),))

    # ------------------------------------------------------------------ forget, undo
    def forget(
        self,
        tx: PgWriteTx,
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
        ids = [str(r[1]) for r in rows]
        about: dict[str, list[list[str]]] = {}
        for mid, blob in self._q(
            "SELECT memory_id, entity FROM az_am_about WHERE memory_id = ANY(%s)",
            (ids,),
            tx,
        ):
            name = str(self.codec.open("az_am_about", mid, blob))
            about.setdefault(mid, []).append([name, entity_key(name)])
        facts = self._rows_by_id(tx, "az_am_fact", ids)
        procs = self._rows_by_id(tx, "az_am_procedure", ids)
        edges = self._q(
            "SELECT * FROM az_am_edge WHERE src = ANY(%s) OR dst = ANY(%s)", (ids, ids), tx
        )
        kept = []
        for r in rows:
            mid = str(r[1])
            ents = sorted(about.get(mid, []), key=lambda a: a[1])  # SQLite's (memory_id, key)
            payload = self._payload(r, ents)
            payload.update(
                fact=facts.get(mid),
                procedure=procs.get(mid),
                edges=[_to_json(x) for x in edges if mid in (x[0], x[1])],
            )
            skey = payload["am_memory"][-1]
            keys = {self.codec.blind(k) for _, k in ents} | (
                {self.codec.blind(skey)} if skey else set()
            )
            vec = None if r[8] is None else np.asarray(r[8], dtype=np.float32).tobytes()
            sealed = self.codec.seal(_FORGOTTEN, mid, payload)
            kept.append(
                (
                    mid,
                    token,
                    *self._scope,
                    r[4],
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
        tx.delete_labels([int(r[0]) for r in rows])

    def _rows_by_id(self, tx: PgWriteTx, table: str, ids: Sequence[str]) -> dict[str, Any]:
        rows = self._q(f"SELECT * FROM {table} WHERE id = ANY(%s)", (list(ids),), tx)
        return {str(r[0]): _to_json(r) for r in rows}

    def _payload(self, r: Sequence[Any], about: list[list[str]]) -> dict[str, Any]:
        """What SQLite's forget keeps of a memory (a row of ``_FORGET_COLUMNS``), in its
        layout (the facade's undo reads it): ``memory`` the memory row's columns,
        ``am_memory`` the layer's in ``AM_MEMORY_COLUMNS`` order ([18] archived at, [19]
        its digest), with the speaker and its entity key in plain (the payload is sealed
        whole), and the keyed fingerprint in hex (an undo computes it again)."""
        mid = str(r[1])
        e = self._rows.open(r[:8])
        speaker = self._speaker(mid, r[10])
        memory = [mid, e.role, e.content, r[5], r[4], r[2], r[3], r[6]]
        memory += [e.kind, e.source, meta_json(e.metadata), e.embedding_model]
        layer = [mid, r[0], r[2], r[3], r[4], r[9], speaker, r[5], bytes(r[11]).hex()]
        layer += [*r[12:24], entity_key(speaker) if speaker is not None else None]
        return {"memory": memory, "am_memory": layer, "about": about}

    def _drop_layer_rows(self, tx: PgWriteTx, ids: Sequence[str]) -> None:
        if not ids:
            return
        ids = list(ids)
        tx.execute("DELETE FROM az_am_about WHERE memory_id = ANY(%s)", (ids,))
        tx.execute("DELETE FROM az_am_fact WHERE id = ANY(%s)", (ids,))
        tx.execute("DELETE FROM az_am_procedure WHERE id = ANY(%s)", (ids,))
        tx.execute("DELETE FROM az_am_edge WHERE src = ANY(%s) OR dst = ANY(%s)", (ids, ids))

    def _drop_references(self, tx: PgWriteTx, ids: Sequence[str]) -> None:
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

    def forgotten(self, token: str, now_us: int) -> list[tuple[str, dict[str, Any], bytes | None]]:
        """(id, payload, vector) of a forget still within its undo window."""
        rows = self._q(
            f"SELECT memory_id, payload, vector FROM {_FORGOTTEN} WHERE token = %s"
            f" AND org_id = %s AND agent_id = %s AND until_us > %s ORDER BY memory_id {_C}",
            (token, *self._scope, now_us),
        )
        return [
            (
                str(r[0]),
                self.codec.open(_FORGOTTEN, str(r[0]), r[1]),
                None if r[2] is None else bytes(r[2]),
            )
            for r in rows
        ]

    def unforget(
        self, tx: PgWriteTx, payloads: Sequence[dict[str, Any]], labels: Sequence[int]
    ) -> None:
        """Put the layer's rows of forgotten memories back (their memory rows were just
        re-inserted through ``tx`` under ``labels``) and empty their undo entries.

        The undo entries are claimed first (deleted, under the scope's lock): if another
        handle undid, erased or purged one of them meanwhile, ``NotFoundError``, and the
        caller's transaction (its re-inserted rows too) rolls back: never restored twice,
        never brought back after an erase."""
        ids = [str(p["am_memory"][0]) for p in payloads]
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
        facts: list[list[Any]] = []
        procs: list[list[Any]] = []
        edges: list[list[Any]] = []
        for p, label in zip(payloads, labels, strict=True):
            am = list(p["am_memory"])
            mid, speaker = str(am[0]), am[6]
            key = entity_key(speaker) if speaker is not None else None
            updates.append(
                (
                    *(am[i] for _, i in _RESTORED[:1]),
                    None if speaker is None else self.codec.seal("az_memory.speaker", mid, speaker),
                    None if key is None else self.codec.blind(key),
                    *(am[i] for _, i in _RESTORED[1:]),
                    int(label),
                    *self._scope,
                )
            )
            if key is not None:
                speakers.add(key)
            about.extend(
                (mid, *self._scope, self.codec.seal("az_am_about", mid, e), self.codec.blind(k))
                for e, k in p["about"]
                if k != key
            )
            if p["fact"] is not None:
                facts.append(_from_json(p["fact"]))
            if p["procedure"] is not None:
                procs.append(_from_json(p["procedure"]))
            edges.extend(_from_json(e) for e in p["edges"])
        cols = ["type", "speaker", "speaker_key", *(n for n, _ in _RESTORED[1:])]
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
        for table, rows in (("az_am_fact", facts), ("az_am_procedure", procs)):
            if rows:
                tx.executemany(f"INSERT INTO {table} VALUES ({_values(len(rows[0]))})", rows)
        if edges:
            tx.executemany(
                f"INSERT INTO az_am_edge VALUES ({_values(len(edges[0]))}) ON CONFLICT DO NOTHING",
                edges,
            )
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
            f" ORDER BY memory_id {_C}",
            (*self._scope, arg),
        )
        return [str(r[0]) for r in rows]

    def purgeable(self, now_us: int) -> list[str]:
        """Ids in the undo area whose window has passed."""
        return [
            str(r[0])
            for r in self._q(
                f"SELECT memory_id FROM {_FORGOTTEN} WHERE org_id = %s AND agent_id = %s"
                f" AND until_us <= %s ORDER BY memory_id {_C}",
                (*self._scope, now_us),
            )
        ]

    # ------------------------------------------------------------------ erase
    def erase(
        self,
        tx: PgWriteTx,
        chosen: Sequence[tuple[str, int]],
        forgotten: Sequence[str],
        selector: str,
        at_us: int,
        derived: Sequence[str] = (),
    ) -> None:
        """Delete every row holding these memories, in every table, with their history,
        access log, undo entries and archived texts, in the caller's transaction; leave
        a content-free tombstone (``derived``: those erased for what they were derived
        from, listed apart). Nothing is left to purge after the commit (see the
        module), so no ``az_am_purge`` row is written and the facade's
        ``finish_pending_erase`` finds nothing to do."""
        ids = sorted({mid for mid, _ in chosen} | set(forgotten))
        self._lock_scope(tx)
        self._drop_layer_rows(tx, ids)
        self._drop_references(tx, ids)
        tx.execute("DELETE FROM az_am_history WHERE target = ANY(%s)", (ids,))
        tx.execute("DELETE FROM az_am_access WHERE memory_id = ANY(%s)", (ids,))
        tx.execute(f"DELETE FROM {_FORGOTTEN} WHERE memory_id = ANY(%s)", (ids,))
        tx.execute(f"DELETE FROM {ARCHIVE} WHERE id = ANY(%s)", (ids,))
        # By id as well as label: a concurrent undo of one of them committed before this
        # took the scope's lock re-inserted it under a new label.
        tx.execute(
            "DELETE FROM az_memory WHERE org_id = %s AND agent_id = %s"
            " AND (label = ANY(%s::bigint[]) OR id = ANY(%s))",
            (*self._scope, [int(label) for _, label in chosen], ids),
        )
        self.prune_speakers(tx)
        apart = set(derived)
        chose = [i for i in ids if i not in apart]
        tx.execute(
            "INSERT INTO az_am_tombstone (org_id, agent_id, at_us, selector, count, ids,"
            " derived) VALUES (%s,%s,%s,%s,%s,%s,%s)",
            (*self._scope, at_us, selector, len(chose), json.dumps(chose), json.dumps(derived)),
        )

    def prune_speakers(self, tx: PgWriteTx) -> None:
        """Forget the speakers of this scope no live memory has any more (after erase or
        a purge: a speaker's name is not kept once what they said is gone; an undo adds
        a forgotten memory's speaker back)."""
        tx.execute(
            "DELETE FROM az_am_speaker s WHERE s.org_id = %s AND s.agent_id = %s AND NOT EXISTS"
            " (SELECT 1 FROM az_memory m WHERE m.org_id = s.org_id AND m.agent_id = s.agent_id"
            " AND m.speaker_key = s.key)",
            self._scope,
        )

    def pending_purge(self) -> list[str]:
        """Ids erased whose cleanup after the commit has not finished (any scope): none
        on PostgreSQL (erase and ``schedule_purge`` finish in their transaction), unless
        something else wrote ``az_am_purge``."""
        return [
            str(r[0]) for r in self._q(f"SELECT memory_id FROM az_am_purge ORDER BY memory_id {_C}")
        ]

    def clear_purge(self, tx: PgWriteTx, ids: Sequence[str]) -> None:
        """The cleanup of these erased ids finished."""
        tx.execute("DELETE FROM az_am_purge WHERE memory_id = ANY(%s)", (list(ids),))

    def tombstones(self) -> list[dict[str, Any]]:
        """What erase removed in this scope: when, by what kind of selector, which ids,
        and which memories derived from them it erased with them."""
        return [
            {
                "seq": int(r[0]),
                "at": from_us(r[1]).isoformat(),
                "selector": r[2],
                "count": r[3],
                "ids": json.loads(r[4]),
                "derived": json.loads(r[5]),
            }
            for r in self._q(
                "SELECT seq, at_us, selector, count, ids, derived FROM az_am_tombstone"
                " WHERE org_id = %s AND agent_id = %s ORDER BY seq",
                self._scope,
            )
        ]

    # ------------------------------------------------------------------ consolidation
    def vector_of(self, label: int) -> bytes | None:
        """The stored float32 vector of a memory row, if it has one."""
        rows = self._q(
            "SELECT embedding::real[] FROM az_memory WHERE label = %s AND org_id = %s"
            " AND agent_id = %s AND embedding IS NOT NULL",
            (int(label), *self._scope),
        )
        return np.asarray(rows[0][0], dtype=np.float32).tobytes() if rows else None

    def texts_of_type(self, type_: str) -> list[tuple[str, int, str, int, str | None]]:
        """(id, label, content, created_at_us, promoted_to) of live, unarchived memories
        of one type that are not facts, by creation time then id."""
        rows = self._q(
            f"SELECT {MEMORY_COLUMNS}, m.promoted_to FROM az_memory m WHERE m.org_id = %s"
            " AND m.agent_id = %s AND m.type = %s AND m.archived_at_us IS NULL"
            " AND m.id NOT IN (SELECT id FROM az_am_fact)"
            f" ORDER BY m.created_at_us, m.id {_C}",
            (*self._scope, type_),
        )
        return [
            (str(r[1]), int(r[0]), self._rows.open(r[:8]).content, int(r[5]), r[8]) for r in rows
        ]

    def about_of(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Entities of each memory (as written)."""
        return self._about(ids)

    def set_promoted(self, tx: PgWriteTx, ids: Sequence[str], to: str) -> None:
        """These episodes made (or joined) the semantic memory ``to``."""
        tx.execute(
            "UPDATE az_memory SET promoted_to = %s WHERE id = ANY(%s) AND org_id = %s"
            " AND agent_id = %s",
            (to, list(ids), *self._scope),
        )

    def add_access_counts(self, tx: PgWriteTx, into: str, from_ids: Sequence[str]) -> None:
        """Fold the access counts of merged twins into the one kept."""
        tx.execute(
            "UPDATE az_memory SET access_count = access_count + (SELECT coalesce(sum("
            "access_count), 0) FROM az_memory WHERE id = ANY(%s) AND org_id = %s"
            " AND agent_id = %s) WHERE id = %s AND org_id = %s AND agent_id = %s",
            (list(from_ids), *self._scope, into, *self._scope),
        )

    def expired(self, now_us: int) -> list[tuple[str, int]]:
        """(id, label) of memories past their TTL, not yet deleted."""
        return [
            (str(r[0]), int(r[1]))
            for r in self._q(
                "SELECT id, label FROM az_memory WHERE org_id = %s AND agent_id = %s"
                " AND type IS NOT NULL AND expires_at_us IS NOT NULL AND expires_at_us <= %s"
                f" ORDER BY id {_C}",
                (*self._scope, now_us),
            )
        ]

    def orphans(self) -> list[str]:
        """Ids with layer rows (entities, a fact, a procedure) whose memory row is gone:
        deleted through the memory store (which deletes the layer's columns with the
        row) and not forgotten (a forget moves those rows into its undo area)."""
        s = (*self._scope,)
        return [
            str(r[0])
            for r in self._q(
                "SELECT id FROM (SELECT memory_id FROM az_am_about WHERE org_id = %s"
                " AND agent_id = %s UNION SELECT id FROM az_am_fact WHERE org_id = %s"
                " AND agent_id = %s UNION SELECT id FROM az_am_procedure WHERE org_id = %s"
                " AND agent_id = %s EXCEPT SELECT id FROM az_memory WHERE org_id = %s"
                f" AND agent_id = %s) AS t(id) ORDER BY id {_C}",
                s * 4,
            )
        ]

    def drop(self, tx: PgWriteTx, chosen: Sequence[tuple[str, int]]) -> None:
        """Delete memories for good (expired, or orphaned), with their layer rows."""
        self._drop_layer_rows(tx, [mid for mid, _ in chosen])
        tx.delete_labels([label for _, label in chosen if label >= 0])

    def schedule_purge(self, tx: PgWriteTx, ids: Sequence[str]) -> None:
        """Erase undo entries whose window passed (and expired memories, just dropped):
        their references and archived texts go in ``tx`` (SQLite leaves that to a purge
        after the commit). An entry another handle undid meanwhile (the memory is live
        again) is left alone: its references belong to it again."""
        if not ids:
            return
        ids = list(ids)
        self._lock_scope(tx)
        tx.execute(
            f"DELETE FROM {_FORGOTTEN} WHERE memory_id = ANY(%s) AND org_id = %s AND agent_id = %s",
            (ids, *self._scope),
        )
        live = {str(r[0]) for r in tx.query("SELECT id FROM az_memory WHERE id = ANY(%s)", (ids,))}
        gone = [i for i in ids if i not in live]
        self._drop_references(tx, gone)
        tx.execute(f"DELETE FROM {ARCHIVE} WHERE id = ANY(%s)", (gone,))

    # ------------------------------------------------------------------ adoption
    def unadopted(
        self, limit: int = 5_000, tx: PgWriteTx | None = None
    ) -> tuple[list[tuple[int, str, str, str, int]], int, int]:
        """Up to ``limit`` (label, id, conversation_id, content, created_at_us) of memory
        rows of this scope without the layer's columns yet (written by
        ``PgMemoryStore``), above the label adoption last reached; and that label, and
        the largest label in ``az_memory``."""
        rows = self._q("SELECT value FROM az_meta WHERE key = %s", (self._adopted_key(),), tx)
        after = int(rows[0][0]) if rows else 0
        top = int(self._q("SELECT coalesce(max(label), 0) FROM az_memory", (), tx)[0][0])
        found = [
            (int(r[0]), str(r[1]), str(r[4]), self._rows.open(r[:8]).content, int(r[5]))
            for r in self._q(
                f"SELECT {MEMORY_COLUMNS} FROM az_memory m WHERE m.label > %s"
                " AND m.org_id = %s AND m.agent_id = %s AND m.type IS NULL"
                " ORDER BY m.label LIMIT %s",
                (after, *self._scope, int(limit)),
                tx,
            )
        ]
        return found, after, top

    def adopt(
        self,
        rows: Sequence[tuple[int, str, str, str, int]],
        metas: Sequence[NewMemory],
        reached: int,
    ) -> None:
        """Give memory rows their layer's columns (``unadopted``), and remember the label
        adoption reached, so the next open looks only above it. With no rows, only moves
        that mark, after checking that nothing below it is left.

        Labels come from a sequence: a writer still in flight may hold one below a label
        already committed, and its row shows up only when it commits. SQLite's single
        writer rules that out; here the mark is moved under a SHARE ROW EXCLUSIVE lock
        of ``az_memory``, which waits for every writer in flight (and holds new ones off
        until this short transaction ends), so what is below the mark has been seen."""
        with self.transaction() as tx:
            tx.execute("LOCK TABLE az_memory IN SHARE ROW EXCLUSIVE MODE")
            if not rows and any(r[0] <= reached for r in self.unadopted(1, tx)[0]):
                return  # a row came in meanwhile: the next open adopts it
            tx.executemany(
                "UPDATE az_memory SET type = %s, speaker = %s, speaker_key = %s,"
                " confidence = %s, importance = %s, stability = %s, difficulty = %s"
                " WHERE label = %s AND type IS NULL",
                [
                    (
                        m.type,
                        None
                        if m.speaker is None
                        else self.codec.seal("az_memory.speaker", mid, m.speaker),
                        None if m.speaker_key is None else self.codec.blind(m.speaker_key),
                        m.confidence,
                        m.importance,
                        m.stability,
                        m.difficulty,
                        label,
                    )
                    for (label, mid, _, _, _), m in zip(rows, metas, strict=True)
                ],
            )
            self._add_speakers(tx, {m.speaker_key for m in metas if m.speaker_key})
            left = self.unadopted(1, tx)[0]
            mark = reached if not left or left[0][0] > reached else left[0][0] - 1
            tx.execute(
                "INSERT INTO az_meta (key, value) VALUES (%s, %s) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value",
                (self._adopted_key(), str(mark)),
            )

    def _adopted_key(self) -> str:
        return f"agentmem_adopted:{json.dumps(list(self._scope))}"


__all__ = ["PgLifecycleRows"]
