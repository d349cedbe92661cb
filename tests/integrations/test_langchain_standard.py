"""LangChain's own conformance suites (langchain-tests), run against our classes offline:
``VectorStoreIntegrationTests`` (its deterministic fake embeddings of 6 dimensions) on
``AgentZeroVectorStore``, and ``RetrieversIntegrationTests`` on ``AgentZeroRetriever``
over a real agent memory."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from agentzero_store import AgentMemory
from agentzero_store.integrations.langchain import AgentZeroRetriever, AgentZeroVectorStore

from ..conftest import FAST, PASSPHRASE


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lc") / "data"


class TestAgentZeroVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, shared_dir: Path) -> Iterator[VectorStore]:  # type: ignore[override]
        """An empty store: a fresh collection of one data dir (every test's own)."""
        store = AgentZeroVectorStore(
            self.get_embeddings(),
            data_dir=shared_dir,
            passphrase=PASSPHRASE,
            collection=f"suite-{uuid.uuid4().hex}",
            config=FAST,
        )
        try:
            yield store
        finally:
            store.close()


class TestAgentZeroRetriever(RetrieversIntegrationTests):
    memory: AgentMemory | None = None

    @pytest.fixture(autouse=True)
    def _memory(self, tmp_path: Path) -> Iterator[None]:
        mem = AgentMemory.open(tmp_path / "data", passphrase=PASSPHRASE, config=FAST)
        for i, text in enumerate(
            [
                "the project deadline is friday",
                "friday is the team lunch at noon",
                "the deadline for the report moved to friday",
                "my cat likes the garden",
                "friday deploys are frozen",
            ]
        ):
            mem.add_turn("notes", "user", f"{text} ({i})")
        type(self).memory = mem
        try:
            yield
        finally:
            type(self).memory = None
            mem.close()

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return AgentZeroRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.memory}

    @property
    def retriever_query_example(self) -> str:
        return "friday"
