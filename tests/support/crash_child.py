"""The child of the crash suite: runs one operation in a loop until it is killed.

``python tests/support/crash_child.py SCENARIO DATA_DIR SEED``. After each operation returns
(durable), it prints ``ACK <token>`` and flushes: a printed token is an acknowledged
write that must survive the kill -9 the parent sends at a random instant.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from agentzero_store.ops import change_passphrase, rotate_keys
from agentzero_store.storage.credentials import Credential
from rag.store import DocumentStore

PASSPHRASE = "crash pass 0"
FAST = StoreConfig(kdf=FAST_KDF_FOR_TESTS)
EVERY_CHANGE = StoreConfig(kdf=FAST_KDF_FOR_TESTS, checkpoint_every=1)


def ack(token: str) -> None:
    """Print a token only after the operation returned: it is acknowledged."""
    sys.stdout.write(f"ACK {token}\n")
    sys.stdout.flush()


def passphrase(i: int) -> str:
    """The i-th passphrase of the change-passphrase scenario."""
    return f"crash pass {i}"


def memory_append(root: Path, rng: np.random.Generator) -> None:
    s = SqliteMemoryStore.open(root, passphrase=PASSPHRASE, config=FAST, hnsw=True)
    i = 0
    while True:
        n = int(rng.integers(1, 4))
        entries = [MemoryEntry(content=f"memory {i + j}", conversation_id="c") for j in range(n)]
        for eid in s.append_many(entries, rng.normal(size=(n, 384)).astype("float32")):
            ack(f"mem:{eid}")
        i += n


def doc_ingest(root: Path, rng: np.random.Generator, config: StoreConfig = FAST) -> None:
    with DocumentStore.open(root, passphrase=PASSPHRASE, config=config) as store:
        i = 0
        while True:
            words = " ".join(f"w{int(x)}" for x in rng.integers(0, 500, size=40))
            store.ingest(f"doc-{i}", f"document {i} {words}")
            ack(f"doc:doc-{i}")
            i += 1


def checkpoint(root: Path, rng: np.random.Generator) -> None:
    # checkpoint_every=1: every ingest ends in a sealed BM25 checkpoint (files, manifest).
    doc_ingest(root, rng, EVERY_CHANGE)


def compact(root: Path, rng: np.random.Generator) -> None:
    with DocumentStore.open(root, passphrase=PASSPHRASE, config=FAST) as store:
        i = 0
        while True:
            for j in range(3):
                store.ingest(f"doc-{i + j}", f"compact document {i + j} {int(rng.integers(9))}")
                ack(f"doc:doc-{i + j}")
            ack(f"try-del:doc-{i}")  # announced first: the delete in flight may land or not
            store.delete(f"doc-{i}")
            ack(f"del:doc-{i}")
            store.compact()
            i += 3


def change_pass(root: Path, rng: np.random.Generator) -> None:
    i = 0
    while True:
        change_passphrase(root, Credential.from_passphrase(passphrase(i)), passphrase(i + 1))
        i += 1
        ack(f"pw:{i}")


def rotate(root: Path, rng: np.random.Generator) -> None:
    i = 0
    while True:
        rotate_keys(root, Credential.from_passphrase(PASSPHRASE))
        i += 1
        ack(f"rot:{i}")


SCENARIOS = {
    "memory_append": memory_append,
    "doc_ingest": doc_ingest,
    "checkpoint": checkpoint,
    "compact": compact,
    "change_passphrase": change_pass,
    "rotate": rotate,
}


if __name__ == "__main__":
    scenario, data, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    SCENARIOS[scenario](data, np.random.default_rng(seed))
