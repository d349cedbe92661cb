"""``agentzero memory ...`` over the agent memory (``AgentMemory``): grant, remember,
fact, facts, recall, list, feedback, archive, restore, forget, undo, erase, consolidate.

Registered on the ``memory`` group beside the memory store's commands (``memory``).
Every command works on one agent's memory: ``--org`` and ``--agent`` (both ``default``
unless given). Writing commands hold the data dir's writer role for the whole command
(on PostgreSQL, given a database URL, there is none: many clients write at once).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from ..agentmem import AgentMemory
from ..agentmem.memory import Archived
from ..base.errors import InvalidArgumentError
from ..base.limits import MAX_TTL_SECONDS
from ..base.modes import search_mode
from ..memory.postgres.store import PgMemoryStore
from ..memory.records import parse_datetime
from ..storage.lock import acquire_writer
from . import agent_output as show
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
    store_kwargs,
)

OrgOpt = Annotated[str, typer.Option("--org", help="The agent memory's org.")]
AgentOpt = Annotated[str, typer.Option("--agent", help="The agent memory's agent.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=1, help="How many results.")]
TypesOpt = Annotated[
    list[str] | None,
    typer.Option("--type", help="episodic | semantic | procedural (repeat for several)."),
]
AboutOpt = Annotated[
    list[str] | None,
    typer.Option("--about", help="An entity (person, place, thing); repeat for several."),
]
AsOfOpt = Annotated[
    str | None,
    typer.Option("--as-of", help="ISO 8601 with a timezone: memory as it was then."),
]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")]
SelectorId = Annotated[str | None, typer.Option("--id", help="One memory, by id.")]
SelectorConv = Annotated[
    str | None, typer.Option("--conversation", help="Every memory of this conversation.")
]
SelectorAbout = Annotated[
    str | None, typer.Option("--about", help="Every memory about this entity.")
]


def open_memory(org: str, agent: str, embedder: str | None = "none") -> AgentMemory:
    # A data dir, or the database URL (--database-url, AGENTZERO_DATABASE_URL).
    return AgentMemory.open(
        memory_target(),
        create=False,
        org_id=org,
        agent_id=agent,
        embedder=make_embedder(embedder),
        **store_kwargs(),
    )


@contextmanager
def writer(org: str, agent: str, embedder: str | None = "none") -> Iterator[AgentMemory]:
    # As ``memory._open_writer``: the store opens first (a wrong credential fails before
    # writer.lock is touched), then one writer per data dir for the whole command; the
    # memory closes (writing its access log) before the role goes.
    mem = open_memory(org, agent, embedder)
    if isinstance(mem.store, PgMemoryStore):
        # PostgreSQL has no writer role: many clients write at once (transactions,
        # constraints and advisory locks keep the invariants).
        with mem:
            yield mem
        return
    try:
        lock = acquire_writer(data_dir(), purpose="agentzero memory")
    except BaseException:
        mem.close()
        raise
    try:
        with mem:
            yield mem
    finally:
        lock.release()


def _as_of(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return parse_datetime(text)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(
            f"--as-of: {exc.message}", hint="e.g. --as-of 2025-06-01T12:00:00+00:00"
        ) from None


_UNITS = {"": 1, "s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def _ttl(text: str | None) -> float | None:
    """``--ttl``: seconds, or a number with a unit: 90s, 15m, 12h, 7d, 2w."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text)
    seconds = float(m.group(1)) * _UNITS[m.group(2)] if m else 0.0
    if not 0 < seconds <= MAX_TTL_SECONDS:
        raise InvalidArgumentError(
            f"--ttl must be a positive duration up to 100 years, got {text!r}",
            hint="seconds, or a number with a unit: 90s, 15m, 12h, 7d, 2w",
        )
    return seconds


def _selector(id_: str | None, conversation: str | None, about: str | None) -> dict[str, str]:
    given = {
        k: v
        for k, v in (("id", id_), ("conversation_id", conversation), ("about", about))
        if v is not None
    }
    if len(given) != 1:
        raise InvalidArgumentError(
            "give exactly one of --id, --conversation or --about",
            hint="e.g. --conversation c1, or --about Ana",
        )
    return given


