"""The agent memory's reading commands: ``agentzero memory recall``, ``list``, ``facts``
and ``context``. They open the memory without the writer role."""

from __future__ import annotations

from typing import Annotated

import typer

from ..agentmem.memory import Archived
from ..base.errors import InvalidArgumentError
from ..base.modes import search_mode
from . import agent_output as show
from .agent_common import (
    AboutOpt,
    AgentOpt,
    AsOfOpt,
    LimitOpt,
    OrgOpt,
    TypesOpt,
    as_of_option,
    open_memory,
)
from .common import MODE_HELP, EmbedderOpt, JsonOpt, emit, out


def recall(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[
        str | None,
        typer.Option(
            help=MODE_HELP + " Default auto: every signal fused (keyword with --embedder none)."
        ),
    ] = None,
    limit: LimitOpt = 5,
    type_: TypesOpt = None,
    about: AboutOpt = None,
    as_of: AsOfOpt = None,
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Search archived memories too.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Each hit's rank, weight and share per signal.")
    ] = False,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Recall an agent's memories, best first.

    Mode auto fuses every signal: meaning, words, neighbouring turns, entities, type,
    confidence and use."""
    how = search_mode(mode)
    when = as_of_option(as_of)
    with open_memory(org, agent, "none" if how == "keyword" else embedder) as mem:
        hits = mem.recall(
            query,
            limit,
            mode=how,  # type: ignore[arg-type]
            types=type_,
            about=about,
            as_of=when,
            include_archived=include_archived,
            explain=explain,
        )
    emit(hits, lambda: show.hits(hits, explain))


def list_(
    kind: Annotated[
        str | None, typer.Option(help="granted | recalled | self_noted | archived.")
    ] = None,
    type_: TypesOpt = None,
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="Only this conversation.")
    ] = None,
    archived: Annotated[bool, typer.Option("--archived", help="Only archived memories.")] = False,
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Live and archived memories.")
    ] = False,
    limit: LimitOpt = 20,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many (paging).")] = 0,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """List an agent's memories, newest first (archived ones only when asked)."""
    if archived and include_archived:
        raise InvalidArgumentError("give --archived (only those) or --include-archived, not both")
    which: Archived = "only" if archived else "include" if include_archived else "exclude"
    with open_memory(org, agent) as mem:
        found = mem.memories(
            kind=kind,
            types=type_,
            conversation_id=conversation,
            archived=which,
            limit=limit,
            offset=offset,
        )
    emit(found, lambda: show.memories(found))


def facts(
    subject: Annotated[str | None, typer.Option(help="Only facts about this subject.")] = None,
    predicate: Annotated[str | None, typer.Option(help="Only this relation.")] = None,
    as_of: AsOfOpt = None,
    history: Annotated[
        bool, typer.Option("--history", help="Every version, superseded and retracted too.")
    ] = False,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Show the facts an agent believes now (or at --as-of), or their whole history."""
    when = as_of_option(as_of)
    with open_memory(org, agent) as mem:
        found = mem.facts(subject, predicate, as_of=when, history=history)
    emit(found, lambda: show.facts(found))


def context(
    conversation: Annotated[
        str, typer.Option("--conversation", "-c", help="The conversation to load context for.")
    ],
    query: Annotated[
        str | None, typer.Option("--query", "-q", help="Also recall memories for this.")
    ] = None,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=0, help="The pack's token budget.")
    ] = 2000,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """What to load for a conversation's next turn: pinned memories, core facts, the
    recent turns, a summary of earlier ones and (with --query) recalled memories, within
    --max-tokens (the embedder's tokenizer counts; without one, an estimate)."""
    mem = open_memory(org, agent, embedder if query else "none")
    with mem:
        pack = mem.context(conversation, query=query, max_tokens=max_tokens)
    emit(pack.to_dict(), lambda: out.print(pack.text() or "(empty)", markup=False))


__all__ = ["context", "facts", "list_", "recall"]
