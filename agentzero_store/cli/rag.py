"""``agentzero rag ...``: ingest, query, get, list, delete, compact, salvage, watch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rag.documents import DocInput
from rag.files import DirReport, ingest_scan, scan_dir
from rag.folder import MAX_FILE_BYTES
from rag.query import DocumentHit
from rag.store import DocumentStore

from ..base.config import Layout
from ..base.errors import InvalidArgumentError, NotFoundError
from ..base.modes import search_mode
from .common import (
    MODE_HELP,
    STATE,
    EmbedderOpt,
    JsonOpt,
    cli_command,
    data_dir,
    emit,
    err,
    make_embedder,
    out,
    progress,
    show_table,
    store_kwargs,
)

app = typer.Typer(no_args_is_help=True)


def open_store(embedder: str | None = "none", *, readonly: bool = False) -> DocumentStore:
    """Open the data dir's document store with the CLI's credential and embedder."""
    return DocumentStore.open(
        data_dir(),
        create=False,
        readonly=readonly,
        embedder=make_embedder(embedder),
        **store_kwargs(),
    )


def open_existing_store() -> DocumentStore | None:
    """The document store for ``store status|rebuild``; None if no document log exists."""
    if not Layout(data_dir()).rag_log.exists():
        return None  # a read-only command must not create the log
    return open_store(None, readonly=True)


def _hits_table(hits: list[DocumentHit]) -> None:
    if not hits:
        out.print("no results")
        return
    t = Table("#", "id", "score", "ranks", "chars", "best chunk")
    for i, h in enumerate(hits, 1):
        ranks = " ".join(f"{k}={v}" for k, v in h.ranks.items())
        t.add_row(str(i), h.id, f"{h.score:.4f}", ranks, f"{h.start}-{h.end}", h.snippet(120))
    show_table(t)


# Exit status of `rag ingest DIR` when some files FAILED (too large, not UTF-8,
# unreadable, refused by the store): the report is printed and every other file is in.
# Files skipped by policy (symlinks out of the folder, FIFOs, devices, /proc, empty
# files) are listed but leave the exit status 0: skipping them is the intended outcome.
FILES_FAILED_EXIT = 7

MaxBytesOpt = Annotated[
    int,
    typer.Option(
        "--max-bytes",
        min=1,
        help="Refuse files larger than this many bytes (checked before a file is read).",
    ),
]


@app.command()
@cli_command
def ingest(
    path: Annotated[
        Path | None, typer.Argument(help="A .txt/.md file or a directory (recursive).")
    ] = None,
    doc_id: Annotated[str | None, typer.Option("--id", help="Document id (with --text).")] = None,
    text: Annotated[str | None, typer.Option("--text", help="Document text.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="One file to ingest.")] = None,
    title: Annotated[str | None, typer.Option(help="Title (with --text).")] = None,
    metadata: Annotated[str, typer.Option(help="JSON object (with --text).")] = "{}",
    max_bytes: MaxBytesOpt = MAX_FILE_BYTES,
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Ingest text (--id/--text), a file (--file) or a directory of .txt/.md files.

    A directory is never left: symlinks leading out of it, symlinks to folders, FIFOs,
    devices, sockets and anything under /proc are skipped, and a bad file (too large,
    not UTF-8, unreadable) fails alone. Each such path is listed with its reason. Exit
    status 0 when nothing failed (skips are policy), 7 when some file failed (the rest
    was ingested).
    """
    if sum(x is not None for x in (path, text, file)) != 1:
        raise InvalidArgumentError("give exactly one of: PATH, --file, or --id with --text")
    with open_store(embedder) as store:
        if text is not None:
            if not doc_id:
                raise InvalidArgumentError("--text needs --id")
            try:
                meta: dict[str, Any] = json.loads(metadata)
            except json.JSONDecodeError as exc:
                raise InvalidArgumentError(f"--metadata is not JSON: {exc}") from exc
            result: Any = store.ingest_many([DocInput(doc_id, text, title, None, meta)])[0]
        elif file is not None or (path is not None and not path.is_dir()):
            one = file or path
            assert one is not None
            result = store.ingest_file(one, doc_id, max_bytes=max_bytes)
        else:
            assert path is not None
            scan = scan_dir(path, max_bytes=max_bytes)
            with progress("ingesting", len(scan.files)) as advance:
                result = ingest_scan(store, scan, advance)
    emit(result, lambda: _describe(result))
    if isinstance(result, DirReport) and result.failed:
        if not STATE.json:
            n = len(result.failed)
            err.print(
                f"[bold red]error:[/] {n} file{'s' if n > 1 else ''} failed (listed above); "
                "every other file was ingested"
            )
        raise typer.Exit(FILES_FAILED_EXIT)


def _describe(result: Any) -> None:
    if isinstance(result, DirReport):
        counts = f"added {result.added}, updated {result.updated}, unchanged {result.unchanged}"
        counts += f", {len(result.skipped)} skipped" if result.skipped else ""
        counts += f", {len(result.failed)} failed" if result.failed else ""
        out.print(counts)
        for word, issues in (("skipped", result.skipped), ("failed", result.failed)):
            for issue in issues:
                out.print(f"  {word} {issue.path}: {issue.reason}", markup=False)
        return
    state = "stored" if result.changed else "unchanged"
    out.print(f"{result.id}: {state} ({result.chunks} chunks)")


