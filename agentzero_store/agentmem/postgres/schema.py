"""The agent-memory layer's tables in a PostgreSQL memory store, and their migrations.

They mirror the SQLite layer (``agentmem.schema``), with what the server must not read
kept from it:

- the layer's columns of a memory live on its ``az_memory`` row (as SQLite's v4 does);
  ``az_am_memory`` is the view of the rows that are the layer's. The speaker is a sealed
  spelling (``speaker``) and a blinded entity key (``speaker_key``);
- every text (entities, fact subjects, predicates and objects, procedures, summaries,
  belief history, forget payloads, archived texts) is one sealed ``bytea`` (``codec``);
  what a query looks up by (entity keys, fact and procedure keys) is a keyed hash of
  the scope and the key, so equal keys match without the server learning them, and
  two tenants' keys never correlate;
- numbers (confidence, FSRS state, access counts), times, ids, types and the ids of
  the scope stay in the clear: the server filters and orders by them.

Each step runs in one transaction under the schema's advisory lock, so two clients that
open an old store at once never run a step twice; the version is ``az_meta``'s
``agentmem_schema``.
"""

from __future__ import annotations

from typing import Any

from ...base.errors import SchemaVersionError
from ...memory.postgres.schema import SCHEMA_LOCK

SCHEMA_KEY = "agentmem_schema"

# The layer's columns of a memory row, as SQLite's ``LAYER_COLUMNS`` (speaker sealed).
LAYER_COLUMNS = (
    ("type", "text"),
    ("speaker", "bytea"),  # sealed spelling (codec.seal_speaker)
    ("speaker_key", "text"),  # blinded entity key
    ("confidence", "double precision"),
    ("importance", "double precision"),
    ("salience", "double precision"),
    ("stability", "double precision"),
    ("difficulty", "double precision"),
    ("last_review_us", "bigint"),
    ("access_count", "integer NOT NULL DEFAULT 0"),
    ("last_access_us", "bigint"),
    ("retrievability", "double precision"),
    ("archived_at_us", "bigint"),
    ("archive_digest", "text"),  # keyed digest of the archived text (codec.digest)
    ("promoted_to", "text"),
)

