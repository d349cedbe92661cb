"""What the agent-memory modules share, so none of them imports the facade.

``AgentMemory`` builds one ``Parts`` and hands it to recall, lifecycle and consolidation:
the memory store, the repository (all SQL), the archive, the settings and the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..base.config import StoreConfig
from ..memory.records import to_us
from ..memory.store import SqliteMemoryStore
from . import fsrs
from .archive import Archive
from .records import entity_key
from .repository import NewMemory, SqliteRepository

INITIAL_DIFFICULTY = 5.0  # FSRS D of a new memory (1 easy .. 10 hard)
NEUTRAL_NOVELTY = 0.5  # novelty is unknown at write time (it needs a neighbour search)


@dataclass(frozen=True)
class Parts:
    """The pieces of one open agent memory."""

    store: SqliteMemoryStore
    repo: SqliteRepository
    archive: Archive
    config: StoreConfig
    clock: Callable[[], datetime]
    org_id: str
    agent_id: str

    def now(self) -> datetime:
        """The injected clock's time."""
        return self.clock()

    def now_us(self) -> int:
        """The injected clock's time in µs since the epoch."""
        return to_us(self.clock())


def new_memory(
    config: StoreConfig,
    type_: str,
    text: str,
    *,
    importance: float = 0.5,
    confidence: float = 1.0,
    speaker: str | None = None,
    about: Sequence[str] = (),
) -> NewMemory:
    """The layer's attributes of a new memory: its salience (cheap text heuristics, no
    model), its type's initial FSRS stability, and its entities (the speaker first)."""
    sal = fsrs.salience(text, importance=importance, novelty=NEUTRAL_NOVELTY).total
    stability = {
        "episodic": config.stability_episodic_days,
        "semantic": config.stability_semantic_days,
        "procedural": config.stability_procedural_days,
    }[type_]
    names = [*([speaker] if speaker else []), *about]
    keyed = {entity_key(n): n for n in reversed(names)}  # first spelling wins
    return NewMemory(
        type_,
        speaker,
        confidence,
        importance,
        sal,
        stability,
        INITIAL_DIFFICULTY,
        tuple(sorted((n, k) for k, n in keyed.items())),
    )


__all__ = ["Parts", "new_memory"]
