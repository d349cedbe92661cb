"""Writing memories: turns (one transaction per batch, identical re-sends skipped),
notes of any type (an exact duplicate is a no-op), and the adoption of rows written below
the layer. What every write shares is here too: a memory's entry for the store, its
layer attributes (``parts.new_memory``), its vector model, its expiry, the checks of a
number from 0 to 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..base.errors import InvalidArgumentError
from ..base.limits import MAX_TTL_SECONDS, check_text, later
from ..memory.records import MemoryEntry, from_us
from . import fsrs
from .context import HotTier
from .extract.runner import check_sources
from .parts import Parts, new_memory
from .records import Memory, Turn, WriteResult, check_types
from .rows import NewMemory, entities

if TYPE_CHECKING:
    from .seam import PreparedRows

FACT_CONVERSATION = "facts"  # the conversation id of fact and procedure memories
DEFAULT_CONVERSATION = "memories"  # ... of ``remember`` without one
ADOPT_SLACK = 1_000  # labels adoption may re-check on open before it records its mark


def unit(name: str, value: float) -> float:
    """``value`` as a float from 0 to 1, else InvalidArgumentError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidArgumentError(f"{name} must be a number from 0 to 1, got {value!r}")
    return float(value)


def turn_memory(prepared: PreparedRows, i: int, meta: NewMemory) -> Memory:
    """The memory a write just made, as ``get`` would read it (for the hot tier)."""
    e = prepared.entries[i]
    created = e.created_at or from_us(prepared.now_us)
    return Memory(
        id=prepared.ids[i],
        type=meta.type,  # type: ignore[arg-type]
        content=e.content,
        role=e.role,
        conversation_id=e.conversation_id,
        speaker=meta.speaker,
        created_at=created,
        expires_at=e.expires_at,
        confidence=meta.confidence,
        importance=meta.importance,
        salience=fsrs.text_salience(e.content, meta.importance),
        stability_days=meta.stability,
        difficulty=meta.difficulty,
        last_review=created,
        access_count=0,
        archived=False,
        about=entities(meta.speaker, meta.speaker_key, meta.about),
        metadata=dict(e.metadata),
        kind=e.kind,
    )


