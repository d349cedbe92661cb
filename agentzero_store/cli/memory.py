"""``agentzero memory ...`` over the memory store: append, import, recent, search, get,
delete, gc. The agent memory's verbs (recall, grant, forget, ...) are in
``agent_memory``, registered on the same command group."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.table import Table

from ..base.errors import InvalidArgumentError, NotFoundError
from ..base.limits import expires_after
from ..base.modes import search_mode
from ..memory.records import Kind, MemoryEntry, MemoryHit, Source, parse_datetime
from ..memory.seam import MemoryStore, supports
from ..ops.backends import open_memory_store
from ..storage.lock import acquire_writer
from .common import (
    MODE_HELP,
    EmbedderOpt,
    JsonOpt,
    cli_command,
    count_of,
    data_dir,
    emit,
    make_embedder,
    memory_target,
    out,
    progress,
    show_table,
    store_kwargs,
)

app = typer.Typer(no_args_is_help=True)

OrgOpt = Annotated[str | None, typer.Option("--org", help="Org id scope.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id scope.")]
ConvOpt = Annotated[str | None, typer.Option("--conversation", help="Conversation id scope.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=1, help="How many results.")]


def _open(embedder: str | None = "none") -> MemoryStore:
    # A data dir or a PostgreSQL URL (--database-url, AGENTZERO_DATABASE_URL): the
    # commands of this module work the same on both backends.
    return open_memory_store(
        memory_target(), create=False, embedder=make_embedder(embedder), **store_kwargs()
    )


@contextmanager
def _open_writer(embedder: str | None = "none") -> Iterator[MemoryStore]:
    # The store opens first: a wrong credential must fail before writer.lock is created
    # or written. Then one writer per data dir: wait for (then name) another writer
    # rather than interleave. The store closes (and checkpoints) before the role goes.
    # PostgreSQL has no writer role: many clients write at once (transactions and
    # constraints keep the invariants).
    store = _open(embedder)
    if not supports(store, "data_dir"):
        with store:
            yield store
        return
    try:
        lock = acquire_writer(data_dir(), purpose="agentzero memory")
    except BaseException:
        store.close()
        raise
    try:
        with store:
            yield store
    finally:
        lock.release()


def _hits_table(hits: list[MemoryHit]) -> None:
    if not hits:
        out.print("no results")
        return
    t = Table("#", "score", "ranks", "role", "conversation", "content", show_lines=False)
    for i, h in enumerate(hits, 1):
        ranks = " ".join(f"{k}={v}" for k, v in h.ranks.items())
        t.add_row(
            str(i), f"{h.score:.4f}", ranks, h.entry.role, h.entry.conversation_id, h.entry.content
        )
    show_table(t)


def _entries_table(entries: list[MemoryEntry]) -> None:
    if not entries:
        out.print("no entries")
        return
    t = Table("created", "role", "conversation", "id", "content")
    for e in entries:
        t.add_row(
            e.created_at.isoformat(timespec="seconds") if e.created_at else "",
            e.role,
            e.conversation_id,
            e.id or "",
            e.content,
        )
    show_table(t)


def _expiry(expires_in: float | None, expires_at: str | None) -> datetime | None:
    if expires_in is not None and expires_at is not None:
        raise InvalidArgumentError("give --expires-in or --expires-at, not both")
    if expires_in is not None:
        return expires_after(expires_in, datetime.now(UTC), "--expires-in")
    return parse_datetime(expires_at) if expires_at else None


@app.command()
@cli_command
def append(
    content: Annotated[str, typer.Argument(help="The text to remember.")],
    role: Annotated[str, typer.Option(help="user | assistant | system | tool ...")] = "user",
    conversation: Annotated[str, typer.Option("--conversation")] = "default",
    org: Annotated[str, typer.Option("--org")] = "default",
    agent: Annotated[str, typer.Option("--agent")] = "default",
    kind: Annotated[
        str, typer.Option(help="granted | recalled | self_noted | archived")
    ] = "granted",
    source: Annotated[str, typer.Option(help="controller | tool | peer | self")] = "controller",
    metadata: Annotated[str, typer.Option(help="JSON object.")] = "{}",
    expires_in: Annotated[float | None, typer.Option(help="Seconds until it expires.")] = None,
    expires_at: Annotated[str | None, typer.Option(help="ISO 8601 with a timezone.")] = None,
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Append one memory (embedded with the local model unless --embedder none)."""
    try:
        meta = json.loads(metadata)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"--metadata is not JSON: {exc}") from exc
    entry = MemoryEntry(
        content=content,
        role=role,
        conversation_id=conversation,
        org_id=org,
        agent_id=agent,
        kind=cast(Kind, kind),  # validated by MemoryEntry
        source=cast(Source, source),
        metadata=meta,
        expires_at=_expiry(expires_in, expires_at),
    )
    with _open_writer(embedder) as store:
        eid = store.append(entry)
    emit({"id": eid}, lambda: out.print(eid))


