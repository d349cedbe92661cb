"""``agentzero store ...``: status and rebuild of the derived indexes (sidecars).

The command bodies are plain functions over opened stores (``status_of``,
``rebuild_indexes``) so any store with sidecars — the memory store here, the document
store in ``rag`` — can be reported and rebuilt the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer
from rich.table import Table

from ..base.errors import InvalidArgumentError
from ..memory.postgres.store import PgMemoryStore
from ..memory.sqlite.store import SqliteMemoryStore
from ..sidecar.types import Progress, SidecarStatus
from .common import (
    STATE,
    JsonOpt,
    cli_command,
    data_dir,
    emit,
    out,
    progress,
    show_table,
    store_kwargs,
)

app = typer.Typer(no_args_is_help=True)


class HasSidecars(Protocol):
    """A store whose derived indexes can be listed and rebuilt."""

    def index_status(self) -> list[SidecarStatus]:
        """Status of each sidecar."""
        ...

    def rebuild_index(self, name: str | None = None, progress: Progress | None = None) -> list[str]:
        """Rebuild all sidecars, or the one named; returns the names rebuilt."""
        ...


def status_of(stores: Sequence[HasSidecars]) -> list[dict[str, Any]]:
    """Every sidecar's status as JSON-ready dicts (with how far it lags its source)."""
    rows = []
    for store in stores:
        for st in store.index_status():
            d = st.to_dict()
            d["behind"] = max(0, st.source_seq - st.covered_seq)
            # A short, stable name: the sidecar's path inside the data dir (memory.hnsw,
            # rag/index.jsonl.tantivy, ...), or the full path if it lives elsewhere.
            p = Path(st.path)
            d["name"] = str(p.relative_to(data_dir())) if p.is_relative_to(data_dir()) else st.path
            rows.append(d)
    return rows


def rebuild_indexes(
    stores: Sequence[HasSidecars],
    index: str | None = None,
    progress_factory: Callable[[str], Progress] | None = None,
) -> list[str]:
    """Rebuild the sidecars of ``stores`` (all, or the one named ``index``)."""
    done: list[str] = []
    for store in stores:
        names = [s.kind for s in store.index_status()] or ["hnsw"]
        for name in names:
            if index is not None and index not in (name, f"memory.{name}"):
                continue
            cb = progress_factory(name) if progress_factory else None
            done += store.rebuild_index(name, cb)
    if index is not None and not done:
        raise InvalidArgumentError(f"no index named {index!r}", hint="see `agentzero store status`")
    return done


# Stores beside the memory store whose indexes `store status|rebuild` cover. The engine
# never imports rag: the CLI entry point (cli.main) registers its opener here.
EXTRA_STORES: list[Callable[[], Any | None]] = []  # an opener returns None: nothing there


@contextmanager
def _open_all() -> Iterator[list[Any]]:
    with ExitStack() as stack:
        stores = [
            stack.enter_context(
                SqliteMemoryStore.open(data_dir(), create=False, hnsw=None, **store_kwargs())
            )
        ]
        for opener in EXTRA_STORES:
            if (extra := opener()) is not None:
                stores.append(stack.enter_context(extra))
        yield stores


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _pg_status(url: str) -> None:
    """``store status`` of a memory store on PostgreSQL: no sidecars (pgvector's HNSW
    index is PostgreSQL's own), so the store itself: its scopes, count and embedder."""
    with PgMemoryStore.open(url, create=False, **store_kwargs()) as store:
        model, dim = store.embedding_info()
        scopes = store.scopes()
        info = {
            "backend": "postgresql",
            "url": store.url,
            "store_id": store.store_id,
            "memories": sum(n for _, _, n in scopes),
            "embedder": model,
            "dimension": dim,
            "without_vector": store.without_vector(),
            "scopes": [{"org_id": o, "agent_id": a, "count": n} for o, a, n in scopes],
        }

    def human() -> None:
        emb = f"{model or '?'} ({dim}-d)" if dim else "no vectors yet"
        out.print(f"PostgreSQL memory store {info['store_id']} at {info['url']}")
        out.print(f"{info['memories']} memories; vectors: {emb}; index: pgvector HNSW")
        if info["without_vector"]:
            out.print(
                f"{info['without_vector']} memories have no vector (written while no embedder "
                "was given): the next open with the store's embedder embeds them"
            )
        t = Table("org", "agent", "memories")
        for o, a, n in scopes:
            t.add_row(o, a, str(n))
        show_table(t)

    emit(info, human)


@app.command()
@cli_command
def status(json_out: JsonOpt = False) -> None:
    """Each index: checkpointed seq vs the source's, entries, size, last checkpoint, embedder.

    With a database URL: the PostgreSQL store (no sidecars): its memories per scope and
    embedder (the JSON is one object with ``backend: postgresql``)."""
    if STATE.database_url is not None:
        _pg_status(STATE.database_url)
        return
    with _open_all() as stores:
        rows = status_of(stores)
        missing = stores[0].without_vector()
    for r in rows:
        if r["name"] == "memory.hnsw":
            r["without_vector"] = missing

    def human() -> None:
        if missing:
            out.print(
                f"{missing} memories have no vector (written while no embedder was given): "
                "the next open with the store's embedder embeds them"
            )
        if not rows:
            out.print("no indexes yet (they are created with the first vector)")
            return
        t = Table("index", "covered / source seq", "entries", "size", "last checkpoint", "embedder")
        for r in rows:
            emb = f"{r['embedder'] or '?'} ({r['dimension']}-d)" if r["dimension"] else "-"
            t.add_row(
                r["name"],
                f"{r['covered_seq']} / {r['source_seq']}",
                str(r["entries"]),
                _size(r["size_bytes"]),
                r["last_checkpoint"] or "never",
                emb,
            )
        show_table(t)

    emit(rows, human)


@app.command()
@cli_command
def rebuild(
    index: Annotated[
        str | None, typer.Option("--index", help="Only this index (e.g. hnsw).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Rebuild derived indexes from the encrypted source of truth."""
    with _open_all() as stores:
        total = stores[0].vector_count() + sum(len(s) for s in stores[1:])
        with progress("rebuilding", total) as advance:
            seen = [0]

            def factory(name: str) -> Progress:
                seen[0] = 0  # each index reports its own progress from zero

                def cb(done: int, _total: int) -> None:
                    advance(done - seen[0])
                    seen[0] = done

                return cb

            names = rebuild_indexes(stores, index, factory)
        rows = status_of(stores)
    emit(
        {"rebuilt": names, "indexes": rows},
        lambda: out.print(f"rebuilt: {', '.join(names) or 'nothing'}"),
    )


__all__ = ["HasSidecars", "app", "rebuild_indexes", "status_of"]
