"""BM25 statistics of a PostgreSQL memory store, kept by the write path (schema 2).

A keyword query needs, for its scope, the row count ``n``, the average row length and
each query term's document frequency ``df``. Schema 1 recomputed all three on every
query from the scope's rows; schema 2 reads them:

- **Postings are scope-local.** ``az_terms`` carries each row's ``(org_id, agent_id,
  doc_len)``, and the index ``az_terms_scope (org_id, term, agent_id, label) INCLUDE
  (tf, doc_len)`` lists exactly one scope's postings of a term with all a score needs
  (an index-only scan). ``df`` is the count of those postings, read in the same
  statement that scores them (no stored ``df`` is needed, and none can drift). The
  server holds the copies to the row: a change of a row's scope or length is copied to
  its postings by the row's trigger, and an insert or update of postings that disagree
  with their row fails (``az_terms_*_check``). Measured at 100k rows (10 orgs), this is
  the part that matters: the term's postings of the whole store, each checked against
  ``az_memory``, cost far more than the statistics themselves did; per-term ``df``
  deltas would have added ~45 ms of trigger work to every 1,000-row batch for a number
  the query counts anyway.
- **Row counts and lengths are insert-only deltas.** ``az_bm25_scope`` holds rows
  ``(org_id, agent_id, n, total_len)``; a key's statistics are the sum of its rows.
  Triggers on ``az_memory`` insert them, so every path that changes the table is
  counted (the store's writes, a layer's ``PgWriteTx``, its raw ``DELETE FROM
  az_memory``, ``TRUNCATE``): statement-level ``AFTER INSERT`` / ``AFTER DELETE`` with
  transition tables (one row per key per statement, whatever the batch size), a
  row-level ``AFTER UPDATE OF org_id, agent_id, doc_len`` that fires only when one of
  them changes (a layer's updates of its own columns cost nothing), and ``AFTER
  TRUNCATE``. Writers only insert: no row is updated by every writer of a scope, so
  concurrent writers never wait for each other here.
- **Compaction** folds a key's rows into one, when a trigger sees more than
  ``COMPACT_AFTER`` of them: ``DELETE ... RETURNING`` the rows this transaction sees,
  insert their sum. It runs only under ``pg_try_advisory_xact_lock`` (never waits: a
  writer that does not get it leaves the fold to a later one), and only at READ
  COMMITTED. It is exact whatever runs beside it: it removes only rows it saw committed
  and puts back exactly their sum; rows committed after its snapshot stay as they are.
- **Readers** sum a key's rows in the statement that reads the postings, so ``n``,
  ``avgdl`` and ``df`` come from one snapshot: exactly the rows that snapshot holds.

Expired rows that ``gc_expired`` has not deleted yet are counted in ``n``, ``avgdl``
and ``df`` (they are rows of the scope until then); they are never scored or returned.
A scope with a conversation id has no delta rows of its own: its ``n`` and length are
counted from its rows (an index range of ``az_memory_scope``), its ``df`` from its
postings.

Privileges: a role that writes memories needs ``SELECT, INSERT, DELETE`` on
``az_bm25_scope`` (the triggers run as the writer; compaction deletes), a role that
only reads needs ``SELECT``. The upgrade from schema 1 gives them to every role holding
the matching privileges on ``az_memory``. Changing the scope or length of a row that
has postings (only SQL around the store does) also needs ``UPDATE`` on ``az_terms``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..records import Scope

COMPACT_AFTER = 32  # delta rows of one (org, agent) before a writer folds them into one

# The first key of the two-key advisory lock of a compaction, pg_try_advisory_xact_lock
# (int4, int4): "azbm", a class apart from the agent memory's two-key locks and from the
# one-key locks; the second key is a hash of the scope (a collision only skips a fold).
COMPACT_LOCK = 0x617A_626D

STATS_TABLE = "az_bm25_scope"

# Schema 1 -> 2, in order, in the upgrade's one transaction. The UPDATE rewrites every
# posting once; the index is built after it (one sort instead of row-by-row inserts).
V2: tuple[str, ...] = (
    # The strongest locks first, in the writers' order (az_memory, then az_terms): a
    # writer of schema 1 still running waits, and no lock upgrade can deadlock with it.
    "LOCK TABLE az_memory IN SHARE ROW EXCLUSIVE MODE",
    "LOCK TABLE az_terms IN ACCESS EXCLUSIVE MODE",
    "ALTER TABLE az_terms ADD COLUMN org_id text, ADD COLUMN agent_id text,"
    " ADD COLUMN doc_len integer",
    "UPDATE az_terms t SET org_id = m.org_id, agent_id = m.agent_id, doc_len = m.doc_len"
    " FROM az_memory m WHERE m.label = t.label",
    "ALTER TABLE az_terms ALTER COLUMN org_id SET NOT NULL,"
    " ALTER COLUMN agent_id SET NOT NULL, ALTER COLUMN doc_len SET NOT NULL",
    "CREATE INDEX az_terms_scope ON az_terms (org_id, term, agent_id, label) INCLUDE (tf, doc_len)",
    f"""CREATE TABLE {STATS_TABLE} (
        org_id    text NOT NULL,
        agent_id  text NOT NULL,
        n         bigint NOT NULL,  -- rows added (negative: removed)
        total_len bigint NOT NULL   -- the sum of their doc_len (negative: removed)
    )""",
    f"CREATE INDEX az_bm25_scope_key ON {STATS_TABLE} (org_id, agent_id) INCLUDE (n, total_len)",
    f"""CREATE FUNCTION az_bm25_compact(o text, a text) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
        dn bigint;
        dl bigint;
    BEGIN
        -- Each statement of a READ COMMITTED transaction sees what committed before it;
        -- under a snapshot isolation the DELETE could meet rows another fold removed.
        IF current_setting('transaction_isolation') <> 'read committed' THEN
            RETURN;
        END IF;
        IF (SELECT count(*) FROM (SELECT 1 FROM {STATS_TABLE}
                WHERE org_id = o AND agent_id = a LIMIT {COMPACT_AFTER + 1}) d)
                <= {COMPACT_AFTER} THEN
            RETURN;
        END IF;
        IF NOT pg_try_advisory_xact_lock({COMPACT_LOCK},
                hashtext(json_build_array(o, a)::text)) THEN
            RETURN;  -- another writer is folding this key: never wait for it
        END IF;
        WITH gone AS (DELETE FROM {STATS_TABLE} WHERE org_id = o AND agent_id = a
                      RETURNING n, total_len)
        SELECT coalesce(sum(n), 0), coalesce(sum(total_len), 0) INTO dn, dl FROM gone;
        IF dn <> 0 OR dl <> 0 THEN
            INSERT INTO {STATS_TABLE} (org_id, agent_id, n, total_len) VALUES (o, a, dn, dl);
        END IF;
    END $$""",
    f"""CREATE FUNCTION az_bm25_rows_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {STATS_TABLE} (org_id, agent_id, n, total_len)
        SELECT org_id, agent_id, count(*), sum(doc_len) FROM az_added GROUP BY 1, 2;
        PERFORM az_bm25_compact(k.org_id, k.agent_id)
        FROM (SELECT DISTINCT org_id, agent_id FROM az_added) k;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION az_bm25_rows_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {STATS_TABLE} (org_id, agent_id, n, total_len)
        SELECT org_id, agent_id, -count(*), -sum(doc_len) FROM az_removed GROUP BY 1, 2;
        PERFORM az_bm25_compact(k.org_id, k.agent_id)
        FROM (SELECT DISTINCT org_id, agent_id FROM az_removed) k;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION az_bm25_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF (OLD.org_id, OLD.agent_id) = (NEW.org_id, NEW.agent_id) THEN
            INSERT INTO {STATS_TABLE} (org_id, agent_id, n, total_len)
            VALUES (NEW.org_id, NEW.agent_id, 0, NEW.doc_len - OLD.doc_len);
        ELSE
            INSERT INTO {STATS_TABLE} (org_id, agent_id, n, total_len)
            VALUES (OLD.org_id, OLD.agent_id, -1, -OLD.doc_len),
                   (NEW.org_id, NEW.agent_id, 1, NEW.doc_len);
        END IF;
        PERFORM az_bm25_compact(NEW.org_id, NEW.agent_id);
        -- Only if it has postings: keyword replacement deletes them before it changes the
        -- length, and its writers then need no UPDATE privilege on az_terms.
        IF EXISTS (SELECT 1 FROM az_terms WHERE label = NEW.label) THEN
            UPDATE az_terms SET org_id = NEW.org_id, agent_id = NEW.agent_id,
                                doc_len = NEW.doc_len
            WHERE label = NEW.label;
        END IF;
        RETURN NULL;
    END $$""",
    # One lookup per memory, not per posting: postings come in whole rows at a time.
    """CREATE FUNCTION az_bm25_postings_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM (SELECT DISTINCT label, org_id, agent_id, doc_len
                                  FROM az_new_postings) t
                   JOIN az_memory m ON m.label = t.label
                   WHERE (m.org_id, m.agent_id, m.doc_len)
                         IS DISTINCT FROM (t.org_id, t.agent_id, t.doc_len)) THEN
            RAISE EXCEPTION 'a posting in az_terms must hold its memory row''s org_id,'
                ' agent_id and doc_len' USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION az_bm25_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM {STATS_TABLE};
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER az_memory_bm25_insert AFTER INSERT ON az_memory"
    " REFERENCING NEW TABLE AS az_added FOR EACH STATEMENT"
    " EXECUTE FUNCTION az_bm25_rows_added()",
    "CREATE TRIGGER az_memory_bm25_delete AFTER DELETE ON az_memory"
    " REFERENCING OLD TABLE AS az_removed FOR EACH STATEMENT"
    " EXECUTE FUNCTION az_bm25_rows_removed()",
    # Row-level: transition tables cannot go with a column list, and without one every
    # UPDATE of a layer's own columns (access counts, salience) would build them.
    "CREATE TRIGGER az_memory_bm25_update AFTER UPDATE OF org_id, agent_id, doc_len"
    " ON az_memory FOR EACH ROW WHEN (OLD.doc_len IS DISTINCT FROM NEW.doc_len"
    " OR OLD.org_id IS DISTINCT FROM NEW.org_id OR OLD.agent_id IS DISTINCT FROM NEW.agent_id)"
    " EXECUTE FUNCTION az_bm25_row_changed()",
    "CREATE TRIGGER az_memory_bm25_truncate AFTER TRUNCATE ON az_memory"
    " FOR EACH STATEMENT EXECUTE FUNCTION az_bm25_truncated()",
    # A posting's scope and length are its row's, checked by the server whoever writes
    # them: a score never counts another tenant's postings or a stale length. (Not a
    # composite foreign key: its per-posting check query is planned once per session,
    # and against a young table the planner picked a scope index and read the whole
    # scope for every posting; measured, ingest lost more than half its speed.)
    "CREATE TRIGGER az_terms_insert_check AFTER INSERT ON az_terms"
    " REFERENCING NEW TABLE AS az_new_postings FOR EACH STATEMENT"
    " EXECUTE FUNCTION az_bm25_postings_check()",
    "CREATE TRIGGER az_terms_update_check AFTER UPDATE ON az_terms"
    " REFERENCING NEW TABLE AS az_new_postings FOR EACH STATEMENT"
    " EXECUTE FUNCTION az_bm25_postings_check()",
)