@app.command("import")
@cli_command
def import_(
    path: Annotated[Path, typer.Argument(help="JSONL of entries.")],
    batch: Annotated[int, typer.Option(min=1, help="Entries per transaction.")] = 256,
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Append every entry of a JSON-lines file (fields as in MemoryEntry)."""
    entries: list[MemoryEntry] = []
    path = path.expanduser()
    if not path.is_file():
        raise NotFoundError(f"{path} is not a file", hint="give the path of a JSONL file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"{path} is not UTF-8 text (byte {exc.start})", hint="save the file as UTF-8 JSONL"
        ) from None
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                entries.append(MemoryEntry.from_dict(json.loads(line)))
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(f"{path}:{n}: {exc.message}", hint=exc.hint) from exc
            except (json.JSONDecodeError, TypeError) as exc:
                raise InvalidArgumentError(f"{path}:{n}: {exc}") from exc
    ids: list[str] = []
    with _open_writer(embedder) as store, progress("importing", len(entries)) as advance:
        for i in range(0, len(entries), batch):
            ids += store.append_many(entries[i : i + batch])
            advance(len(entries[i : i + batch]))
    emit({"imported": len(ids), "ids": ids}, lambda: out.print(f"imported {len(ids)} entries"))


@app.command("import-agentzero")
@cli_command
def import_agentzero_cmd(
    path: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="AgentZero's memory.db (SQLite or SQLCipher)."
        ),
    ],
    source_passphrase: Annotated[
        str | None,
        typer.Option(
            "--source-passphrase",
            envvar="AGENTZERO_SOURCE_PASSPHRASE",
            help="The passphrase of a SQLCipher memory.db (env AGENTZERO_SOURCE_PASSPHRASE).",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per transaction.")] = 256,
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Import AgentZero's memory table; vectors of the same model are kept. Re-runs skip
    what was imported."""
    from ..ops.import_agentzero import import_agentzero, open_agentzero

    data_dir()  # AgentZero's rows go into a data dir's memory.db (no database URL)
    # The source first: a wrong source passphrase fails before the store is opened.
    with (
        open_agentzero(path, source_passphrase) as source,
        _open_writer(embedder) as store,
        progress("importing", source.count()) as advance,
    ):
        assert supports(store, "data_dir")  # data_dir() above refused a URL
        r = import_agentzero(store, source, batch=batch, advance=advance)

    def human() -> None:
        out.print(
            f"imported {r.imported} of {r.rows} rows from {r.source}; "
            f"{r.already_imported} were already imported"
        )
        out.print(f"embeddings: {r.embeddings_kept} kept from the source, {r.embedded} computed")
        skipped = {k: v for k, v in r.skipped.items() if v}
        if skipped or r.invalid:
            parts = [f"{v} {k}" for k, v in skipped.items()]
            if r.invalid:
                parts.append(f"{r.invalid} invalid (rowids {r.invalid_rows})")
            out.print("skipped: " + ", ".join(parts))

    emit(r, human)


@app.command()
@cli_command
def recent(
    limit: LimitOpt = 20,
    org: OrgOpt = None,
    agent: AgentOpt = None,
    conversation: ConvOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The newest memories in a scope."""
    with _open() as store:
        entries = store.recent(limit, org_id=org, agent_id=agent, conversation_id=conversation)
    emit(entries, lambda: _entries_table(entries))


@app.command()
@cli_command
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[
        str, typer.Option(help=MODE_HELP + " Default auto: hybrid (keyword without an embedder).")
    ] = "auto",
    limit: LimitOpt = 5,
    org: OrgOpt = None,
    agent: AgentOpt = None,
    conversation: ConvOpt = None,
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Search the memory store by meaning, keywords or both, across scopes.

    Every memory the --org/--agent/--conversation filters match, fused with RRF
    (`memory recall` searches one agent's memory with every signal)."""
    how = search_mode(mode)
    with _open(embedder if how != "keyword" else "none") as store:
        hits = store.recall(
            query,
            limit,
            mode=how,  # type: ignore[arg-type]
            org_id=org,
            agent_id=agent,
            conversation_id=conversation,
        )
    emit(hits, lambda: _hits_table(hits))


@app.command()
@cli_command
def get(entry_id: str, json_out: JsonOpt = False) -> None:
    """Show one memory by id."""
    with _open() as store:
        entry = store.get(entry_id)
    if entry is None:
        raise NotFoundError(f"no live memory with id {entry_id}")
    emit(entry, lambda: _entries_table([entry]))


@app.command()
@cli_command
def delete(
    entry_id: Annotated[
        str | None, typer.Argument(help="The memory to delete (or give a scope instead).")
    ] = None,
    org: OrgOpt = None,
    agent: AgentOpt = None,
    conversation: ConvOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete one memory by id, or every memory in a scope; no undo.

    A scope is --org/--agent/--conversation. Overwritten on disk (`memory forget` is the
    undoable one)."""
    if entry_id is not None:
        if (org, agent, conversation) != (None, None, None):
            raise InvalidArgumentError(
                "give an id or a scope (--org/--agent/--conversation), not both"
            )
        with _open_writer() as store:
            if not store.delete(entry_id):
                raise NotFoundError(f"no memory with id {entry_id}")
        emit({"deleted": entry_id}, lambda: out.print(f"deleted {entry_id}"))
        return
    if (org, agent, conversation) == (None, None, None):
        raise InvalidArgumentError(
            "give a memory id, or a scope: --org, --agent or --conversation",
            hint="nothing is deleted without an explicit target",
        )
    with _open_writer() as store:
        n = store.forget(org_id=org, agent_id=agent, conversation_id=conversation)
    emit({"deleted": n}, lambda: out.print(f"deleted {count_of(n)}"))


@app.command()
@cli_command
def gc(json_out: JsonOpt = False) -> None:
    """Delete expired memories."""
    with _open_writer() as store:
        n = store.gc_expired()
    emit(
        {"deleted": n},
        lambda: out.print(f"removed {count_of(n, 'expired memory', 'expired memories')}"),
    )