V1: tuple[str, ...] = (
    *(f"ALTER TABLE az_memory ADD COLUMN {n} {d}" for n, d in LAYER_COLUMNS),
    "CREATE VIEW az_am_memory AS SELECT id, label, org_id, agent_id, conversation_id, type,"
    " speaker, created_at_us, fingerprint, confidence, importance, salience, stability,"
    " difficulty, coalesce(last_review_us, created_at_us) AS last_review_us, access_count,"
    " last_access_us, retrievability, archived_at_us, archive_digest, promoted_to,"
    " speaker_key, expires_at_us FROM az_memory WHERE type IS NOT NULL",
    "CREATE INDEX az_memory_note ON az_memory (org_id, agent_id, type, created_at_us)"
    " WHERE type <> 'episodic'",
    "CREATE INDEX az_memory_note_fp ON az_memory (org_id, agent_id, fingerprint)"
    " WHERE type <> 'episodic'",
    "CREATE INDEX az_memory_turns ON az_memory"
    " (org_id, agent_id, conversation_id, created_at_us, label)",
    """CREATE TABLE az_am_about (
        memory_id text NOT NULL,
        org_id    text NOT NULL,
        agent_id  text NOT NULL,
        entity    bytea NOT NULL,  -- sealed spelling, as first written
        key       text NOT NULL,   -- blinded entity key
        PRIMARY KEY (memory_id, key)
    )""",
    "CREATE INDEX az_am_about_key ON az_am_about (org_id, agent_id, key)",
    """CREATE TABLE az_am_speaker (
        org_id text NOT NULL, agent_id text NOT NULL, key text NOT NULL,
        PRIMARY KEY (org_id, agent_id, key)
    )""",
    """CREATE TABLE az_am_fact (
        id            text PRIMARY KEY,
        org_id        text NOT NULL,
        agent_id      text NOT NULL,
        sealed        bytea NOT NULL,  -- subject, predicate, object as written
        subject_key   text NOT NULL,
        predicate_key text NOT NULL,
        object_key    text NOT NULL,
        confidence    double precision NOT NULL,
        single_valued boolean NOT NULL,
        valid_from_us bigint NOT NULL,
        valid_to_us   bigint,
        superseded_by text,
        retracted     boolean NOT NULL DEFAULT false
    )""",
    "CREATE INDEX az_am_fact_sp ON az_am_fact (org_id, agent_id, subject_key, predicate_key)",
    """CREATE TABLE az_am_procedure (
        id            text PRIMARY KEY,
        org_id        text NOT NULL,
        agent_id      text NOT NULL,
        sealed        bytea NOT NULL,  -- action, context as written
        action_key    text NOT NULL,
        context_key   text NOT NULL,
        successes     integer NOT NULL,
        failures      integer NOT NULL,
        updated_at_us bigint NOT NULL,
        UNIQUE (org_id, agent_id, action_key, context_key)
    )""",
    """CREATE TABLE az_am_edge (
        src           text NOT NULL,
        dst           text NOT NULL,
        type          text NOT NULL,
        org_id        text NOT NULL,
        agent_id      text NOT NULL,
        confidence    double precision NOT NULL,
        created_at_us bigint NOT NULL,
        PRIMARY KEY (src, dst, type)
    )""",
    "CREATE INDEX az_am_edge_dst ON az_am_edge (dst)",
    "CREATE TABLE az_am_access (memory_id text NOT NULL, at_us bigint NOT NULL)",
    "CREATE INDEX az_am_access_memory ON az_am_access (memory_id, at_us)",
    """CREATE TABLE az_am_history (
        seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        org_id   text NOT NULL,
        agent_id text NOT NULL,
        at_us    bigint NOT NULL,
        op       text NOT NULL,
        target   text NOT NULL,
        detail   bytea NOT NULL   -- sealed JSON
    )""",
    "CREATE INDEX az_am_history_target ON az_am_history (target)",
    "CREATE INDEX az_am_history_scope ON az_am_history (org_id, agent_id, seq)",
    """CREATE TABLE az_am_forgotten (
        memory_id       text PRIMARY KEY,
        token           text NOT NULL,
        org_id          text NOT NULL,
        agent_id        text NOT NULL,
        conversation_id text NOT NULL,
        about           text NOT NULL,   -- JSON list of blinded entity keys
        forgotten_at_us bigint NOT NULL,
        until_us        bigint NOT NULL,
        payload         bytea NOT NULL,  -- sealed JSON: the rows to put back
        vector          bytea
    )""",
    "CREATE INDEX az_am_forgotten_token ON az_am_forgotten (token)",
    """CREATE TABLE az_am_tombstone (
        seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        org_id   text NOT NULL,
        agent_id text NOT NULL,
        at_us    bigint NOT NULL,
        selector text NOT NULL,
        count    integer NOT NULL,
        ids      text NOT NULL           -- JSON list of the erased ids (no content)
    )""",
    "CREATE TABLE az_am_purge (memory_id text PRIMARY KEY)",
    """CREATE TABLE az_am_namespace (
        org_id text NOT NULL, name text NOT NULL, owner text NOT NULL,
        created_at_us bigint NOT NULL, PRIMARY KEY (org_id, name)
    )""",
    """CREATE TABLE az_am_grant (
        org_id text NOT NULL, namespace text NOT NULL, agent_id text NOT NULL,
        granted_by text NOT NULL, at_us bigint NOT NULL,
        PRIMARY KEY (org_id, namespace, agent_id)
    )""",
    "CREATE INDEX az_am_grant_agent ON az_am_grant (org_id, agent_id)",
    """CREATE TABLE az_am_pin (
        memory_id text PRIMARY KEY, org_id text NOT NULL, agent_id text NOT NULL,
        at_us bigint NOT NULL
    )""",
    "CREATE INDEX az_am_pin_scope ON az_am_pin (org_id, agent_id, at_us)",
    """CREATE TABLE az_am_core (
        memory_id text PRIMARY KEY, org_id text NOT NULL, agent_id text NOT NULL,
        since_us bigint NOT NULL,
        reason text NOT NULL CHECK (reason IN ('asserted', 'accessed', 'inherited'))
    )""",
    "CREATE INDEX az_am_core_scope ON az_am_core (org_id, agent_id, since_us)",
    """CREATE TABLE az_am_summary (
        id              text PRIMARY KEY,
        org_id          text NOT NULL,
        agent_id        text NOT NULL,
        conversation_id text NOT NULL,
        text            bytea,            -- sealed; NULL: extractive (the sources)
        created_at_us   bigint NOT NULL,
        expires_at_us   bigint NOT NULL
    )""",
    "CREATE INDEX az_am_summary_conv ON az_am_summary (org_id, agent_id, conversation_id)",
    """CREATE TABLE az_am_summary_source (
        summary_id text NOT NULL, memory_id text NOT NULL, position integer NOT NULL,
        PRIMARY KEY (summary_id, memory_id)
    )""",
    "CREATE INDEX az_am_summary_source_memory ON az_am_summary_source (memory_id)",
    """CREATE TABLE az_am_session (
        org_id text NOT NULL, agent_id text NOT NULL, name text NOT NULL,
        inherits text NOT NULL, created_at_us bigint NOT NULL,
        PRIMARY KEY (org_id, agent_id, name)
    )""",
    """CREATE TABLE az_am_archive (
        id             text PRIMARY KEY,   -- the memory's id
        org_id         text NOT NULL,
        agent_id       text NOT NULL,
        sealed         bytea NOT NULL,     -- content and metadata
        archived_at_us bigint NOT NULL
    )""",
)

