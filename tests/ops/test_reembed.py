"""Re-embedding: from a store built with the loopback API embedder to another embedder.

The switch is atomic (an interrupted run leaves the store wholly old and resumes), rows
written meanwhile are not left behind, recall works with the new embedder, and the old
model is gone from the store, its indexes and ``agentzero store status``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import (
    EmbedderMismatchError,
    LocalEmbedder,
    MemoryEntry,
    SqliteMemoryStore,
)
from agentzero_store.embed.api import ApiEmbedder
from agentzero_store.embed.vectors import Embedder, Vector
from agentzero_store.ops.reembed import STAGING, reembed_memory
from rag.store import DocumentStore

from ..conftest import FAST, PASSPHRASE, js, run_cli
from ..embed.test_api_embedder import KEY, EmbeddingServer

OLD, NEW = "api:mini-embed", "api:mini-embed@32"
MEMORIES = [
    ("o1", "I am allergic to peanuts"),
    ("o1", "my favourite colour is teal"),
    ("o1", "the quarterly report is due on friday"),
    ("o2", "the office wifi password rotates monthly"),
    ("o2", "our cat is called miso"),
]
DOCS = {
    "tea": "green tea is brewed at eighty degrees for two minutes",
    "bike": "inflate road bike tyres to six bar before every ride",
}


@pytest.fixture
def embed_server() -> Iterator[EmbeddingServer]:
    s = EmbeddingServer()
    yield s
    s.stop()


def api(server: EmbeddingServer, dims: int | None = None) -> ApiEmbedder:
    return ApiEmbedder(server.url, "mini-embed", api_key=KEY, dimensions=dims, backoff=0)


def api_env(server: EmbeddingServer, dims: int | None = None) -> dict[str, str]:
    env = {
        "AGENTZERO_EMBEDDER": "api",
        "AGENTZERO_EMBED_URL": server.url,
        "AGENTZERO_EMBED_MODEL": "mini-embed",
        "AGENTZERO_EMBED_API_KEY": KEY,
    }
    return env | ({"AGENTZERO_EMBED_DIMENSIONS": str(dims)} if dims else {})


@pytest.fixture
def old_store(data_dir: Path, embed_server: EmbeddingServer) -> Path:
    """Memories and documents embedded by the API's 64-d model, with both HNSW sidecars."""
    emb = api(embed_server)
    with SqliteMemoryStore.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, embedder=emb, hnsw=True
    ) as s:
        s.append_many([MemoryEntry(content=t, org_id=o) for o, t in MEMORIES])
        assert s.embedding_info() == (OLD, 64)
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, embedder=emb) as d:
        for doc_id, text in DOCS.items():
            d.ingest(doc_id, text)
    return data_dir


def staging_exists(store: SqliteMemoryStore) -> bool:
    return bool(store._db.query("SELECT 1 FROM sqlite_master WHERE name = ?", (STAGING,)))


def test_cli_reembed_switches_memories_documents_and_indexes(
    old_store: Path, embed_server: EmbeddingServer
) -> None:
    before = js(
        run_cli(
            old_store, "store", "status", "--json", passphrase=PASSPHRASE, env=api_env(embed_server)
        )
    )
    assert OLD in {r["embedder"] for r in before}

    p = run_cli(
        old_store,
        "store",
        "reembed",
        "--embedder",
        "api",
        "--batch",
        "2",
        "--json",
        passphrase=PASSPHRASE,
        env=api_env(embed_server, 32),
    )
    out = js(p)
    assert out["embedder"] == NEW and out["dimension"] == 32
    m = out["memory"]
    assert (m["previous_model"], m["previous_dim"], m["model"], m["dim"]) == (OLD, 64, NEW, 32)
    assert m["rows"] == len(MEMORIES) and m["index_rebuilt"] is True
    assert out["documents"] == {"documents": 2, "reembedded": 2, "chunks": 2}

    new = api(embed_server, 32)
    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE, embedder=new) as s:
        assert s.embedding_info() == (NEW, 32)
        assert not staging_exists(s)
        assert {e.embedding_model for e in s.recent(100)} == {NEW}
        hits = s.recall("allergic to peanuts", 2, org_id="o1")
        assert hits[0].entry.content == "I am allergic to peanuts"
        assert s.hnsw_index is not None  # the rebuilt sidecar answers for the new model
        assert s.index_status()[0].embedder == NEW
    with (
        SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE, embedder=api(embed_server)) as s,
        pytest.raises(EmbedderMismatchError, match=NEW),
    ):
        s.recall("peanuts", 1)
    with DocumentStore.open(old_store, passphrase=PASSPHRASE, embedder=new) as d:
        assert d.vector_coverage() == (2, 2)
        assert {r.vectors.model for r in d.documents() if r.vectors} == {NEW}
        assert d.query("how hot for green tea", 1, "semantic")[0].id == "tea"

    after = js(
        run_cli(
            old_store,
            "store",
            "status",
            "--json",
            passphrase=PASSPHRASE,
            env=api_env(embed_server, 32),
        )
    )
    embedders = {r["embedder"] for r in after if r["dimension"]}
    assert embedders == {NEW}, after  # the old model is gone from every index
    assert all(r["behind"] == 0 for r in after)


