"""``agentzero store reembed``: re-embed memories and document chunks with another embedder.

Registered on the ``store`` sub-app by ``cli.root``. Each store switches atomically (see
``agentzero_store.ops.reembed``); the derived vector indexes are rebuilt for the new embedder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..base.config import Layout
from ..base.errors import InvalidArgumentError
from ..embed.vectors import Embedder
from ..memory.sqlite.store import SqliteMemoryStore
from ..ops.reembed import (
    chunks_to_embed,
    progress_embedder,
    rebuild_memory_index,
    reembed_documents,
    reembed_memory,
)
from .common import EmbedderOpt, JsonOpt, data_dir, emit, make_embedder, out, progress, store_kwargs


def _bar_callback(advance: Callable[[int], None]) -> Callable[[int, int], None]:
    """Adapt ``advance(n)`` to a (done, total) progress callback."""
    seen = [0]

    def cb(done: int, _total: int) -> None:
        advance(done - seen[0])
        seen[0] = done

    return cb


def _memory(embedder: Embedder, batch: int) -> dict[str, Any]:
    # hnsw=False: the old index must not be loaded (or fed) while vectors change.
    with SqliteMemoryStore.open(data_dir(), create=False, hnsw=False, **store_kwargs()) as store:
        with progress("memories", store.vector_count()) as advance:
            report = reembed_memory(store, embedder, batch=batch, advance=advance)
        result = report.to_dict()
        if Layout(store.data_dir).memory_hnsw.is_dir():
            with progress("memory index", report.rows) as advance:
                rebuild_memory_index(store, _bar_callback(advance))
            result["index_rebuilt"] = True
    return result


def _documents(embedder: Embedder) -> dict[str, Any]:
    try:
        from rag.store import DocumentStore  # lazily: the engine does not depend on rag
    except ImportError:
        return {"skipped": "the rag package is not installed"}
    # The bar exists only after the store is open (its total needs the open store).
    bar: list[Callable[[int], None]] = []
    counted = progress_embedder(embedder, lambda n: bar[0](n) if bar else None)
    with DocumentStore.open(data_dir(), create=False, embedder=counted, **store_kwargs()) as store:
        total = chunks_to_embed(store)
        with progress("document chunks", total) as advance:
            bar.append(advance)
            changed = reembed_documents(store)
        return {"documents": len(store), "reembedded": changed, "chunks": total}


def reembed(
    embedder: EmbedderOpt = None,
    batch: Annotated[int, typer.Option(min=1, help="Memories per embedding batch.")] = 256,
    json_out: JsonOpt = False,
) -> None:
    """Re-embed memories and document chunks with another embedder, switching atomically."""
    data_dir()  # a data dir's stores (a database URL is refused first, with its hint)
    emb = make_embedder(embedder)
    if emb is None:
        raise InvalidArgumentError(
            "reembed needs an embedder", hint="pass --embedder local or --embedder api"
        )
    m, d = _memory(emb, batch), _documents(emb)
    result = {"embedder": emb.model_id, "dimension": emb.dimension, "memory": m, "documents": d}

    def human() -> None:
        was = f" (was {m['previous_model']})" if m["previous_model"] else ""
        out.print(f"memories: {m['rows']} now embedded with {m['model']}{was}")
        if "reembedded" in d:
            out.print(f"documents: {d['reembedded']} of {d['documents']} re-embedded")

    emit(result, human)


__all__ = ["reembed"]