# v2 (issue 30): provenance, as SQLite's v5 (``agentmem.schema``): ``az_am_source`` names
# the memories each derived memory came from (ids only: nothing to seal), and a tombstone
# lists the derived memories an erase took apart. Memories promoted before v2 get theirs
# from their live sources' promoted_to (a forgotten source's row is sealed in its payload,
# out of the server's reach: a forget made before v2 does not reach them by provenance).
V2: tuple[str, ...] = (
    """CREATE TABLE az_am_source (
        memory_id text NOT NULL,  -- the derived memory
        source_id text NOT NULL,  -- a memory it was derived from
        org_id    text NOT NULL,
        agent_id  text NOT NULL,
        PRIMARY KEY (memory_id, source_id)
    )""",
    "CREATE INDEX az_am_source_source ON az_am_source (source_id)",
    "ALTER TABLE az_am_tombstone ADD COLUMN derived text NOT NULL DEFAULT '[]'",
    "INSERT INTO az_am_source (memory_id, source_id, org_id, agent_id)"
    " SELECT m.promoted_to, m.id, m.org_id, m.agent_id FROM az_memory m"
    " WHERE m.promoted_to IS NOT NULL AND (m.promoted_to IN (SELECT id FROM az_memory)"
    " OR m.promoted_to IN (SELECT memory_id FROM az_am_forgotten)) ON CONFLICT DO NOTHING",
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (V1, V2)
SCHEMA_VERSION = len(MIGRATIONS)


def _version(conn: Any) -> int:
    row = conn.execute("SELECT value FROM az_meta WHERE key = %s", (SCHEMA_KEY,)).fetchone()
    return int(row[0]) if row else 0


def migrate(conn: Any) -> None:
    """Bring the layer's tables up to date (``conn`` in autocommit mode: each step is
    its own transaction). A newer schema is refused."""
    found = _version(conn)
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has agent-memory schema {found}; this version supports up to "
            f"{SCHEMA_VERSION}"
        )
    for target in range(found + 1, SCHEMA_VERSION + 1):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            if _version(conn) >= target:
                continue  # another client ran this step meanwhile
            for stmt in MIGRATIONS[target - 1]:
                conn.execute(stmt)
            conn.execute(
                "INSERT INTO az_meta (key, value) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (SCHEMA_KEY, str(target)),
            )


__all__ = ["LAYER_COLUMNS", "MIGRATIONS", "SCHEMA_KEY", "SCHEMA_VERSION", "migrate"]