@app.command()
@cli_command
def query(
    text: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 5,
    mode: Annotated[str, typer.Option(help=MODE_HELP)] = "auto",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Search the documents: by keywords (BM25), meaning, or both (RRF k=60)."""
    how = search_mode(mode)
    with open_store(embedder if how != "keyword" else "none", readonly=True) as store:
        hits = store.query(text, limit, how)  # type: ignore[arg-type]
        with_vectors, chunks = store.vector_coverage()
        answered_by = store.embedder.model_id if store.embedder and how != "keyword" else None
    if answered_by and with_vectors < chunks:
        err.print(
            f"[yellow]warning:[/] {chunks - with_vectors} of {chunks} chunks have no "
            f"vectors from {answered_by}; run `agentzero store reembed`"
        )
    if answered_by and not STATE.json:
        err.print(f"embedder: {answered_by}")
    emit(hits, lambda: _hits_table(hits))


@app.command()
@cli_command
def get(
    doc_id: Annotated[str, typer.Argument(help="Document id.")], json_out: JsonOpt = False
) -> None:
    """Print one document."""
    with open_store(readonly=True) as store:
        record = store.get(doc_id)
    if record is None:
        raise NotFoundError(f"no document with id {doc_id!r}")

    def human() -> None:
        sys.stdout.write(record.text if record.text.endswith("\n") else record.text + "\n")

    emit(record, human)


@app.command("list")
@cli_command
def list_(json_out: JsonOpt = False) -> None:
    """List the documents (id, title, size, updated)."""
    with open_store(readonly=True) as store:
        rows: list[dict[str, Any]] = [
            {
                "id": r.id,
                "title": r.title,
                "chars": len(r.text),
                "updated_at": r.updated_at.isoformat(),
                "source_path": r.source_path,
            }
            for r in store.documents()
        ]

    def human() -> None:
        t = Table("id", "title", "chars", "updated")
        for r in rows:
            t.add_row(r["id"], r["title"] or "", str(r["chars"]), r["updated_at"][:19])
        if rows:
            show_table(t)
        else:
            out.print("no documents")

    emit(rows, human)


@app.command()
@cli_command
def delete(
    doc_id: Annotated[str, typer.Option("--id", help="Document id.")], json_out: JsonOpt = False
) -> None:
    """Delete a document."""
    with open_store() as store:
        if not store.delete(doc_id):
            raise NotFoundError(f"no document with id {doc_id!r}")
    emit({"deleted": doc_id}, lambda: out.print(f"deleted {doc_id}"))


@app.command()
@cli_command
def compact(json_out: JsonOpt = False) -> None:
    """Rewrite the log without superseded and deleted records (atomically)."""
    with open_store() as store:
        before = store.log.path.stat().st_size
        generation = store.compact()
        after = store.log.path.stat().st_size
    result = {"generation": generation, "bytes_before": before, "bytes_after": after}
    emit(result, lambda: out.print(f"compacted: {before} → {after} bytes"))


@app.command()
@cli_command
def salvage(
    dest: Annotated[
        Path, typer.Argument(help="Where to write the recovered log (must not exist).")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Recover every readable, authentic record of a damaged log into a fresh log."""
    from rag.salvage import salvage as run_salvage

    from ..storage.datadir import open_data_dir

    layout, keys = open_data_dir(data_dir(), create=False, key_file=STATE.key_file)
    report = run_salvage(layout.rag_log, dest, keys)
    result = {
        "destination": str(dest),
        "recovered": report.recovered,
        "live": report.live,
        "skipped": [
            {"line": s.lineno, "offset": s.offset, "reason": s.reason} for s in report.skipped
        ],
        "missing_seqs": list(report.missing_seqs),
    }

    def human() -> None:
        out.print(
            f"recovered {report.recovered} records ({report.live} live documents) into {dest}"
        )
        for s in report.skipped:
            out.print(f"  skipped line {s.lineno} at byte {s.offset}: {s.reason}")
        if report.skipped:
            out.print(
                "review it, then replace rag/index.jsonl with it (keep the damaged copy) "
                "and run `agentzero store accept-loss --yes`"
            )

    emit(result, human)


@app.command()
@cli_command
def watch(
    folder: Annotated[Path, typer.Argument(help="The folder to keep in step (recursive).")],
    debounce: Annotated[
        float, typer.Option(min=0.0, help="Seconds a file must be quiet before it is synced.")
    ] = 0.3,
    max_bytes: MaxBytesOpt = MAX_FILE_BYTES,
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Sync a folder into the store, then follow its changes until Ctrl-C or SIGTERM.

    One line per change: rich on stderr, or JSON lines on stdout with --json. Only
    documents whose source file lies in FOLDER are ever deleted. Files are found and
    read as `rag ingest DIR` does: a path it would skip or fail is a "skipped" or
    "failed" line with its reason, and the watcher goes on.
    """
    from rag.watch import Change, FolderSync, SyncSummary, stop_on_signals

    def show(item: Change | SyncSummary) -> None:
        if STATE.json:
            sys.stdout.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
            sys.stdout.flush()  # one line per change, now: consumers read it from a pipe
        elif item.event != "unchanged":
            err.print(str(item), markup=False)

    with open_store(embedder) as store:
        sync = FolderSync(store, folder, debounce=debounce, on_change=show, max_bytes=max_bytes)
        with stop_on_signals(sync):
            sync.start()  # watches first, so nothing changed during the sync is missed
            show(SyncSummary.of(sync.root, sync.initial_sync()))
            sync.run()
