"""The agent-memory layer's tables in ``memory.db``: their migrations, one per schema
version, each run in one transaction (``RepositoryCore.migrate``). What each table holds:
``repository``'s docstring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base.errors import SchemaVersionError

if TYPE_CHECKING:
    from ..memory.store import SqliteMemoryStore

SCHEMA_KEY = "agentmem_schema"
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE am_memory (
        id              TEXT PRIMARY KEY,
        label           INTEGER NOT NULL UNIQUE,  -- memory.label (changes on undo)
        org_id          TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        type            TEXT NOT NULL CHECK (type IN ('episodic', 'semantic', 'procedural')),
        speaker         TEXT,
        created_at_us   INTEGER NOT NULL,
        fingerprint     TEXT NOT NULL,
        confidence      REAL NOT NULL,
        importance      REAL NOT NULL,
        salience        REAL NOT NULL,
        stability       REAL NOT NULL,            -- FSRS S, days
        difficulty      REAL NOT NULL,            -- FSRS D, 1..10
        last_review_us  INTEGER NOT NULL,
        access_count    INTEGER NOT NULL DEFAULT 0,
        last_access_us  INTEGER,
        retrievability  REAL,                     -- R at the last consolidation
        archived_at_us  INTEGER,                  -- not NULL: the text is in the archive
        archive_digest  TEXT,                     -- sha256 the archive must match
        promoted_to     TEXT                      -- episodes: the semantic memory they made
    );
    CREATE INDEX am_memory_scope ON am_memory (org_id, agent_id, type, created_at_us);
    CREATE INDEX am_memory_fp ON am_memory (org_id, agent_id, fingerprint);
    CREATE INDEX am_memory_conv ON am_memory (org_id, agent_id, conversation_id, created_at_us);
    CREATE TABLE am_about (
        memory_id TEXT NOT NULL,
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        entity    TEXT NOT NULL,   -- as first written
        key       TEXT NOT NULL,   -- records.entity_key(entity)
        PRIMARY KEY (memory_id, key)
    );
    CREATE INDEX am_about_key ON am_about (org_id, agent_id, key);
    CREATE TABLE am_fact (
        id            TEXT PRIMARY KEY,  -- the id of the semantic memory holding its text
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        subject       TEXT NOT NULL,
        predicate     TEXT NOT NULL,
        object        TEXT NOT NULL,
        subject_key   TEXT NOT NULL,
        predicate_key TEXT NOT NULL,
        object_key    TEXT NOT NULL,
        confidence    REAL NOT NULL,
        single_valued INTEGER NOT NULL,
        valid_from_us INTEGER NOT NULL,
        valid_to_us   INTEGER,
        superseded_by TEXT,
        retracted     INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX am_fact_sp ON am_fact (org_id, agent_id, subject_key, predicate_key);
    CREATE INDEX am_fact_closed ON am_fact (valid_to_us) WHERE valid_to_us IS NOT NULL;
    CREATE TABLE am_procedure (
        id            TEXT PRIMARY KEY,
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        action        TEXT NOT NULL,
        context       TEXT,
        action_key    TEXT NOT NULL,
        context_key   TEXT NOT NULL,
        successes     INTEGER NOT NULL,
        failures      INTEGER NOT NULL,
        updated_at_us INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX am_procedure_key
        ON am_procedure (org_id, agent_id, action_key, context_key);
    CREATE TABLE am_edge (
        src           TEXT NOT NULL,
        dst           TEXT NOT NULL,
        type          TEXT NOT NULL,
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        confidence    REAL NOT NULL,
        created_at_us INTEGER NOT NULL,
        PRIMARY KEY (src, dst, type)
    );
    CREATE INDEX am_edge_dst ON am_edge (dst);
    CREATE TABLE am_access (memory_id TEXT NOT NULL, at_us INTEGER NOT NULL);
    CREATE INDEX am_access_memory ON am_access (memory_id, at_us);
    CREATE TABLE am_history (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        org_id   TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        at_us    INTEGER NOT NULL,
        op       TEXT NOT NULL,
        target   TEXT NOT NULL,
        detail   TEXT NOT NULL
    );
    CREATE INDEX am_history_target ON am_history (target);
    CREATE TABLE am_forgotten (
        memory_id       TEXT PRIMARY KEY,
        token           TEXT NOT NULL,
        org_id          TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        about           TEXT NOT NULL,   -- JSON list of entity keys
        forgotten_at_us INTEGER NOT NULL,
        until_us        INTEGER NOT NULL,
        payload         TEXT NOT NULL,   -- JSON: the rows to put back
        vector          BLOB
    );
    CREATE INDEX am_forgotten_token ON am_forgotten (token);
    CREATE TABLE am_tombstone (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        org_id   TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        at_us    INTEGER NOT NULL,
        selector TEXT NOT NULL,          -- id | conversation_id | about (never its value)
        count    INTEGER NOT NULL,
        ids      TEXT NOT NULL           -- JSON list of the erased ids (random, no content)
    );
    CREATE TABLE am_purge (memory_id TEXT PRIMARY KEY);
    """,
    # v2: conversation order is (created_at, label): turns of one add_turns batch share a
    # time, and the label keeps their order. With the label in the index, the turn next
    # to another is one index step, not a walk over every turn of that instant.
    """
    DROP INDEX am_memory_conv;
    CREATE INDEX am_memory_turns
        ON am_memory (org_id, agent_id, conversation_id, created_at_us, label);
    """,
    # v3 (issue 17): shared namespaces and their grants, pins, core facts, warm summaries.
    # Pins, core marks and summary sources name memories by id only (no text): a forgotten
    # memory's rows stay, invisible because every read joins the live memory, so undo
    # brings them back; erase and the purge after an undo window delete them.
    """
    CREATE TABLE am_namespace (
        org_id        TEXT NOT NULL,
        name          TEXT NOT NULL,
        owner         TEXT NOT NULL,          -- the agent that created it
        created_at_us INTEGER NOT NULL,
        PRIMARY KEY (org_id, name)
    ) WITHOUT ROWID;
    CREATE TABLE am_grant (
        org_id     TEXT NOT NULL,
        namespace  TEXT NOT NULL,
        agent_id   TEXT NOT NULL,
        granted_by TEXT NOT NULL,
        at_us      INTEGER NOT NULL,
        PRIMARY KEY (org_id, namespace, agent_id)
    ) WITHOUT ROWID;
    CREATE INDEX am_grant_agent ON am_grant (org_id, agent_id);
    CREATE TABLE am_pin (
        memory_id TEXT PRIMARY KEY,
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        at_us     INTEGER NOT NULL
    );
    CREATE INDEX am_pin_scope ON am_pin (org_id, agent_id, at_us);
    CREATE TABLE am_core (
        memory_id TEXT PRIMARY KEY,           -- a semantic memory (a fact) loaded at spawn
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        since_us  INTEGER NOT NULL,
        reason    TEXT NOT NULL CHECK (reason IN ('asserted', 'accessed', 'inherited'))
    );
    CREATE INDEX am_core_scope ON am_core (org_id, agent_id, since_us);
    CREATE TABLE am_summary (
        id              TEXT PRIMARY KEY,
        org_id          TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        text            TEXT,                 -- NULL: extractive, the sources are the text
        created_at_us   INTEGER NOT NULL,
        expires_at_us   INTEGER NOT NULL
    );
    CREATE INDEX am_summary_conv ON am_summary (org_id, agent_id, conversation_id);
    CREATE TABLE am_summary_source (
        summary_id TEXT NOT NULL,
        memory_id  TEXT NOT NULL,
        position   INTEGER NOT NULL,
        PRIMARY KEY (summary_id, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX am_summary_source_memory ON am_summary_source (memory_id);
    CREATE TABLE am_session (
        org_id        TEXT NOT NULL,
        agent_id      TEXT NOT NULL,
        name          TEXT NOT NULL,
        inherits      TEXT NOT NULL,          -- JSON list of session names
        created_at_us INTEGER NOT NULL,
        PRIMARY KEY (org_id, agent_id, name)
    ) WITHOUT ROWID;
    """,
)


