"""``agentzero skill ...``: save, show, list, delete, export and import an agent's skills.

Thin: each command opens ``SkillStore`` (``AgentMemory.open`` with the CLI's credential,
for one ``--org``/``--agent`` scope), calls it, and hands the result to ``emit``; errors
map to exit codes in ``common.cli_command``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..agentmem.skills.markdown import render
from ..agentmem.skills.store import SkillStore
from .common import JsonOpt, cli_command, data_dir, emit, out, progress, show_table, store_kwargs

app = typer.Typer(no_args_is_help=True)

OrgOpt = Annotated[str, typer.Option("--org", help="Org id (the skill's scope).")]
AgentOpt = Annotated[str, typer.Option("--agent", help="Agent id (the skill's scope).")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The skill's name.")]


@contextmanager
def _open(org: str, agent: str) -> Iterator[SkillStore]:
    # No embedder and no HNSW index: skills are neither embedded nor searched by vector.
    store = SkillStore.open(
        data_dir(),
        create=False,
        org_id=org,
        agent_id=agent,
        embedder=None,
        hnsw=False,
        **store_kwargs(),
    )
    with store:
        yield store


def _say(text: str) -> None:
    # Names and steps are the user's text: no rich markup or :emoji: codes read into them.
    out.print(
        text, markup=False, emoji=False, highlight=False, end="" if text.endswith("\n") else "\n"
    )


def _tick(advance: Callable[[int], None]) -> Callable[[int, int], None]:
    return lambda done, total: advance(1)


@app.command()
@cli_command
def save(
    name: NameArg,
    step: Annotated[
        list[str], typer.Option("--step", "-s", help="One step; repeat in order (at least one).")
    ],
    description: Annotated[str, typer.Option("--description", "-d", help="What it is for.")] = "",
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag; repeat.")] = None,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Create a skill, or replace the one with this name (case-insensitive)."""
    with _open(org, agent) as skills:
        saved = skills.save(name, description, step, tag or [])
    emit(saved, lambda: _say(f"saved skill {saved.name!r} ({len(saved.steps)} steps)"))


@app.command()
@cli_command
def show(
    name: NameArg, org: OrgOpt = "default", agent: AgentOpt = "default", json_out: JsonOpt = False
) -> None:
    """Show one skill (as its Markdown file would read)."""
    with _open(org, agent) as skills:
        skill = skills.load(name)
    emit(skill, lambda: _say(render(skill)))


@app.command("list")
@cli_command
def list_(
    tag: Annotated[
        str | None, typer.Option("--tag", "-t", help="Only skills with this tag.")
    ] = None,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """The skills of a scope, by name."""
    with _open(org, agent) as skills:
        found = skills.find_by_tag(tag) if tag is not None else skills.list()

    def human() -> None:
        if not found:
            out.print("no skills")
            return
        t = Table("name", "tags", "steps", "description")
        for s in found:
            first = s.description.split("\n", 1)[0]
            t.add_row(Text(s.name), Text(", ".join(s.tags)), str(len(s.steps)), Text(first))
        show_table(t)

    emit(found, human)


@app.command()
@cli_command
def delete(
    name: NameArg, org: OrgOpt = "default", agent: AgentOpt = "default", json_out: JsonOpt = False
) -> None:
    """Delete one skill (its bytes zeroed in memory.db)."""
    with _open(org, agent) as skills:
        skills.delete(name)
    emit({"deleted": name}, lambda: _say(f"deleted skill {name!r}"))


@app.command("export")
@cli_command
def export_(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="Where to write (outside the data dir).")
    ],
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace files already there.")
    ] = False,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Write every skill as a Markdown file (plaintext, mode 0600) into DIR."""
    with _open(org, agent) as skills, progress("exporting", len(skills.list())) as advance:
        report = skills.export_markdown(directory, overwrite=overwrite, progress=_tick(advance))
    emit(report, lambda: _say(f"exported {len(report.files)} skills to {report.directory}"))


@app.command("import")
@cli_command
def import_(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A folder of skill .md files.")],
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Save the skill of every .md file in DIR: all of them, or none if any is malformed."""
    with _open(org, agent) as skills, progress("reading", None) as advance:
        report = skills.import_markdown(directory, progress=_tick(advance))
    emit(
        report,
        lambda: _say(
            f"imported {report.files} files: {report.created} created, {report.updated} "
            f"updated, {report.unchanged} unchanged"
        ),
    )
