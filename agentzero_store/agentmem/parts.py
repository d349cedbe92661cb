"""What the agent-memory modules share, so none of them imports the facade.

``AgentMemory`` builds one ``Parts`` and hands it to recall, lifecycle and consolidation:
the memory store, the scope's gate (its repository, all SQL, and its archive, reached
only through the grant check: ``namespaces.ScopeGate``), the settings and the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..base.config import StoreConfig
from ..memory.records import to_us
from .records import entity_key
from .sqlite.repository import NewMemory

if TYPE_CHECKING:
    from ..memory.postgres.store import PgMemoryStore
    from ..memory.sqlite.store import SqliteMemoryStore
    from .backends import StoreSide
    from .namespaces import ScopeGate
    from .postgres.archive import PgArchive
    from .postgres.repository import PgRepository
    from .sqlite.archive import Archive
    from .sqlite.repository import SqliteRepository

# A write transaction of the layer: ``memory.tx.WriteTx`` on SQLite, ``pg.tx.PgWriteTx``
# on PostgreSQL. Opaque to the facade: it only hands it back to its own repository.
LayerTx = Any

INITIAL_DIFFICULTY = 5.0  # FSRS D of a new memory (1 easy .. 10 hard)


@dataclass(frozen=True)
class Parts:
    """The pieces of one open agent memory. ``store`` is a ``SqliteMemoryStore`` or a
    ``PgMemoryStore``; ``repo`` and ``archive`` are that backend's (``backends``), read
    through ``gate`` (the grant is checked on every read of either)."""

    store: SqliteMemoryStore | PgMemoryStore
    side: StoreSide
    gate: ScopeGate
    config: StoreConfig
    clock: Callable[[], datetime]
    org_id: str
    agent_id: str

    @property
    def repo(self) -> SqliteRepository | PgRepository:
        """The scope's repository (``ScopeGate.repo``: the grant checked)."""
        return self.gate.repo

    @property
    def archive(self) -> Archive | PgArchive:
        """The scope's archive (``ScopeGate.archive``: the grant checked)."""
        return self.gate.archive

    def now(self) -> datetime:
        """The injected clock's time."""
        return self.clock()

    def now_us(self) -> int:
        """The injected clock's time in µs since the epoch."""
        return to_us(self.clock())


def new_memory(
    config: StoreConfig,
    type_: str,
    *,
    importance: float = 0.5,
    confidence: float = 1.0,
    speaker: str | None = None,
    about: Sequence[str] = (),
) -> NewMemory:
    """The layer's attributes of a new memory: its type's initial FSRS stability, its
    speaker (with its entity key) and the other entities it is about. Its salience is
    not computed here: ``fsrs.text_salience`` fills it in when first needed, so the
    text heuristics (~20 µs a turn) stay off the write path."""
    stability = {
        "episodic": config.stability_episodic_days,
        "semantic": config.stability_semantic_days,
        "procedural": config.stability_procedural_days,
    }[type_]
    speaker_key = entity_key(speaker) if speaker else None
    keyed = {entity_key(n): n for n in reversed(about)}  # first spelling wins
    keyed.pop(speaker_key, None)  # type: ignore[arg-type]  # the speaker is a column
    return NewMemory(
        type_,
        speaker,
        speaker_key,
        confidence,
        importance,
        stability,
        INITIAL_DIFFICULTY,
        tuple(sorted((n, k) for k, n in keyed.items())),
    )


__all__ = ["LayerTx", "Parts", "new_memory"]