def rebuild(c: Any) -> None:
    """Replace every delta row with one row per (org, agent) counted from the rows,
    inside the caller's transaction. Writers of ``az_memory`` wait until it ends (and
    it waits for those already writing): a delta committed between the delete and the
    count would be counted twice."""
    c.execute("LOCK TABLE az_memory IN SHARE MODE")
    c.execute(f"DELETE FROM {STATS_TABLE}")
    c.execute(
        f"INSERT INTO {STATS_TABLE} (org_id, agent_id, n, total_len)"
        " SELECT org_id, agent_id, count(*), sum(doc_len) FROM az_memory GROUP BY 1, 2"
    )


def share_grants(c: Any) -> None:
    """Give the statistics table to every role that holds privileges on ``az_memory``:
    ``SELECT`` to readers, ``SELECT, INSERT, DELETE`` to writers (the triggers run as
    them), so an upgrade keeps an application role working."""
    from psycopg import sql

    rows = c.execute(
        "SELECT a.grantee, a.privilege_type FROM pg_class r"
        " CROSS JOIN LATERAL aclexplode(r.relacl) a"
        " WHERE r.oid = 'az_memory'::regclass AND a.grantee <> r.relowner"
    ).fetchall()
    wanted: dict[int, set[str]] = {}
    for grantee, privilege in rows:
        if privilege in ("INSERT", "DELETE", "UPDATE"):
            wanted.setdefault(int(grantee), set()).update(("SELECT", "INSERT", "DELETE"))
        elif privilege == "SELECT":
            wanted.setdefault(int(grantee), set()).add("SELECT")
    for grantee, privileges in sorted(wanted.items()):
        if grantee == 0:
            to: sql.Composable = sql.SQL("PUBLIC")
        else:
            name = c.execute("SELECT pg_get_userbyid(%s)", (grantee,)).fetchone()[0]
            to = sql.Identifier(str(name))
        c.execute(
            sql.SQL("GRANT {} ON {} TO {}").format(
                sql.SQL(", ").join(sql.SQL(p) for p in sorted(privileges)),
                sql.Identifier(STATS_TABLE),
                to,
            )
        )


