"""The agent-memory repository's lifecycle statements: forget and undo, erase, archive,
consolidation's selections and adoption of rows written below the layer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.records import from_us
from ...memory.sqlite.rows import placeholders
from ..records import entity_key
from .core import NewMemory, batches
from .reads import ReadRows
from .schema import AM_MEMORY_COLUMNS, LAYER_COLUMNS

# The layer's columns in an ``am_memory`` row as forget keeps it (after id and label,
# the org, agent, conversation, created_at and fingerprint of the memory row itself).
_KEPT = [n for n, _ in LAYER_COLUMNS if n != "speaker_key"]
_KEPT_AT = {n: AM_MEMORY_COLUMNS.replace(" ", "").split(",").index(n) for n in _KEPT}

if TYPE_CHECKING:
    from ...memory.sqlite.tx import WriteTx


class LifecycleRows(ReadRows):
    """Forget, undo, erase, archive, consolidation and adoption (see the module)."""

    # ------------------------------------------------------------------ forget, undo
    def forget(
        self,
        tx: WriteTx,
        chosen: Sequence[tuple[str, int]],
        token: str,
        at_us: int,
        until_us: int,
    ) -> None:
        """Move memories into the undo area: every row of every table that holds them is
        kept there (text, vector, decay state, facts, edges), then deleted everywhere, in
        the caller's one transaction, so no index can still return them."""
        for mid, label in chosen:
            mem = tx.query(
                "SELECT id, role, content, created_at_us, conversation_id, org_id, agent_id,"
                " expires_at_us, kind, source, metadata, embedding_model FROM memory"
                " WHERE label = ?",
                (label,),
            )[0]
            am = tx.query(f"SELECT {AM_MEMORY_COLUMNS} FROM am_memory WHERE id = ?", (mid,))[0]
            about = tx.query("SELECT entity, key FROM am_about WHERE memory_id = ?", (mid,))
            keys = [a[1] for a in about] + ([am[-1]] if am[-1] is not None else [])
            fact = tx.query("SELECT * FROM am_fact WHERE id = ?", (mid,))
            proc = tx.query("SELECT * FROM am_procedure WHERE id = ?", (mid,))
            edges = tx.query("SELECT * FROM am_edge WHERE src = ? OR dst = ?", (mid, mid))
            vec = tx.query("SELECT embedding FROM memory_vec WHERE label = ?", (label,))
            payload = {
                "memory": list(mem),
                "am_memory": list(am),
                "about": [list(a) for a in about],
                "fact": list(fact[0]) if fact else None,
                "procedure": list(proc[0]) if proc else None,
                "edges": [list(e) for e in edges],
            }
            tx.execute(
                "INSERT INTO am_forgotten (memory_id, token, org_id, agent_id, conversation_id,"
                " about, forgotten_at_us, until_us, payload, vector) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    mid,
                    token,
                    *self._scope,
                    mem[4],
                    json.dumps(sorted(set(keys))),
                    at_us,
                    until_us,
                    json.dumps(payload),
                    vec[0][0] if vec else None,
                ),
            )
        self._drop_layer_rows(tx, [mid for mid, _ in chosen])
        tx.delete_labels([label for _, label in chosen])

    def _drop_layer_rows(self, tx: WriteTx, ids: Sequence[str]) -> None:
        for part in batches(list(ids)):
            ph, args = placeholders(len(part)), list(part)
            for table, col in (
                ("am_about", "memory_id"),
                ("am_fact", "id"),
                ("am_procedure", "id"),
            ):
                tx.execute(f"DELETE FROM {table} WHERE {col} IN ({ph})", args)
            tx.execute(f"DELETE FROM am_edge WHERE src IN ({ph}) OR dst IN ({ph})", args + args)

    def _drop_references(self, tx: WriteTx, ids: Sequence[str]) -> None:
        """Pins, core marks, provenance either way and every summary made from these
        memories (a summary's text may quote them): for erase, and the purge after an
        undo window."""
        for part in batches(list(ids)):
            ph, args = placeholders(len(part)), list(part)
            tx.execute(f"DELETE FROM am_pin WHERE memory_id IN ({ph})", args)
            tx.execute(
                f"DELETE FROM am_source WHERE memory_id IN ({ph}) OR source_id IN ({ph})",
                args + args,
            )
            tx.execute(f"DELETE FROM am_core WHERE memory_id IN ({ph})", args)
            made = f"SELECT summary_id FROM am_summary_source WHERE memory_id IN ({ph})"
            tx.execute(f"DELETE FROM am_summary WHERE id IN ({made})", args)
            tx.execute(f"DELETE FROM am_summary_source WHERE summary_id IN ({made})", args)

    def forgotten(self, token: str, now_us: int) -> list[tuple[str, dict[str, Any], bytes | None]]:
        """(id, payload, vector) of a forget still within its undo window."""
        rows = self._q(
            "SELECT memory_id, payload, vector FROM am_forgotten WHERE token = ? AND org_id = ?"
            " AND agent_id = ? AND until_us > ? ORDER BY memory_id",
            (token, *self._scope, now_us),
        )
        return [(str(r[0]), json.loads(r[1]), r[2]) for r in rows]

    def unforget(
        self, tx: WriteTx, payloads: Sequence[dict[str, Any]], labels: Sequence[int]
    ) -> None:
        """Put the layer's rows of forgotten memories back (their memory rows were just
        re-inserted through ``tx`` under ``labels``) and empty their undo entries."""
        speakers: set[str] = set()
        for p, label in zip(payloads, labels, strict=True):
            am = list(p["am_memory"])
            # A payload kept before the layer's columns moved into the memory row has no
            # speaker key, and its speaker among its am_about rows.
            speaker = am[_KEPT_AT["speaker"]]
            key = entity_key(speaker) if speaker is not None else None
            tx.execute(
                f"UPDATE memory SET ({', '.join(_KEPT)}, speaker_key) ="
                f" ({placeholders(len(_KEPT) + 1)}) WHERE label = ?",
                (*(am[_KEPT_AT[n]] for n in _KEPT), key, label),
            )
            if key is not None:
                speakers.add(key)
            tx.executemany(
                "INSERT OR IGNORE INTO am_about (memory_id, org_id, agent_id, entity, key)"
                " VALUES (?,?,?,?,?)",
                [(am[0], *self._scope, e, k) for e, k in p["about"] if k != key],
            )
            for table, row in (("am_fact", p["fact"]), ("am_procedure", p["procedure"])):
                if row is not None:
                    tx.execute(f"INSERT INTO {table} VALUES ({placeholders(len(row))})", row)
            for e in p["edges"]:
                tx.execute(f"INSERT OR IGNORE INTO am_edge VALUES ({placeholders(len(e))})", e)
            tx.execute("DELETE FROM am_forgotten WHERE memory_id = ?", (am[0],))
        self._add_speakers(tx, speakers)

    def forgotten_select(self, selector: str, value: str) -> list[str]:
        """Ids in the undo area chosen like ``select`` (erase reaches them too)."""
        cond = {
            "id": "memory_id = ?",
            "conversation_id": "conversation_id = ?",
            "about": "EXISTS (SELECT 1 FROM json_each(about) WHERE value = ?)",
        }[selector]
        rows = self._q(
            f"SELECT memory_id FROM am_forgotten WHERE org_id = ? AND agent_id = ? AND {cond}",
            (*self._scope, value),
        )
        return [str(r[0]) for r in rows]

    def purgeable(self, now_us: int) -> list[str]:
        """Ids in the undo area whose window has passed."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT memory_id FROM am_forgotten WHERE org_id = ? AND agent_id = ?"
                " AND until_us <= ? ORDER BY memory_id",
                (*self._scope, now_us),
            )
        ]

    # ------------------------------------------------------------------ erase
    def erase(
        self,
        tx: WriteTx,
        chosen: Sequence[tuple[str, int]],
        forgotten: Sequence[str],
        selector: str,
        at_us: int,
        derived: Sequence[str] = (),
    ) -> None:
        """Delete every row holding these memories, in every table, with their history,
        access log and undo entries; leave a content-free tombstone and a pending purge
        (the archive, the keyword index's segments, the WAL and the HNSW checkpoint are
        cleaned after the commit; ``am_purge`` makes that resumable). ``derived``: those
        of them erased for what they were derived from (listed apart in the tombstone)."""
        ids = sorted({mid for mid, _ in chosen} | set(forgotten))
        self._drop_layer_rows(tx, ids)
        self._drop_references(tx, ids)
        for part in batches(ids):
            ph, args = placeholders(len(part)), list(part)
            tx.execute(f"DELETE FROM am_history WHERE target IN ({ph})", args)
            tx.execute(f"DELETE FROM am_access WHERE memory_id IN ({ph})", args)
            tx.execute(f"DELETE FROM am_forgotten WHERE memory_id IN ({ph})", args)
        tx.delete_labels([label for _, label in chosen])
        self.prune_speakers(tx)
        apart = set(derived)
        chose = [i for i in ids if i not in apart]
        tx.execute(
            "INSERT INTO am_tombstone (org_id, agent_id, at_us, selector, count, ids, derived)"
            " VALUES (?,?,?,?,?,?,?)",
            (*self._scope, at_us, selector, len(chose), json.dumps(chose), json.dumps(derived)),
        )
        tx.executemany("INSERT OR IGNORE INTO am_purge (memory_id) VALUES (?)", [(i,) for i in ids])

    def prune_speakers(self, tx: WriteTx) -> None:
        """Forget the speakers of this scope no live memory has any more (after erase or
        a purge: a speaker's name is not kept once what they said is gone; an undo adds
        a forgotten memory's speaker back)."""
        tx.execute(
            "DELETE FROM am_speaker WHERE org_id = ?1 AND agent_id = ?2 AND NOT EXISTS"
            " (SELECT 1 FROM memory m WHERE m.org_id = ?1 AND m.agent_id = ?2"
            " AND m.speaker_key = am_speaker.key)",
            self._scope,
        )

    def pending_purge(self) -> list[str]:
        """Ids erased whose cleanup after the commit has not finished (any scope)."""
        return [str(r[0]) for r in self._q("SELECT memory_id FROM am_purge ORDER BY memory_id")]

    def clear_purge(self, tx: WriteTx, ids: Sequence[str]) -> None:
        """The cleanup of these erased ids finished."""
        tx.executemany("DELETE FROM am_purge WHERE memory_id = ?", [(i,) for i in ids])

    def tombstones(self) -> list[dict[str, Any]]:
        """What erase removed in this scope: when, by what kind of selector, which ids,
        and which memories derived from them it erased with them."""
        return [
            {
                "seq": r[0],
                "at": from_us(r[1]).isoformat(),
                "selector": r[2],
                "count": r[3],
                "ids": json.loads(r[4]),
                "derived": json.loads(r[5]),
            }
            for r in self._q(
                "SELECT seq, at_us, selector, count, ids, derived FROM am_tombstone"
                " WHERE org_id = ? AND agent_id = ? ORDER BY seq",
                self._scope,
            )
        ]

    # ------------------------------------------------------------------ archive
    def texts(self, ids: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(id, label, content, metadata JSON) of live, not yet archived memories."""
        out: list[tuple[str, int, str, str]] = []
        for part in batches(list(ids)):
            out.extend(
                tuple(r)
                for r in self._q(
                    "SELECT m.id, m.label, m.content, m.metadata FROM am_memory a JOIN memory m"
                    f" ON m.label = a.label WHERE a.id IN ({placeholders(len(part))})"
                    " AND +a.org_id = ? AND +a.agent_id = ? AND a.archived_at_us IS NULL"
                    " ORDER BY m.label",
                    (*part, *self._scope),
                )
            )
        return out

    def vector_of(self, label: int) -> bytes | None:
        """The stored float32 vector of a memory row, if it has one."""
        rows = self._q("SELECT embedding FROM memory_vec WHERE label = ?", (label,))
        return bytes(rows[0][0]) if rows else None

    def mark_archived(self, tx: WriteTx, rows: Sequence[tuple[str, int, str]], at_us: int) -> None:
        """The text of (id, label, digest) rows is now in the archive: the memory row keeps
        kind ``archived`` and a pointer instead of it (its vector and keywords stay). Its
        salience is computed first if it never was: it needs the text."""
        self.fill_salience(tx, [mid for mid, _, _ in rows])
        tx.executemany(
            "UPDATE memory SET content = ?, metadata = '{}', kind = 'archived' WHERE label = ?",
            [(f"archived:memory.archive.db/{mid}", label) for mid, label, _ in rows],
        )
        tx.executemany(
            "UPDATE memory SET archived_at_us = ?, archive_digest = ? WHERE id = ?"
            " AND archived_at_us IS NULL",
            [(at_us, digest, mid) for mid, _, digest in rows],
        )

    def unarchive(self, tx: WriteTx, mid: str, label: int, content: str, metadata: str) -> None:
        """Put an archived memory's text back into its row."""
        tx.execute(
            "UPDATE memory SET content = ?, metadata = ?, kind = 'granted' WHERE label = ?",
            (content, metadata, label),
        )
        tx.execute(
            "UPDATE memory SET archived_at_us = NULL, archive_digest = NULL WHERE id = ?",
            (mid,),
        )

    def all_archived(self) -> dict[str, str]:
        """Every archived id of the data dir (all scopes: the archive file is shared)."""
        return dict(
            self._q("SELECT id, archive_digest FROM am_memory WHERE archived_at_us IS NOT NULL")
        )

    def archived_payload_ids(self) -> set[str]:
        """Ids in the undo area that were archived when forgotten (their text stays in
        the archive until undone or purged)."""
        return {
            str(r[0])
            for r in self._q(
                "SELECT memory_id FROM am_forgotten WHERE json_extract(payload,"
                " '$.am_memory[18]') IS NOT NULL"
            )
        }

    # ------------------------------------------------------------------ consolidation
    def texts_of_type(self, type_: str) -> list[tuple[str, int, str, int, str | None]]:
        """(id, label, content, created_at_us, promoted_to) of live, unarchived memories
        of one type that are not facts, by creation time then id."""
        return [
            tuple(r)
            for r in self._q(
                "SELECT a.id, a.label, m.content, a.created_at_us, a.promoted_to FROM am_memory a"
                " JOIN memory m ON m.label = a.label WHERE a.org_id = ? AND a.agent_id = ?"
                " AND a.type = ? AND a.archived_at_us IS NULL AND a.id NOT IN (SELECT id FROM"
                " am_fact) ORDER BY a.created_at_us, a.id",
                (*self._scope, type_),
            )
        ]

    def about_of(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Entities of each memory (as written)."""
        return self._about(ids)

    def set_promoted(self, tx: WriteTx, ids: Sequence[str], to: str) -> None:
        """These episodes made (or joined) the semantic memory ``to``."""
        tx.executemany("UPDATE memory SET promoted_to = ? WHERE id = ?", [(to, i) for i in ids])

    def add_access_counts(self, tx: WriteTx, into: str, from_ids: Sequence[str]) -> None:
        """Fold the access counts of merged twins into the one kept."""
        for part in batches(list(from_ids)):
            tx.execute(
                "UPDATE memory SET access_count = access_count + (SELECT coalesce(sum("
                f"access_count), 0) FROM memory WHERE id IN ({placeholders(len(part))}))"
                " WHERE id = ?",
                (*part, into),
            )

    def expired(self, now_us: int) -> list[tuple[str, int]]:
        """(id, label) of memories past their TTL, not yet deleted."""
        return [
            (str(r[0]), int(r[1]))
            for r in self._q(
                "SELECT a.id, a.label FROM am_memory a JOIN memory m ON m.label = a.label"
                " WHERE a.org_id = ? AND a.agent_id = ? AND m.expires_at_us IS NOT NULL"
                " AND m.expires_at_us <= ? ORDER BY a.id",
                (*self._scope, now_us),
            )
        ]

    def orphans(self) -> list[str]:
        """Ids with layer rows (entities, a fact, a procedure) whose memory row is gone:
        deleted through the memory store (which deletes the layer's columns with the
        row) and not forgotten (a forget moves those rows into its undo area)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT memory_id FROM am_about WHERE org_id = ?1 AND agent_id = ?2"
                " UNION SELECT id FROM am_fact WHERE org_id = ?1 AND agent_id = ?2"
                " UNION SELECT id FROM am_procedure WHERE org_id = ?1 AND agent_id = ?2"
                " EXCEPT SELECT id FROM memory WHERE org_id = ?1 AND agent_id = ?2"
                " ORDER BY 1",
                self._scope,
            )
        ]

    def drop(self, tx: WriteTx, chosen: Sequence[tuple[str, int]]) -> None:
        """Delete memories for good (expired, or orphaned), with their layer rows."""
        self._drop_layer_rows(tx, [mid for mid, _ in chosen])
        tx.delete_labels([label for _, label in chosen if label >= 0])

    def schedule_purge(self, tx: WriteTx, ids: Sequence[str]) -> None:
        """Empty undo entries whose window passed, leaving their cleanup pending exactly
        like an erase's (``am_purge``)."""
        tx.executemany("DELETE FROM am_forgotten WHERE memory_id = ?", [(i,) for i in ids])
        self._drop_references(tx, ids)
        tx.executemany("INSERT OR IGNORE INTO am_purge (memory_id) VALUES (?)", [(i,) for i in ids])

    # ------------------------------------------------------------------ adoption
    def unadopted(
        self, limit: int = 5_000, tx: WriteTx | None = None
    ) -> tuple[list[tuple[int, str, str, str, int]], int, int]:
        """Up to ``limit`` (label, id, conversation_id, content, created_at_us) of memory
        rows of this scope without a layer row yet (written by ``SqliteMemoryStore`` or
        the CLI's ``memory append``), above the label adoption last reached; and that
        label, and the largest label in ``memory``."""
        rows = self._q("SELECT value FROM meta WHERE key = ?", (self._adopted_key(),), tx)
        after = int(rows[0][0]) if rows else 0
        top = int(self._q("SELECT max(label) FROM memory", (), tx)[0][0] or 0)
        found = [
            (int(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4]))
            for r in self._q(
                "SELECT m.label, m.id, m.conversation_id, m.content, m.created_at_us"
                " FROM memory m WHERE m.label > ? AND m.org_id = ? AND m.agent_id = ?"
                " AND m.type IS NULL"
                " ORDER BY m.label LIMIT ?",
                (after, *self._scope, limit),
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
        """Give memory rows their layer rows (``unadopted``), and remember the label
        adoption reached, so the next open looks only above it. With no rows, only moves
        that mark, after checking under the write lock that nothing below it is left."""
        with self.transaction() as tx:
            if not rows and any(r[0] <= reached for r in self.unadopted(1, tx)[0]):
                return  # a row came in meanwhile: the next open adopts it
            tx.executemany(
                "UPDATE memory SET type = ?, speaker = ?, speaker_key = ?, confidence = ?,"
                " importance = ?, stability = ?, difficulty = ? WHERE label = ? AND type IS NULL",
                [
                    (
                        m.type,
                        m.speaker,
                        m.speaker_key,
                        m.confidence,
                        m.importance,
                        m.stability,
                        m.difficulty,
                        label,
                    )
                    for (label, _, _, _, _), m in zip(rows, metas, strict=True)
                ],
            )
            self._add_speakers(tx, {m.speaker_key for m in metas if m.speaker_key})
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value",
                (self._adopted_key(), str(reached)),
            )

    def _adopted_key(self) -> str:
        return f"agentmem_adopted:{json.dumps(list(self._scope))}"


__all__ = ["LifecycleRows"]
