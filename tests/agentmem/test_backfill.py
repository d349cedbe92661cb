"""Memories written while no embedder was given get their vectors later (issue 30, item
9): a store opened with an embedder embeds them in the background, in batches
(``memory.backfill``); ``store status`` counts them; opening a store that has vectors
without an embedder says what that costs. With the real all-MiniLM-L6-v2."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentzero_store import AgentMemory, SqliteMemoryStore
from agentzero_store.embed.local import LocalEmbedder
from agentzero_store.memory.backfill import NoEmbedderWarning

from ..conftest import FAST, PASSPHRASE, js, run_cli
from .conftest import Clock, open_memory

NOTES = [
    "Ana's cat is called Miso and sleeps on the radiator",
    "the quarterly report is due on the first Friday of March",
    "Bruno prefers green tea without sugar",
    "the staging server restarts every night at three",
    "Lisbon was sunny and warm all week",
]


def _semantic(mem: AgentMemory, query: str) -> list[str]:
    return [h.memory.content for h in mem.recall(query, 3, mode="semantic")]


def _write_without_embedder(root: Path, clock: Clock) -> None:
    with open_memory(root, clock) as mem:
        for note in NOTES:
            mem.remember(note)


def test_memories_written_without_an_embedder_are_found_after_a_reopen_with_one(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    _write_without_embedder(where, clock)
    with open_memory(where, clock, embedder=local_embedder) as mem:
        assert mem.store.backfill is not None and mem.store.backfill.wait(120)
        assert mem.store.without_vector() == 0
        # Before: no vector, so semantic recall found none of them ([]).
        assert _semantic(mem, "what is the name of Ana's pet?")[0] == NOTES[0]
        assert _semantic(mem, "which drink does Bruno like")[0] == NOTES[2]
    with open_memory(where, clock, embedder=local_embedder) as mem:
        assert mem.store.backfill is not None and mem.store.backfill.wait(120)
        assert mem.store.backfill.embedded == 0  # nothing left: the next open does nothing
        if not isinstance(mem.store, SqliteMemoryStore):
            return
        hnsw = mem.store.hnsw_index
        assert hnsw is not None and hnsw.status() is not None
        assert hnsw.status().entries == len(NOTES)  # type: ignore[union-attr]


def test_a_handle_without_an_embedder_on_an_embedded_store_warns_and_status_counts(
    data_dir: Path, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(data_dir, clock, embedder=local_embedder) as mem:
        mem.remember(NOTES[0])
    with pytest.warns(NoEmbedderWarning, match="semantic recall will not find"):
        mem = open_memory(data_dir, clock)
    with mem:
        mem.remember(NOTES[1])
        mem.remember(NOTES[2])
        assert mem.store.without_vector() == 2
    status = js(run_cli(data_dir, "store", "status", "--json", passphrase=PASSPHRASE))
    (hnsw,) = [r for r in status if r["name"] == "memory.hnsw"]
    assert hnsw["without_vector"] == 2
    human = run_cli(data_dir, "store", "status", passphrase=PASSPHRASE).stdout
    assert "2 memories have no vector" in human
    with open_memory(data_dir, clock, embedder=local_embedder) as mem:
        assert mem.store.backfill is not None and mem.store.backfill.wait(120)
        assert mem.store.without_vector() == 0
        assert _semantic(mem, "what tea does Bruno drink")[0] == NOTES[2]


class FailsOnSecondBatch:
    """A fake embedder (the point of the test): the real one, but its second call
    raises, as a crash or a failing model would between two batches."""

    def __init__(self, real: LocalEmbedder) -> None:
        self.real, self.calls = real, 0
        self.model_id, self.dimension = real.model_id, real.dimension

    def embed(self, texts: list[str]) -> Any:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("the embedder failed")
        return self.real.embed(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_failure_between_batches_keeps_what_committed_and_the_next_open_finishes(
    data_dir: Path, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    _write_without_embedder(data_dir, clock)
    small = dataclasses.replace(FAST, backfill_batch=2)
    failing = FailsOnSecondBatch(local_embedder)
    with open_memory(data_dir, clock, embedder=failing, config=small) as mem:
        assert mem.store.backfill is not None and mem.store.backfill.wait(120)
        assert mem.store.without_vector() == len(NOTES) - 2  # the first batch committed
    with open_memory(data_dir, clock, embedder=local_embedder, config=small) as mem:
        assert mem.store.backfill is not None and mem.store.backfill.wait(120)
        assert mem.store.without_vector() == 0
        vecs = mem.store.database.query("SELECT embedding FROM memory_vec ORDER BY label")
        assert len(vecs) == len(NOTES)
        want = local_embedder.embed(NOTES)
        got = np.stack([np.frombuffer(v[0], np.float32) for v in vecs])
        assert np.allclose(got, want, atol=1e-5)
