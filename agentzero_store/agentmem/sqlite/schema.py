"""The agent-memory layer's tables in ``memory.db``: their migrations, one per schema
version, each run in one transaction (``RepositoryCore.migrate``). What each table holds:
``repository``'s docstring."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...memory.sqlite.chains import Step, migrate_chain
from ..records import entity_key

if TYPE_CHECKING:
    from ...memory.sqlite.tx import WriteTx

# A migration step (``memory.chains.Step``): SQL statements (separated by ";\n"), or a
# function of the open write transaction for a step that needs Python (entity keys are
# NFKC case folds). The chain runs in ``memory.chains.migrate_chain``, shared by skills
# and the item store.

SCHEMA_KEY = "agentmem_schema"

# The layer's columns of a memory row (v4 adds them to the store's ``memory`` table),
# in the order of the ``am_memory`` view after id and label. ``type`` is NULL until a
# row is the layer's (written by it, or adopted); ``salience`` is NULL until first
# needed (``parts.salience_of``: text heuristics kept off the write path).
LAYER_COLUMNS = (
    # No CHECK on type: one cost ~15% of a memory row's insert (measured), and every
    # write path checks types in Python (``records.check_types``) before it gets here.
    ("type", "TEXT"),
    ("speaker", "TEXT"),
    ("confidence", "REAL"),
    ("importance", "REAL"),
    ("salience", "REAL"),
    ("stability", "REAL"),  # FSRS S, days
    ("difficulty", "REAL"),  # FSRS D, 1..10
    ("last_review_us", "INTEGER"),  # NULL: never reviewed (the view shows created_at_us)
    ("access_count", "INTEGER NOT NULL DEFAULT 0"),
    ("last_access_us", "INTEGER"),
    ("retrievability", "REAL"),  # R at the last consolidation
    ("archived_at_us", "INTEGER"),  # not NULL: the text is in the archive
    ("archive_digest", "TEXT"),  # sha256 the archive must match
    ("promoted_to", "TEXT"),  # episodes: the semantic memory they made
    ("speaker_key", "TEXT"),  # records.entity_key(speaker)
)
# What ``am_memory`` shows, in the order its table had (forget payloads written before
# v4 keep that order: [18] archived_at_us, [19] archive_digest), then speaker_key.
AM_MEMORY_COLUMNS = (
    "id, label, org_id, agent_id, conversation_id, type, speaker, created_at_us, fingerprint,"
    " confidence, importance, salience, stability, difficulty, last_review_us, access_count,"
    " last_access_us, retrievability, archived_at_us, archive_digest, promoted_to, speaker_key"
)


def _fold_into_memory_rows(tx: WriteTx) -> None:
    """v4: the layer's row of a memory becomes columns of its ``memory`` row.

    Before, every memory had a second row in ``am_memory`` (five B-trees: the table, its
    id and label keys, a scope and a conversation index) and the speaker an ``am_about``
    row (two more): a turn cost the layer more than the store's own insert. Now a turn is
    one wider row; ``am_memory`` is a view of the memory rows that are the layer's (so
    every read keeps its shape); only notes (not episodic) are indexed by type and
    fingerprint, for ``remember``'s duplicate check and the core-fact lists; a turn's
    conversation order is the store's scope index (org, agent, conversation, time,
    label). The speaker is a column, not an ``am_about`` row; ``am_speaker`` lists each
    scope's speakers once, for the entity signal. One transaction, like every step.
    """
    for name, decl in LAYER_COLUMNS:
        tx.execute(f"ALTER TABLE memory ADD COLUMN {name} {decl}")
    moved = [n for n, _ in LAYER_COLUMNS if n != "speaker_key"]
    cols = ", ".join(moved)
    tx.execute(
        f"UPDATE memory SET ({cols}) = (SELECT {cols} FROM am_memory a"
        " WHERE a.label = memory.label) WHERE label IN (SELECT label FROM am_memory)"
    )
    speakers = tx.query("SELECT DISTINCT speaker FROM memory WHERE speaker IS NOT NULL")
    tx.executemany(
        "UPDATE memory SET speaker_key = ? WHERE speaker = ?",
        [(entity_key(str(r[0])), r[0]) for r in speakers],
    )
    tx.execute(
        "DELETE FROM am_about WHERE (memory_id, key) IN"
        " (SELECT id, speaker_key FROM memory WHERE speaker_key IS NOT NULL)"
    )
    tx.execute("DROP TABLE am_memory")
    shown = AM_MEMORY_COLUMNS.replace(
        "last_review_us", "coalesce(last_review_us, created_at_us) AS last_review_us"
    )
    tx.execute(f"CREATE VIEW am_memory AS SELECT {shown} FROM memory WHERE type IS NOT NULL")
    tx.execute(
        "CREATE INDEX memory_note ON memory (org_id, agent_id, type, created_at_us)"
        " WHERE type <> 'episodic'"
    )
    tx.execute(
        "CREATE INDEX memory_note_fp ON memory (org_id, agent_id, fingerprint)"
        " WHERE type <> 'episodic'"
    )
    tx.execute(
        "CREATE TABLE am_speaker (org_id TEXT NOT NULL, agent_id TEXT NOT NULL,"
        " key TEXT NOT NULL, PRIMARY KEY (org_id, agent_id, key)) WITHOUT ROWID"
    )
    tx.execute(
        "INSERT OR IGNORE INTO am_speaker (org_id, agent_id, key) SELECT DISTINCT org_id,"
        " agent_id, speaker_key FROM memory WHERE speaker_key IS NOT NULL"
    )


MIGRATIONS: tuple[Step, ...] = (
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
    # v4: the layer's columns move into the memory row (see the function).
    _fold_into_memory_rows,
    # v5 (issue 30): provenance. ``am_source`` names, for each derived memory (a semantic
    # memory consolidation promoted from recurring turns; later, extracted facts), the
    # memories it came from: forget and erase of a source reach what was derived from it
    # (``lifecycle``). Ids only, no text: like pins and summary sources its rows stay
    # while either end is forgotten (undo needs them) and go with an erase or a purge.
    # A tombstone lists the derived memories an erase took with its sources apart.
    # Memories promoted before v5 get their provenance from their sources' promoted_to
    # (live sources, and forgotten ones' kept rows: ``am_memory`` position 20).
    """
    CREATE TABLE am_source (
        memory_id TEXT NOT NULL,   -- the derived memory
        source_id TEXT NOT NULL,   -- a memory it was derived from
        org_id    TEXT NOT NULL,
        agent_id  TEXT NOT NULL,
        PRIMARY KEY (memory_id, source_id)
    ) WITHOUT ROWID;
    CREATE INDEX am_source_source ON am_source (source_id);
    ALTER TABLE am_tombstone ADD COLUMN derived TEXT NOT NULL DEFAULT '[]';
    INSERT OR IGNORE INTO am_source (memory_id, source_id, org_id, agent_id)
        SELECT promoted_to, id, org_id, agent_id FROM memory WHERE promoted_to IS NOT NULL;
    INSERT OR IGNORE INTO am_source (memory_id, source_id, org_id, agent_id)
        SELECT json_extract(payload, '$.am_memory[20]'), memory_id, org_id, agent_id
        FROM am_forgotten WHERE json_extract(payload, '$.am_memory[20]') IS NOT NULL;
    DELETE FROM am_source WHERE memory_id NOT IN (SELECT id FROM memory)
        AND memory_id NOT IN (SELECT memory_id FROM am_forgotten)
    """,
)


SCHEMA_VERSION = len(MIGRATIONS)


__all__ = [
    "AM_MEMORY_COLUMNS",
    "LAYER_COLUMNS",
    "MIGRATIONS",
    "SCHEMA_KEY",
    "SCHEMA_VERSION",
    "Step",
    "migrate_chain",
]
