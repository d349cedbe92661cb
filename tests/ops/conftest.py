"""A populated data dir (memories with vectors + HNSW, documents + BM25) for the ops tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.storage.credentials import Credential
from rag.store import DocumentStore

from ..conftest import FAST, PASSPHRASE, rand_vectors

CRED = Credential.from_passphrase(PASSPHRASE)
SECRET_WORD = "zanzibarquux"  # appears in one memory and one document: never on disk in clear


def populate(root: Path, n: int = 120) -> None:
    """Memories (with vectors, HNSW sidecar checkpointed) and documents (BM25 checkpointed)."""
    with SqliteMemoryStore.open(root, passphrase=PASSPHRASE, config=FAST, hnsw=True) as mem:
        entries = [
            MemoryEntry(
                content=f"memory {i} about topic {i % 7}", conversation_id=f"c{i % 3}", org_id="o1"
            )
            for i in range(n)
        ]
        entries.append(MemoryEntry(content=f"the {SECRET_WORD} memory", org_id="o1"))
        mem.append_many(entries, rand_vectors(len(entries)))
    with DocumentStore.open(root, passphrase=PASSPHRASE, config=FAST) as docs:
        for i in range(25):
            docs.ingest(f"doc-{i}", f"document {i} on subject {i % 5} with words alpha beta")
        docs.ingest("secret", f"a document mentioning {SECRET_WORD}")
        docs.delete("doc-3")


@pytest.fixture
def populated(data_dir: Path) -> Path:
    populate(data_dir)
    return data_dir


def answers(root: Path, cred_pass: str = PASSPHRASE) -> dict[str, object]:
    """What a store answers to a fixed set of queries (compared across backup/restore/rotate)."""
    q = rand_vectors(1, seed=99)[0]
    with SqliteMemoryStore.open(root, passphrase=cred_pass, config=FAST, create=False) as mem:
        out: dict[str, object] = {
            "count": mem.count(),
            "recent": [e.id for e in mem.recent(50, org_id="o1")],
            "keyword": [h.entry.id for h in mem.keyword_recall("topic", 20)],
            "semantic": [h.entry.id for h in mem.semantic_recall(q, 10)],
        }
    with DocumentStore.open(
        root, passphrase=cred_pass, config=FAST, create=False, readonly=True
    ) as docs:
        out["docs"] = sorted(d.id for d in docs.documents())
        out["bm25"] = [h.id for h in docs.query("subject alpha", 10)]
        out["secret"] = [h.id for h in docs.query(SECRET_WORD, 3)]
    return out


__all__ = ["CRED", "SECRET_WORD", "answers", "np", "populate"]
