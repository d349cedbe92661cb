"""The agent memory's writing commands: ``agentzero memory grant``, ``remember``,
``fact``, ``feedback``, ``archive``, ``restore``, ``forget``, ``undo``, ``erase``,
``consolidate``, ``pin`` and ``unpin``. Each holds the data dir's writer role for the
whole command (``agent_common.writer``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..base.errors import InvalidArgumentError
from . import agent_output as show
from .agent_common import (
    AboutOpt,
    AgentOpt,
    IdArg,
    OrgOpt,
    SelectorAbout,
    SelectorConv,
    SelectorId,
    selector_option,
    ttl_option,
    writer,
)
from .common import EmbedderOpt, JsonOpt, count_of, emit, out


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
    seconds = ttl_option(ttl)
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
    chosen = selector_option(id_, conversation, about)
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
    chosen = selector_option(id_, conversation, about)
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


__all__ = [
    "archive",
    "consolidate",
    "erase",
    "fact",
    "feedback",
    "forget",
    "grant",
    "pin",
    "remember",
    "restore",
    "undo",
    "unpin",
]
