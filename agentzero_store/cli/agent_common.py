"""What every ``agentzero memory ...`` command over the agent memory shares: its options
(``--org``, ``--agent``, ...), how it opens the memory (``open_memory``) and holds the
data dir's writer role while it writes (``writer``), and the parsing of the option values
that are more than a string (``--as-of``, ``--ttl``, one selector of a forget or erase).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from ..agentmem import AgentMemory
from ..base.errors import InvalidArgumentError
from ..base.limits import MAX_TTL_SECONDS
from ..memory.records import parse_datetime
from ..memory.seam import supports
from ..storage.lock import acquire_writer
from .common import data_dir, make_embedder, memory_target, store_kwargs

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
    if not supports(mem.store, "data_dir"):
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


def as_of_option(text: str | None) -> Any:
    """``--as-of``: an ISO 8601 time with a timezone, or None when not given."""
    if text is None:
        return None
    try:
        return parse_datetime(text)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(
            f"--as-of: {exc.message}", hint="e.g. --as-of 2025-06-01T12:00:00+00:00"
        ) from None


_UNITS = {"": 1, "s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def ttl_option(text: str | None) -> float | None:
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


def selector_option(id_: str | None, conversation: str | None, about: str | None) -> dict[str, str]:
    """The one of ``--id``, ``--conversation`` and ``--about`` given, as the keyword
    ``forget`` and ``erase`` take."""
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


__all__ = [
    "AboutOpt",
    "AgentOpt",
    "AsOfOpt",
    "IdArg",
    "LimitOpt",
    "OrgOpt",
    "SelectorAbout",
    "SelectorConv",
    "SelectorId",
    "TypesOpt",
    "as_of_option",
    "open_memory",
    "selector_option",
    "ttl_option",
    "writer",
]