def scope_stats(scope: Scope) -> tuple[str, list[Any]]:
    """A one-row query of the scope's (``n``, ``total_len``), and its parameters:
    summed from the delta rows, or counted from the rows for a conversation scope."""
    if scope.conversation_id is not None:
        clauses, params = [], []
        for name in ("org_id", "agent_id", "conversation_id"):
            value = getattr(scope, name)
            if value is not None:
                clauses.append(f"{name} = %s")
                params.append(value)
        return (
            "SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS total_len FROM az_memory"
            f" WHERE {' AND '.join(clauses)}",
            params,
        )
    clauses, params = [], []
    for name in ("org_id", "agent_id"):
        value = getattr(scope, name)
        if value is not None:
            clauses.append(f"{name} = %s")
            params.append(value)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return (
        "SELECT coalesce(sum(n), 0) AS n, coalesce(sum(total_len), 0) AS total_len"
        f" FROM {STATS_TABLE}{where}",
        params,
    )


@dataclass(frozen=True)
class Drift:
    """One (org, agent) whose statistics differ from its rows: (n, total_len) as
    counted from ``az_memory`` and as summed from the delta rows."""

    org_id: str
    agent_id: str
    counted: tuple[int, int]
    kept: tuple[int, int]


def check(c: Any, *, fix: bool = False) -> list[Drift]:
    """Every (org, agent) whose kept statistics differ from its rows (none, unless
    something wrote around the triggers, such as a restore with triggers disabled).
    ``fix``: rebuild them from the rows (inside the caller's transaction)."""
    rows = c.execute(
        f"""WITH counted AS (SELECT org_id, agent_id, count(*) AS n, sum(doc_len) AS total_len
                             FROM az_memory GROUP BY 1, 2),
                 kept AS (SELECT org_id, agent_id, sum(n) AS n, sum(total_len) AS total_len
                          FROM {STATS_TABLE} GROUP BY 1, 2)
            SELECT org_id, agent_id, coalesce(c.n, 0), coalesce(c.total_len, 0),
                   coalesce(k.n, 0), coalesce(k.total_len, 0)
            FROM counted c FULL JOIN kept k USING (org_id, agent_id)
            WHERE (coalesce(c.n, 0), coalesce(c.total_len, 0))
                  IS DISTINCT FROM (coalesce(k.n, 0), coalesce(k.total_len, 0))
            ORDER BY 1, 2"""
    ).fetchall()
    drift = [
        Drift(str(o), str(a), (int(cn), int(cl)), (int(kn), int(kl)))
        for o, a, cn, cl, kn, kl in rows
    ]
    if drift and fix:
        rebuild(c)
    return drift


__all__ = [
    "COMPACT_AFTER",
    "COMPACT_LOCK",
    "STATS_TABLE",
    "V2",
    "Drift",
    "check",
    "rebuild",
    "scope_stats",
    "share_grants",
]
