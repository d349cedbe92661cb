"""The inspector's records: its ``Settings`` (where the store is, how it was unlocked,
which agent's memory), and what its pages are handed (``MemoryView``, ``FactChain``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..agentmem.records import Fact, HistoryEntry, Memory
from ..base.config import StoreConfig
from ..embed.vectors import Embedder
from ..storage.credentials import Credential
from . import drawing
from .jobs import Tell


def age(delta: timedelta) -> str:
    """A time span as a person reads it: "40 s", "12 min", "5 h", "3 days"."""
    seconds = max(0, int(delta.total_seconds()))
    for unit, size in (("days", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {'day' if unit == 'days' and n == 1 else unit}"
    return f"{seconds} s"


@dataclass(frozen=True)
class Settings:
    """Where the store is, how it was unlocked, which agent's memory, which embedder.

    ``verify`` is handed in by the command line (operations sit beside this package, not
    below it): a function that verifies the data dir, telling its progress to the
    ``Tell`` it is given after each check, and returns the report as a dict.
    """

    data_dir: Path
    credential: Credential
    org_id: str = "default"
    agent_id: str = "default"
    pinned: bool = True  # False: the page may switch to any agent's memory (``switch``)
    embedder: Embedder | None = None
    config: StoreConfig = field(default_factory=StoreConfig)
    verify: Callable[[Tell], dict[str, Any]] | None = None

    def __repr__(self) -> str:
        return f"Settings({self.data_dir!s}, org={self.org_id!r}, agent={self.agent_id!r})"


@dataclass(frozen=True)
class MemoryView:
    """One memory's page: the memory, its tier marks, its decay and its neighbourhood."""

    memory: Memory
    pinned: bool
    core: bool
    retrievability: float
    curve: drawing.Curve
    graph: drawing.Graph
    history: list[HistoryEntry]


@dataclass(frozen=True)
class FactChain:
    """Every version of one (subject, predicate), oldest first, and the one believed."""

    subject: str
    predicate: str
    versions: list[Fact]


__all__ = ["FactChain", "MemoryView", "Settings", "age"]
