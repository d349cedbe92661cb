"""``AgentZeroStore``: LangGraph's ``BaseStore`` on an encrypted data dir.

Every public method of ``BaseStore`` (``get``, ``put``, ``delete``, ``search``,
``list_namespaces`` and their async forms) runs through ``batch`` / ``abatch`` over
LangGraph's four ops. Within one batch, reads see the store as it was before the
batch's writes, and the writes (last one wins per item) commit in one transaction, as
in LangGraph's own stores. Semantic search ranks and scores as theirs do: the cosine
similarity of the query to the item's best indexed field; items with no vector follow,
unscored. ``ranking="hybrid"`` fuses that ranking with keyword (BM25) ranking of the
indexed text instead (the text is indexed on every put, whichever ranking a handle
uses, so a store can be reopened with the other). Expired items are never returned;
reads restart an item's time to live (``ttl={"refresh_on_read": False}`` turns that
off).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from ... import AgentZeroStoreError, InvalidArgumentError, StoreConfig
from ... import Item as StoredItem
from .errors import InvalidNamespace, UnsupportedOperation
from .handle import ItemsHandle

log = logging.getLogger(__name__)

COLLECTION = "langgraph.store"
Ranking = Literal["vector", "hybrid"]


@dataclass
class _Plan:
    """A batch checked and split: what to embed, then what to run."""

    ops: list[Op]
    puts: dict[tuple[tuple[str, ...], str], PutOp] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)  # to embed, in order
    fields: dict[tuple[tuple[str, ...], str], list[tuple[str, int]]] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)


class AgentZeroStore(ItemsHandle, BaseStore):
    """LangGraph's ``BaseStore`` in an encrypted data dir (SQLCipher ``memory.db``).

    Args:
        data_dir: The data dir (created on first use).
        passphrase / key / key_file: The credential, as for every store of the package;
            a wrong one raises ``WrongKeyError`` and changes nothing.
        index: As in LangGraph's stores: ``{"dims": N, "embed": <Embeddings or a
            function of texts>, "fields": ["text", ...]}`` (default field ``"$"``: the
            whole value as JSON).
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` in minutes, ``refresh_on_read``).
        ranking: ``"vector"`` (LangGraph's) or ``"hybrid"`` (vector + keywords, RRF).
        collection: Keeps this store's items apart from other users of the data dir.
    """

    supports_ttl = True

    def __init__(
        self,
        data_dir: Path | str,
        *,
        passphrase: str | None = None,
        key: bytes | str | None = None,
        key_file: Path | str | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        ranking: Ranking = "vector",
        collection: str = COLLECTION,
        config: StoreConfig | None = None,
    ) -> None:
        if ranking not in ("vector", "hybrid"):
            raise InvalidArgumentError(f"ranking must be 'vector' or 'hybrid', got {ranking!r}")
        self.index_config: IndexConfig | None = None
        self.embeddings = None
        self._fields: list[tuple[str, str | list[str]]] = []
        if index is not None:
            if not isinstance(index, Mapping) or "dims" not in index or "embed" not in index:
                raise InvalidArgumentError(
                    "index must be a dict with 'dims' and 'embed'",
                    hint='e.g. {"dims": 384, "embed": my_embeddings, "fields": ["text"]}',
                )
            self.index_config = cast(IndexConfig, dict(index))
            self.embeddings = ensure_embeddings(index["embed"])
            self._fields = [
                (p, tokenize_path(p) if p != "$" else p) for p in index.get("fields") or ["$"]
            ]
        self.ttl_config = ttl
        self._ranking: Ranking = ranking
        self._sweeper: threading.Thread | None = None
        self._sweep_stop = threading.Event()
        self._open_items(data_dir, collection, passphrase, key, key_file, config)

    def close(self) -> None:
        """Stop the TTL sweeper, close the data dir. Idempotent; later calls raise
        ``StoreClosedError``."""
        self.stop_ttl_sweeper(timeout=5)
        super().close()

    def sweep_ttl(self) -> int:
        """Delete the expired items now (reads never return them anyway); how many."""
        return self._items.sweep_expired()

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Delete expired items every ``sweep_interval_minutes`` (default: the TTL
        config's ``sweep_interval_minutes``, else 5) in a daemon thread, as
        ``SqliteStore`` does; ``stop_ttl_sweeper`` (or ``close``) ends it. Expired items
        are never returned either way: the sweep only gives their space back."""
        if self._sweeper is not None and self._sweeper.is_alive():
            return
        conf = self.ttl_config or {}
        minutes = sweep_interval_minutes or conf.get("sweep_interval_minutes") or 5
        self._sweep_stop.clear()

        def loop() -> None:
            while not self._sweep_stop.wait(float(minutes) * 60):
                try:
                    self.sweep_ttl()
                except AgentZeroStoreError as exc:  # closed, locked: say so, keep going
                    log.warning("TTL sweep failed: %s", exc)
                    if self._items.closed:
                        return

        self._sweeper = threading.Thread(target=loop, name="agentzero-ttl-sweeper", daemon=True)
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; False if it did not end within ``timeout`` seconds."""
        self._sweep_stop.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    # ------------------------------------------------------------------ batches
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph's ops: reads first (they see the store before this batch's
        writes), then every write in one transaction."""
        plan = self._plan(ops)
        docs: list[list[float]] = []
        queries: dict[str, list[float]] = {}
        if self.embeddings is not None:
            if plan.texts:
                docs = self.embeddings.embed_documents(plan.texts)
            queries = {q: self.embeddings.embed_query(q) for q in plan.queries}
        return self._run(plan, docs, queries)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` without blocking the event loop: embeddings through the
        embedder's async API, the data dir's work in a worker thread."""
        plan = self._plan(ops)
        docs: list[list[float]] = []
        queries: dict[str, list[float]] = {}
        if self.embeddings is not None:
            if plan.texts:
                docs = await self.embeddings.aembed_documents(plan.texts)
            if plan.queries:
                found = await asyncio.gather(
                    *(self.embeddings.aembed_query(q) for q in plan.queries)
                )
                queries = dict(zip(plan.queries, found, strict=True))
        return await asyncio.to_thread(self._run, plan, docs, queries)

    def _plan(self, ops: Iterable[Op]) -> _Plan:
        plan = _Plan(list(ops))
        for op in plan.ops:
            if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
                raise UnsupportedOperation(f"unknown store operation {type(op).__name__}")
            try:
                validate_op_namespace(op)
                if isinstance(op, PutOp) and op.value is not None:
                    _check_put_namespace(op.namespace)
            except InvalidNamespaceError as exc:
                raise InvalidNamespace(str(exc)) from None
            if isinstance(op, PutOp):
                plan.puts[(tuple(op.namespace), str(op.key))] = op  # the last write wins
            elif (
                isinstance(op, SearchOp)
                and op.query
                and self.embeddings is not None
                and op.query not in plan.queries
            ):
                plan.queries.append(op.query)
        if self.embeddings is not None:
            for ref, op in plan.puts.items():
                if op.value is None or op.index is False:
                    continue
                paths = (
                    self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
                )
                for path, tokens in paths:
                    texts = (
                        get_text_at_path(op.value, tokens) if isinstance(op.value, Mapping) else []
                    )
                    for i, text in enumerate(texts):
                        name = f"{path}.{i}" if len(texts) > 1 else path
                        plan.fields.setdefault(ref, []).append((name, len(plan.texts)))
                        plan.texts.append(text)
        return plan

    def _run(
        self, plan: _Plan, docs: Sequence[Sequence[float]], queries: Mapping[str, Sequence[float]]
    ) -> list[Result]:
        if len(docs) != len(plan.texts):
            raise InvalidArgumentError(
                f"the embedder returned {len(docs)} vectors for {len(plan.texts)} texts",
                hint="check the index's embed function",
            )
        dims = self.index_config.get("dims") if self.index_config else None
        for vec in [*docs, *queries.values()]:
            if dims is not None and len(vec) != dims:
                raise InvalidArgumentError(
                    f"the embedder returned a vector of {len(vec)} dimensions; "
                    f"index dims is {dims}",
                    hint="set index['dims'] to the embedding model's dimension",
                )
        results: list[Result] = [None] * len(plan.ops)
        gets = [(i, op) for i, op in enumerate(plan.ops) if isinstance(op, GetOp)]
        for refresh in (False, True):
            chosen = [(i, op) for i, op in gets if self._refresh(op.refresh_ttl) == refresh]
            if chosen:
                found = self._items.get_many(
                    [(op.namespace, str(op.key)) for _, op in chosen], refresh_ttl=refresh
                )
                for (i, _), got in zip(chosen, found, strict=True):
                    results[i] = _item(got) if got is not None else None
        for i, op in enumerate(plan.ops):
            if isinstance(op, SearchOp):
                results[i] = self._search(op, queries)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list(op)
        if plan.puts:
            self._write(plan, docs)
        return results

    def _refresh(self, asked: bool) -> bool:
        on_read = True if self.ttl_config is None else self.ttl_config.get("refresh_on_read", True)
        return bool(asked and on_read)

    def _search(self, op: SearchOp, queries: Mapping[str, Sequence[float]]) -> list[SearchItem]:
        if op.limit <= 0:
            return []
        vector = queries.get(op.query) if op.query else None
        hits = self._items.search(
            op.namespace_prefix,
            filter=op.filter,
            vector=vector,
            text=op.query if self._ranking == "hybrid" else None,
            ranking=self._ranking,
            limit=op.limit,
            offset=op.offset,
            refresh_ttl=self._refresh(op.refresh_ttl),
        )
        return [
            SearchItem(
                namespace=h.item.namespace,
                key=h.item.key,
                value=h.item.value,
                created_at=h.item.created_at,
                updated_at=h.item.updated_at,
                score=h.score,
            )
            for h in hits
        ]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        if op.limit <= 0:
            return []
        return self._items.namespaces(
            match=[(c.match_type, tuple(c.path)) for c in op.match_conditions or ()],
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )

    def _write(self, plan: _Plan, docs: Sequence[Sequence[float]]) -> None:
        with self._items.batch() as b:
            for ref, op in plan.puts.items():
                if op.value is None:
                    b.delete(op.namespace, str(op.key))
                    continue
                named = plan.fields.get(ref, [])
                vectors = {name: docs[j] for name, j in named}
                text = " ".join(plan.texts[j] for _, j in named) or None
                b.put(
                    op.namespace,
                    str(op.key),
                    op.value,
                    vectors=vectors or None,
                    text=text,  # keyword-indexed always: ranking is chosen per open
                    ttl=None if op.ttl is None else _minutes(op.ttl) * 60.0,
                )


def _minutes(ttl: Any) -> float:
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise InvalidArgumentError(
            f"ttl must be a positive number of minutes, got {ttl!r}",
            hint="LangGraph's ttl is in minutes; None for no expiry",
        )
    return float(ttl)


def _check_put_namespace(namespace: tuple[str, ...]) -> None:
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "langgraph". Got: {namespace}'
        )


def _item(got: StoredItem) -> Item:
    return Item(
        value=got.value,
        key=got.key,
        namespace=got.namespace,
        created_at=got.created_at,
        updated_at=got.updated_at,
    )


__all__ = ["AgentZeroStore"]