# ---------------------------------------------------------------------- writes
def grant(
    content: Annotated[str, typer.Argument(help="What the user told you to remember.")],
    about: AboutOpt = None,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Remember what the user granted you to keep.

    A semantic memory of kind granted; the same text again is a no-op (duplicate)."""
    with writer(org, agent, embedder) as mem:
        r = mem.remember(content, about=about or ())
    emit(r, lambda: show.written(r))


def remember(
    content: Annotated[str, typer.Argument(help="The note.")],
    type_: Annotated[
        str, typer.Option("--type", help="semantic | episodic | procedural.")
    ] = "semantic",
    about: AboutOpt = None,
    confidence: Annotated[float, typer.Option(help="0 to 1.")] = 1.0,
    ttl: Annotated[
        str | None, typer.Option("--ttl", help="Expire after: seconds, or 90s, 15m, 12h, 7d.")
    ] = None,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Remember a note of a type, with a confidence and an optional expiry."""
    seconds = _ttl(ttl)
    with writer(org, agent, embedder) as mem:
        r = mem.remember(content, type=type_, about=about or (), confidence=confidence, ttl=seconds)
    emit(r, lambda: show.written(r))


def fact(
    subject: Annotated[str, typer.Argument(help="Who or what, e.g. Ana.")],
    predicate: Annotated[str, typer.Argument(help="The relation, e.g. lives_in.")],
    object_: Annotated[str, typer.Argument(metavar="OBJECT", help="The value, e.g. Lisbon.")],
    confidence: Annotated[float, typer.Option(help="0 to 1.")] = 0.9,
    multi_valued: Annotated[
        bool,
        typer.Option("--multi-valued", help="Several objects hold at once (nothing superseded)."),
    ] = False,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Believe a fact: SUBJECT PREDICATE OBJECT.

    A new object supersedes the old one (kept in the history) unless --multi-valued."""
    with writer(org, agent, embedder) as mem:
        r = mem.assert_fact(
            subject, predicate, object_, confidence=confidence, single_valued=not multi_valued
        )
    emit(r, lambda: show.written(r))


def feedback(
    memory_id: IdArg,
    used: Annotated[bool, typer.Option("--used/--unused", help="Did the recalled memory help?")],
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Say whether a recalled memory was used.

    Only --used strengthens it (it fades more slowly); recall alone never does."""
    with writer(org, agent) as mem:
        m = mem.feedback(memory_id, used=used)

    def human() -> None:
        how = "used: it fades more slowly now" if used else "not used: it is not strengthened"
        out.print(f"feedback recorded for {m.id}: {how}")
        show.memories([m])

    emit(m, human)


def archive(
    memory_id: IdArg,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Archive a memory (soft: `memory restore` undoes it).

    Recall and list leave it out unless asked (--include-archived, --archived)."""
    with writer(org, agent) as mem:
        done = mem.archive(memory_id)
    emit(
        {"id": memory_id, "archived": done},
        lambda: out.print(f"archived {memory_id}" if done else f"{memory_id} was archived already"),
    )


def restore(
    memory_id: IdArg,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Bring an archived memory back."""
    with writer(org, agent) as mem:
        done = mem.restore(memory_id)
    emit(
        {"id": memory_id, "restored": done},
        lambda: out.print(f"restored {memory_id}" if done else f"{memory_id} was not archived"),
    )


def forget(
    id_: SelectorId = None,
    conversation: SelectorConv = None,
    about: SelectorAbout = None,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Forget memories, undoably: prints the undo token.

    One memory (--id), a conversation (--conversation) or everything about an entity
    (--about): gone from every search at once, back with `memory undo TOKEN` until the
    printed time."""
    chosen = _selector(id_, conversation, about)
    with writer(org, agent) as mem:
        receipt = mem.forget(**chosen)
    emit(receipt, lambda: show.forgotten(receipt))


def undo(
    token: Annotated[str, typer.Argument(help="The token `memory forget` printed.")],
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Bring back what a forget removed (within its undo window)."""
    with writer(org, agent) as mem:
        n = mem.undo(token)
    emit({"restored": n}, lambda: out.print(f"restored {count_of(n)}"))


def erase(
    id_: SelectorId = None,
    conversation: SelectorConv = None,
    about: SelectorAbout = None,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: erase cannot be undone.")] = False,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Erase memories for good (GDPR); needs --yes.

    The text leaves every file and index; a content-free tombstone stays."""
    chosen = _selector(id_, conversation, about)
    if not yes:
        raise InvalidArgumentError(
            "erase cannot be undone: add --yes to confirm",
            hint="`agentzero memory forget` removes the same memories undoably",
        )
    with writer(org, agent) as mem:
        report = mem.erase(**chosen)
    emit(report, lambda: show.erased(report))


def consolidate(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what it would do.")] = False,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Consolidate an agent's memory (idempotent; --dry-run to preview).

    Promote recurring episodes, merge near-duplicates, decay, archive what faded, delete
    what expired, purge forgets past their undo window."""
    with writer(org, agent) as mem, show.steps("consolidating") as tell:
        report = mem.consolidate(dry_run=dry_run, progress=tell)
    emit(report, lambda: show.consolidated(report))


# ---------------------------------------------------------------------- reads
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
    when = _as_of(as_of)
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
    when = _as_of(as_of)
    with open_memory(org, agent) as mem:
        found = mem.facts(subject, predicate, as_of=when, history=history)
    emit(found, lambda: show.facts(found))


# ---------------------------------------------------------------------- tiers
def _pin(memory_id: str, org: str, agent: str, pinned: bool) -> None:
    with writer(org, agent) as mem:
        (mem.pin if pinned else mem.unpin)(memory_id)
        now = mem.pinned()
    emit({"pinned": [m.id for m in now]}, lambda: show.memories(now))


def pin(
    memory_id: IdArg,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Pin a memory: it heads every context pack (all pins share 2,000 characters)."""
    _pin(memory_id, org, agent, True)


def unpin(
    memory_id: IdArg,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Unpin a memory (a no-op if it was not pinned)."""
    _pin(memory_id, org, agent, False)


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


COMMANDS: dict[str, Callable[..., None]] = {
    "grant": grant,
    "remember": remember,
    "fact": fact,
    "facts": facts,
    "recall": recall,
    "list": list_,
    "feedback": feedback,
    "archive": archive,
    "restore": restore,
    "forget": forget,
    "undo": undo,
    "erase": erase,
    "consolidate": consolidate,
    "pin": pin,
    "unpin": unpin,
    "context": context,
}


AGENT_PANEL = "Agent memory (one agent: --org, --agent)"
STORE_PANEL = "The memory store beneath (every scope, raw entries)"


def register_agent_memory_commands(app: typer.Typer) -> None:
    """Add the agent memory's commands to the ``memory`` group, listed first in its help
    under their own heading; the store's own commands (``cli.memory``) under another,
    so ``memory --help`` says which layer each command works on."""
    for info in app.registered_commands:
        info.rich_help_panel = info.rich_help_panel or STORE_PANEL
    for name, fn in COMMANDS.items():
        app.command(name, rich_help_panel=AGENT_PANEL)(cli_command(fn))
    app.registered_commands.sort(key=lambda info: info.rich_help_panel != AGENT_PANEL)


__all__ = ["COMMANDS", "open_memory", "register_agent_memory_commands", "writer"]
