"""The agent-memory repository's lifecycle statements on PostgreSQL: erase, archive,
consolidation's selections and adoption of rows written below the layer (forget and
undo: ``forget``).

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

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...memory.records import from_us
from ..rows import NewMemory
from .archive import FORGOTTEN as _FORGOTTEN
from .archive import TABLE as ARCHIVE
from .core import MEMORY_COLUMNS
from .forget import COLLATE_C, PgForgetRows

if TYPE_CHECKING:
    from ..seam import LayerTx


class PgLifecycleRows(PgForgetRows):
    """Erase, archive, consolidation and adoption, over forget and undo (see the module)."""

    # ------------------------------------------------------------------ erase
    def erase(
        self,
        tx: LayerTx,
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

    def prune_speakers(self, tx: LayerTx) -> None:
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
            str(r[0])
            for r in self._q(f"SELECT memory_id FROM az_am_purge ORDER BY memory_id {COLLATE_C}")
        ]

    def clear_purge(self, tx: LayerTx, ids: Sequence[str]) -> None:
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
            f" ORDER BY m.created_at_us, m.id {COLLATE_C}",
            (*self._scope, type_),
        )
        return [
            (str(r[1]), int(r[0]), self._rows.open(r[:8]).content, int(r[5]), r[8]) for r in rows
        ]

    def about_of(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Entities of each memory (as written)."""
        return self._about(ids)

    def set_promoted(self, tx: LayerTx, ids: Sequence[str], to: str) -> None:
        """These episodes made (or joined) the semantic memory ``to``."""
        tx.execute(
            "UPDATE az_memory SET promoted_to = %s WHERE id = ANY(%s) AND org_id = %s"
            " AND agent_id = %s",
            (to, list(ids), *self._scope),
        )

    def add_access_counts(self, tx: LayerTx, into: str, from_ids: Sequence[str]) -> None:
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
                f" ORDER BY id {COLLATE_C}",
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
                f" AND agent_id = %s) AS t(id) ORDER BY id {COLLATE_C}",
                s * 4,
            )
        ]

    def drop(self, tx: LayerTx, chosen: Sequence[tuple[str, int]]) -> None:
        """Delete memories for good (expired, or orphaned), with their layer rows."""
        self._drop_layer_rows(tx, [mid for mid, _ in chosen])
        tx.delete_labels([label for _, label in chosen if label >= 0])

    def schedule_purge(self, tx: LayerTx, ids: Sequence[str]) -> None:
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
        self, limit: int = 5_000, tx: LayerTx | None = None
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
