"""Every SQL statement of skills (``skills.SkillStore``), behind one small interface.

Skills live in ``memory.db`` (so SQLCipher encrypts them like every memory) in two
tables, bound to one (org, agent) scope given at construction:

- ``am_skill``: one row per skill, keyed by (org, agent, ``skill_key(name)``); its
  steps and tags as JSON lists;
- ``am_skill_tag``: which tag keys each skill has (``find_by_tag`` reads it).

The tables have their own migration chain (meta key ``agentmem_skills_schema``), apart
from the agent-memory tables of ``repository``, so either can change without renumbering
the other. A second backend (PostgreSQL) implements the same methods.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ...memory.records import from_us
from ..sqlite.schema import migrate_chain
from .records import Skill, skill_key, tag_key

if TYPE_CHECKING:
    from ...memory.sqlite.store import SqliteMemoryStore
    from ...memory.sqlite.tx import WriteTx

SCHEMA_KEY = "agentmem_skills_schema"
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE am_skill (
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        key           TEXT NOT NULL,   -- skill_key(name): NFKC, case-folded
        name          TEXT NOT NULL,   -- as last saved
        description   TEXT NOT NULL,
        steps         TEXT NOT NULL,   -- JSON list of strings
        tags          TEXT NOT NULL,   -- JSON list of strings, as written
        created_at_us INTEGER NOT NULL,
        updated_at_us INTEGER NOT NULL,
        PRIMARY KEY (org_id, agent_id, key)
    ) WITHOUT ROWID;
    CREATE TABLE am_skill_tag (
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        tag_key   TEXT NOT NULL,       -- tag_key(tag)
        skill_key TEXT NOT NULL,       -- am_skill.key
        PRIMARY KEY (org_id, agent_id, tag_key, skill_key)
    ) WITHOUT ROWID;
    CREATE INDEX am_skill_tag_skill ON am_skill_tag (org_id, agent_id, skill_key);
    """,
)

_COLUMNS = "name, description, steps, tags, created_at_us, updated_at_us"
Saved = Literal["created", "updated", "unchanged"]
SCHEMA_VERSION = len(_MIGRATIONS)


def _skill(r: Sequence[Any]) -> Skill:
    return Skill(
        name=str(r[0]),
        description=str(r[1]),
        steps=tuple(json.loads(r[2])),
        tags=tuple(json.loads(r[3])),
        created_at=from_us(int(r[4])),
        updated_at=from_us(int(r[5])),
    )


class SqliteSkillRepository:
    """The skill tables of one (org, agent) scope in ``memory.db``."""

    def __init__(self, store: SqliteMemoryStore, org_id: str, agent_id: str) -> None:
        self._store = store
        self._scope = (org_id, agent_id)

    def migrate(self) -> None:
        """Create or upgrade the skill tables (``schema.migrate_chain``)."""
        migrate_chain(self._store, SCHEMA_KEY, _MIGRATIONS, "skills")

    def transaction(self) -> Any:
        """The memory store's write transaction (a ``WriteTx`` context manager)."""
        return self._store.transaction()

    def _q(self, sql: str, params: Sequence[Any], tx: WriteTx | None = None) -> list[Any]:
        if tx is not None:
            return tx.query(sql, params)
        return self._store.database.query(sql, params)

    # ------------------------------------------------------------------ reads
    def get(self, name: str, tx: WriteTx | None = None) -> Skill | None:
        """The skill of this scope named ``name`` (compared by ``skill_key``), or None."""
        rows = self._q(
            f"SELECT {_COLUMNS} FROM am_skill WHERE org_id = ? AND agent_id = ? AND key = ?",
            (*self._scope, skill_key(name)),
            tx,
        )
        return _skill(rows[0]) if rows else None

    def all(self) -> list[Skill]:
        """Every skill of this scope, by ``skill_key`` of the name."""
        return [
            _skill(r)
            for r in self._q(
                f"SELECT {_COLUMNS} FROM am_skill WHERE org_id = ? AND agent_id = ? ORDER BY key",
                self._scope,
            )
        ]

    def by_tag(self, tag: str) -> list[Skill]:
        """The skills of this scope tagged ``tag`` (compared by ``tag_key``), by name."""
        return [
            _skill(r)
            for r in self._q(
                f"SELECT {_COLUMNS} FROM am_skill s JOIN am_skill_tag t ON t.org_id = s.org_id"
                " AND t.agent_id = s.agent_id AND t.skill_key = s.key"
                " WHERE t.org_id = ? AND t.agent_id = ? AND t.tag_key = ? ORDER BY s.key",
                (*self._scope, tag_key(tag)),
            )
        ]

    # ------------------------------------------------------------------ writes
    def upsert(self, tx: WriteTx, skill: Skill, now_us: int) -> Saved:
        """Insert ``skill``, or replace the one with its key (keeping its creation time);
        nothing is written if the stored one is identical."""
        old = self.get(skill.name, tx)
        if old == skill:  # content only (Skill's equality): an identical save is a no-op
            return "unchanged"
        key = skill_key(skill.name)
        steps, tags = json.dumps(list(skill.steps)), json.dumps(list(skill.tags))
        if old is None:
            tx.execute(
                "INSERT INTO am_skill (org_id, agent_id, key, name, description, steps, tags,"
                " created_at_us, updated_at_us) VALUES (?,?,?,?,?,?,?,?,?)",
                (*self._scope, key, skill.name, skill.description, steps, tags, now_us, now_us),
            )
        else:
            tx.execute(
                "UPDATE am_skill SET name = ?, description = ?, steps = ?, tags = ?,"
                " updated_at_us = ? WHERE org_id = ? AND agent_id = ? AND key = ?",
                (skill.name, skill.description, steps, tags, now_us, *self._scope, key),
            )
            self._drop_tags(tx, key)
        tx.executemany(
            "INSERT OR IGNORE INTO am_skill_tag (org_id, agent_id, tag_key, skill_key)"
            " VALUES (?,?,?,?)",
            [(*self._scope, tag_key(t), key) for t in skill.tags],
        )
        return "created" if old is None else "updated"

    def delete(self, tx: WriteTx, name: str) -> bool:
        """Delete the skill named ``name``; False if there was none. ``secure_delete``
        (on for every connection) zeroes the row's bytes in its pages."""
        key = skill_key(name)
        gone = tx.execute(
            "DELETE FROM am_skill WHERE org_id = ? AND agent_id = ? AND key = ?",
            (*self._scope, key),
        ).rowcount
        self._drop_tags(tx, key)
        return bool(gone)

    def _drop_tags(self, tx: WriteTx, key: str) -> None:
        tx.execute(
            "DELETE FROM am_skill_tag WHERE org_id = ? AND agent_id = ? AND skill_key = ?",
            (*self._scope, key),
        )

    def empty_wal(self) -> bool:
        """Copy the WAL into memory.db and empty it, so no old frame keeps a deleted
        skill's text; False if a reader of an older snapshot kept it from finishing (a
        later checkpoint does it)."""
        busy, frames, _ = self._store.database.query("PRAGMA wal_checkpoint(TRUNCATE)")[0]
        return bool(busy == 0 and frames == 0)


__all__ = ["SCHEMA_KEY", "SCHEMA_VERSION", "Saved", "SqliteSkillRepository"]
