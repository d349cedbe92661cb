"""The roles and privileges docs/postgresql.md asks of a deployment, tried on a real server:
an administrator creates the extension, an owner role creates the store (and stores its
first vector, which types the column and builds the HNSW index), and an application
role with only SELECT/INSERT/DELETE on the data tables does everything else."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from agentzero_store import MemoryEntry, PgMemoryStore, StoreIOError

from ...conftest import FAST, PASSPHRASE, rand_vectors
from ...support.pg_server import PgServer

GRANTS = (
    "GRANT SELECT ON az_keys, az_meta TO {app}",
    "GRANT SELECT, INSERT, DELETE ON az_memory, az_terms, az_bm25_scope TO {app}",
    "GRANT USAGE ON SEQUENCE az_memory_label_seq TO {app}",
)


def test_an_application_role_needs_only_data_privileges(postgres: PgServer, pg_url: str) -> None:
    db = pg_url.rsplit("/", 1)[1]
    owner, app = f"{db}_owner", f"{db}_app"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {owner} LOGIN")
        admin.execute(f"CREATE ROLE {app} LOGIN")
        admin.execute("CREATE EXTENSION vector")  # pgvector is not a trusted extension
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {owner}")
    url = f"postgresql://{{}}@127.0.0.1:{postgres.port}/{db}"
    vectors = rand_vectors(20, 16, seed=3)
    with PgMemoryStore.open(url.format(owner), passphrase=PASSPHRASE, config=FAST) as s:
        s.append_with_embedding(MemoryEntry("first, by the owner", id="first"), vectors[0])
        with psycopg.connect(url.format(owner), autocommit=True) as c:
            for g in GRANTS:
                c.execute(g.format(app=app))
    with PgMemoryStore.open(url.format(app), passphrase=PASSPHRASE, config=FAST, create=False) as s:
        s.append_many(
            [
                MemoryEntry(f"note {i} about the boiler", org_id="o", id=f"n{i}")
                for i in range(1, 20)
            ],
            vectors=list(vectors[1:]),
        )
        s.append_many([MemoryEntry("note 1 about the boiler", org_id="o", id="n1")])  # re-send
        assert s.count() == 20
        assert s.semantic_recall(vectors[5], 1, org_id="o")[0].id == "n5"
        assert len(s.keyword_recall("boiler", 5, org_id="o")) == 5
        assert len(s.hybrid_recall("boiler", np.asarray(vectors[7]), 3, org_id="o")) == 3
        assert s.delete("n2") and s.forget(org_id="o", conversation_id="default") == 18
        assert s.gc_expired() == 0
        assert s.count() == 1
    with (
        psycopg.connect(url.format(app), autocommit=True) as c,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        c.execute("UPDATE az_keys SET header = header")  # the key header is read-only to it
    with pytest.raises(StoreIOError, match="refused"):
        # Creating a store needs the CREATE privilege the application role lacks.
        PgMemoryStore.open(
            f"postgresql://{app}@127.0.0.1:{postgres.port}/postgres",
            passphrase=PASSPHRASE,
            config=FAST,
        )


AGENT_GRANTS = (
    # docs/postgresql.md's list for the agent memory, beside GRANTS: each az_am_* table named
    # (never all tables: that would include az_keys), the layer's columns of az_memory,
    # az_meta for the adoption marks, and the two identity sequences.
    "GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {app}",
    "GRANT UPDATE ON az_memory, az_terms TO {app}",
    "GRANT SELECT ON az_am_memory TO {app}",  # the view of the layer's memory rows
    "GRANT INSERT, UPDATE ON az_meta TO {app}",
    "GRANT USAGE ON SEQUENCE az_am_history_seq_seq, az_am_tombstone_seq_seq TO {app}",
)


def test_the_agent_memory_runs_as_the_application_role(postgres: PgServer, pg_url: str) -> None:
    """The owner opens the agent memory once (its migration alters az_memory); then the
    application role, with the grants of docs/postgresql.md and no more, runs a whole session."""
    from agentzero_store import AgentMemory, Turn

    db = pg_url.rsplit("/", 1)[1]
    owner, app = f"{db}_owner", f"{db}_app"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {owner} LOGIN")
        admin.execute(f"CREATE ROLE {app} LOGIN")
        admin.execute("CREATE EXTENSION vector")
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {owner}")
    url = f"postgresql://{{}}@127.0.0.1:{postgres.port}/{db}"
    vectors = rand_vectors(8, 16, seed=5)
    with AgentMemory.open(url.format(owner), passphrase=PASSPHRASE, config=FAST) as m:
        m.add_turn("c0", "user", "the owner's first turn", vector=vectors[0])
    with psycopg.connect(url.format(owner), autocommit=True) as c:
        tables = [
            str(r[0])
            for r in c.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'az\\_am\\_%' ORDER BY 1"
            )
        ]
        for g in (*GRANTS, *AGENT_GRANTS):
            c.execute(g.format(app=app, tables=", ".join(tables)))
    with AgentMemory.open(
        url.format(app), passphrase=PASSPHRASE, config=FAST, org_id="o", agent_id="a"
    ) as m:
        ids = m.add_turns(
            "c1",
            [Turn("user", f"turn {i} about the boiler", speaker="Ana") for i in range(4)],
            vectors=list(vectors[1:5]),
        )
        m.assert_fact("Ana", "lives_in", "Porto", vector=vectors[5])
        m.assert_fact("Ana", "lives_in", "Lisbon", vector=vectors[6])
        m.record_outcome("bleed the radiator", success=True, vector=vectors[7])
        assert [f.object for f in m.facts("Ana")] == ["Lisbon"]
        assert m.recall("boiler", mode="keyword")
        m.archive(ids[0])
        assert m.restore(ids[0])
        token = m.forget(id=ids[1]).token
        assert m.undo(token) == 1
        m.erase(id=ids[2])
        m.feedback(ids[3])
        m.consolidate()
        m.namespace("team")  # created, owned by this agent
        with m.shared("team") as shared:
            shared.remember("a shared note")
        assert len(m.memories()) >= 4
    with (
        psycopg.connect(url.format(app), autocommit=True) as c,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        c.execute("UPDATE az_keys SET header = header")  # still read-only to it
