"""Shared plumbing of the ``agentzero`` CLI: global state, opening stores, output, errors.

Each command is a few lines: parse options, call the API, hand the result to ``emit``.
Every ``AgentZeroStoreError`` is mapped to a message with its hint (or a JSON error
object with ``--json``) and the error's exit code in ONE place: ``cli_command``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
import typer.models
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..base.config import StoreConfig, default_data_dir
from ..base.errors import AgentZeroStoreError, InvalidArgumentError, UnsupportedByBackendError
from ..base.limits import check_name, check_text
from ..embed.factory import embedder_from_env
from ..embed.vectors import Embedder

P = ParamSpec("P")
R = TypeVar("R")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
MODE_HELP = "auto | keyword | semantic | hybrid (bm25 = keyword)."
EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="local | api | none (default: env AGENTZERO_EMBEDDER, else local).",
        show_default=False,
    ),
]


@dataclass
class GlobalState:
    """Options given before the sub-command (``agentzero --data-dir D ...``)."""

    data_dir: Path | None = None
    database_url: str | None = None  # a PostgreSQL URL: the memory store lives there
    key_file: Path | None = None
    json: bool = False


STATE = GlobalState()

# What works on a PostgreSQL URL: the memory store's own commands (``cli.memory``),
# ``init``, ``store status``, ``store migrate`` and the key operations (a slot of the
# key header rewrapped, or the master key rotated). Everything else needs a data dir.
ON_POSTGRES = (
    "init, the memory store's commands (memory append, import, recent, search, get, "
    "delete, gc), the agent memory's (memory remember, fact, facts, recall, list, "
    "feedback, archive, restore, forget, undo, erase, consolidate, pin, unpin, context, "
    "grant; namespace grant, revoke, list), mcp (its memory tools), store status, "
    "store migrate, key change-passphrase, key export-recovery and key rotate"
)


def data_dir() -> Path:
    """The data dir from ``--data-dir``, env ``AGENTZERO_DATA_DIR``, or the platform default.

    With a database URL (``--database-url``, env ``AGENTZERO_DATABASE_URL`` or
    ``--data-dir postgresql://...``) there is no data dir: a command that needs one
    (documents, skills, verify, backup, the UI) raises
    ``UnsupportedByBackendError`` instead of quietly using another store.
    """
    if STATE.database_url is not None:
        raise UnsupportedByBackendError(
            f"`{_command_path()}` needs a data dir: documents, skills and the data "
            "dir's operations are not on PostgreSQL (yet); the memory store, the agent "
            "memory and the key operations are",
            hint=f"on PostgreSQL: {ON_POSTGRES}; for this command give --data-dir DIR "
            "without --database-url (and unset AGENTZERO_DATABASE_URL)",
        )
    return STATE.data_dir or default_data_dir()


def memory_target() -> Path | str:
    """Where the memory store is: the database URL if one was given, else the data dir."""
    return STATE.database_url if STATE.database_url is not None else data_dir()


def set_target(data_dir_opt: str | None, database_url: str | None) -> None:
    """Record ``--data-dir`` and ``--database-url`` (or their env variables): a URL,
    given either way, selects PostgreSQL for the memory store and wins over a data dir."""
    from ..ops.backends import is_postgres_url  # lazily: keeps the CLI's start cheap

    if database_url is not None and not is_postgres_url(database_url):
        raise typer.BadParameter(
            "expected a postgresql:// or postgres:// URL", param_hint="--database-url"
        )
    if data_dir_opt is not None and is_postgres_url(data_dir_opt):
        database_url = database_url or data_dir_opt
        data_dir_opt = None
    STATE.database_url = database_url
    # expanduser: "--data-dir=~/x" reaches us unexpanded (the shell expands ~ only at
    # the start of a word)
    STATE.data_dir = Path(data_dir_opt).expanduser() if data_dir_opt is not None else None


_VALUED = frozenset({"--data-dir", "--database-url", "--key-file"})  # the global options
_GROUPS = frozenset({"memory", "store", "key", "rag", "namespace", "skill"})


def _command_path() -> str:
    """The command being run, as the user typed it (``agentzero memory recall``), for
    messages: read from ``sys.argv`` (typer keeps its click context to itself)."""
    words: list[str] = []
    args = iter(sys.argv[1:])
    for a in args:
        if a in _VALUED:
            next(args, None)
        elif not a.startswith("-"):
            words.append(a)
            if len(words) == 2 or words[0] not in _GROUPS:
                break
    return " ".join(["agentzero", *words])


def make_embedder(name: str | None) -> Embedder | None:
    """Build the embedder named on the command line or in ``AGENTZERO_EMBEDDER``."""
    return embedder_from_env(name)


def store_config(*, serving: bool = False) -> StoreConfig:
    """Defaults, but for the BM25 mode in env ``AGENTZERO_BM25_TERMS`` (blinded|sealed),
    and no index watcher thread unless ``serving`` (a long-running command: the one
    that needs it; see ``StoreConfig.watch_indexes``)."""
    terms = os.environ.get("AGENTZERO_BM25_TERMS")
    config = StoreConfig(bm25_terms=terms) if terms else StoreConfig()
    return config if serving else replace(config, watch_indexes=False)


def store_kwargs() -> dict[str, Any]:
    """Credential arguments for ``*.open``: key file if given; env and TTY prompt otherwise."""
    return {"key_file": STATE.key_file, "config": store_config()}


def count_of(n: int, noun: str = "memory", nouns: str = "memories") -> str:
    """``n`` and the noun in the right number: "1 memory", "0 memories", "2 memories"."""
    return f"{n} {noun if n == 1 else nouns}"


def to_jsonable(value: Any) -> Any:
    """Convert results (dataclasses with ``to_dict``, lists, dicts) into JSON-ready data."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def show_table(table: Table) -> None:
    """A table on a terminal; elsewhere (a pipe, a file) one line per row, tab-separated,
    header first, so that no cell (a file path, a finding) is wrapped or cut and every
    row is one line for grep, cut and awk. ``--json`` is the stable form for programs."""
    if out.is_terminal:
        out.print(table)
        return
    columns = list(table.columns)

    def clean(cell: object) -> str:
        return " ".join(str(cell).split())  # no tab or newline may split a row

    sys.stdout.write("\t".join(clean(c.header) for c in columns) + "\n")
    for row in zip(*(list(c.cells) for c in columns), strict=True):
        sys.stdout.write("\t".join(clean(cell) for cell in row) + "\n")
    sys.stdout.flush()


def emit(value: Any, human: Callable[[], None] | None = None) -> None:
    """Print ``value`` as JSON with ``--json``, else run ``human`` (or print it plainly)."""
    if STATE.json:
        sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")
    elif human is not None:
        human()
    else:
        out.print(value)


def cli_command(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator for every command: honours ``--json`` and maps store errors to exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs.get("json_out"):
            STATE.json = True
        try:
            check_text_arguments(fn, kwargs)
            return fn(*args, **kwargs)
        except AgentZeroStoreError as exc:
            if STATE.json:
                sys.stdout.write(json.dumps(exc.to_dict()) + "\n")
            else:
                err.print(f"[bold red]error:[/] {exc.message}")
                if exc.hint:
                    err.print(f"[yellow]hint:[/] {exc.hint}")
            raise typer.Exit(exc.exit_code) from None

    return wrapper


SCOPE_PARAMS = frozenset({"org", "agent"})  # every command's --org / --agent


def check_text_arguments(fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """Refuse a text argument that is not valid UTF-8, naming it, before anything opens.

    Python hands bytes that are not UTF-8 on a command line over as lone surrogates
    (surrogateescape); text holding one cannot be stored, hashed or printed. This runs
    for every command, in ``cli_command``. Paths (``Path`` values) are exempt: a file
    name may legally hold any bytes, and the OS gets them back unchanged.
    """
    for name, value in kwargs.items():
        if name in SCOPE_PARAMS and isinstance(value, str):
            # An org or agent id never holds a control character: the agent memory's
            # namespace and session scopes do, and no command may name its way into one.
            check_name(_cli_name(fn, name), value)
        if isinstance(value, str) and not value.isascii():
            try:
                check_text("", value)
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(
                    f"the argument {_cli_name(fn, name)}{exc.message}", hint=exc.hint
                ) from None


def _cli_name(fn: Callable[..., Any], param: str) -> str:
    """How the user wrote a parameter: ``--org`` for an option, ``CONTENT`` for an argument.

    Read from the command's ``typer.Option``/``typer.Argument`` declarations (only on the
    error path: resolving the annotations costs more than a command should pay).
    """
    try:
        hint = typing.get_type_hints(fn, include_extras=True).get(param)
    except Exception:  # an annotation that does not resolve: fall back to the name
        hint = None
    for info in getattr(hint, "__metadata__", ()):
        if isinstance(info, typer.models.OptionInfo):
            # In ``Annotated[..., typer.Option("--id")]`` the first name sits in ``default``.
            names = (info.default, *(info.param_decls or ()))
            decls = [d for d in names if isinstance(d, str) and d.startswith("--")]
            return decls[0] if decls else "--" + param.replace("_", "-")
        if isinstance(info, typer.models.ArgumentInfo) and info.metavar:
            return info.metavar
    return param.upper()


class Advance:
    """``advance(n)`` moves a progress bar on; ``advance.total(n)`` sets its length once
    it is known (after the store opened, say)."""

    def __init__(self, bar: Progress, task: Any) -> None:
        self._bar, self._task = bar, task

    def __call__(self, n: int = 1) -> None:
        self._bar.advance(self._task, n)

    def total(self, n: int) -> None:
        """Set how many steps the bar has."""
        self._bar.update(self._task, total=n)


@contextmanager
def progress(description: str, total: int | None) -> Iterator[Advance]:
    """A rich progress bar on stderr (hidden with ``--json`` or when not a terminal).

    Yields ``advance(n)`` (an ``Advance``).
    """
    show = not STATE.json and err.is_terminal
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not show,
        transient=False,
    ) as bar:
        yield Advance(bar, bar.add_task(description, total=total))


def setup_logging() -> None:
    """Library log lines (rebuilds, torn tails) go to stderr; never any content."""
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
