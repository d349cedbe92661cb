"""The agent memory of a PostgreSQL store in and out of the plain form
(``agentmem.transfer``): ``PgLayer`` reads (``transfer_read``) and writes (here).

Writing seals every text and blinds every lookup key exactly as the repository's own
writes do (the same tables, row ids and scopes in the associated data; the same blinded
keys), so the rows it leaves are the rows this backend would have written itself. Each
write is idempotent (``ON CONFLICT``, or set-to-the-same-values), one transaction per
page or scope, so a move run again after a crash doubles nothing. An archived memory's
text goes into ``az_am_archive`` in the transaction that marks its row, as
``PgArchiveRows.mark_archived`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.records import text_fingerprint
from ..transfer.plain import (
    COLUMNS,
    MemoryState,
    Namespaces,
    ScopeRows,
    column_values,
)
from ..transfer.side import (
    clear_tables,
    namespace_tables,
)
from . import schema
from .archive import TABLE as ARCHIVE
from .archive import seal_text
from .beliefs import history_row_id
from .transfer_read import PgLayerReader

if TYPE_CHECKING:
    from ...memory.postgres.tx import PgWriteTx

_SUMMARY_COLUMNS = (
    "id",
    "org_id",
    "agent_id",
    "conversation_id",
    "text",
    "created_at_us",
    "expires_at_us",
)
# The arrays of the layer columns' UPDATE, in ``COLUMNS`` order.
_TYPES = dict(
    type="text",
    confidence="float8",
    importance="float8",
    salience="float8",
    stability="float8",
    difficulty="float8",
    last_review_us="bigint",
    access_count="integer",
    last_access_us="bigint",
    retrievability="float8",
    promoted_to="text",
)


class PgLayer(PgLayerReader):
    """The agent memory of one PostgreSQL store, as ``transfer.LayerTransfer``."""

    def prepare(self) -> None:
        """Create or upgrade the layer's tables (``schema.migrate``)."""
        schema.migrate(self._store.connection())

    # ------------------------------------------------------------------ writing
    def _here(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        """(label, org, agent, conversation) of those of ``ids`` this store holds."""
        if not ids:
            return {}
        return {
            str(r[0]): (int(r[1]), str(r[2]), str(r[3]), str(r[4]))
            for r in self._q(
                "SELECT id, label, org_id, agent_id, conversation_id FROM az_memory"
                " WHERE id = ANY(%s)",
                (list(ids),),
            )
        }

    def put_memories(self, states: Sequence[MemoryState]) -> int:
        """Write the states of the memories this store holds; how many."""
        here = self._here([s.id for s in states])
        keep = [s for s in states if s.id in here and here[s.id][1:3] == (s.org_id, s.agent_id)]
        if not keep:
            return 0
        ids = [s.id for s in keep]
        with self._store.transaction() as tx:
            self._update_columns(tx, keep)
            tx.executemany(
                "INSERT INTO az_am_about (memory_id, org_id, agent_id, entity, key)"
                " VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                [
                    (s.id, s.org_id, s.agent_id, c.seal("az_am_about", s.id, n), c.blind(k))
                    for s in keep
                    for c in [self.codec(s.org_id, s.agent_id)]
                    for n, k in s.about_keyed()
                ],
            )
            tx.executemany(
                "INSERT INTO az_am_speaker (org_id, agent_id, key) VALUES (%s,%s,%s)"
                " ON CONFLICT DO NOTHING",
                sorted(
                    {
                        (s.org_id, s.agent_id, self.codec(s.org_id, s.agent_id).blind(k))
                        for s in keep
                        if (k := s.speaker_key) is not None
                    }
                ),
            )
            # The access log has no key: this page's is replaced whole (a re-run writes
            # it again, not twice).
            tx.execute("DELETE FROM az_am_access WHERE memory_id = ANY(%s)", (ids,))
            tx.execute(
                "INSERT INTO az_am_access (memory_id, at_us)"
                " SELECT * FROM unnest(%s::text[], %s::bigint[])",
                (
                    [s.id for s in keep for _ in s.accesses],
                    [at for s in keep for at in s.accesses],
                ),
            )
            for s in keep:
                if s.archived is not None:
                    self._archived(tx, s, here[s.id])
        return len(keep)

    def _update_columns(self, tx: PgWriteTx, keep: Sequence[MemoryState]) -> None:
        """The layer columns of the memory rows, one statement (as the repository's
        ``insert``): the speaker sealed for its row, its key blinded for its scope."""
        cols = (*COLUMNS, "speaker", "speaker_key")
        types = (*(_TYPES[c] for c in COLUMNS), "bytea", "text")
        values: list[list[Any]] = [[s.id for s in keep]]
        values += [list(v) for v in zip(*(column_values(s) for s in keep), strict=True)]
        values.append(
            [
                None
                if s.speaker is None
                else self.codec(s.org_id, s.agent_id).seal("az_memory.speaker", s.id, s.speaker)
                for s in keep
            ]
        )
        values.append(
            [
                None if (k := s.speaker_key) is None else self.codec(s.org_id, s.agent_id).blind(k)
                for s in keep
            ]
        )
        arrays = ", ".join(f"%s::{t}[]" for t in ("text", *types))
        tx.execute(
            f"UPDATE az_memory m SET {', '.join(f'{c} = t.{c}' for c in cols)}"
            f" FROM unnest({arrays}) AS t(id, {', '.join(cols)}) WHERE m.id = t.id",
            values,
        )

    def _archived(self, tx: PgWriteTx, s: MemoryState, here: tuple[int, str, str, str]) -> None:
        """An archived memory: its text into ``az_am_archive`` (sealed), its row marked
        with the keyed digest and fingerprint of that text (as ``mark_archived`` leaves
        it), and the row's keywords made the text's (they stay searchable)."""
        assert s.archived is not None
        content, meta = s.archived
        label, org, agent, conv = here
        c = self.codec(org, agent)
        tx.execute(
            f"INSERT INTO {ARCHIVE} (id, org_id, agent_id, sealed, archived_at_us)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET sealed = excluded.sealed,"
            f" archived_at_us = excluded.archived_at_us WHERE {ARCHIVE}.org_id = excluded.org_id"
            f" AND {ARCHIVE}.agent_id = excluded.agent_id",
            (s.id, org, agent, seal_text(c, s.id, content, meta), s.archived_at_us),
        )
        tx.execute(
            "UPDATE az_memory SET archived_at_us = %s, archive_digest = %s, fingerprint = %s"
            " WHERE label = %s",
            (
                s.archived_at_us,
                c.digest(content, meta),
                c.fingerprint(text_fingerprint(content)),
                label,
            ),
        )
        tx.replace_keywords(label, content, (org, agent, conv))

    def put_scope_rows(self, rows: ScopeRows) -> int:
        """Write one scope's rows, sealed and blinded (those pointing at a memory this
        store does not hold left out); how many."""
        here = self._here(sorted(rows.memory_ids()))
        r = rows.only_moved({i for i, v in here.items() if v[1:3] == (rows.org_id, rows.agent_id)})
        s = (r.org_id, r.agent_id)
        c = self.codec(*s)
        with self._store.transaction() as tx:
            tx.executemany(
                "INSERT INTO az_am_fact (id, org_id, agent_id, sealed, subject_key,"
                " predicate_key, object_key, confidence, single_valued, valid_from_us,"
                " valid_to_us, superseded_by, retracted)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (id) DO UPDATE"
                " SET confidence = excluded.confidence, valid_to_us = excluded.valid_to_us,"
                " superseded_by = excluded.superseded_by, retracted = excluded.retracted",
                [
                    (
                        f.id,
                        *s,
                        c.seal("az_am_fact", f.id, [f.subject, f.predicate, f.object]),
                        *(c.blind(k) for k in f.lookup_keys()),
                        f.confidence,
                        f.single_valued,
                        f.valid_from_us,
                        f.valid_to_us,
                        f.superseded_by,
                        f.retracted,
                    )
                    for f in r.facts
                ],
            )
            tx.executemany(
                "INSERT INTO az_am_procedure (id, org_id, agent_id, sealed, action_key,"
                " context_key, successes, failures, updated_at_us)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (id) DO UPDATE SET"
                " successes = excluded.successes, failures = excluded.failures,"
                " updated_at_us = excluded.updated_at_us",
                [
                    (
                        p.id,
                        *s,
                        c.seal("az_am_procedure", p.id, [p.action, p.context]),
                        *(c.blind(k) for k in p.lookup_keys()),
                        p.successes,
                        p.failures,
                        p.updated_at_us,
                    )
                    for p in r.procedures
                ],
            )
            self._ignore(
                tx,
                "az_am_summary",
                _SUMMARY_COLUMNS,
                [
                    (
                        x.id,
                        *s,
                        x.conversation_id,
                        None if x.text is None else c.seal("az_am_summary", x.id, x.text),
                        x.created_at_us,
                        x.expires_at_us,
                    )
                    for x in r.summaries
                ],
            )
            self._ignore(
                tx,
                "az_am_history",
                ("seq", "org_id", "agent_id", "at_us", "op", "target", "detail"),
                [
                    (
                        h.seq,
                        *s,
                        h.at_us,
                        h.op,
                        h.target,
                        c.seal(
                            "az_am_history",
                            history_row_id(h.op, h.target, h.at_us),
                            h.detail_value(),
                        ),
                    )
                    for h in r.history
                ],
            )
            for name, cols, values in clear_tables(r):
                self._ignore(tx, f"az_am_{name}", cols, values)
        return sum(r.counts().values())

    @staticmethod
    def _ignore(
        tx: PgWriteTx, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Insert each row, skipping one already there. A ``seq`` is the source's own
        (the history's and the tombstones' numbers are kept): written over the
        identity column's default, which ``finish`` then moves past it."""
        if rows:
            override = " OVERRIDING SYSTEM VALUE" if "seq" in cols else ""
            tx.executemany(
                f"INSERT INTO {table} ({', '.join(cols)}){override}"
                f" VALUES ({', '.join(['%s'] * len(cols))}) ON CONFLICT DO NOTHING",
                rows,
            )

    def put_namespaces(self, ns: Namespaces) -> None:
        """Write namespaces and grants (one already there stays)."""
        with self._store.transaction() as tx:
            for name, cols, values in namespace_tables(ns):
                self._ignore(tx, f"az_am_{name}", cols, values)

    def finish(self) -> None:
        """Move the history's and the tombstones' identity sequences past the largest
        number written (never back): the next line an agent appends gets a new one."""
        with self._store.transaction() as tx:
            for table in ("az_am_history", "az_am_tombstone"):
                seq = tx.query("SELECT pg_get_serial_sequence(%s, 'seq')", (table,))[0][0]
                top = tx.query(f"SELECT max(seq) FROM {table}")[0][0]
                if top is None:
                    continue
                last, called = tx.query(f"SELECT last_value, is_called FROM {seq}")[0]
                if not called or int(last) < int(top):
                    tx.execute("SELECT setval(%s, %s)", (seq, int(top)))


__all__ = ["PgLayer"]
