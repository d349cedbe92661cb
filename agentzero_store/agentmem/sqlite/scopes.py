"""The agent-memory repository's tiers and scopes on SQLite (the seam's ``TierRows`` and
``NamespaceRows``): namespaces and their grants (read by org, whatever the repository's
scope), pins and core facts (the hot tier), sessions."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .core import RepositoryCore


class ScopeRows(RepositoryCore):
    """Namespaces and grants, pins and core facts, sessions (see the module)."""

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


__all__ = ["ScopeRows"]
