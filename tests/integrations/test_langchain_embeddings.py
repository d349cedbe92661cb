"""``AgentZeroEmbeddings``: the local model as LangChain ``Embeddings``, in a LangChain
vector store, sync and async."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("langchain_core")

from agentzero_store import LocalEmbedder  # noqa: E402
from agentzero_store.integrations.langchain import (  # noqa: E402
    AgentZeroEmbeddings,
    AgentZeroVectorStore,
)


@pytest.fixture(scope="module")
def embeddings() -> AgentZeroEmbeddings:
    return AgentZeroEmbeddings(LocalEmbedder())


def test_vectors_are_the_embedders(embeddings: AgentZeroEmbeddings) -> None:
    texts = ["I'm allergic to peanuts", "The boiler needs a service"]
    got = embeddings.embed_documents(texts)
    want = LocalEmbedder().embed(texts)
    assert len(got) == 2 and all(len(v) == embeddings.dimension == 384 for v in got)
    assert np.allclose(np.asarray(got, dtype=np.float32), want, atol=1e-6)
    # one text alone is embedded without padding: the same vector within float error
    assert np.allclose(embeddings.embed_query(texts[0]), got[0], atol=1e-5)
    assert embeddings.embed_documents([]) == []


async def test_async_forms_match(embeddings: AgentZeroEmbeddings) -> None:
    assert await embeddings.aembed_query("tea") == embeddings.embed_query("tea")
    assert await embeddings.aembed_documents(["a", "b"]) == embeddings.embed_documents(["a", "b"])


def test_a_vector_store_ranks_by_meaning(embeddings: AgentZeroEmbeddings, tmp_path: Path) -> None:
    store = AgentZeroVectorStore(embeddings, data_dir=tmp_path / "d", passphrase="pw")
    try:
        store.add_texts(
            ["Ana is allergic to peanuts", "The boiler pressure is 1.5 bar", "Ana likes tea"],
            ids=["allergy", "boiler", "tea"],
        )
        hits = store.similarity_search("what food must Ana avoid?", k=1)
        assert [d.id for d in hits] == ["allergy"]
    finally:
        store.close()