class Writes:
    """The write path of one agent memory's scope. ``hot`` is told of every batch of
    turns committed; ``after_commit`` (the background extraction's queue, when there is
    one) gets the ids of the turns each batch wrote, after their commit."""

    def __init__(self, parts: Parts, hot: HotTier) -> None:
        self._p = parts
        self._hot = hot
        self.after_commit: Callable[[list[str]], None] | None = None

    # ------------------------------------------------------------------ shared by writes
    def entry(
        self,
        content: str,
        *,
        role: str,
        conversation_id: str,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        vector: Any = None,
    ) -> MemoryEntry:
        """The store's entry of one memory of this scope (``vector``: the caller's, to
        name its model)."""
        return MemoryEntry(
            content,
            role=role,
            conversation_id=conversation_id,
            org_id=self._p.org_id,
            agent_id=self._p.agent_id,
            created_at=created_at,
            expires_at=expires_at,
            metadata=dict(metadata or {}),
            embedding_model=self.vector_model(None if vector is None else [vector]),
        )

    def vector_model(self, vectors: Sequence[Any] | None) -> str | None:
        """The model id recorded for caller-given ``vectors`` (None: the store embeds)."""
        if vectors is None:
            return None
        return self._p.store.embedder.model_id if self._p.store.embedder else "caller"

    def new(self, type_: str, **kw: Any) -> NewMemory:
        """The layer's attributes of a new memory of ``type_`` (``parts.new_memory``)."""
        return new_memory(self._p.config, type_, **kw)

    def expiry(self, ttl: timedelta | float | None) -> datetime | None:
        """When a memory written now with ``ttl`` expires (None: never)."""
        if ttl is None:
            return None
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not (0 < seconds <= MAX_TTL_SECONDS)
        ):
            raise InvalidArgumentError(
                f"ttl must be a positive duration up to 100 years, got {ttl!r}"
            )
        return later(self._p.now(), timedelta(seconds=seconds), "ttl")

    # ------------------------------------------------------------------ turns
    def add_turns(
        self,
        conversation_id: str,
        turns: Sequence[Turn],
        vectors: Sequence[Any] | None,
        about: Sequence[str],
    ) -> list[str]:
        """``AgentMemory.add_turns``: all or none, in one transaction."""
        p = self._p
        check_text("conversation_id", conversation_id)
        model = self.vector_model(vectors)
        # One pass builds each turn's entry, and one layer record per speaker: a turn's
        # layer attributes depend on nothing else (this loop is most of a batch's Python).
        entries: list[MemoryEntry] = []
        metas: list[NewMemory] = []
        by_speaker: dict[str | None, NewMemory] = {}
        org, agent = p.org_id, p.agent_id
        for t in turns:
            if not isinstance(t, Turn):
                raise InvalidArgumentError(f"turns must be Turn records, got {type(t).__name__}")
            entries.append(
                MemoryEntry(
                    t.content,
                    role=t.role,
                    conversation_id=conversation_id,
                    org_id=org,
                    agent_id=agent,
                    created_at=t.created_at,
                    metadata=dict(t.metadata) if t.metadata else {},
                    embedding_model=model,
                )
            )
            meta = by_speaker.get(t.speaker)
            if meta is None:
                meta = by_speaker[t.speaker] = self.new("episodic", speaker=t.speaker, about=about)
            metas.append(meta)
        prepared = p.store.prepare(entries, vectors)
        repo = p.repo
        with repo.transaction() as tx:
            before = repo.feed_seq(tx)
            written = repo.insert(tx, prepared, metas)
            after = repo.feed_seq(tx)
        if written:
            order: Sequence[int] = range(len(written))  # indices of the turns written
            if len(written) < len(prepared.ids):  # identical re-sends were skipped
                at = {mid: i for i, mid in enumerate(prepared.ids)}
                order = [at[mid] for mid, _ in written]
            default = from_us(prepared.now_us)

            def tail(n: int) -> tuple[list[Memory], Memory | None]:
                tools = [i for i in order if prepared.entries[i].role == "tool"]
                return (
                    [turn_memory(prepared, i, metas[i]) for i in order[-n:]],
                    turn_memory(prepared, tools[-1], metas[tools[-1]]) if tools else None,
                )

            self._hot.appended(
                conversation_id,
                before,
                after,
                min(prepared.entries[i].created_at or default for i in order),
                tail,
            )
            if self.after_commit is not None:  # after the commit: durable before queued
                self.after_commit([mid for mid, _ in written])
        return prepared.ids

    # ------------------------------------------------------------------ notes
    def remember(
        self,
        content: str,
        *,
        type_: str,
        confidence: float,
        importance: float,
        about: Sequence[str],
        metadata: Mapping[str, Any] | None,
        ttl: timedelta | float | None,
        conversation_id: str | None,
        vector: Any,
        sources: Sequence[str],
    ) -> WriteResult:
        """``AgentMemory.remember``: an identical memory of the same type is a no-op."""
        p = self._p
        check_types(type_)
        sources = check_sources(sources)
        entry = self.entry(
            content,
            role="memory",
            conversation_id=conversation_id or DEFAULT_CONVERSATION,
            expires_at=self.expiry(ttl),
            metadata=metadata,
            vector=vector,
        )
        meta = self.new(
            type_,
            importance=unit("importance", importance),
            confidence=unit("confidence", confidence),
            about=about,
        )
        fingerprint = entry.fingerprint()
        repo = p.repo
        dup = repo.find_duplicate(fingerprint, type_)  # before embedding: cheap no-op
        if dup is not None:
            return WriteResult(dup, "duplicate")
        prepared = p.store.prepare([entry], None if vector is None else [vector])
        with repo.transaction() as tx:
            # Again under the write lock: another writer may have stored it meanwhile.
            if (dup := repo.find_duplicate(fingerprint, type_, tx)) is not None:
                return WriteResult(dup, "duplicate")
            repo.insert(tx, prepared, [meta])
            if sources:  # in the write's transaction: never a derived row without them
                repo.add_sources(tx, prepared.ids[0], sources)
            if type_ == "semantic":
                repo.append_history(
                    tx, p.now_us(), [("remember", prepared.ids[0], {"confidence": confidence})]
                )
        return WriteResult(prepared.ids[0], "created")

    # ------------------------------------------------------------------ adoption
    def adopt(self) -> None:
        """Give this scope's memories written below the layer (``SqliteMemoryStore``,
        ``agentzero memory append``) their layer rows: episodic, as if ``add_turn`` had
        written them, so recall, context and consolidation see them too."""
        repo = self._p.repo
        while True:
            rows, after, top = repo.unadopted()
            if rows:
                metas = [self.new("episodic")] * len(rows)
                repo.adopt(rows, metas, rows[-1][0])
                continue
            if top - after > ADOPT_SLACK:  # let the next open skip what this one checked
                repo.adopt([], [], top)
            return