SCHEMA_VERSION = len(MIGRATIONS)


def migrate_chain(store: SqliteMemoryStore, key: str, migrations: Sequence[str], what: str) -> None:
    """Bring the chain of ``migrations`` recorded under meta ``key`` up to date: version
    N is ``migrations[N - 1]``, each step in one transaction that also records it. The
    version is read again under the write lock before each step, so two processes that
    open an old store at once never run a step twice. A newer store is refused.
    (The agent memory's tables and the skills' each have a chain of their own.)"""

    def version(rows: Sequence[Sequence[object]]) -> int:
        return int(str(rows[0][0])) if rows else 0

    latest = len(migrations)
    sql = "SELECT value FROM meta WHERE key = ?"
    found = version(store.database.query(sql, (key,)))
    if found > latest:
        raise SchemaVersionError(
            f"memory.db has {what} schema {found}; this version supports up to {latest}"
        )
    for target in range(found + 1, latest + 1):
        with store.transaction() as tx:
            if version(tx.query(sql, (key,))) >= target:
                continue  # another process ran this step meanwhile
            for stmt in migrations[target - 1].split(";\n"):
                if stmt.strip():
                    tx.execute(stmt)
            tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(target)))


__all__ = ["MIGRATIONS", "SCHEMA_KEY", "SCHEMA_VERSION", "migrate_chain"]
