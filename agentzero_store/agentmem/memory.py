"""``AgentMemory``: an agent's memory on the encrypted store — episodic turns, semantic
facts that supersede, procedures with a reliability, FSRS decay, consolidation, archive,
forget with undo and erase. No LLM anywhere on the write or read path.

The facade holds no SQL (``repository``) and no math (``fsrs``, ``dedup``); recall is in
``recall``, the lifecycle operations (forget, undo, erase, archive) in ``lifecycle``,
consolidation in ``consolidate``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..base.config import StoreConfig
from ..base.errors import AccessDeniedError, InvalidArgumentError, NotFoundError
from ..base.limits import (
    MAX_TTL_SECONDS,
    check_limit,
    check_optional_time,
    check_text,
    later,
)
from ..base.modes import Mode
from ..embed.vectors import Embedder
from ..memory.backfill import warn_without_embedder
from ..memory.batch import new_ids
from ..memory.choose import open_memory_store
from ..memory.postgres.store import PgMemoryStore
from ..memory.postgres.write import Batch
from ..memory.records import KINDS, MemoryEntry, Scope, from_us, text_fingerprint, to_us
from ..memory.sqlite.store import SqliteMemoryStore
from ..memory.sqlite.write import Prepared
from . import context as ctx
from . import fsrs
from . import namespaces as ns
from .backends import side_of
from .consolidation.consolidate import consolidate
from .context import (
    Budget,
    ContextItem,
    ContextPack,
    HotTier,
    TurnSummarizer,
    extractive,
    spaced,
)
from .extract import Extractor, ExtractReport, RuleExtractor
from .extract.runner import Background, check_mode, check_sources, run, turns_of
from .lifecycle import Lifecycle
from .names import resolve
from .parts import Parts, new_memory
from .recall.search import Recaller
from .records import (
    EDGE_TYPES,
    ConsolidationReport,
    Edge,
    EraseReport,
    Fact,
    ForgetReceipt,
    HistoryEntry,
    Memory,
    Procedure,
    RecallHit,
    Turn,
    WriteResult,
    check_types,
    entity_key,
)
from .sqlite.repository import Filter, NewMemory, entities
from .tokens import count_tokens

if TYPE_CHECKING:
    from .postgres.archive import PgArchive
    from .postgres.repository import PgRepository
    from .sqlite.archive import Archive
    from .sqlite.repository import SqliteRepository

Clock = Callable[[], datetime]
Archived = Literal["exclude", "include", "only"]  # which memories ``memories`` lists
DAY_US = 86_400 * 1_000_000
FACT_CONVERSATION = "facts"  # the conversation id of fact and procedure memories
DEFAULT_CONVERSATION = "memories"  # ... of ``remember`` without one
ADOPT_SLACK = 1_000  # labels adoption may re-check on open before it records its mark


def _unit(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidArgumentError(f"{name} must be a number from 0 to 1, got {value!r}")
    return float(value)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class AgentMemory:
    """The memory of one agent (``org_id``, ``agent_id``) in a data dir or a PostgreSQL
    database (``open``)."""

    def __init__(
        self,
        store: SqliteMemoryStore | PgMemoryStore,
        org_id: str,
        agent_id: str,
        *,
        own_store: bool,
        namespace: str | None = None,
        session: str | None = None,
    ) -> None:
        self.store = store
        self.config: StoreConfig = store.config
        self.org_id = org_id
        self.agent_id = agent_id  # who acts; the data's scope is ``scope_agent``
        self.shared_namespace = namespace  # the namespace this handle reads and writes
        self.session = session
        if namespace is not None:
            self.scope_agent = ns.scope_agent(namespace)
        elif session is not None:
            self.scope_agent = ns.session_agent(agent_id, session)
        else:
            self.scope_agent = agent_id
        self._own_store = own_store
        self._clock: Clock = store.clock
        self._side = side_of(store)
        # The scope's repository and archive live only in the gate, which checks the
        # grant whenever either is read (``namespaces.ScopeGate``).
        self.gate = ns.ScopeGate(
            self._side.repository(org_id, self.scope_agent),
            self._side.archive(org_id, self.scope_agent),
            Scope(org_id, self.scope_agent),
            namespace,
            agent_id,
        )
        self._hot = HotTier(self.config.hot_turns)
        self._tokens = Budget(store.embedder)
        self._accesses: list[tuple[str, int]] = []
        parts = Parts(
            store,
            self._side,
            self.gate,
            self.config,
            self._clock,
            org_id,
            self.scope_agent,
        )
        self._life = Lifecycle(parts)
        self._recaller = Recaller(parts, self._life.hydrate)
        self._parts = parts
        self._closed = False
        self.extractor: Extractor | None = None  # see ``open``
        self.extract_mode = "manual"
        self._background: Background | None = None

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        passphrase: str | None = None,
        key: bytes | str | None = None,
        key_file: Path | str | None = None,
        org_id: str = "default",
        agent_id: str = "default",
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        config: StoreConfig | None = None,
        create: bool = True,
        prompt: bool | None = None,
        hnsw: bool = True,
        namespace: str | None = None,
        extractor: Extractor | None = None,
        extract: str = "consolidate",
    ) -> AgentMemory:
        """Open the agent memory of (``org_id``, ``agent_id``) in ``data_dir``: the same
        data dir, key and ``memory.db`` as ``SqliteMemoryStore``; or, given a PostgreSQL
        URL (``postgresql://user@host/db``), in that database, the same store as
        ``PgMemoryStore`` (every text sealed on this client). ``clock`` returns the
        aware current time (injected so decay and TTL are testable without sleeping).
        ``namespace``: read and write that shared namespace instead, as ``agent_id``;
        AccessDeniedError unless it owns it or is granted it (checked on every call).

        ``create``: like every embeddable store, the first open of a data dir (or an
        empty database) creates the store there. ``create=False`` opens an existing
        store only: a data dir that holds none raises ``StoreNotFoundError`` (with a
        hint) and creates nothing, so a mistyped path is caught rather than answered
        from a new, empty store. The ``agentzero`` command always opens with
        ``create=False`` (``agentzero init`` creates a store).

        ``extractor`` (``RuleExtractor``, ``LLMExtractor``, any ``Extractor``) turns what
        speakers state about themselves into facts: on ``extract()``, and, by
        ``extract``, also at every ``consolidate()`` (``"consolidate"``) or, in
        addition, on a worker thread after each ``add_turns`` (``"background"``; the
        write never waits on it); ``"manual"``: only on ``extract()``.
        """
        check_mode(extract)
        for name, v in (("org_id", org_id), ("agent_id", agent_id)):
            ns.check_name(name, v)
        if namespace is not None:
            ns.check_name("namespace", namespace)
        store = open_memory_store(
            data_dir,
            passphrase=passphrase,
            key=key,
            key_file=key_file,
            embedder=embedder,
            create=create,
            config=config,
            clock=clock,
            prompt=prompt,
            hnsw=hnsw,
        )
        try:
            org_id, agent_id = _scope_names(store, org_id, agent_id)
            if namespace is not None:
                scope = (org_id, ns.scope_agent(namespace))
                (namespace,) = resolve([("namespace", namespace)], lambda: _holds(store, *scope))
            mem = cls(store, org_id, agent_id, own_store=True, namespace=namespace)
            mem.gate.migrate()
            mem.gate.check()
            mem._life.check_archive()
            mem._life.finish_pending_erase()
            mem._adopt()
            mem.extractor = extractor
            mem.extract_mode = extract if extractor is not None else "manual"
            if mem.extract_mode == "background":
                mem._background = Background(mem)
        except BaseException:
            store.close()
            raise
        if embedder is None and (model := store.embedding_info()[0]) is not None:
            warn_without_embedder(model)
        return mem

    @property
    def repo(self) -> SqliteRepository | PgRepository:
        """The repository of this handle's scope (all its SQL), through ``gate``: on a
        namespace handle every read of it checks the grant first."""
        return self.gate.repo

    @property
    def archive_file(self) -> Archive | PgArchive:
        """The archive of this handle's scope, through ``gate`` (the grant checked)."""
        return self.gate.archive

    def _adopt(self) -> None:
        """Give this scope's memories written below the layer (``SqliteMemoryStore``,
        ``agentzero memory append``) their layer rows: episodic, as if ``add_turn`` had
        written them, so recall, context and consolidation see them too."""
        while True:
            rows, after, top = self.repo.unadopted()
            if rows:
                metas = [self._new("episodic")] * len(rows)
                self.repo.adopt(rows, metas, rows[-1][0])
                continue
            if top - after > ADOPT_SLACK:  # let the next open skip what this one checked
                self.repo.adopt([], [], top)
            return

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Write buffered accesses and close (the store too, if this opened it). Closing
        never needs the grant: on a handle whose namespace was revoked, the buffered
        accesses are dropped (they are the namespace's rows to write no more) and an
        unfinished erase is left to the next open of the namespace, which finishes it."""
        if not self._closed:
            if self._background is not None:  # what was queued is read before closing
                self._background.stop()
                self._background = None
            try:
                with contextlib.suppress(AccessDeniedError):
                    self.flush()
                    if self._life.erase_unfinished:
                        # A concurrent reader kept an erase from emptying the WAL: try again.
                        self._life.finish_pending_erase()
            finally:
                self._closed = True
                self._accesses = []
                self.gate.close()
                if self._own_store:
                    self.store.close()

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def now(self) -> datetime:
        """The injected clock's time."""
        return self._clock()

    def now_us(self) -> int:
        """The injected clock's time in µs since the epoch."""
        return to_us(self._clock())

    # ------------------------------------------------------------------ writes
    def _new(self, type_: str, **kw: Any) -> NewMemory:
        return new_memory(self.config, type_, **kw)

    @staticmethod
    def _turn_memory(prepared: Prepared | Batch, i: int, meta: NewMemory) -> Memory:
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

    def _entry(
        self,
        content: str,
        *,
        role: str,
        conversation_id: str,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        vector_model: str | None = None,
    ) -> MemoryEntry:
        return MemoryEntry(
            content,
            role=role,
            conversation_id=conversation_id,
            org_id=self.org_id,
            agent_id=self.scope_agent,
            created_at=created_at,
            expires_at=expires_at,
            metadata=dict(metadata or {}),
            embedding_model=vector_model,
        )

    def _vector_model(self, vectors: Sequence[Any] | None) -> str | None:
        if vectors is None:
            return None
        return self.store.embedder.model_id if self.store.embedder else "caller"

    def add_turn(
        self,
        conversation_id: str,
        role: str,
        content: str,
        *,
        speaker: str | None = None,
        created_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        about: Sequence[str] = (),
        vector: Any = None,
    ) -> str:
        """Remember one message of a conversation as an episodic memory; returns its id.

        Durable when it returns. ``vector``: a caller-computed embedding (else the
        store's embedder embeds ``content``, if it has one).
        """
        turn = Turn(role, content, speaker, created_at, metadata or {})
        vectors = None if vector is None else [vector]
        return self.add_turns(conversation_id, [turn], vectors=vectors, about=about)[0]

    def add_turns(
        self,
        conversation_id: str,
        turns: Sequence[Turn],
        *,
        vectors: Sequence[Any] | None = None,
        about: Sequence[str] = (),
    ) -> list[str]:
        """Remember many turns in one transaction (all or none); returns their ids."""
        check_text("conversation_id", conversation_id)
        model = self._vector_model(vectors)
        # One pass builds each turn's entry, and one layer record per speaker: a turn's
        # layer attributes depend on nothing else (this loop is most of a batch's Python).
        entries: list[MemoryEntry] = []
        metas: list[NewMemory] = []
        by_speaker: dict[str | None, NewMemory] = {}
        org, agent = self.org_id, self.scope_agent
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
                meta = by_speaker[t.speaker] = self._new("episodic", speaker=t.speaker, about=about)
            metas.append(meta)
        prepared = self.store.prepare(entries, vectors)
        with self.repo.transaction() as tx:
            before = self.repo.feed_seq(tx)
            written = self.repo.insert(tx, prepared, metas)
            after = self.repo.feed_seq(tx)
        if written:
            order: Sequence[int] = range(len(written))  # indices of the turns written
            if len(written) < len(prepared.ids):  # identical re-sends were skipped
                at = {mid: i for i, mid in enumerate(prepared.ids)}
                order = [at[mid] for mid, _ in written]
            default = from_us(prepared.now_us)

            def tail(n: int) -> tuple[list[Memory], Memory | None]:
                tools = [i for i in order if prepared.entries[i].role == "tool"]
                return (
                    [self._turn_memory(prepared, i, metas[i]) for i in order[-n:]],
                    self._turn_memory(prepared, tools[-1], metas[tools[-1]]) if tools else None,
                )

            self._hot.appended(
                conversation_id,
                before,
                after,
                min(prepared.entries[i].created_at or default for i in order),
                tail,
            )
            if self._background is not None:  # after the commit: durable before queued
                self._background.submit([mid for mid, _ in written])
        return prepared.ids

    def remember(
        self,
        content: str,
        *,
        type: str = "semantic",  # noqa: A002 - the issue's name for it
        confidence: float = 1.0,
        importance: float = 0.5,
        about: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        ttl: timedelta | float | None = None,
        conversation_id: str | None = None,
        vector: Any = None,
        sources: Sequence[str] = (),
    ) -> WriteResult:
        """Remember a note of any type. An identical memory of the same type in this
        scope makes it a no-op: ``WriteResult(id_of_that_one, "duplicate")``.
        ``sources``: the ids of the memories it was derived from (``Memory.sources``:
        forgetting or erasing one of them takes this one along)."""
        check_types(type)
        sources = check_sources(sources)
        entry = self._entry(
            content,
            role="memory",
            conversation_id=conversation_id or DEFAULT_CONVERSATION,
            expires_at=self._expiry(ttl),
            metadata=metadata,
            vector_model=self._vector_model(None if vector is None else [vector]),
        )
        meta = self._new(
            type,
            importance=_unit("importance", importance),
            confidence=_unit("confidence", confidence),
            about=about,
        )
        fingerprint = entry.fingerprint()
        dup = self.repo.find_duplicate(fingerprint, type)  # before embedding: cheap no-op
        if dup is not None:
            return WriteResult(dup, "duplicate")
        prepared = self.store.prepare([entry], None if vector is None else [vector])
        with self.repo.transaction() as tx:
            # Again under the write lock: another writer may have stored it meanwhile.
            if (dup := self.repo.find_duplicate(fingerprint, type, tx)) is not None:
                return WriteResult(dup, "duplicate")
            self.repo.insert(tx, prepared, [meta])
            if sources:  # in the write's transaction: never a derived row without them
                self.repo.add_sources(tx, prepared.ids[0], sources)
            if type == "semantic":
                self.repo.append_history(
                    tx, self.now_us(), [("remember", prepared.ids[0], {"confidence": confidence})]
                )
        return WriteResult(prepared.ids[0], "created")

    def _expiry(self, ttl: timedelta | float | None) -> datetime | None:
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
        return later(self.now(), timedelta(seconds=seconds), "ttl")

    # ------------------------------------------------------------------ facts
    def assert_fact(
        self,
        subject: str,
        predicate: str,
        object: str,  # noqa: A002 - subject, predicate, object
        *,
        confidence: float = 0.9,
        single_valued: bool = True,
        valid_from: datetime | None = None,
        vector: Any = None,
        core: bool = False,
        sources: Sequence[str] = (),
    ) -> WriteResult:
        """Believe (subject, predicate, object). For a ``single_valued`` (subject,
        predicate), a new object closes the facts it replaces (``valid_to``) and links
        them with ``supersedes`` edges: ``WriteResult(..., superseded=[ids])``. The same
        triple again is a ``duplicate``, or ``updated`` if only its confidence changed.
        Every change is appended to the belief history. ``core``: the fact loads at
        every spawn (``context``, ``core_facts``) instead of only when recalled.
        ``sources``: the ids of the memories (turns) it was derived from, as for
        ``remember``; a duplicate adds none (it stands on what it stood on)."""
        result = self._assert_fact(
            subject,
            predicate,
            object,
            confidence=confidence,
            single_valued=single_valued,
            valid_from=valid_from,
            vector=vector,
            sources=check_sources(sources),
        )
        if core:
            self.repo.set_core([result.id], self.now_us(), "asserted")
        return result

    def _assert_fact(
        self,
        subject: str,
        predicate: str,
        object: str,  # noqa: A002 - subject, predicate, object
        *,
        confidence: float,
        single_valued: bool,
        valid_from: datetime | None,
        vector: Any,
        sources: Sequence[str] = (),
    ) -> WriteResult:
        parts = (subject, predicate, object)
        keys = (entity_key(subject), entity_key(predicate), entity_key(object))
        confidence = _unit("confidence", confidence)
        now_us = self.now_us()
        same = self._same_fact(self.repo.current_facts(keys[0], keys[1]), keys[2], confidence)
        if same is not None and same.status == "duplicate":
            return same  # before embedding: the common re-assert costs one read
        text = f"{subject} {predicate.replace('_', ' ')} {object}"
        start = check_optional_time("valid_from", valid_from) or self.now()
        entry = self._entry(
            text,
            role="fact",
            conversation_id=FACT_CONVERSATION,
            created_at=start,
            vector_model=self._vector_model(None if vector is None else [vector]),
        )
        meta = self._new("semantic", confidence=confidence, about=(subject, object))
        prepared = self.store.prepare([entry], None if vector is None else [vector])
        fid = prepared.ids[0]
        with self.repo.transaction() as tx:
            # Decided under the write lock: another writer may have changed the facts.
            current = self.repo.current_facts(keys[0], keys[1], tx)
            same = self._same_fact(current, keys[2], confidence)
            if same is not None:
                if same.status == "updated":
                    old = next(f for f in current if f.id == same.id)
                    self.repo.set_confidence(tx, old.id, confidence)
                    self.repo.append_history(
                        tx,
                        now_us,
                        [("confidence", old.id, {"from": old.confidence, "to": confidence})],
                    )
                return same
            closed = [f.id for f in current] if single_valued else []
            self.repo.insert(tx, prepared, [meta])
            self.repo.insert_fact(tx, fid, parts, keys, confidence, single_valued, to_us(start))
            if sources:
                self.repo.add_sources(tx, fid, sources)
            history: list[tuple[str, str, dict[str, Any]]] = [
                (
                    "assert",
                    fid,
                    {
                        "subject": subject,
                        "predicate": predicate,
                        "object": object,
                        "confidence": confidence,
                        **({"sources": list(sources)} if sources else {}),
                    },
                )
            ]
            for old_id in closed:
                self.repo.close_fact(tx, old_id, to_us(start), fid)
                history.append(("supersede", old_id, {"by": fid}))
            self.repo.add_edges(tx, [(fid, o, "supersedes", 1.0) for o in closed], now_us)
            self.repo.append_history(tx, now_us, history)
        return WriteResult(fid, "created", tuple(closed))

    @staticmethod
    def _same_fact(
        current: Sequence[Fact], object_key: str, confidence: float
    ) -> WriteResult | None:
        """The result of re-asserting a fact already believed: a duplicate, or an update of
        its confidence; None if ``object_key`` is not among ``current``."""
        for f in current:
            if entity_key(f.object) == object_key:
                status = "duplicate" if math.isclose(f.confidence, confidence) else "updated"
                return WriteResult(f.id, status)  # type: ignore[arg-type]
        return None

    def retract(self, fact_id: str) -> Fact:
        """Stop believing a fact (it is closed, kept in the history)."""
        f = self.repo.fact(check_text("fact id", fact_id))
        if f is None:
            raise NotFoundError(f"no fact {fact_id!r} in this scope")
        if f.current:
            now_us = self.now_us()
            with self.repo.transaction() as tx:
                self.repo.close_fact(tx, f.id, now_us, None)
                self.repo.append_history(tx, now_us, [("retract", f.id, {})])
        out = self.repo.fact(f.id)
        assert out is not None
        return out

    def facts(
        self,
        subject: str | None = None,
        predicate: str | None = None,
        *,
        as_of: datetime | None = None,
        history: bool = False,
    ) -> list[Fact]:
        """Facts believed now (or at ``as_of``), or every version (``history``)."""
        as_of = check_optional_time("as_of", as_of)
        return self.repo.facts(
            entity_key(subject) if subject is not None else None,
            entity_key(predicate) if predicate is not None else None,
            to_us(as_of) if as_of is not None else None,
            history,
        )

    def history(self, target: str | None = None, *, limit: int = 1_000) -> list[HistoryEntry]:
        """The belief history (append-only), of one memory or fact or of all."""
        return self.repo.history(target, check_limit(limit))

    # ------------------------------------------------------------------ procedures
    def record_outcome(
        self, action: str, *, success: bool, context: str | None = None, vector: Any = None
    ) -> Procedure:
        """Count one outcome of ``action`` (in ``context``); its reliability is the mean
        of Beta(successes + 1, failures + 1)."""
        if not isinstance(success, bool):
            raise InvalidArgumentError("success must be True or False")
        keys = (entity_key(action), entity_key(context) if context else "")
        now_us = self.now_us()
        text = action if not context else f"{action} (context: {context})"

        def prepare() -> Prepared | Batch:
            entry = self._entry(
                text,
                role="procedure",
                conversation_id=FACT_CONVERSATION,
                vector_model=self._vector_model(None if vector is None else [vector]),
            )
            return self.store.prepare([entry], None if vector is None else [vector])

        # A new action's text is embedded before the write lock is taken.
        prepared = prepare() if self.repo.procedure_by_key(*keys) is None else None
        with self.repo.transaction() as tx:
            found = self.repo.procedure_by_key(*keys, tx)  # under the write lock
            if found is not None:
                self.repo.count_outcome(tx, found.id, success, now_us)
            else:  # new, or forgotten since the first look (rare: embedded under the lock)
                prepared = prepared or prepare()
                self.repo.insert(tx, prepared, [self._new("procedural")])
                self.repo.insert_procedure(
                    tx, prepared.ids[0], action, context, keys, success, now_us
                )
        out = self.repo.procedure_by_key(*keys)
        assert out is not None
        return out

    def best_procedures(
        self, query: str, k: int = 3, *, mode: Mode | None = None
    ) -> list[Procedure]:
        """The procedures most relevant to ``query``, best first: relevance (recall's
        fused score, relative to the best) times reliability."""
        k = check_limit(k, "k")
        hits = self.recall(query, k=max(4 * k, 20), mode=mode, types=["procedural"], log=False)
        procs = self.repo.procedures([h.id for h in hits])
        top = hits[0].score if hits else 1.0
        scored = [
            (h.score / top * procs[h.id].reliability, i, procs[h.id])
            for i, h in enumerate(hits)
            if h.id in procs
        ]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [p for _, _, p in scored[:k]]

    # ------------------------------------------------------------------ reads
    def recall(
        self,
        query: str,
        k: int = 10,
        *,
        mode: Mode | None = None,
        types: Sequence[str] | str | None = None,
        about: Sequence[str] | str | None = None,
        as_of: datetime | None = None,
        include_archived: bool = False,
        explain: bool = False,
        log: bool = True,
        weights: Mapping[str, float] | None = None,
    ) -> list[RecallHit]:
        """The ``k`` memories most relevant to ``query`` in this scope, best first.

        ``mode`` (``base.modes``; ``bm25`` is an alias of ``keyword``): ``auto`` (the
        default; keyword alone without an embedder) fuses
        every signal that tells this query's candidates apart with weighted RRF —
        semantic and keyword search, the turns next to the best hits (temporal spreading
        activation), entities the query names, the asked-for memory type, the time the
        query names (``when``: "last May", "3 days ago" against ``created_at``),
        confidence, access history and surprise (off by default; see ``signals``); a
        list that does not tell the candidates apart is dropped; ``semantic``,
        ``keyword`` and ``hybrid`` (the
        first two, weighted) are single stages. ``explain=True`` gives each hit's rank,
        weight and share per signal. ``weights`` overrides the ``StoreConfig`` weight of
        any of the auto signals (``SIGNALS``) for this call; 0 leaves a signal out.
        ``types``/``about`` filter; ``as_of`` sees facts
        valid then and memories made by then; archived memories only with
        ``include_archived`` (their text is read back from the archive). Never returns
        another scope's, an expired, a forgotten or an erased memory. Each returned
        memory's access is logged (cheaply, buffered); that never strengthens it (only
        ``feedback`` does).
        """
        hits = self._recaller.recall(
            query,
            k,
            mode=mode,
            types=check_types(types),
            about=(about,) if isinstance(about, str) else about,
            as_of=check_optional_time("as_of", as_of),
            include_archived=include_archived,
            explain=explain,
            weights=weights,
        )
        if log and hits:
            at = self.now_us()
            self._accesses.extend((h.id, at) for h in hits)
            if len(self._accesses) >= self.config.access_flush_every:
                self.flush()
        return hits

    def flush(self) -> None:
        """Write the buffered access log (also done on close and every
        ``access_flush_every`` accesses; a crash loses at most those, never a memory)."""
        repo = self.repo  # checked before the buffer is taken: a refusal loses nothing
        if self._accesses:
            pending, self._accesses = self._accesses, []
            with repo.transaction() as tx:
                repo.log_access(tx, pending)

    def get(self, memory_id: str) -> Memory | None:
        """One memory of this scope (its text read back from the archive if archived),
        or None (also when forgotten, erased, expired or another scope's)."""
        row = self.repo.by_id(check_text("id", memory_id), self.now_us())
        return None if row is None else self._life.hydrate([row])[0]

    def _require(self, memory_id: str) -> Memory:
        m = self.get(memory_id)
        if m is None:
            raise NotFoundError(f"no memory {memory_id!r} in this scope")
        return m

    def accesses(self, memory_id: str) -> list[datetime]:
        """When recalls returned this memory (the logged ones), oldest first."""
        self.flush()
        return [from_us(t) for t in self.repo.accesses(self._require(memory_id).id)]

    def memories(
        self,
        *,
        kind: str | None = None,
        types: Sequence[str] | str | None = None,
        conversation_id: str | None = None,
        about: str | None = None,
        archived: Archived = "exclude",
        limit: int = 50,
        offset: int = 0,
    ) -> list[Memory]:
        """This scope's memories, newest first, ``limit`` at a time from ``offset`` (a
        listing, not a search: ``recall`` ranks). Filters: the stored ``kind`` (granted,
        recalled, self_noted, archived — how it came to be remembered), ``types``
        (episodic, semantic, procedural), ``conversation_id``, ``about`` (an entity, its
        spelling folded as everywhere: the memories about it or said by it).
        ``archived``: ``exclude`` (the default), ``include`` or ``only``; archived text is
        read back from the archive, as ``get`` does. Never lists another scope's, an
        expired, a forgotten or an erased memory, nor a superseded or retracted fact
        (``facts(history=True)`` shows those). Named ``memories``, not ``list``: a method
        ``list`` would shadow the builtin in every annotation of this class."""
        if kind is not None and kind not in KINDS:
            raise InvalidArgumentError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
        if archived not in ("exclude", "include", "only"):
            raise InvalidArgumentError(
                f"archived must be exclude, include or only; got {archived!r}"
            )
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < 2**62:
            raise InvalidArgumentError(
                f"offset must be a whole number >= 0, got {offset!r}",
                hint="the offset of the next page is this one's offset plus its length",
            )
        if conversation_id is not None:
            check_text("conversation_id", conversation_id)
        f = Filter(
            now_us=self.now_us(),
            types=check_types(types),
            about=None if about is None else (entity_key(check_text("about", about)),),
            include_archived=archived != "exclude",
        )
        rows = self.repo.page(
            f,
            kind=kind,
            conversation_id=conversation_id,
            archived_only=archived == "only",
            limit=check_limit(limit),
            offset=offset,
        )
        return self._life.hydrate(rows)

    def adopt(self) -> None:
        """Adopt now what was written below the layer since ``open`` adopted (rows of
        ``SqliteMemoryStore.append``, ``agentzero memory append``, the ``memory_append``
        tool): for a handle that stays open beside such writers, like the MCP server's."""
        self._adopt()

    def for_scope(self, org_id: str, agent_id: str) -> AgentMemory:
        """The memory of another (``org_id``, ``agent_id``) over this handle's store (one
        connection and HNSW index; close it when done, the store stays open): for a host
        serving several tenants, like an MCP server left unpinned. The names are checked
        as ``open`` checks them (no control character reaches a namespace's or a
        session's scope), and what was written below the layer there is adopted."""
        self.gate.check()  # a revoked handle opens nothing more
        org_id, agent_id = _scope_names(self.store, org_id, agent_id)
        mem = AgentMemory(self.store, org_id, agent_id, own_store=False)
        try:
            mem._adopt()
        except BaseException:
            mem.close()
            raise
        return mem

    # ------------------------------------------------------------------ decay
    def _elapsed_days(self, m: Memory, at: datetime) -> float:
        return (at - m.last_review).total_seconds() / 86_400

    def _retrievability(self, m: Memory, at: datetime) -> float:
        s_eff = fsrs.effective_stability(m.stability_days, m.salience, self.config.salience_beta)
        return fsrs.retrievability(self._elapsed_days(m, at), s_eff)

    def retrievability(self, memory_id: str, at: datetime | None = None) -> float:
        """FSRS retrievability R of a memory now (or at ``at``): 0.9 after its
        (salience-stretched) stability, 0.5 after nine times that."""
        at = check_optional_time("at", at)
        return self._retrievability(self._require(memory_id), at or self.now())

    def feedback(self, memory_id: str, *, used: bool = True) -> Memory:
        """Say whether a recalled memory was used. Only ``used=True`` strengthens it
        (FSRS stability grows, the more the longer since its last review); unused, it
        gets harder (FSRS difficulty up). Recall alone never strengthens a memory."""
        if not isinstance(used, bool):
            raise InvalidArgumentError("used must be True or False")
        m = self._require(memory_id)
        now = self.now()
        d = fsrs.difficulty_after(m.difficulty, used)
        s = m.stability_days
        review = m.last_review
        if used:
            s = fsrs.stability_after_recall(s, m.difficulty, self._retrievability(m, now))
            review = max(now, m.last_review)
        with self.repo.transaction() as tx:
            self.repo.set_review(tx, m.id, s, d, to_us(review))
        return self._require(memory_id)

    def importance(self, memory_id: str) -> float:
        """TnsAI-style importance in [0, 1] from recency, access frequency,
        distinctiveness (salience) and the importance the writer gave."""
        m = self._require(memory_id)
        days = max(0.0, (self.now() - m.created_at).total_seconds() / 86_400)
        self.flush()
        return fsrs.importance_score(days, m.access_count, m.salience, m.importance)

    def prune(self, max_tokens: int, *, dry_run: bool = False) -> list[str]:
        """Archive the least important memories until the live ones fit in
        ``max_tokens`` (TnsAI's prune, but soft: ``restore`` brings any back). Tokens are
        counted by ``tokens.count_tokens`` (the embedder's tokenizer, else 4/3 a word); importance
        is ``importance()``'s score, recency counted from the last access. Returns the
        ids archived (with ``dry_run``, that would be), least important first."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise InvalidArgumentError(
                f"max_tokens must be a whole number >= 0, got {max_tokens!r}"
            )
        self.flush()
        now_us = self.now_us()
        scored = []
        total = 0
        live = self.repo.live_texts()
        counts = count_tokens([r[1] for r in live], self.store.embedder)
        for (mid, _, created, last, count, sal, imp), tokens in zip(live, counts, strict=True):
            total += tokens
            days = max(0.0, (now_us - (last or created)) / DAY_US)
            scored.append((fsrs.importance_score(days, count, sal, imp), created, mid, tokens))
        scored.sort()
        drop: list[str] = []
        for _, _, mid, tokens in scored:
            if total <= max_tokens:
                break
            drop.append(mid)
            total -= tokens
        if drop and not dry_run:
            self._life.archive(drop)
        return drop

    # ------------------------------------------------------------------ graph
    def link(
        self,
        src: str,
        dst: str,
        type: str = "causal",
        *,
        confidence: float = 1.0,  # noqa: A002
    ) -> None:
        """Add a typed edge between two memories of this scope."""
        if type not in EDGE_TYPES:
            raise InvalidArgumentError(f"edge type must be one of {', '.join(EDGE_TYPES)}")
        a, b = self._require(src), self._require(dst)
        with self.repo.transaction() as tx:
            self.repo.add_edges(
                tx, [(a.id, b.id, type, _unit("confidence", confidence))], self.now_us()
            )

    def edges(self, memory_id: str, *, at: datetime | None = None) -> list[Edge]:
        """Edges of a memory with their confidence decayed to ``at`` (default now):
        stored ones, entity links, and the implicit temporal edges to the turns just
        before and after it in its conversation."""
        m = self._require(memory_id)
        at = check_optional_time("at", at) or self.now()
        out = [self._edge(s, d, t, c, created, at) for s, d, t, c, created in self.repo.edges(m.id)]
        out += [
            self._edge(m.id, f"entity:{e}", "entity", 1.0, to_us(m.created_at), at) for e in m.about
        ]
        out += [
            self._edge(m.id, other, "temporal", 1.0, max(to_us(m.created_at), t), at)
            for other, t in self.repo.neighbours_in_conversation(m.id)
        ]
        return out

    def _edge(self, s: str, d: str, t: str, c: float, created_us: int, at: datetime) -> Edge:
        half_life = float(getattr(self.config, f"half_life_{t}_days"))
        age = max(0.0, (to_us(at) - created_us) / DAY_US)
        decayed = c * 0.5 ** (age / half_life) if half_life > 0 else c
        return Edge(s, d, t, decayed, from_us(created_us))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ lifecycle ops
    def archive(self, memory_id: str) -> bool:
        """Move a memory's text to the archive (soft: ``restore`` undoes it); recall
        finds it only with ``include_archived=True``. False if already archived."""
        return self._life.archive([self._require(memory_id).id]) == 1

    def restore(self, memory_id: str) -> bool:
        """Bring an archived memory's text back. False if it was not archived."""
        return self._life.restore(self._require(memory_id).id)

    def forget(
        self,
        *,
        id: str | None = None,  # noqa: A002 - the issue's name
        conversation_id: str | None = None,
        about: str | None = None,
    ) -> ForgetReceipt:
        """Soft-forget every memory chosen by exactly one of ``id``, ``conversation_id``
        or ``about``: gone from every recall path at once, recoverable with
        ``undo(receipt.token)`` until ``receipt.recoverable_until``. What was derived
        from them (``Memory.sources``: a promoted copy of a turn, say) goes with them,
        listed in ``receipt.derived``."""
        return self._life.forget(_selector(id, conversation_id, about))

    def undo(self, token: str) -> int:
        """Bring back what a forget removed (within its window); returns how many. A
        derived memory one of whose other sources another forget still hides stays
        hidden, and comes back with that forget's undo."""
        return self._life.undo(check_text("token", token))

    def erase(
        self,
        *,
        id: str | None = None,  # noqa: A002
        conversation_id: str | None = None,
        about: str | None = None,
    ) -> EraseReport:
        """Hard, irreversible erase (GDPR): the text leaves every place it exists — the
        memory row, the keyword index, the vectors and the HNSW checkpoint, the archive,
        the belief history and the undo area, and the old pages of memory.db and the
        archive. What was derived from them (``Memory.sources``) is erased with them
        (``report.derived``; the next ``consolidate`` derives again from the sources
        that remain, by its own rule). A content-free tombstone remains. If another
        process is reading an older snapshot, old pages can only go once it finishes:
        the report says ``pending`` and the next erase, ``close`` or open completes it."""
        return self._life.erase(_selector(id, conversation_id, about))

    def tombstones(self) -> list[dict[str, Any]]:
        """What erase removed in this scope (ids, counts and times, and the derived
        memories it took with them; never content)."""
        return self.repo.tombstones()

    # ------------------------------------------------------------------ tiers, context
    def pin(self, memory_id: str) -> None:
        """Pin a memory: it heads every ``context`` pack until unpinned. All pins of a
        scope share ``pin_budget_chars`` characters (a memory block's limit)."""
        m = self._require(memory_id)
        pinned = self.pinned()
        if any(p.id == m.id for p in pinned):
            return
        used = sum(len(p.content) for p in pinned)
        budget = self.config.pin_budget_chars
        if used + len(m.content) > budget:
            raise InvalidArgumentError(
                f"pinning {len(m.content)} more characters would exceed the pin budget"
                f" ({used} of {budget} used)",
                hint="unpin something first, or raise StoreConfig.pin_budget_chars",
            )
        self.repo.set_pin(m.id, self.now_us(), True)

    def unpin(self, memory_id: str) -> None:
        """Unpin a memory (a no-op if it was not pinned)."""
        self.repo.set_pin(check_text("id", memory_id), self.now_us(), False)

    def pinned(self) -> list[Memory]:
        """The pinned memories that are live, oldest pin first."""
        return self._by_labels(self.repo.pinned_labels())

    def core_facts(self) -> list[Memory]:
        """The core semantic memories (current facts only), loaded at every spawn."""
        return self._by_labels(self.repo.core_labels())

    def mark_core(self, memory_id: str, core: bool = True) -> None:
        """Make a semantic memory core (or, with ``core=False``, archival again)."""
        m = self._require(memory_id)
        if m.type != "semantic":
            raise InvalidArgumentError(f"only semantic memories can be core; {m.id} is {m.type}")
        self.repo.set_core([m.id], self.now_us(), "asserted" if core else None)

    def _by_labels(self, labels: Sequence[int]) -> list[Memory]:
        f = Filter(now_us=self.now_us(), include_archived=True)
        rows = self.repo.rows(labels, f)
        return self._life.hydrate([rows[lab] for lab in labels if lab in rows])

    def hot(self, conversation_id: str) -> list[Memory]:
        """The last ``hot_turns`` turns of a conversation, oldest first (from the hot
        tier: a cache checked against the change feed, see ``context``)."""
        return self._hot_tier(check_text("conversation_id", conversation_id))[0]

    def latest_tool_result(self, conversation_id: str) -> Memory | None:
        """The conversation's latest turn of role ``tool``, kept beside the hot turns even
        once newer turns have pushed it out of them."""
        return self._hot_tier(check_text("conversation_id", conversation_id))[1]

    def add_tool_result(self, conversation_id: str, tool: str, content: str) -> str:
        """Remember a tool's (or mesh peer's) result as a turn of role ``tool``."""
        return self.add_turn(conversation_id, "tool", content, speaker=check_text("tool", tool))

    def _hot_tier(self, conversation_id: str) -> tuple[list[Memory], Memory | None]:
        # The cache holds the scope's turns: serving it is reading the scope, and a
        # revoke moves no change feed that would invalidate it.
        self.gate.check()
        self._hot.valid_at(self._side.change_seq())
        cached = self._hot.get(conversation_id)
        if cached is not None:
            return cached
        turns = self._by_labels(self.repo.last_turns(conversation_id, self.config.hot_turns))
        tool = next((t for t in reversed(turns) if t.role == "tool"), None)
        if tool is None and (label := self.repo.latest_tool_turn(conversation_id)) is not None:
            # Kept beside the ring even once newer turns have pushed it out of it.
            tool = next(iter(self._by_labels([label])), None)
        self._hot.fill(conversation_id, turns, tool)
        return turns, tool

    def summarize(
        self, conversation_id: str, summarizer: TurnSummarizer | None = None
    ) -> tuple[str | None, list[str]]:
        """Make (or remake) the warm summary of a conversation's turns before its hot
        ones, kept ``warm_ttl_days``: the text of ``summarizer`` if given, else extractive
        (the ``warm_turns`` turns MMR picks). Returns (text or None, source ids)."""
        check_text("conversation_id", conversation_id)
        older = self._older_turns(conversation_id)
        if not older:
            return None, []
        now = self.now_us()
        expires = now + round(self.config.warm_ttl_days * DAY_US)
        if summarizer is not None:
            memories = self._by_labels([lab for lab, _ in older])
            text = summarizer.summarize(memories)
            if not isinstance(text, str):
                raise InvalidArgumentError("a Summarizer must return a str")
            sources = [m.id for m in memories]
        else:
            text = None
            sources = [older[i][1] for i in self._extract(older)]
        self.repo.put_summary(new_ids(1, now)[0], conversation_id, text, sources, now, expires)
        return text, sources

    def _older_turns(self, conversation_id: str) -> list[tuple[int, str]]:
        hot = self.repo.last_turns(conversation_id, self.config.hot_turns)
        return self.repo.turns_before(conversation_id, hot[0] if hot else None)

    def _extract(self, older: Sequence[tuple[int, str]]) -> list[int]:
        n = self.config.warm_turns
        labels = [lab for lab, _ in older]
        vectors = dict(zip(*self.repo.vectors_of(labels), strict=True)) if labels else {}
        if len(vectors) == len(labels) and labels:
            matrix = np.frombuffer(b"".join(vectors[lab] for lab in labels), dtype=np.float32)
            return extractive(matrix.reshape(len(labels), -1), n, self.config.warm_mmr_lambda)
        return spaced(len(labels), n)

    def _warm(self, conversation_id: str) -> list[ContextItem]:
        stored = self.repo.summary(conversation_id, self.now_us())
        if stored is not None:
            text, labels = stored
            if text is not None:
                return [ContextItem("warm", text, 0)]
            return ctx.items("warm", self._by_labels(labels))
        older = self._older_turns(conversation_id)
        if not older:
            return []
        picked = [older[i][0] for i in self._extract(older)]
        return ctx.items("warm", self._by_labels(picked))

    def context(
        self,
        conversation_id: str,
        query: str | None = None,
        max_tokens: int = 2000,
        *,
        recall_k: int = 10,
    ) -> ContextPack:
        """What to load for the next turn of a conversation, in priority order: pinned
        memories, core facts, the hot turns, the warm summary of earlier turns, then
        memories recalled for ``query`` (if given) — labelled, each memory once, never
        more than ``max_tokens`` (counted with the embedder's tokenizer when it has one,
        else estimated: ``ContextPack.counted_with`` says which)."""
        check_text("conversation_id", conversation_id)
        hot = self._hot_tier(conversation_id)[0]
        candidates: list[tuple[str, Sequence[ContextItem]]] = [
            ("pinned", ctx.items("pinned", self.pinned())),
            ("core", ctx.items("core", self.core_facts())),
            ("hot", ctx.items("hot", hot)),
            ("warm", self._warm(conversation_id)),
        ]
        if query is not None and query.strip():
            hits = self.recall(query, recall_k, log=False)
            candidates.append(("recalled", ctx.items("recalled", [h.memory for h in hits])))
        return ctx.pack(candidates, max_tokens, self._tokens, text_fingerprint)

    # ------------------------------------------------------------------ sharing, sessions
    def namespace(self, name: str) -> ns.Namespace:
        """The shared namespace ``name`` of this org, created (owned by this agent) on
        first use. AccessDeniedError if it exists and this agent neither owns it nor is
        granted it."""
        name = self._namespace_name(name)
        owner = self.repo.namespace_owner(name)
        if owner is None:
            owner = self.repo.create_namespace(name, self.agent_id, self.now_us())
        # Grants are managed as the acting agent: the handle holds that agent's own
        # repository, never this one's scope (a namespace's rows stay behind the gate).
        mine = self._side.repository(self.org_id, self.agent_id)
        handle = ns.Namespace(mine, name, self.agent_id, owner, self.now_us)
        if not handle.has_access(self.agent_id):
            raise AccessDeniedError(f"agent {self.agent_id!r} has no access to namespace {name!r}")
        return handle

    def _namespace_name(self, name: str) -> str:
        """``name``'s one spelling (``names.resolve``), or as given if a namespace exists
        under exactly that spelling."""
        (out,) = resolve([("namespace", name)], lambda: self.repo.namespace_owner(name) is not None)
        return out

    def _session_name(self, what: str, name: str) -> str:
        """``name``'s one spelling, or as given if this agent has a session spelled so."""
        (out,) = resolve([(what, name)], lambda: self.repo.session(name) is not None)
        return out

    def namespaces(self) -> list[ns.NamespaceInfo]:
        """The namespaces this agent owns or is granted."""
        return ns.namespaces_of(self.repo, self.agent_id)

    def shared(self, name: str) -> AgentMemory:
        """This agent's handle on namespace ``name`` (same store; close it when done).
        AccessDeniedError unless granted, on this call and every later one."""
        return self._sibling(namespace=self._namespace_name(name))

    def start_session(
        self, name: str, inherits_from: Sequence[str] = (), *, procedures: bool = False
    ) -> AgentMemory:
        """A session of this agent: a scope of its own that starts with the current core
        facts of ``inherits_from`` (sessions of this agent) copied in, and, with
        ``procedures``, their procedures' outcome counts. Belief history is never
        inherited. Starting a session that exists reopens it (no second copy)."""
        if self.shared_namespace is not None or self.session is not None:
            raise InvalidArgumentError("sessions start from an agent's own memory handle")
        name = self._session_name("session", name)
        parents = [self._session_name("inherits_from", p) for p in inherits_from]
        if name in parents:
            raise InvalidArgumentError("a session cannot inherit from itself")
        missing = [p for p in parents if self.repo.session(p) is None]
        if missing:
            raise NotFoundError(f"no session {', '.join(map(repr, missing))} of this agent")
        session = self._sibling(session=name)
        try:
            if self.repo.put_session(name, parents, self.now_us()):
                for parent in parents:
                    with self._sibling(session=parent) as src:
                        session._inherit(src, procedures)
        except BaseException:
            session.close()
            raise
        return session

    def _inherit(self, src: AgentMemory, procedures: bool) -> None:
        for m in src.core_facts():
            fact = src.repo.fact(m.id)
            if fact is None:  # a core note, not a triple
                r = self.remember(m.content, type="semantic", confidence=m.confidence)
            else:
                r = self.assert_fact(
                    fact.subject,
                    fact.predicate,
                    fact.object,
                    confidence=fact.confidence,
                    single_valued=fact.single_valued,
                )
            self.repo.set_core([r.id], self.now_us(), "inherited")
        if procedures:
            for p in src.repo.all_procedures():
                mine = self.record_outcome(p.action, success=True, context=p.context)
                self.repo.set_outcomes(mine.id, p.successes, p.failures, self.now_us())

    def _sibling(self, *, namespace: str | None = None, session: str | None = None) -> AgentMemory:
        mem = AgentMemory(
            self.store,
            self.org_id,
            self.agent_id,
            own_store=False,
            namespace=namespace,
            session=session,
        )
        try:
            mem.gate.check()
        except BaseException:
            mem.close()
            raise
        return mem

    def consolidate(
        self,
        now: datetime | None = None,
        *,
        dry_run: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> ConsolidationReport:
        """Promote recurring episodes, merge near-duplicate notes, decay, archive what
        faded, and erase (as ``erase`` does) what expired and forgets past their window.
        Deterministic, idempotent, and safe to re-run after a crash at any point.
        ``progress(step, done, total)`` is called after each of its six steps."""
        self.flush()
        at = check_optional_time("now", now) or self.now()
        if self.extractor is not None and self.extract_mode != "manual" and not dry_run:
            self.extract()  # first: what it finds is consolidated with the rest
        report = consolidate(self._parts, self._life, at, dry_run=dry_run, progress=progress)
        return self._tiers(report, to_us(at), dry_run)

    # ------------------------------------------------------------------ extraction
    def extract(
        self,
        conversation_id: str | None = None,
        since: datetime | None = None,
        *,
        dry_run: bool = False,
        extractor: Extractor | None = None,
    ) -> ExtractReport:
        """Turn what speakers state about themselves in this scope's turns (of one
        conversation, made since ``since``, if given) into facts and notes, written
        through ``assert_fact`` / ``remember`` with the turns as their ``sources``:
        duplicates are no-ops, a newer statement supersedes, a statement older than
        the belief that replaced it changes nothing (re-running is harmless).
        ``extractor``: this call's (else the handle's, else ``RuleExtractor``).
        ``dry_run``: what would be written, nothing written."""
        if conversation_id is not None:
            check_text("conversation_id", conversation_id)
        turns = turns_of(self, conversation_id, since)
        return run(self, self._extractor_for(extractor), turns, dry_run=dry_run)

    def extract_turns(self, ids: Sequence[str]) -> ExtractReport:
        """``extract`` over the given turns only (those still live)."""
        turns = [m for m in (self.get(i) for i in ids) if m is not None and m.type == "episodic"]
        return run(self, self._extractor_for(None), turns, dry_run=False)

    def _extractor_for(self, extractor: Extractor | None) -> Extractor:
        return extractor or self.extractor or RuleExtractor()

    def drain_extraction(self) -> None:
        """Wait until the background extraction has read every turn queued so far."""
        if self._background is not None:
            self._background.drain()

    def _tiers(
        self, report: ConsolidationReport, now_us: int, dry_run: bool
    ) -> ConsolidationReport:
        """Consolidation's tier steps: promote archival facts accessed
        ``core_promote_accesses`` times to core, demote core facts promoted that way and
        idle ``core_idle_days`` (and any no longer current), evict expired summaries."""
        up = self.repo.core_candidates(self.config.core_promote_accesses)
        down = self.repo.core_idle(now_us - round(self.config.core_idle_days * DAY_US))
        evicted = 0
        if not dry_run:
            self.repo.set_core(up, now_us, "accessed")
            self.repo.set_core(down, now_us, None)
            evicted = self.repo.evict_summaries(now_us)
        return dataclasses.replace(
            report, core_promoted=len(up), core_demoted=len(down), warm_evicted=evicted
        )


def _holds(store: SqliteMemoryStore | PgMemoryStore, org_id: str, agent_id: str) -> bool:
    """Whether the store holds a live memory in the scope (``org_id``, ``agent_id``)."""
    return bool(store.recent(1, org_id=org_id, agent_id=agent_id))


def _scope_names(
    store: SqliteMemoryStore | PgMemoryStore, org_id: str, agent_id: str
) -> tuple[str, str]:
    """The spellings (``names.resolve``) an org and agent id are used under."""
    org, agent = resolve(
        [("org_id", org_id), ("agent_id", agent_id)], lambda: _holds(store, org_id, agent_id)
    )
    return org, agent


def _selector(id_: str | None, conversation_id: str | None, about: str | None) -> tuple[str, str]:
    given = [
        (n, v)
        for n, v in (("id", id_), ("conversation_id", conversation_id), ("about", about))
        if v is not None
    ]
    if len(given) != 1:
        raise InvalidArgumentError(
            "give exactly one of id, conversation_id or about",
            hint="forget(id=...), forget(conversation_id=...) or forget(about=...)",
        )
    name, value = given[0]
    check_text(name, value)
    return name, entity_key(value) if name == "about" else value


__all__ = ["AgentMemory"]
