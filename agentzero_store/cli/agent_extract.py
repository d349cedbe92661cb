"""``agentzero memory extract``: turn what speakers state about themselves in an
agent's turns into facts (``AgentMemory.extract``), by the offline rules or, given
``--llm-url`` and ``--llm-model``, an OpenAI-compatible chat endpoint (its API key from
``AGENTZERO_LLM_API_KEY``, never an option: it would show in the process list)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..agentmem.extract import Extractor, ExtractReport, LLMExtractor, RuleExtractor
from ..base.errors import InvalidArgumentError
from ..memory.records import parse_datetime
from .agent_common import writer
from .common import JsonOpt, cli_command, emit, out


def extract(
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="Only this conversation's turns.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only turns made since (ISO 8601, with tz).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what it would write; write nothing.")
    ] = False,
    llm_url: Annotated[
        str | None, typer.Option("--llm-url", help="An OpenAI-compatible server's base URL.")
    ] = None,
    llm_model: Annotated[str | None, typer.Option("--llm-model", help="Its model.")] = None,
    org: Annotated[str, typer.Option("--org", help="The agent memory's org.")] = "default",
    agent: Annotated[str, typer.Option("--agent", help="The agent memory's agent.")] = "default",
    json_out: JsonOpt = False,
) -> None:
    """Extract facts the speakers state about themselves (--dry-run to preview).

    "I moved to Oslo" becomes the fact (speaker, lives_in, Oslo), superseding the old
    one, with the turn as its source: forgetting the turn forgets the fact."""
    if (llm_url is None) != (llm_model is None):
        raise InvalidArgumentError(
            "--llm-url and --llm-model go together", hint="or neither: the offline rules"
        )
    ex: Extractor = RuleExtractor()
    if llm_url is not None and llm_model is not None:
        ex = LLMExtractor(llm_url, llm_model, os.environ.get("AGENTZERO_LLM_API_KEY") or None)
    when = None if since is None else parse_datetime(since)
    with writer(org, agent) as mem:
        report = mem.extract(conversation, when, dry_run=dry_run, extractor=ex)
    emit(report.to_dict(), lambda: _show(report))


def _show(r: ExtractReport) -> None:
    head = "would write" if r.dry_run else "extracted"
    out.print(f"{head} from {r.turns} turns:")
    for f in r.facts:
        neg = "not " if f["negated"] else ""
        line = f"  [{f['status']}] {f['subject']} {neg}{f['predicate']} {f['object']}"
        out.print(line + f"  (from {', '.join(f['sources'])})", markup=False)
    for n in r.notes:
        out.print(f"  [{n['status']}] {n['text']}  (from {', '.join(n['sources'])})", markup=False)
    if r.dropped:
        out.print(f"  dropped {r.dropped} invalid candidates")


def register_extract_command(app: typer.Typer) -> None:
    """Add ``extract`` to the ``memory`` group."""
    app.command("extract")(cli_command(extract))


__all__ = ["extract", "register_extract_command"]
