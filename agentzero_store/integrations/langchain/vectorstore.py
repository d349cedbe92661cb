"""``AgentZeroVectorStore``: a LangChain ``VectorStore`` on the encrypted item store.

A collection is an ``ItemStore`` collection in the data dir's ``memory.db``: one
document per item (key = the document id; value = its text and metadata; its embedding
both as the item's vector, which search ranks by cosine similarity, and as the item's
``data``, which maximal marginal relevance reads back). Adding an id that exists
replaces that document. The embedding dimension is whatever the first document's is,
then fixed for the collection; another collection in the same data dir may have another.

``filter`` takes either a callable ``Document -> bool`` (as ``InMemoryVectorStore``) or
a dict on the metadata with the item store's operators (``{"source": "a.txt"}``,
``{"page": {"$gte": 3}}``; ``filters``). Scores are cosine similarities; the relevance
scores of ``similarity_search_with_relevance_scores`` map them onto [0, 1].

Embeddings are computed before the data dir's lock is taken, and async methods use the
embedding's async calls and run every store call in a worker thread.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from ...agentmem import AgentMemory
from ...base.config import StoreConfig
from ...base.errors import InvalidArgumentError
from ...base.limits import MAX_RESULTS, check_limit
from ...items import Item, ItemStore
from ...memory.sqlite.store import SqliteMemoryStore
from .._shared import Handle, lease

NAMESPACE = ("documents",)  # every document of a collection lives in this namespace
Filter = Callable[[Document], bool] | Mapping[str, Any] | None


class AgentZeroVectorStore(Handle, VectorStore):
    """The documents of one collection of an encrypted data dir (see the module)."""

    def __init__(
        self,
        embedding: Embeddings,
        *,
        data_dir: Path | str,
        passphrase: str | None = None,
        collection: str = "langchain",
        config: StoreConfig | None = None,
    ) -> None:
        """Open collection ``collection`` of ``data_dir`` (created if missing), embedding
        with ``embedding``. ``config``: the ``StoreConfig`` of a data dir this opens."""
        if not all(
            callable(getattr(embedding, m, None)) for m in ("embed_documents", "embed_query")
        ):
            raise InvalidArgumentError(
                f"embedding must be a LangChain Embeddings, got {type(embedding).__name__}",
                hint="e.g. OpenAIEmbeddings(), HuggingFaceEmbeddings(...), or any object with"
                " embed_documents and embed_query",
            )
        self.embedding = embedding
        self.collection = collection
        self._hold(
            lease(data_dir, passphrase=passphrase, config=config, what="AgentZeroVectorStore")
        )
        try:
            self._items = self._lease.call(lambda mem: _item_store(mem, collection))
        except BaseException:
            self.close()
            raise

    @property
    def embeddings(self) -> Embeddings:
        """The embedding model of this store."""
        return self.embedding

    # ------------------------------------------------------------------ writes
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and store ``texts`` in one transaction; an id that exists is replaced.
        Returns the ids (new UUIDs where none was given)."""
        texts, metadatas, ids_ = self._prepare(texts, metadatas, ids)
        vectors = self.embedding.embed_documents(texts) if texts else []
        return self._lease.call(lambda _m: self._put(texts, metadatas, ids_, vectors))

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """``add_texts`` with the embedding's async call and the write in a worker thread."""
        texts, metadatas, ids_ = self._prepare(texts, metadatas, ids)
        vectors = await self.embedding.aembed_documents(texts) if texts else []
        return await self._lease.write(lambda _m: self._put(texts, metadatas, ids_, vectors))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete the documents of ``ids`` (ids not stored are ignored); with None,
        every document of the collection. Their bytes are zeroed in memory.db's pages."""
        return self._lease.call(lambda _m: self._delete(ids))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """``delete`` in a worker thread."""
        return await self._lease.write(lambda _m: self._delete(ids))

    def _prepare(
        self,
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None,
        ids: Sequence[str | None] | None,
    ) -> tuple[list[str], list[dict[str, Any]], list[str]]:
        self._lease.check_open()
        if isinstance(texts, str):
            raise InvalidArgumentError(
                "add_texts takes a list of texts, got one string", hint="add_texts([text])"
            )
        texts = list(texts)
        for t in texts:
            if not isinstance(t, str):
                raise InvalidArgumentError(f"texts must be strings, got a {type(t).__name__}")
        metas = [dict(m) for m in metadatas] if metadatas is not None else [{}] * len(texts)
        if len(metas) != len(texts) or (ids is not None and len(ids) != len(texts)):
            raise InvalidArgumentError(
                f"{len(texts)} texts but {len(metas)} metadatas and "
                f"{'no' if ids is None else len(ids)} ids",
                hint="give one metadata dict and one id (or None) per text",
            )
        chosen = list(ids) if ids is not None else [None] * len(texts)
        out = [i if i else str(uuid.uuid4()) for i in chosen]
        for i in out:
            if not isinstance(i, str):
                raise InvalidArgumentError(f"document ids must be strings, got {i!r}")
        if len(set(out)) != len(out):
            raise InvalidArgumentError("the same document id appears twice in one call")
        return texts, metas, out

    def _put(
        self,
        texts: list[str],
        metas: list[dict[str, Any]],
        ids: list[str],
        vectors: Sequence[Sequence[float]],
    ) -> list[str]:
        if len(vectors) != len(texts):
            raise InvalidArgumentError(
                f"the embedding returned {len(vectors)} vectors for {len(texts)} texts"
            )
        with self._items.batch() as b:
            for text, meta, doc_id, vec in zip(texts, metas, ids, vectors, strict=True):
                blob = np.asarray(vec, dtype="<f4").tobytes()
                value = {"page_content": text, "metadata": meta}
                b.put(NAMESPACE, doc_id, value, data=blob, vectors={"embedding": vec})
        return ids

    def _delete(self, ids: Sequence[str] | None) -> bool:
        if ids is None:
            self._items.delete_under(NAMESPACE, exact=True)
            return True
        if isinstance(ids, str):
            raise InvalidArgumentError("delete takes a list of ids", hint="delete([doc_id])")
        with self._items.batch() as b:
            for i in ids:
                b.delete(NAMESPACE, i)
        return True

    # ------------------------------------------------------------------ reads
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents of ``ids``, in that order; ids not stored are skipped."""
        return self._lease.call(lambda _m: self._get(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """``get_by_ids`` in a worker thread."""
        return await self._lease.read(lambda _m: self._get(ids))

    def _get(self, ids: Sequence[str]) -> list[Document]:
        if isinstance(ids, str):
            raise InvalidArgumentError("get_by_ids takes a list of ids", hint="get_by_ids([id])")
        items = self._items.get_many([(NAMESPACE, i) for i in ids])
        return [_document(it) for it in items if it is not None]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``k`` documents most similar to ``query``."""
        return [d for d, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """``similarity_search`` without blocking the event loop."""
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents most similar to ``query`` with their cosine similarity."""
        return self.similarity_search_with_score_by_vector(
            self.embedding.embed_query(query), k, **kwargs
        )

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """``similarity_search_with_score`` without blocking the event loop."""
        vector = await self.embedding.aembed_query(query)
        return await asyncio.to_thread(
            self.similarity_search_with_score_by_vector, vector, k, **kwargs
        )

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents most similar to ``embedding``."""
        return [d for d, _ in self.similarity_search_with_score_by_vector(embedding, k, **kwargs)]

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        """``similarity_search_by_vector`` in a worker thread."""
        return await asyncio.to_thread(self.similarity_search_by_vector, embedding, k, **kwargs)

    def similarity_search_with_score_by_vector(
        self, embedding: Sequence[float], k: int = 4, *, filter: Filter = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents most similar to ``embedding`` (that pass ``filter``) with
        their cosine similarity, best first."""
        hits = self._lease.call(lambda _m: self._ranked(embedding, check_limit(k, "k"), filter))
        return [(_document(item), score) for item, score in hits]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # Cosine similarity is in [-1, 1]; LangChain's relevance scores are in [0, 1].
        return lambda similarity: (1.0 + similarity) / 2.0

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` documents among the ``fetch_k`` most similar to ``query``, chosen for
        similarity to it and diversity among themselves (``lambda_mult``: 1 similarity
        only, 0 diversity only)."""
        return self.max_marginal_relevance_search_by_vector(
            self.embedding.embed_query(query), k, fetch_k, lambda_mult, **kwargs
        )

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """``max_marginal_relevance_search`` without blocking the event loop."""
        vector = await self.embedding.aembed_query(query)
        return await asyncio.to_thread(
            self.max_marginal_relevance_search_by_vector, vector, k, fetch_k, lambda_mult, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: Sequence[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        *,
        filter: Filter = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``max_marginal_relevance_search`` for a query vector."""
        k = check_limit(k, "k")
        fetch = max(check_limit(fetch_k, "fetch_k"), k)
        hits = self._lease.call(lambda _m: self._ranked(embedding, fetch, filter))
        if not hits:
            return []
        vectors: list[Any] = [np.frombuffer(item.data or b"", dtype="<f4") for item, _ in hits]
        chosen = maximal_marginal_relevance(
            np.asarray(embedding, dtype=np.float32), vectors, lambda_mult=lambda_mult, k=k
        )
        return [_document(hits[i][0]) for i in chosen]

    def _ranked(self, embedding: Sequence[float], k: int, flt: Filter) -> list[tuple[Item, float]]:
        """The ``k`` best (item, cosine) for ``embedding`` that pass ``flt``."""
        if flt is None or isinstance(flt, Mapping):
            where = {"metadata": dict(flt)} if flt else None
            found = self._items.search(NAMESPACE, vector=embedding, filter=where, limit=k)
            return [(h.item, float(h.score or 0.0)) for h in found]
        if not callable(flt):
            raise InvalidArgumentError(
                f"filter must be a dict on the metadata or a callable, got {type(flt).__name__}",
                hint="filter={'source': 'a.txt'} or filter=lambda doc: ...",
            )
        # A callable sees Documents: rank ever more candidates until k pass (or none left).
        total = self._items.count(NAMESPACE)
        fetch = min(max(4 * k, 64), MAX_RESULTS)
        while True:
            found = self._items.search(NAMESPACE, vector=embedding, limit=fetch)
            kept = [(h.item, float(h.score or 0.0)) for h in found if flt(_document(h.item))]
            if len(kept) >= k or fetch >= min(total, MAX_RESULTS):
                return kept[:k]
            fetch = min(fetch * 4, MAX_RESULTS)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> AgentZeroVectorStore:
        """A store opened with ``kwargs`` (``data_dir``, ``passphrase``, ``collection``)
        holding ``texts``."""
        store = cls(embedding, **kwargs)
        try:
            store.add_texts(texts, metadatas, ids=ids)
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> AgentZeroVectorStore:
        """``from_texts`` with the open and the write in a worker thread."""
        store = await asyncio.to_thread(cls, embedding, **kwargs)
        try:
            await store.aadd_texts(texts, metadatas, ids=ids)
        except BaseException:
            store.close()
            raise
        return store

    # ------------------------------------------------------------------ lifecycle
    def __repr__(self) -> str:
        return f"AgentZeroVectorStore(collection={self.collection!r})"


def _item_store(mem: AgentMemory, collection: str) -> ItemStore:
    if not isinstance(mem.store, SqliteMemoryStore):
        raise InvalidArgumentError(
            "AgentZeroVectorStore keeps its documents in a data dir, not in PostgreSQL",
            hint="give data_dir a directory",
        )
    return ItemStore(mem.store, collection)


def _document(item: Item) -> Document:
    value = item.value
    return Document(id=item.key, page_content=value["page_content"], metadata=value["metadata"])


__all__ = ["AgentZeroVectorStore"]