def test_reembed_is_idempotent_and_needs_an_embedder(
    old_store: Path, embed_server: EmbeddingServer
) -> None:
    env = api_env(embed_server, 32)
    run_cli(old_store, "store", "reembed", "--embedder", "api", passphrase=PASSPHRASE, env=env)
    again = js(
        run_cli(
            old_store,
            "store",
            "reembed",
            "--embedder",
            "api",
            "--json",
            passphrase=PASSPHRASE,
            env=env,
        )
    )
    assert again["memory"]["previous_model"] == NEW and again["documents"]["reembedded"] == 0
    p = run_cli(
        old_store,
        "store",
        "reembed",
        "--embedder",
        "none",
        "--json",
        passphrase=PASSPHRASE,
        check=False,
    )
    assert p.returncode == 2 and js(p)["error"] == "invalid_argument" and js(p)["hint"]


class FailingAfter:
    """Delegates to an embedder, failing on call ``n`` (a crash or ^C mid-run)."""

    def __init__(self, inner: Embedder, n: int, on_call: Callable[[int], None] | None = None):
        self.inner, self.n, self.calls, self.on_call = inner, n, 0, on_call

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        self.calls += 1
        if self.on_call is not None:
            self.on_call(self.calls)
        if self.calls == self.n:
            raise KeyboardInterrupt
        return self.inner.embed(texts)


def test_interrupted_run_leaves_the_store_wholly_old_and_resumes(
    old_store: Path, embed_server: EmbeddingServer
) -> None:
    old, new = api(embed_server), api(embed_server, 32)
    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE) as s:
        with pytest.raises(KeyboardInterrupt):
            reembed_memory(s, FailingAfter(new, 3), batch=2)  # 2 batches staged, then ^C
        assert staging_exists(s)
        assert s.embedding_info() == (OLD, 64)
        assert {e.embedding_model for e in s.recent(100)} == {OLD}
    # Still wholly old: the old embedder recalls as before.
    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE, embedder=old) as s:
        assert s.recall("peanuts allergic", 1)[0].entry.content == "I am allergic to peanuts"
    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE) as s:
        embed_server.requests.clear()
        report = reembed_memory(s, new, batch=2)
        assert report.resumed == 4 and report.rows == len(MEMORIES)
        assert sum(len(r["input"]) for r in embed_server.requests) == 1  # only the rest
        assert s.embedding_info() == (NEW, 32) and not staging_exists(s)


def test_another_embedders_leftovers_are_discarded(
    old_store: Path, embed_server: EmbeddingServer
) -> None:
    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE) as s:
        with pytest.raises(KeyboardInterrupt):
            reembed_memory(s, FailingAfter(api(embed_server, 16), 2), batch=2)
        report = reembed_memory(s, api(embed_server, 32), batch=2)
        assert report.resumed == 0 and s.embedding_info() == (NEW, 32)
        blobs = s._db.query(
            "SELECT v.embedding FROM memory m LEFT JOIN memory_vec v ON v.label = m.label"
        )
        assert {len(b[0]) for b in blobs} == {32 * 4}


def test_rows_written_during_the_run_are_switched_too(
    old_store: Path, embed_server: EmbeddingServer
) -> None:
    old = api(embed_server)

    def meanwhile(call: int) -> None:
        if call == 1:  # another process appends with the old embedder while we stage
            with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE, embedder=old) as w:
                w.append(MemoryEntry(content="the dentist appointment is on monday"))

    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE) as s:
        report = reembed_memory(s, FailingAfter(api(embed_server, 32), 0, meanwhile), batch=100)
        assert report.rows == len(MEMORIES) + 1
        assert {e.embedding_model for e in s.recent(100)} == {NEW}
        vectors = s._db.query(
            "SELECT v.embedding FROM memory m LEFT JOIN memory_vec v ON v.label = m.label"
        )
        assert all(np.frombuffer(v[0], dtype=np.float32).shape == (32,) for v in vectors)


def test_reembed_to_the_local_model(
    old_store: Path, embed_server: EmbeddingServer, local_embedder: LocalEmbedder
) -> None:
    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE) as s:
        report = reembed_memory(s, local_embedder)
        assert report.model == local_embedder.model_id and report.dim == 384
    with SqliteMemoryStore.open(old_store, passphrase=PASSPHRASE, embedder=local_embedder) as s:
        # A paraphrase with no shared word: only a real model finds it.
        assert s.recall("what food can't I eat?", 1)[0].entry.content == (
            "I am allergic to peanuts"
        )
