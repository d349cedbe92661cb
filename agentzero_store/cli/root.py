"""The ``agentzero`` command: composes the engine's commands and the ``rag`` ones.

``main`` mounts the ``rag`` commands (``cli/rag.py``) here, in this one place, and only
when it runs: the command line is where the document store and the engine's commands
are put together.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Annotated

import typer

from ..base.config import Layout, StoreConfig
from ..base.errors import StoreExistsError
from ..memory.postgres.store import PgMemoryStore, redact
from ..storage.credentials import generate_key_file
from ..storage.key_header import store_exists
from . import memory as cli_memory
from . import migrate as cli_migrate
from . import namespace as cli_namespace
from . import ops as cli_ops
from . import reembed as cli_reembed
from . import serve as cli_serve
from . import skill as cli_skill
from . import store as cli_store
from . import ui as cli_ui
from .agent_extract import register_extract_command
from .agent_memory import register_agent_memory_commands
from .common import (
    STATE,
    EmbedderOpt,
    JsonOpt,
    cli_command,
    data_dir,
    emit,
    memory_target,
    out,
    set_target,
    setup_logging,
)

app = typer.Typer(
    name="agentzero",
    help="Encrypted, local-first memory and RAG store for desktop AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(
    cli_memory.app,
    name="memory",
    help="Agent memory: grant, remember, fact, recall, list, forget, undo, erase, consolidate; "
    "the store beneath: append, import, recent, search, get, delete, gc.",
)
register_agent_memory_commands(cli_memory.app)
register_extract_command(cli_memory.app)
app.add_typer(
    cli_namespace.app,
    name="namespace",
    help="Shared namespaces: grant, revoke, list (only a namespace's owner grants).",
)
app.add_typer(
    cli_skill.app, name="skill", help="An agent's skills: save, show, list, export, import."
)
# Sub-apps are added here (store, rag, key, mcp).
app.add_typer(
    cli_store.app,
    name="store",
    help="Indexes (status, rebuild, reembed); verify, backup, restore; migrate (a data "
    "dir to PostgreSQL and back).",
)
cli_ops.register_store_commands(cli_store.app)
cli_store.app.command("reembed")(cli_command(cli_reembed.reembed))
cli_store.app.command("migrate")(cli_command(cli_migrate.migrate_cmd))
app.add_typer(cli_ops.key_app, name="key", help="Keys: change-passphrase, rotate, export-recovery.")
app.command("ui")(cli_ui.ui)
app.command("serve")(cli_serve.serve)


@app.callback()
def _global(
    data_dir_opt: Annotated[
        str | None,
        typer.Option(
            "--data-dir",
            envvar="AGENTZERO_DATA_DIR",
            help="Data dir (default: the platform's user data dir), or a PostgreSQL URL.",
            show_default=False,
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            envvar="AGENTZERO_DATABASE_URL",
            help="postgresql://user@host/db: the memory store on PostgreSQL + pgvector "
            "(memory append/import/recent/search/get/delete/gc, store status, migrate). "
            "Wins over --data-dir.",
            show_default=False,
        ),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            envvar="AGENTZERO_KEY_FILE",
            help="0600 file holding a raw 32-byte key (hex/base64).",
        ),
    ] = None,
) -> None:
    """Credentials: --key-file, or env AGENTZERO_PASSPHRASE / AGENTZERO_DATA_KEY, then the OS
    keyring (stores made with `init --keyring`), or a prompt."""
    set_target(data_dir_opt, database_url)
    STATE.key_file = key_file


@app.command()
@cli_command
def init(
    new_key_file: Annotated[
        Path | None,
        typer.Option(
            "--new-key-file",
            help="Generate a random key into this new 0600 file and create the store with it.",
        ),
    ] = None,
    keyring: Annotated[
        bool,
        typer.Option(
            "--keyring",
            help="Keep a random key in the OS keyring (service agentzero, account = store "
            "id); every open tries it after the env variables. A passphrase is optional.",
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Create an encrypted store in the data dir (never overwrites one).

    A data dir holding an older AgentZero plaintext rag/index.jsonl is adopted: every
    record is sealed under the new key and no plaintext copy is kept.
    """
    from ..ops.create import init_database, init_store

    if STATE.database_url is not None:
        key_file = STATE.key_file
        if new_key_file is not None:
            if PgMemoryStore.exists(STATE.database_url):  # before a key file is made
                raise StoreExistsError(
                    f"a memory store already exists in {redact(STATE.database_url)}"
                )
            generate_key_file(new_key_file)
            key_file = new_key_file
        made = init_database(
            STATE.database_url, key_file=key_file, keyring=keyring, config=StoreConfig()
        )
        emit(
            made,
            lambda: out.print(f"created encrypted memory store {made.store_id} in {made.data_dir}"),
        )
        return
    root = data_dir()
    key_file = STATE.key_file
    if new_key_file is not None:
        if store_exists(Layout(root)):  # before a key file is made for nothing
            raise StoreExistsError(f"a store already exists in {root}")
        generate_key_file(new_key_file)
        key_file = new_key_file
    r = init_store(root, key_file=key_file, keyring=keyring, config=StoreConfig())

    def human() -> None:
        if r.adopted_documents is not None:
            out.print(
                f"adopted {root}: sealed {r.adopted_documents} documents of the plaintext "
                f"rag/index.jsonl into encrypted store {r.store_id}; no plaintext copy kept"
            )
        else:
            out.print(f"created encrypted store {r.store_id} in {root}")
        if keyring:
            out.print(
                f"its key is in the OS keyring (service agentzero, account {r.store_id}); "
                "keep a recovery key too: `agentzero key export-recovery`"
            )

    emit(r, human)


@app.command("mcp")
@cli_command
def mcp_(
    org: Annotated[
        str | None, typer.Option("--org", help="Pin every memory tool to this org.")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Pin every memory tool to this agent.")
    ] = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Serve the store to MCP clients over stdio (stdout is the protocol; logs on stderr)."""
    from ..agent.mcp import McpSettings, serve  # lazily: only this command needs the SDK

    serve(McpSettings(memory_target(), STATE.key_file, org, agent, embedder))


def main() -> None:
    """Entry point of the ``agentzero`` console script."""
    # Everything this process creates is private (files 0600, directories 0700),
    # whatever the caller's umask: SQLite, Tantivy and hnswlib create files with the
    # umask's mode, and a store's files are nobody else's business.
    os.umask(0o077)
    setup_logging()
    _mount_rag()
    one_line_help(app)
    app()


def one_line_help(group: typer.Typer) -> None:
    """Give every command of ``group`` (and of its sub-groups) without a ``short_help``
    the first paragraph of its docstring on one line: in a group's command list Typer
    keeps the docstring's own line breaks, which broke the lines mid-sentence."""
    for info in group.registered_commands:
        if info.short_help is None:
            doc = info.help or inspect.getdoc(info.callback) or ""
            info.short_help = " ".join(doc.split("\n\n")[0].split()) or None
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            one_line_help(sub.typer_instance)


def _mount_rag() -> None:
    # Imported here, not at module level: commands that do not need the rag commands
    # should not pay for importing rag (and only the entry point composes the two).
    from . import rag as rag_cli

    if not any(g.name == "rag" for g in app.registered_groups):
        app.add_typer(rag_cli.app, name="rag", help="Documents: ingest, query, watch, compact.")
        cli_store.EXTRA_STORES.append(rag_cli.open_existing_store)
