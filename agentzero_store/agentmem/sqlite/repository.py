"""Every SQL statement of the agent-memory layer, behind one small interface.

The memory text stays in the memory store's ``memory`` table (so its HNSW and FTS5
indexes and every recall path keep working and stay scoped); this module keeps the
layer's own tables beside it in the same encrypted ``memory.db``:

- the layer's columns of each ``memory`` row (type, speaker, confidence, decay state,
  access counts, archive state; added by the layer's schema v4, so a turn is one row
  insert), read through the ``am_memory`` view (the rows that are the layer's);
- ``am_about``: which entities a memory is about, beside its speaker (a column);
  ``am_speaker``: each scope's speakers, once;
- ``am_fact`` / ``am_procedure``: subject–predicate–object beliefs and action outcomes;
- ``am_edge``: typed links (supersedes, semantic, causal, ...);
- ``am_access``: the access log (every memory a recall returned);
- ``am_history``: the belief history, append-only (only erase removes from it);
- ``am_source``: provenance, the memories each derived memory came from;
- ``am_forgotten``: the undo area of soft forgets; ``am_tombstone``: what erase removed
  (ids and counts, never content); ``am_purge``: erases whose last steps are pending.

Every query is bound to one (org, agent) scope given at construction. A second backend
(PostgreSQL) implements the same methods. Writes take the ``WriteTx`` of
``SqliteMemoryStore.transaction()``, so a layer write and its memory rows commit together.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.sqlite.rows import placeholders
from ..records import Procedure
from .beliefs import BeliefRows
from .core import READ_COLUMNS, Candidate, Filter, NewMemory, Row, batches, entities
from .lifecycle import LifecycleRows
from .schema import SCHEMA_VERSION

if TYPE_CHECKING:
    pass


class SqliteRepository(LifecycleRows, BeliefRows):
    """The agent-memory tables of one (org, agent) scope in ``memory.db``: the core
    (``sqlite.core``), provenance (``sqlite.sources``), reads (``sqlite.reads``), beliefs
    (``sqlite.beliefs``: history, facts, edges, procedures), the lifecycle
    (``sqlite.lifecycle``), and here namespaces, pins and core facts, the hot and warm
    tiers, sessions and recall's signals."""

    # ------------------------------------------------------------------ namespaces
    # A namespace's memories live in their own scope (org, ``namespaces.scope_agent``);
    # these tables say who may use it. They are read by org, whatever this repository's
    # scope is (an agent's own repository manages the namespaces it owns).
    def namespace_owner(self, name: str) -> str | None:
        """The owner of namespace ``name`` of this org, None if there is none."""
        rows = self._q(
            "SELECT owner FROM am_namespace WHERE org_id = ? AND name = ?", (self.org_id, name)
        )
        return str(rows[0][0]) if rows else None

    def create_namespace(self, name: str, owner: str, at_us: int) -> str:
        """Create namespace ``name`` owned by ``owner`` unless it exists; its owner."""
        with self.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO am_namespace (org_id, name, owner, created_at_us)"
                " VALUES (?,?,?,?)",
                (self.org_id, name, owner, at_us),
            )
            return str(
                tx.query(
                    "SELECT owner FROM am_namespace WHERE org_id = ? AND name = ?",
                    (self.org_id, name),
                )[0][0]
            )

    def set_grant(self, name: str, agent_id: str, by: str, at_us: int, granted: bool) -> None:
        """Grant (or revoke) ``agent_id`` the use of namespace ``name``."""
        with self.transaction() as tx:
            if granted:
                tx.execute(
                    "INSERT OR IGNORE INTO am_grant (org_id, namespace, agent_id, granted_by,"
                    " at_us) VALUES (?,?,?,?,?)",
                    (self.org_id, name, agent_id, by, at_us),
                )
            else:
                tx.execute(
                    "DELETE FROM am_grant WHERE org_id = ? AND namespace = ? AND agent_id = ?",
                    (self.org_id, name, agent_id),
                )

    def may_use(self, name: str, agent_id: str) -> bool:
        """Whether ``agent_id`` owns namespace ``name`` or is granted it (one query: the
        check every call of a namespace handle makes)."""
        rows = self._q(
            "SELECT EXISTS (SELECT 1 FROM am_namespace WHERE org_id = ?1 AND name = ?2"
            " AND owner = ?3) OR EXISTS (SELECT 1 FROM am_grant WHERE org_id = ?1"
            " AND namespace = ?2 AND agent_id = ?3)",
            (self.org_id, name, agent_id),
        )
        return bool(rows[0][0])

    def members(self, name: str) -> list[str]:
        """The agents granted namespace ``name`` (its owner not included)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT agent_id FROM am_grant WHERE org_id = ? AND namespace = ?"
                " ORDER BY agent_id",
                (self.org_id, name),
            )
        ]

    def namespaces_of(self, agent_id: str) -> list[tuple[str, str, int]]:
        """(name, owner, created_at_us) of the namespaces ``agent_id`` owns or is granted."""
        return [
            (str(r[0]), str(r[1]), int(r[2]))
            for r in self._q(
                "SELECT name, owner, created_at_us FROM am_namespace WHERE org_id = ?1"
                " AND (owner = ?2 OR name IN (SELECT namespace FROM am_grant WHERE org_id = ?1"
                " AND agent_id = ?2)) ORDER BY name",
                (self.org_id, agent_id),
            )
        ]

    # ------------------------------------------------------------------ pins, core facts
    def set_pin(self, memory_id: str, at_us: int, pinned: bool) -> None:
        """Pin (or unpin) a memory of this scope."""
        with self.transaction() as tx:
            if pinned:
                tx.execute(
                    "INSERT OR IGNORE INTO am_pin (memory_id, org_id, agent_id, at_us)"
                    " VALUES (?,?,?,?)",
                    (memory_id, *self._scope, at_us),
                )
            else:
                tx.execute(
                    "DELETE FROM am_pin WHERE memory_id = ? AND org_id = ? AND agent_id = ?",
                    (memory_id, *self._scope),
                )

    def pinned_labels(self) -> list[int]:
        """Labels of the live pinned memories of this scope, oldest pin first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT a.label FROM am_pin p JOIN am_memory a ON a.id = p.memory_id"
                " WHERE p.org_id = ? AND p.agent_id = ? AND +a.org_id = p.org_id"
                " AND +a.agent_id = p.agent_id ORDER BY p.at_us, p.memory_id",
                self._scope,
            )
        ]

    def set_core(self, ids: Sequence[str], at_us: int, reason: str | None) -> None:
        """Mark semantic memories core (``reason``) or, with None, archival again."""
        with self.transaction() as tx:
            if reason is None:
                tx.executemany(
                    "DELETE FROM am_core WHERE memory_id = ? AND org_id = ? AND agent_id = ?",
                    [(i, *self._scope) for i in ids],
                )
            else:
                tx.executemany(
                    "INSERT OR IGNORE INTO am_core (memory_id, org_id, agent_id, since_us,"
                    " reason) VALUES (?,?,?,?,?)",
                    [(i, *self._scope, at_us, reason) for i in ids],
                )

    def core_labels(self) -> list[int]:
        """Labels of the live core memories of this scope (current facts only: a
        superseded or retracted fact is history), oldest first."""
        return [
            int(r[0])
            for r in self._q(
                "SELECT a.label FROM am_core c JOIN am_memory a ON a.id = c.memory_id"
                " WHERE c.org_id = ? AND c.agent_id = ? AND +a.org_id = c.org_id"
                " AND +a.agent_id = c.agent_id AND a.archived_at_us IS NULL"
                " AND a.id NOT IN (SELECT id FROM am_fact WHERE valid_to_us IS NOT NULL)"
                " ORDER BY c.since_us, c.memory_id",
                self._scope,
            )
        ]

    def core_candidates(self, min_accesses: int) -> list[str]:
        """Archival semantic memories of this scope accessed at least ``min_accesses``
        times (promotion to core)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT id FROM am_memory WHERE org_id = ? AND agent_id = ? AND type = 'semantic'"
                " AND type <> 'episodic'"  # the notes' index (memory_note)
                " AND access_count >= ? AND archived_at_us IS NULL"
                " AND id NOT IN (SELECT memory_id FROM am_core)"
                " AND id NOT IN (SELECT id FROM am_fact WHERE valid_to_us IS NOT NULL)"
                " ORDER BY id",
                (*self._scope, min_accesses),
            )
        ]

    def core_idle(self, before_us: int) -> list[str]:
        """Core memories promoted by access whose last access (or promotion) is older
        than ``before_us``, or that are no longer current (demotion)."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT c.memory_id FROM am_core c LEFT JOIN am_memory a ON a.id = c.memory_id"
                " WHERE c.org_id = ? AND c.agent_id = ? AND (a.id IS NULL"
                " OR a.archived_at_us IS NOT NULL"
                " OR c.memory_id IN (SELECT id FROM am_fact WHERE valid_to_us IS NOT NULL)"
                " OR (c.reason = 'accessed'"
                " AND max(coalesce(a.last_access_us, 0), c.since_us) < ?))"
                " ORDER BY c.memory_id",
                (*self._scope, before_us),
            )
        ]

    # ------------------------------------------------------------------ hot and warm tiers
    def last_turns(self, conversation_id: str, n: int) -> list[int]:
        """Labels of the last ``n`` turns (episodic memories) of a conversation, oldest
        first (one backwards range of the conversation index)."""
        rows = self._q(
            "SELECT label FROM am_memory WHERE org_id = ? AND agent_id = ?"
            " AND conversation_id = ? AND +type = 'episodic'"
            " ORDER BY created_at_us DESC, label DESC LIMIT ?",
            (*self._scope, conversation_id, n),
        )
        return [int(r[0]) for r in reversed(rows)]

    def latest_tool_turn(self, conversation_id: str) -> int | None:
        """Label of a conversation's newest live turn of role ``tool``, if any (walks the
        conversation backwards from its end to that turn)."""
        rows = self._q(
            "SELECT a.label FROM am_memory a JOIN memory m ON m.label = a.label"
            " WHERE a.org_id = ? AND a.agent_id = ? AND a.conversation_id = ?"
            " AND +a.type = 'episodic' AND m.role = 'tool'"
            " ORDER BY a.created_at_us DESC, a.label DESC LIMIT 1",
            (*self._scope, conversation_id),
        )
        return int(rows[0][0]) if rows else None

    def turns_before(self, conversation_id: str, label: int | None) -> list[tuple[int, str]]:
        """(label, id) of a conversation's turns before the turn ``label`` (all of them
        with None), oldest first: what warm summaries cover."""
        params: tuple[int, ...] = ()
        cond = ""
        if label is not None:
            cond = (
                " AND (created_at_us, label) < (SELECT created_at_us, label FROM am_memory"
                " WHERE label = ?)"
            )
            params = (label,)
        rows = self._q(
            "SELECT label, id FROM am_memory WHERE org_id = ? AND agent_id = ?"
            f" AND conversation_id = ? AND +type = 'episodic'{cond}"
            " ORDER BY created_at_us, label",
            (*self._scope, conversation_id, *params),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

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
            old = (
                "SELECT id FROM am_summary WHERE org_id = ? AND agent_id = ?"
                " AND conversation_id = ?"
            )
            args = (*self._scope, conversation_id)
            tx.execute(f"DELETE FROM am_summary_source WHERE summary_id IN ({old})", args)
            tx.execute(f"DELETE FROM am_summary WHERE id IN ({old})", args)
            tx.execute(
                "INSERT INTO am_summary (id, org_id, agent_id, conversation_id, text,"
                " created_at_us, expires_at_us) VALUES (?,?,?,?,?,?,?)",
                (summary_id, *args, text, at_us, expires_us),
            )
            tx.executemany(
                "INSERT INTO am_summary_source (summary_id, memory_id, position) VALUES (?,?,?)",
                [(summary_id, mid, i) for i, mid in enumerate(sources)],
            )

    def summary(self, conversation_id: str, now_us: int) -> tuple[str | None, list[int]] | None:
        """The live warm summary of a conversation: its text (None: extractive) and the
        labels of its sources, in order. None if there is none, it expired, or one of its
        sources is no longer live (forgotten: its text must not come back through it)."""
        rows = self._q(
            "SELECT id, text FROM am_summary WHERE org_id = ? AND agent_id = ?"
            " AND conversation_id = ? AND expires_at_us > ? ORDER BY created_at_us DESC LIMIT 1",
            (*self._scope, conversation_id, now_us),
        )
        if not rows:
            return None
        sid, text = rows[0]
        srcs = self._q(
            "SELECT s.memory_id, a.label FROM am_summary_source s LEFT JOIN am_memory a"
            " ON a.id = s.memory_id AND +a.org_id = ? AND +a.agent_id = ?"
            " WHERE s.summary_id = ? ORDER BY s.position",
            (*self._scope, sid),
        )
        if any(r[1] is None for r in srcs):
            return None
        return (None if text is None else str(text)), [int(r[1]) for r in srcs]

    def evict_summaries(self, now_us: int) -> int:
        """Delete the warm summaries of this scope past their TTL; how many."""
        with self.transaction() as tx:
            old = (
                "SELECT id FROM am_summary WHERE org_id = ? AND agent_id = ? AND expires_at_us <= ?"
            )
            args = (*self._scope, now_us)
            n = len(tx.query(old, args))
            tx.execute(f"DELETE FROM am_summary_source WHERE summary_id IN ({old})", args)
            tx.execute(f"DELETE FROM am_summary WHERE id IN ({old})", args)
            return n

    def vectors_of(self, labels: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """(labels, float32 vector bytes) of those of ``labels`` that hold a vector."""
        rows = self._each("SELECT label, embedding FROM memory_vec WHERE label IN ({in})", labels)
        return [int(r[0]) for r in rows], [bytes(r[1]) for r in rows]

    def all_procedures(self) -> list[Procedure]:
        """Every procedure of this scope, by id."""
        return [
            Procedure(*r)
            for r in self._q(
                f"SELECT {self._PROC} FROM am_procedure WHERE org_id = ? AND agent_id = ?"
                " ORDER BY id",
                self._scope,
            )
        ]

    def set_outcomes(self, pid: str, successes: int, failures: int, at_us: int) -> None:
        """Set a procedure's outcome counts (a session inheriting them)."""
        with self.transaction() as tx:
            tx.execute(
                "UPDATE am_procedure SET successes = ?, failures = ?, updated_at_us = ?"
                " WHERE id = ? AND org_id = ? AND agent_id = ?",
                (successes, failures, at_us, pid, *self._scope),
            )

    # ------------------------------------------------------------------ sessions
    def session(self, name: str) -> tuple[list[str], int] | None:
        """(inherits, created_at_us) of a session of this scope."""
        rows = self._q(
            "SELECT inherits, created_at_us FROM am_session WHERE org_id = ? AND agent_id = ?"
            " AND name = ?",
            (*self._scope, name),
        )
        return (list(json.loads(rows[0][0])), int(rows[0][1])) if rows else None

    def put_session(self, name: str, inherits: Sequence[str], at_us: int) -> bool:
        """Record a session; False if it existed already (then nothing changes)."""
        with self.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO am_session (org_id, agent_id, name, inherits,"
                " created_at_us) VALUES (?,?,?,?,?)",
                (*self._scope, name, json.dumps(list(inherits)), at_us),
            )
            return bool(tx.query("SELECT changes()")[0][0])

    # ------------------------------------------------------------------ recall signals
    def neighbours_in_conversation(self, memory_id: str) -> list[tuple[str, int]]:
        """(id, created_at_us) of the turns just before and after a memory in its
        conversation (implicit temporal edges: the order is in the rows themselves)."""
        rows = self._q(
            "SELECT label FROM am_memory WHERE id = ? AND org_id = ? AND agent_id = ?",
            (memory_id, *self._scope),
        )
        if not rows:
            return []
        places = self.turn_places([int(rows[0][0])])
        near = [lab for lab, _ in self.turn_neighbours(places, 1).get(rows[0][0], [])]
        found = dict(
            (int(r[0]), (str(r[1]), int(r[2])))
            for r in self._each(
                "SELECT label, id, created_at_us FROM am_memory WHERE label IN ({in})", near
            )
        )
        return [found[lab] for lab in near if lab in found]

    def turn_places(self, labels: Sequence[int]) -> list[tuple[int, str, int]]:
        """(label, conversation_id, created_at_us) of the episodic memories among
        ``labels`` (for ``turn_neighbours``)."""
        if not labels:
            return []
        return [
            (int(r[0]), str(r[1]), int(r[2]))
            for r in self._q(
                "SELECT label, conversation_id, created_at_us FROM am_memory WHERE label IN"
                f" ({placeholders(len(labels))}) AND +org_id = ? AND +agent_id = ?"
                " AND +type = 'episodic'",
                (*labels, *self._scope),
            )
        ]

    def turn_neighbours(
        self, places: Sequence[tuple[int, str, int]], window: int
    ) -> dict[int, list[tuple[int, int]]]:
        """For each episodic memory at ``places`` (``turn_places``): (label, distance) of
        the turns up to ``window`` before and after it in its conversation (the implicit
        temporal edges).

        One query whatever the number of places (one ``UNION ALL`` of index range scans,
        ``LIMIT window`` each), instead of a round trip per seed.
        """
        if not places:
            return {}
        parts: list[str] = []
        params: list[Any] = []
        scope = "FROM am_memory WHERE org_id = ? AND agent_id = ? AND conversation_id = ?"
        for label, conv, at in places:
            for op, order in (("<", "DESC"), (">", "ASC")):
                before = 1 if op == "<" else 0
                # The seed is a parameter, not a literal: the statement's text then depends
                # only on how many seeds there are, so SQLite's prepared statement is reused
                # instead of planning 80 selects every recall. Each side is two ranges of
                # the store's conversation index (org, agent, conversation, created_at,
                # then the label as its rowid): the turns of the seed's own instant (a
                # batch shares one), then the turns of earlier (later) instants. SQLite
                # uses the trailing rowid for a range only after an equality, so a row
                # value "(created_at_us, label) < (?, ?)" would walk the seed's instant.
                # +type: never the notes' (org, agent, type) index.
                parts.append(
                    f"SELECT * FROM (SELECT ?, label, {before} {scope} AND created_at_us = ?"
                    f" AND label {op} ? AND +type = 'episodic' ORDER BY label {order} LIMIT ?)"
                )
                parts.append(
                    f"SELECT * FROM (SELECT ?, label, {before} {scope} AND created_at_us {op} ?"
                    f" AND +type = 'episodic' ORDER BY created_at_us {order}, label {order}"
                    " LIMIT ?)"
                )
                params.extend((label, *self._scope, conv, at, label, window))
                params.extend((label, *self._scope, conv, at, window))
        out: dict[int, list[tuple[int, int]]] = {int(p[0]): [] for p in places}
        distance: dict[tuple[int, int], int] = {}
        for seed, other, before in self._q(" UNION ALL ".join(parts), params):
            key = (int(seed), int(before))
            distance[key] = distance.get(key, 0) + 1  # rows come nearest first per side
            if distance[key] <= window:
                out[int(seed)].append((int(other), distance[key]))
        return out

    def known_entities(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` are entities some memory of this scope is about."""
        sql = (
            "SELECT key FROM am_speaker WHERE key IN ({in}) AND org_id = ? AND agent_id = ?"
            " UNION SELECT key FROM am_about WHERE key IN ({in}) AND org_id = ? AND agent_id = ?"
        )
        found: set[str] = set()
        for part in batches(list(keys)):
            ph = placeholders(len(part))
            found.update(
                str(r[0])
                for r in self._q(
                    sql.format(**{"in": ph}), (*part, *self._scope, *part, *self._scope)
                )
            )
        return found

    def labels_about(self, labels: Sequence[int], keys: Sequence[str]) -> set[int]:
        """Which of ``labels`` are about any of the entity ``keys``."""
        out: set[int] = set()
        if not keys:
            return out
        for part in batches(list(labels)):
            out.update(
                int(r[0])
                for r in self._q(
                    "SELECT a.label FROM am_memory a WHERE a.label IN"
                    f" ({placeholders(len(part))}) AND (a.speaker_key IN"
                    f" ({placeholders(len(keys))}) OR EXISTS (SELECT 1 FROM am_about b"
                    f" WHERE b.memory_id = a.id AND b.key IN ({placeholders(len(keys))})))",
                    (*part, *keys, *keys),
                )
            )
        return out

    def access_times(self, labels: Sequence[int]) -> dict[int, list[int]]:
        """The logged access times (µs) of each label that has any."""
        out: dict[int, list[int]] = {}
        sql = (
            "SELECT a.label, x.at_us FROM am_memory a JOIN am_access x ON x.memory_id = a.id"
            " WHERE a.label IN ({in}) AND a.access_count > 0"
        )
        for label, at in self._each(sql, labels):
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
        first (the label breaks ties: the order of one batch). Forgotten and erased
        memories have no ``am_memory`` row, so they never appear."""
        where, params = self._filter_sql(f)
        extra: list[str] = []
        if kind is not None:
            extra.append(" AND m.kind = ?")
            params.append(kind)
        if conversation_id is not None:
            extra.append(" AND a.conversation_id = ?")
            params.append(conversation_id)
        if archived_only:
            extra.append(" AND a.archived_at_us IS NOT NULL")
        rows = self._q(
            f"SELECT {READ_COLUMNS} FROM am_memory a JOIN memory m ON m.label = a.label"
            " WHERE a.org_id = ? AND a.agent_id = ? AND +m.org_id = ? AND +m.agent_id = ?"
            f" AND (m.expires_at_us IS NULL OR m.expires_at_us > ?) AND {where}{''.join(extra)}"
            " ORDER BY a.created_at_us DESC, a.label DESC LIMIT ? OFFSET ?",
            (*self._scope, *self._scope, f.now_us, *params, limit, offset),
        )
        return self._built(rows)


__all__ = [
    "Candidate",
    "Filter",
    "NewMemory",
    "Row",
    "SCHEMA_VERSION",
    "SqliteRepository",
    "entities",
]
