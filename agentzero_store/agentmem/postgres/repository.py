"""The agent-memory repository on PostgreSQL: namespaces, pins and core facts, the hot
and warm tiers, sessions, recall's signals and listing (the methods ``SqliteRepository``
defines itself, ``agentmem.repository``), and what agent-memory data a store holds.

What differs from SQLite, and why:

- a warm summary's text is sealed (``codec``, bound to the summary's id); namespace and
  session names, owners and agent ids are ids and stay clear, as a session's
  ``inherits`` (a JSON list of session names);
- entity keys are compared blinded: ``known_entities`` maps what it finds back to the
  plain keys it was given;
- a memory's role and kind are inside its sealed row (``pg.rows``), so the filters on
  them (``latest_tool_turn``, ``page(kind=...)``) open rows on the client, walking the
  conversation or the scope newest first in chunks inside one read-only snapshot (SQLite
  answers either with one statement, so it sees one state too);
- many writers: inserts use ``ON CONFLICT``; ``put_summary`` takes a transaction-scoped
  advisory lock per conversation where SQLite relied on its single writer lock;
- text is ordered ``COLLATE "C"`` (byte order, as SQLite's ``BINARY``), whatever the
  database's collation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..sqlite.core import Candidate, Filter, NewMemory, Row, entities
from .beliefs import PgBeliefRows
from .core import READ_COLUMNS, PgRepositoryCore
from .lifecycle import PgLifecycleRows
from .schema import SCHEMA_VERSION
from .sources import PgSourceRows

if TYPE_CHECKING:
    pass

_SUMMARY = "az_am_summary"  # the sealed summary texts' table (the codec's AAD)
_SCAN_FIRST, _SCAN_MAX = 32, 1024  # rows per chunk of a client-side filtered walk


def _limit(n: int) -> int | None:
    """SQLite's ``LIMIT`` with a negative count means no limit; PostgreSQL's ``LIMIT
    NULL`` does (a negative one is an error)."""
    return None if n < 0 else n


class PgRepositoryRows(PgRepositoryCore):
    """Namespaces, pins and core facts, the hot and warm tiers, sessions, recall's signals
    and listing, over the tables of ``postgres.schema``."""

    # ------------------------------------------------------------------ namespaces
    # Read by org, whatever this repository's scope is (as on SQLite).
    def namespace_owner(self, name: str) -> str | None:
        """The owner of namespace ``name`` of this org, None if there is none."""
        rows = self._q(
            "SELECT owner FROM az_am_namespace WHERE org_id = %s AND name = %s",
            (self.org_id, name),
        )
        return str(rows[0][0]) if rows else None

    def create_namespace(self, name: str, owner: str, at_us: int) -> str:
        """Create namespace ``name`` owned by ``owner`` unless it exists; its owner."""
        with self.transaction() as tx:
            # Race-free without a lock: a concurrent creator's uncommitted row makes this
            # INSERT wait for its transaction; once it commits the insert does nothing and
            # the SELECT (a new snapshot under READ COMMITTED) reads that creator's owner.
            tx.execute(
                "INSERT INTO az_am_namespace (org_id, name, owner, created_at_us)"
                " VALUES (%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                (self.org_id, name, owner, at_us),
            )
            return str(
                tx.query(
                    "SELECT owner FROM az_am_namespace WHERE org_id = %s AND name = %s",
                    (self.org_id, name),
                )[0][0]
            )

    def set_grant(self, name: str, agent_id: str, by: str, at_us: int, granted: bool) -> None:
        """Grant (or revoke) ``agent_id`` the use of namespace ``name``."""
        with self.transaction() as tx:
            if granted:
                tx.execute(
                    "INSERT INTO az_am_grant (org_id, namespace, agent_id, granted_by, at_us)"
                    " VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                    (self.org_id, name, agent_id, by, at_us),
                )
            else:
                tx.execute(
                    "DELETE FROM az_am_grant WHERE org_id = %s AND namespace = %s"
                    " AND agent_id = %s",
                    (self.org_id, name, agent_id),
                )

    def may_use(self, name: str, agent_id: str) -> bool:
        """Whether ``agent_id`` owns namespace ``name`` or is granted it (one query)."""
        rows = self._q(
            "SELECT EXISTS (SELECT 1 FROM az_am_namespace WHERE org_id = %s AND name = %s"
            " AND owner = %s) OR EXISTS (SELECT 1 FROM az_am_grant WHERE org_id = %s"
            " AND namespace = %s AND agent_id = %s)",
            (self.org_id, name, agent_id) * 2,
        )
        return bool(rows[0][0])

    def members(self, name: str) -> list[str]:
        """The agents granted namespace ``name`` (its owner not included)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT agent_id FROM az_am_grant WHERE org_id = %s AND namespace = %s"
                ' ORDER BY agent_id COLLATE "C"',
                (self.org_id, name),
            )
        ]

    def namespaces_of(self, agent_id: str) -> list[tuple[str, str, int]]:
        """(name, owner, created_at_us) of the namespaces ``agent_id`` owns or is granted."""
        return [
            (str(r[0]), str(r[1]), int(r[2]))
            for r in self._q(
                "SELECT name, owner, created_at_us FROM az_am_namespace WHERE org_id = %s"
                " AND (owner = %s OR name IN (SELECT namespace FROM az_am_grant"
                ' WHERE org_id = %s AND agent_id = %s)) ORDER BY name COLLATE "C"',
                (self.org_id, agent_id) * 2,
            )
        ]

    # ------------------------------------------------------------------ pins, core facts
    def set_pin(self, memory_id: str, at_us: int, pinned: bool) -> None:
        """Pin (or unpin) a memory of this scope."""
        with self.transaction() as tx:
            if pinned:
                tx.execute(
                    "INSERT INTO az_am_pin (memory_id, org_id, agent_id, at_us)"
                    " VALUES (%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                    (memory_id, *self._scope, at_us),
                )
            else:
                tx.execute(
                    "DELETE FROM az_am_pin WHERE memory_id = %s AND org_id = %s AND agent_id = %s",
                    (memory_id, *self._scope),
                )

    def pinned_labels(self) -> list[int]:
        """Labels of the live pinned memories of this scope, oldest pin first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT a.label FROM az_am_pin p JOIN az_memory a ON a.id = p.memory_id"
                " WHERE p.org_id = %s AND p.agent_id = %s AND a.type IS NOT NULL"
                " AND a.org_id = p.org_id AND a.agent_id = p.agent_id"
                ' ORDER BY p.at_us, p.memory_id COLLATE "C"',
                self._scope,
            )
        ]

    def set_core(self, ids: Sequence[str], at_us: int, reason: str | None) -> None:
        """Mark semantic memories core (``reason``) or, with None, archival again."""
        with self.transaction() as tx:
            if reason is None:
                tx.execute(
                    "DELETE FROM az_am_core WHERE memory_id = ANY(%s) AND org_id = %s"
                    " AND agent_id = %s",
                    (list(ids), *self._scope),
                )
            else:
                tx.executemany(
                    "INSERT INTO az_am_core (memory_id, org_id, agent_id, since_us, reason)"
                    " VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                    [(i, *self._scope, at_us, reason) for i in ids],
                )

    # A closed fact (superseded or retracted) of this scope: history, not knowledge.
    _CLOSED_FACT_IDS = (
        "SELECT id FROM az_am_fact WHERE valid_to_us IS NOT NULL AND org_id = %s AND agent_id = %s"
    )

    def core_labels(self) -> list[int]:
        """Labels of the live core memories of this scope (current facts only), oldest
        first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT a.label FROM az_am_core c JOIN az_memory a ON a.id = c.memory_id"
                " WHERE c.org_id = %s AND c.agent_id = %s AND a.type IS NOT NULL"
                " AND a.org_id = c.org_id AND a.agent_id = c.agent_id"
                f" AND a.archived_at_us IS NULL AND a.id NOT IN ({self._CLOSED_FACT_IDS})"
                ' ORDER BY c.since_us, c.memory_id COLLATE "C"',
                (*self._scope, *self._scope),
            )
        ]

    def core_candidates(self, min_accesses: int) -> list[str]:
        """Archival semantic memories of this scope accessed at least ``min_accesses``
        times (promotion to core)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT id FROM az_memory WHERE org_id = %s AND agent_id = %s"
                " AND type = 'semantic' AND access_count >= %s AND archived_at_us IS NULL"
                " AND id NOT IN (SELECT memory_id FROM az_am_core)"
                f' AND id NOT IN ({self._CLOSED_FACT_IDS}) ORDER BY id COLLATE "C"',
                (*self._scope, min_accesses, *self._scope),
            )
        ]

    def core_idle(self, before_us: int) -> list[str]:
        """Core memories promoted by access whose last access (or promotion) is older
        than ``before_us``, or that are no longer current (demotion)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT c.memory_id FROM az_am_core c LEFT JOIN az_memory a"
                " ON a.id = c.memory_id AND a.type IS NOT NULL"
                " WHERE c.org_id = %s AND c.agent_id = %s AND (a.id IS NULL"
                " OR a.archived_at_us IS NOT NULL"
                f" OR c.memory_id IN ({self._CLOSED_FACT_IDS})"
                " OR (c.reason = 'accessed'"
                " AND greatest(coalesce(a.last_access_us, 0), c.since_us) < %s))"
                ' ORDER BY c.memory_id COLLATE "C"',
                (*self._scope, *self._scope, before_us),
            )
        ]

    # ------------------------------------------------------------------ hot and warm tiers
    # A conversation's order is (created_at_us, label), one range of az_memory_turns.
    _CONV_TURNS = (
        "FROM az_memory m WHERE m.org_id = %s AND m.agent_id = %s AND m.conversation_id = %s"
        " AND m.type = 'episodic'"
    )

    def last_turns(self, conversation_id: str, n: int) -> list[int]:
        """Labels of the last ``n`` turns (episodic memories) of a conversation, oldest
        first."""
        rows = self._q(
            f"SELECT m.label {self._CONV_TURNS}"
            " ORDER BY m.created_at_us DESC, m.label DESC LIMIT %s",
            (*self._scope, conversation_id, _limit(n)),
        )
        return [int(r[0]) for r in reversed(rows)]

    def latest_tool_turn(self, conversation_id: str) -> int | None:
        """Label of a conversation's newest live turn of role ``tool``, if any (the role
        is sealed: walks the conversation backwards, opening turns, to that turn)."""
        found = self._walk_newest(
            self._CONV_TURNS,
            [*self._scope, conversation_id],
            lambda r: self._rows.open(r[:8]).role == "tool",
            0,
            1,
        )
        return int(found[0][0]) if found else None

    def turns_before(self, conversation_id: str, label: int | None) -> list[tuple[int, str]]:
        """(label, id) of a conversation's turns before the turn ``label`` (all of them
        with None), oldest first: what warm summaries cover."""
        params: tuple[Any, ...] = ()
        cond = ""
        if label is not None:
            cond = (
                " AND (m.created_at_us, m.label) < (SELECT created_at_us, label FROM az_memory"
                " WHERE label = %s AND org_id = %s AND agent_id = %s)"
            )
            params = (label, *self._scope)
        rows = self._q(
            f"SELECT m.label, m.id {self._CONV_TURNS}{cond} ORDER BY m.created_at_us, m.label",
            (*self._scope, conversation_id, *params),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def _summary_lock(self, conversation_id: str) -> int:
        """The advisory lock key of one conversation's warm summary (a signed 64-bit
        hash of the scope and the conversation)."""
        h = hashlib.blake2b(
            json.dumps(["az-am-summary", *self._scope, conversation_id]).encode(), digest_size=8
        )
        return int.from_bytes(h.digest(), "big", signed=True)

    def put_summary(
        self,
        summary_id: str,
        conversation_id: str,
        text: str | None,
        sources: Sequence[str],
        at_us: int,
        expires_us: int,
    ) -> None:
        """Store a warm summary of a conversation, replacing its previous ones."""
        with self.transaction() as tx:
            # SQLite's single writer made "delete the old, insert the new" leave one
            # summary per conversation. Here two writers would each miss the other's
            # uncommitted row and both insert: they take turns per conversation instead.
            tx.execute("SELECT pg_advisory_xact_lock(%s)", (self._summary_lock(conversation_id),))
            old = tx.query(
                "DELETE FROM az_am_summary WHERE org_id = %s AND agent_id = %s"
                " AND conversation_id = %s RETURNING id",
                (*self._scope, conversation_id),
            )
            if old:
                tx.execute(
                    "DELETE FROM az_am_summary_source WHERE summary_id = ANY(%s)",
                    ([r[0] for r in old],),
                )
            sealed = None if text is None else self.codec.seal(_SUMMARY, summary_id, text)
            tx.execute(
                "INSERT INTO az_am_summary (id, org_id, agent_id, conversation_id, text,"
                " created_at_us, expires_at_us) VALUES (%s,%s,%s,%s,%s,%s,%s)",
                (summary_id, *self._scope, conversation_id, sealed, at_us, expires_us),
            )
            tx.executemany(
                "INSERT INTO az_am_summary_source (summary_id, memory_id, position)"
                " VALUES (%s,%s,%s)",
                [(summary_id, mid, i) for i, mid in enumerate(sources)],
            )

    def summary(self, conversation_id: str, now_us: int) -> tuple[str | None, list[int]] | None:
        """The live warm summary of a conversation: its text (None: extractive) and the
        labels of its sources, in order. None if there is none, it expired, or one of its
        sources is no longer live. ``TamperedRecordError`` if its text does not open."""
        rows = self._q(
            "SELECT id, text FROM az_am_summary WHERE org_id = %s AND agent_id = %s"
            " AND conversation_id = %s AND expires_at_us > %s"
            " ORDER BY created_at_us DESC LIMIT 1",
            (*self._scope, conversation_id, now_us),
        )
        if not rows:
            return None
        sid, blob = rows[0]
        srcs = self._q(
            "SELECT s.memory_id, a.label FROM az_am_summary_source s LEFT JOIN az_memory a"
            " ON a.id = s.memory_id AND a.type IS NOT NULL AND a.org_id = %s"
            " AND a.agent_id = %s WHERE s.summary_id = %s ORDER BY s.position",
            (*self._scope, sid),
        )
        if any(r[1] is None for r in srcs):
            return None
        text = None if blob is None else str(self.codec.open(_SUMMARY, str(sid), blob))
        return text, [int(r[1]) for r in srcs]

    def evict_summaries(self, now_us: int) -> int:
        """Delete the warm summaries of this scope past their TTL; how many."""
        with self.transaction() as tx:
            # RETURNING counts what this transaction deleted (a concurrent eviction's
            # rows are locked, then skipped: never counted twice).
            gone = tx.query(
                "DELETE FROM az_am_summary WHERE org_id = %s AND agent_id = %s"
                " AND expires_at_us <= %s RETURNING id",
                (*self._scope, now_us),
            )
            if gone:
                tx.execute(
                    "DELETE FROM az_am_summary_source WHERE summary_id = ANY(%s)",
                    ([r[0] for r in gone],),
                )
            return len(gone)

    def vectors_of(self, labels: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """(labels, float32 vector bytes) of those of ``labels`` that hold a vector."""
        if not labels:
            return [], []
        rows = self._q(
            "SELECT label, embedding::real[] FROM az_memory WHERE label = ANY(%s::bigint[])"
            " AND org_id = %s AND agent_id = %s AND embedding IS NOT NULL ORDER BY label",
            ([int(x) for x in labels], *self._scope),
        )
        import numpy as np

        return [int(r[0]) for r in rows], [
            np.asarray(r[1], dtype=np.float32).tobytes() for r in rows
        ]

    # ------------------------------------------------------------------ sessions
    def session(self, name: str) -> tuple[list[str], int] | None:
        """(inherits, created_at_us) of a session of this scope."""
        rows = self._q(
            "SELECT inherits, created_at_us FROM az_am_session WHERE org_id = %s"
            " AND agent_id = %s AND name = %s",
            (*self._scope, name),
        )
        return (list(json.loads(rows[0][0])), int(rows[0][1])) if rows else None

    def put_session(self, name: str, inherits: Sequence[str], at_us: int) -> bool:
        """Record a session; False if it existed already (then nothing changes)."""
        with self.transaction() as tx:
            return bool(
                tx.query(
                    "INSERT INTO az_am_session (org_id, agent_id, name, inherits,"
                    " created_at_us) VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING"
                    " RETURNING 1",
                    (*self._scope, name, json.dumps(list(inherits)), at_us),
                )
            )

    # ------------------------------------------------------------------ recall signals
    def neighbours_in_conversation(self, memory_id: str) -> list[tuple[str, int]]:
        """(id, created_at_us) of the turns just before and after a memory in its
        conversation (implicit temporal edges: the order is in the rows themselves)."""
        rows = self._q(
            "SELECT label FROM az_memory WHERE id = %s AND org_id = %s AND agent_id = %s"
            " AND type IS NOT NULL",
            (memory_id, *self._scope),
        )
        if not rows:
            return []
        label = int(rows[0][0])
        near = [lab for lab, _ in self.turn_neighbours(self.turn_places([label]), 1).get(label, [])]
        if not near:
            return []
        found = {
            int(r[0]): (str(r[1]), int(r[2]))
            for r in self._q(
                "SELECT label, id, created_at_us FROM az_memory WHERE label = ANY(%s::bigint[])"
                " AND org_id = %s AND agent_id = %s AND type IS NOT NULL",
                (near, *self._scope),
            )
        }
        return [found[lab] for lab in near if lab in found]

    def turn_places(self, labels: Sequence[int]) -> list[tuple[int, str, int]]:
        """(label, conversation_id, created_at_us) of the episodic memories among
        ``labels`` (for ``turn_neighbours``)."""
        if not labels:
            return []
        return [
            (int(r[0]), str(r[1]), int(r[2]))
            for r in self._q(
                "SELECT label, conversation_id, created_at_us FROM az_memory"
                " WHERE label = ANY(%s::bigint[]) AND org_id = %s AND agent_id = %s"
                " AND type = 'episodic' ORDER BY label",
                ([int(x) for x in labels], *self._scope),
            )
        ]

    def turn_neighbours(
        self, places: Sequence[tuple[int, str, int]], window: int
    ) -> dict[int, list[tuple[int, int]]]:
        """For each episodic memory at ``places`` (``turn_places``): (label, distance) of
        the turns up to ``window`` before and after it in its conversation (the implicit
        temporal edges), the turns before first, nearest first on each side.

        One query whatever the number of places: per seed and side, one range of
        ``az_memory_turns`` by the row value (created_at_us, label), ``LIMIT window``.
        A ``UNION ALL`` does not promise its rows' order, so each row brings its
        (created_at_us, label) and the sides are put in order here.
        """
        if not places:
            return {}
        seeds: dict[int, tuple[str, int]] = {}
        for label, conv, at in places:  # a repeated seed adds nothing on SQLite either
            seeds.setdefault(int(label), (str(conv), int(at)))
        side = (
            "SELECT p.seed, n.label, n.created_at_us, {before} FROM unnest(%s::bigint[],"
            " %s::text[], %s::bigint[]) AS p(seed, conv, at) CROSS JOIN LATERAL ("
            " SELECT m.label, m.created_at_us FROM az_memory m WHERE m.org_id = %s"
            " AND m.agent_id = %s AND m.conversation_id = p.conv AND m.type = 'episodic'"
            " AND (m.created_at_us, m.label) {op} (p.at, p.seed)"
            " ORDER BY m.created_at_us {order}, m.label {order} LIMIT %s) n"
        )
        arrays = (list(seeds), [s[0] for s in seeds.values()], [s[1] for s in seeds.values()])
        rows = self._q(
            side.format(before=1, op="<", order="DESC")
            + " UNION ALL "
            + side.format(before=0, op=">", order="ASC"),
            (*arrays, *self._scope, _limit(window), *arrays, *self._scope, _limit(window)),
        )
        sides: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for seed, other, at, before in rows:
            sides.setdefault((int(seed), int(before)), []).append((int(at), int(other)))
        out: dict[int, list[tuple[int, int]]] = {int(p[0]): [] for p in places}
        for seed in seeds:
            for before in (1, 0):
                near = sorted(sides.get((seed, before), []), reverse=bool(before))
                out[seed].extend((lab, d) for d, (_, lab) in enumerate(near[:window], 1))
        return out

    def known_entities(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` (plain entity keys) are entities some memory of this scope
        is about (compared blinded; the plain keys are returned)."""
        plain = {self.codec.blind(k): k for k in keys}
        if not plain:
            return set()
        rows = self._q(
            "SELECT key FROM az_am_speaker WHERE key = ANY(%s) AND org_id = %s"
            " AND agent_id = %s UNION SELECT key FROM az_am_about WHERE key = ANY(%s)"
            " AND org_id = %s AND agent_id = %s",
            (list(plain), *self._scope) * 2,
        )
        return {plain[str(r[0])] for r in rows}

    def labels_about(self, labels: Sequence[int], keys: Sequence[str]) -> set[int]:
        """Which of ``labels`` are about any of the entity ``keys`` (plain keys)."""
        if not keys or not labels:
            return set()
        blinded = self._blind(keys)
        return {
            int(r[0])
            for r in self._q(
                "SELECT a.label FROM az_memory a WHERE a.label = ANY(%s::bigint[])"
                " AND a.org_id = %s AND a.agent_id = %s AND a.type IS NOT NULL"
                " AND (a.speaker_key = ANY(%s) OR EXISTS (SELECT 1 FROM az_am_about b"
                " WHERE b.memory_id = a.id AND b.key = ANY(%s)))",
                ([int(x) for x in labels], *self._scope, blinded, blinded),
            )
        }

    def access_times(self, labels: Sequence[int]) -> dict[int, list[int]]:
        """The logged access times (µs) of each label that has any."""
        out: dict[int, list[int]] = {}
        if not labels:
            return out
        for label, at in self._q(
            "SELECT a.label, x.at_us FROM az_memory a JOIN az_am_access x ON x.memory_id = a.id"
            " WHERE a.label = ANY(%s::bigint[]) AND a.org_id = %s AND a.agent_id = %s"
            " AND a.type IS NOT NULL AND a.access_count > 0 ORDER BY a.label, x.at_us",
            ([int(x) for x in labels], *self._scope),
        ):
            out.setdefault(int(label), []).append(int(at))
        return out

    # ------------------------------------------------------------------ listing
    def page(
        self,
        f: Filter,
        *,
        kind: str | None,
        conversation_id: str | None,
        archived_only: bool,
        limit: int,
        offset: int,
    ) -> list[Row]:
        """One page of this scope's live, unexpired memories that pass ``f`` (and
        ``kind``, ``conversation_id``; only archived ones with ``archived_only``), newest
        first (the label breaks ties: the order of one batch).

        The kind is sealed in the row: with ``kind`` the rows are opened on the client,
        newest first, until the page is full (``offset`` rows of that kind skipped)."""
        where, params = self._filter_sql(f)
        extra: list[str] = []
        if conversation_id is not None:
            extra.append(" AND m.conversation_id = %s")
            params.append(conversation_id)
        if archived_only:
            extra.append(" AND m.archived_at_us IS NOT NULL")
        body = (
            "FROM az_memory m WHERE m.org_id = %s AND m.agent_id = %s AND m.type IS NOT NULL"
            f" AND (m.expires_at_us IS NULL OR m.expires_at_us > %s) AND {where}{''.join(extra)}"
        )
        args = [*self._scope, f.now_us, *params]
        if kind is None:
            rows = self._q(
                f"SELECT {READ_COLUMNS} {body} ORDER BY m.created_at_us DESC, m.label DESC"
                " LIMIT %s OFFSET %s",
                (*args, limit, offset),
            )
        else:
            rows = self._walk_newest(
                body, args, lambda r: self._rows.open(r[:8]).kind == kind, offset, limit
            )
        return self._built(rows)

    def _walk_newest(
        self,
        body: str,
        params: Sequence[Any],
        keep: Callable[[Sequence[Any]], bool],
        skip: int,
        want: int,
    ) -> list[Any]:
        """The rows (``READ_COLUMNS``) of ``FROM az_memory m WHERE ...`` (``body``) that
        ``keep`` accepts, newest first, after skipping ``skip`` accepted ones, up to
        ``want``: for a filter on what is sealed. Chunks of growing size by the row
        value (created_at_us, label), in one read-only REPEATABLE READ transaction, so
        every chunk reads the same snapshot (one statement's view, as on SQLite)."""
        out: list[Any] = []
        if want <= 0:
            return out
        after: tuple[int, int] | None = None
        chunk = _SCAN_FIRST
        with self._store.snapshot() as tx:  # a read: no key lock, no write transaction
            while True:
                cond = "" if after is None else " AND (m.created_at_us, m.label) < (%s, %s)"
                more: tuple[int, ...] = () if after is None else after
                rows = tx.query(
                    f"SELECT {READ_COLUMNS} {body}{cond}"
                    " ORDER BY m.created_at_us DESC, m.label DESC LIMIT %s",
                    (*params, *more, chunk),
                )
                for r in rows:
                    if not keep(r):
                        continue
                    if skip:
                        skip -= 1
                        continue
                    out.append(r)
                    if len(out) == want:
                        return out
                if len(rows) < chunk:
                    return out
                after = (int(rows[-1][5]), int(rows[-1][0]))
                chunk = min(chunk * 2, _SCAN_MAX)


class PgRepository(PgLifecycleRows, PgBeliefRows, PgSourceRows, PgRepositoryRows):
    """The agent-memory tables of one (org, agent) scope in a PostgreSQL store: the
    core and reads (``core``), the archive's rows (``archive``), beliefs (``beliefs``),
    the lifecycle (``lifecycle``), provenance (``sources``), and namespaces, pins, core
    facts, tiers, sessions, signals and listing (here)."""


__all__ = [
    "SCHEMA_VERSION",
    "Candidate",
    "Filter",
    "NewMemory",
    "PgRepository",
    "PgRepositoryRows",
    "Row",
    "entities",
]
