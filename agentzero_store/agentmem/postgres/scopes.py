"""The agent-memory repository's tiers and scopes on PostgreSQL (the seam's ``TierRows``
and ``NamespaceRows``): namespaces and their grants (read by org, whatever the
repository's scope), pins and core facts (the hot tier), sessions."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .core import PgRepositoryCore


class PgScopeRows(PgRepositoryCore):
    """Namespaces and grants, pins and core facts, sessions (see the module)."""

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


__all__ = ["PgScopeRows"]
