"""The roles and privileges the README asks of a deployment, tried on a real server:
an administrator creates the extension, an owner role creates the store (and stores its
first vector, which types the column and builds the HNSW index), and an application
role with only SELECT/INSERT/DELETE on the data tables does everything else."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from agentzero_store import MemoryEntry, PgMemoryStore, StoreIOError

from .conftest import FAST, PASSPHRASE, rand_vectors
from .pg_server import PgServer

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
