"""``AgentMemory``: an agent's memory on the encrypted store — episodic turns, semantic
facts that supersede, procedures with a reliability, FSRS decay, consolidation, archive,
forget with undo and erase. No LLM anywhere on the write or read path.

The facade holds no rule of its own: each public method is a documented delegate to a
service over the same ``parts.Parts`` — ``writes`` (turns, notes, adoption), ``reads``
(get, listing, the access log), ``beliefs`` (facts, history, procedures, edges),
``decay`` (retrievability, feedback, importance, prune), ``tiers`` (pins, core facts,
hot and warm tiers, context packs), ``sessions`` (namespaces, sessions),
``recall.search``, ``lifecycle`` (archive, forget, undo, erase) and
``consolidation.consolidate``. Every public method that reaches the scope is one call
of the scope's gate (``namespaces.one_call``): on a namespace handle the grant is
checked once per call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..base.config import StoreConfig
from ..base.errors import AccessDeniedError, InvalidArgumentError
from ..base.limits import check_optional_time, check_text
from ..base.modes import Mode
from ..embed.vectors import Embedder
from ..memory.backfill import warn_without_embedder
from ..memory.choose import open_memory_store
from ..memory.records import Scope, to_us
from . import namespaces as ns
from .backends import side_of
from .beliefs import Beliefs
from .consolidation.consolidate import consolidate
from .context import ContextPack, HotTier, TurnSummarizer
from .decay import Decay
from .extract import Extractor, ExtractReport, RuleExtractor
from .extract.runner import Background, check_mode, run, turns_of
from .lifecycle import Lifecycle
from .names import resolve
from .parts import Parts
from .reads import Archived, Reads
from .recall.search import Recaller
from .records import (
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
from .sessions import Sessions
from .tiers import Tiers
from .writes import DEFAULT_CONVERSATION, FACT_CONVERSATION, Writes

if TYPE_CHECKING:
    from .seam import AgentRepository, Archive, LayerStore

Clock = Callable[[], datetime]
_call = ns.one_call(attrgetter("gate"))  # one grant check per public call (the module)


class AgentMemory:
    """The memory of one agent (``org_id``, ``agent_id``) in a data dir or a PostgreSQL
    database (``open``).

    Every argument is checked: a bad one raises ``InvalidArgumentError`` (with a hint),
    which the Raises sections below do not repeat. On a namespace handle (``open(...,
    namespace=)``, ``shared``) every call but ``close``, ``now``, ``now_us`` and
    ``drain_extraction`` raises ``AccessDeniedError`` once the grant is gone, revoked
    in this process or another; the grant is checked once per call.
    """

    def __init__(
        self,
        store: LayerStore,
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
        side = side_of(store)
        # The scope's repository and archive live only in the gate, which checks the
        # grant when either is read (``namespaces.ScopeGate``).
        self.gate = ns.ScopeGate(
            side.repository(org_id, self.scope_agent),
            side.archive(org_id, self.scope_agent),
            Scope(org_id, self.scope_agent),
            namespace,
            agent_id,
        )
        p = Parts(store, side, self.gate, self.config, self._clock, org_id, self.scope_agent)
        hot = HotTier(self.config.hot_turns)
        self._parts = p
        self._life = Lifecycle(p)
        self._recaller = Recaller(p, self._life.hydrate)
        self._writes = Writes(p, hot)
        self._reads = Reads(p, self._life)
        self._decay = Decay(p, self._reads, self._life)
        self._beliefs = Beliefs(p, self._writes, self._reads, self._recaller)
        self._tiers = Tiers(p, self._reads, self._recaller, hot)
        own = namespace is None and session is None
        self._sessions = Sessions(
            p, self._writes, self._beliefs, self._tiers, agent_id=agent_id, own=own
        )
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
        """Open the agent memory of (``org_id``, ``agent_id``).

        The same data dir, key and ``memory.db`` as ``SqliteMemoryStore``; or, given a
        PostgreSQL URL (``postgresql://user@host/db``), that database, the same store as
        ``PgMemoryStore`` (every text sealed on this client). Like every embeddable
        store, the first open of a data dir (or an empty database) creates the store.

        Args:
            data_dir: the data dir, or a PostgreSQL URL.
            passphrase, key, key_file: the credential (one of them; else the keyring or,
                with ``prompt``, a prompt).
            org_id, agent_id: the scope (folded to their one spelling, ``names``).
            embedder: embeds texts and queries; None: keyword recall only (a warning if
                the store's memories were embedded).
            clock: returns the aware current time (injected so decay and TTL are
                testable without sleeping).
            config: the store's settings (``StoreConfig``).
            create: False opens an existing store only (the ``agentzero`` command
                always does: ``agentzero init`` creates one), so a mistyped path is
                caught rather than answered from a new, empty store.
            hnsw: keep the HNSW vector index (SQLite).
            namespace: read and write that shared namespace instead, as ``agent_id``.
            extractor: turns what speakers state about themselves into facts
                (``RuleExtractor``, ``LLMExtractor``, any ``Extractor``): on
                ``extract()``, and, by ``extract``, also at every ``consolidate()``
                (``"consolidate"``) or, in addition, on a worker thread after each
                ``add_turns`` (``"background"``; the write never waits on it);
                ``"manual"``: only on ``extract()``.

        Returns:
            The open memory; close it (or use ``with``).

        Raises:
            StoreNotFoundError: ``create=False`` and no store is there (nothing created).
            WrongKeyError, CredentialRequiredError: the credential does not open it.
            AccessDeniedError: ``namespace`` is neither owned by nor granted to the agent.
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
            with mem.gate.call():  # one check for the whole open
                mem.gate.check()
                mem._life.check_archive()
                mem._life.finish_pending_erase()
                mem._writes.adopt()
            mem.extractor = extractor
            mem.extract_mode = extract if extractor is not None else "manual"
            if mem.extract_mode == "background":
                mem._background = Background(mem)
                mem._writes.after_commit = mem._background.submit
        except BaseException:
            store.close()
            raise
        if embedder is None and (model := store.embedding_info()[0]) is not None:
            warn_without_embedder(model)
        return mem

    @property
    def repo(self) -> AgentRepository:
        """The repository of this handle's scope (all its SQL), through ``gate``: on a
        namespace handle every read of it outside a call checks the grant first."""
        return self.gate.repo

    @property
    def archive_file(self) -> Archive:
        """The archive of this handle's scope, through ``gate`` (the grant checked)."""
        return self.gate.archive

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Write buffered accesses and close (the store too, if this opened it).

        Closing never needs the grant: on a handle whose namespace was revoked, the
        buffered accesses are dropped (they are the namespace's rows to write no more)
        and an unfinished erase is left to the next open of the namespace, which
        finishes it. Closing twice is a no-op."""
        if not self._closed:
            if self._background is not None:  # what was queued is read before closing
                self._background.stop()
                self._background = None
                self._writes.after_commit = None
            try:
                with contextlib.suppress(AccessDeniedError):
                    self.flush()
                    if self._life.erase_unfinished:
                        # A concurrent reader kept an erase from emptying the WAL: try again.
                        self._life.finish_pending_erase()
            finally:
                self._closed = True
                self._reads.drop_accesses()
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
    @_call
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
        """Remember one message of a conversation as an episodic memory (``add_turns``
        of one turn). Durable when it returns.

        Args:
            conversation_id, role, content: the message.
            speaker: who said it (an entity of the memory).
            created_at: when it was said (default now).
            metadata: JSON values kept with it.
            about: other entities it is about.
            vector: a caller-computed embedding (else the store's embedder embeds
                ``content``, if it has one).

        Returns:
            The memory's id (an identical re-send's is the first one's).
        """
        turn = Turn(role, content, speaker, created_at, metadata or {})
        vectors = None if vector is None else [vector]
        return self.add_turns(conversation_id, [turn], vectors=vectors, about=about)[0]

    @_call
    def add_turns(
        self,
        conversation_id: str,
        turns: Sequence[Turn],
        *,
        vectors: Sequence[Any] | None = None,
        about: Sequence[str] = (),
    ) -> list[str]:
        """Remember many turns in one transaction (all or none). An identical re-send of
        a turn is skipped.

        Args:
            conversation_id: the conversation of every turn.
            turns: ``Turn`` records, oldest first.
            vectors: one caller-computed embedding per turn (else the store embeds).
            about: entities every turn is about.

        Returns:
            The turns' ids, in order.
        """
        return self._writes.add_turns(conversation_id, turns, vectors, about)

    @_call
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
        """Remember a note of any type.

        Args:
            content: the text.
            type: ``episodic``, ``semantic`` or ``procedural``.
            confidence, importance: numbers from 0 to 1.
            about: the entities it is about.
            metadata: JSON values kept with it.
            ttl: it expires this long from now (a ``timedelta`` or seconds).
            conversation_id: default ``"memories"``.
            vector: a caller-computed embedding.
            sources: the ids of the memories it was derived from (``Memory.sources``:
                forgetting or erasing one of them takes this one along).

        Returns:
            ``WriteResult(id, "created")``; an identical memory of the same type in this
            scope makes it a no-op: ``WriteResult(id_of_that_one, "duplicate")``.
        """
        return self._writes.remember(
            content,
            type_=type,
            confidence=confidence,
            importance=importance,
            about=about,
            metadata=metadata,
            ttl=ttl,
            conversation_id=conversation_id,
            vector=vector,
            sources=sources,
        )

    @_call
    def adopt(self) -> None:
        """Adopt now what was written below the layer since ``open`` adopted (rows of
        ``SqliteMemoryStore.append``, ``agentzero memory append``, the ``memory_append``
        tool): for a handle that stays open beside such writers, like the MCP server's."""
        self._writes.adopt()

    # ------------------------------------------------------------------ facts
    @_call
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
        """Believe (subject, predicate, object); every change goes to the belief history.

        Args:
            subject, predicate, object: the triple.
            confidence: from 0 to 1.
            single_valued: a new object for (subject, predicate) closes the facts it
                replaces (``valid_to``) and links them with ``supersedes`` edges.
            valid_from: when it became true (default now).
            vector: a caller-computed embedding of its text.
            core: the fact loads at every spawn (``context``, ``core_facts``) instead of
                only when recalled.
            sources: the ids of the memories (turns) it was derived from, as for
                ``remember``; a duplicate adds none (it stands on what it stood on).

        Returns:
            ``WriteResult(id, "created", superseded=(ids closed))``; the same triple
            again is ``"duplicate"``, or ``"updated"`` if only its confidence changed.
        """
        return self._beliefs.assert_fact(
            subject,
            predicate,
            object,
            confidence=confidence,
            single_valued=single_valued,
            valid_from=valid_from,
            vector=vector,
            core=core,
            sources=sources,
        )

    @_call
    def retract(self, fact_id: str) -> Fact:
        """Stop believing a fact: it is closed, kept in the history.

        Returns:
            The fact as it now stands (closed).

        Raises:
            NotFoundError: no fact ``fact_id`` in this scope.
        """
        return self._beliefs.retract(fact_id)

    @_call
    def facts(
        self,
        subject: str | None = None,
        predicate: str | None = None,
        *,
        as_of: datetime | None = None,
        history: bool = False,
    ) -> list[Fact]:
        """Facts believed now (or at ``as_of``), or every version (``history``), of
        ``subject`` and ``predicate`` if given (spellings folded)."""
        return self._beliefs.facts(subject, predicate, as_of, history)

    @_call
    def history(self, target: str | None = None, *, limit: int = 1_000) -> list[HistoryEntry]:
        """The belief history (append-only), oldest first, of one memory or fact
        (``target``) or of all, at most ``limit`` entries."""
        return self._beliefs.history(target, limit)

    # ------------------------------------------------------------------ procedures
    @_call
    def record_outcome(
        self, action: str, *, success: bool, context: str | None = None, vector: Any = None
    ) -> Procedure:
        """Count one outcome of ``action`` (in ``context``), created on first use.

        Returns:
            The procedure; its reliability is the mean of Beta(successes + 1,
            failures + 1).
        """
        return self._beliefs.record_outcome(action, success, context, vector)

    @_call
    def best_procedures(
        self, query: str, k: int = 3, *, mode: Mode | None = None
    ) -> list[Procedure]:
        """The ``k`` procedures most relevant to ``query``, best first: relevance
        (recall's fused score, relative to the best) times reliability."""
        return self._beliefs.best_procedures(query, k, mode)

    # ------------------------------------------------------------------ reads
    @_call
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

        Never returns another scope's, an expired, a forgotten or an erased memory.

        Args:
            query: the text to search for.
            k: how many.
            mode: ``base.modes``; ``bm25`` is an alias of ``keyword``. ``auto`` (the
                default; keyword alone without an embedder) fuses every signal that
                tells this query's candidates apart with weighted RRF — semantic and
                keyword search, the turns next to the best hits (temporal spreading
                activation), entities the query names, the asked-for memory type, the
                party asked about (``role``: "what did I buy" is not answered by the
                assistant's replies, "what did you recommend" is), the time the query
                names (``when``: "last May", "3 days ago" against
                ``created_at``), confidence, access history and surprise (off by
                default; see ``signals``); a list that does not tell the candidates
                apart is dropped. ``semantic``, ``keyword`` and ``hybrid`` (the first
                two, weighted) are single stages.
            types, about: only memories of these types, about these entities.
            as_of: see facts valid then and memories made by then.
            include_archived: archived memories too (their text read back from the
                archive).
            explain: give each hit's rank, weight and share per signal.
            log: log each returned memory's access (cheaply, buffered); that never
                strengthens it (only ``feedback`` does).
            weights: override the ``StoreConfig`` weight of any auto signal
                (``SIGNALS``) for this call; 0 leaves a signal out.

        Returns:
            ``RecallHit``s (the memory, its score, and with ``explain`` its signals).
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
        if log:
            self._reads.logged(hits)
        return hits

    @_call
    def flush(self) -> None:
        """Write the buffered access log (also done on close and every
        ``access_flush_every`` accesses; a crash loses at most those, never a memory)."""
        self._reads.flush()

    @_call
    def get(self, memory_id: str) -> Memory | None:
        """One memory of this scope (its text read back from the archive if archived),
        or None (also when forgotten, erased, expired or another scope's)."""
        return self._reads.get(memory_id)

    @_call
    def accesses(self, memory_id: str) -> list[datetime]:
        """When recalls returned this memory (the logged ones), oldest first.

        Raises:
            NotFoundError: no such live memory in this scope.
        """
        return self._reads.accesses(memory_id)

    @_call
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
        """This scope's memories, newest first (a listing, not a search: ``recall``
        ranks). Never lists another scope's, an expired, a forgotten or an erased
        memory, nor a superseded or retracted fact (``facts(history=True)`` shows those).
        Named ``memories``, not ``list``: a method ``list`` would shadow the builtin in
        every annotation of this class.

        Args:
            kind: the stored kind (granted, recalled, self_noted, archived — how it came
                to be remembered).
            types: episodic, semantic, procedural.
            conversation_id: of this conversation only.
            about: an entity (its spelling folded as everywhere): the memories about it
                or said by it.
            archived: ``exclude`` (the default), ``include`` or ``only``; archived text
                is read back from the archive, as ``get`` does.
            limit, offset: the page (the next one's offset is this one's plus its length).
        """
        return self._reads.memories(
            kind=kind,
            types=types,
            conversation_id=conversation_id,
            about=about,
            archived=archived,
            limit=limit,
            offset=offset,
        )

    @_call
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
            mem._writes.adopt()
        except BaseException:
            mem.close()
            raise
        return mem

    # ------------------------------------------------------------------ decay
    @_call
    def retrievability(self, memory_id: str, at: datetime | None = None) -> float:
        """FSRS retrievability R of a memory now (or at ``at``): 0.9 after its
        (salience-stretched) stability, 0.5 after nine times that.

        Raises:
            NotFoundError: no such live memory in this scope.
        """
        return self._decay.retrievability(memory_id, at)

    @_call
    def feedback(self, memory_id: str, *, used: bool = True) -> Memory:
        """Say whether a recalled memory was used. Only ``used=True`` strengthens it
        (FSRS stability grows, the more the longer since its last review); unused, it
        gets harder (FSRS difficulty up). Recall alone never strengthens a memory.

        Returns:
            The memory as it now stands.

        Raises:
            NotFoundError: no such live memory in this scope.
        """
        return self._decay.feedback(memory_id, used)

    @_call
    def importance(self, memory_id: str) -> float:
        """TnsAI-style importance in [0, 1] from recency, access frequency,
        distinctiveness (salience) and the importance the writer gave.

        Raises:
            NotFoundError: no such live memory in this scope.
        """
        return self._decay.importance(memory_id)

    @_call
    def prune(self, max_tokens: int, *, dry_run: bool = False) -> list[str]:
        """Archive the least important memories until the live ones fit in
        ``max_tokens`` (TnsAI's prune, but soft: ``restore`` brings any back). Tokens are
        counted by ``tokens.count_tokens`` (the embedder's tokenizer, else 4/3 a word);
        importance is ``importance()``'s score, recency counted from the last access.

        Returns:
            The ids archived (with ``dry_run``, that would be), least important first.
        """
        return self._decay.prune(max_tokens, dry_run)

    # ------------------------------------------------------------------ graph
    @_call
    def link(
        self,
        src: str,
        dst: str,
        type: str = "causal",
        *,
        confidence: float = 1.0,  # noqa: A002
    ) -> None:
        """Add a typed edge (``EDGE_TYPES``) between two memories of this scope.

        Raises:
            NotFoundError: either memory is not a live one of this scope.
        """
        self._beliefs.link(src, dst, type, confidence)

    @_call
    def edges(self, memory_id: str, *, at: datetime | None = None) -> list[Edge]:
        """Edges of a memory with their confidence decayed to ``at`` (default now):
        stored ones, entity links, and the implicit temporal edges to the turns just
        before and after it in its conversation.

        Raises:
            NotFoundError: no such live memory in this scope.
        """
        return self._beliefs.edges(memory_id, at)

    # ------------------------------------------------------------------ lifecycle ops
    @_call
    def archive(self, memory_id: str) -> bool:
        """Move a memory's text to the archive (soft: ``restore`` undoes it); recall
        finds it only with ``include_archived=True``.

        Returns:
            False if it was already archived.

        Raises:
            NotFoundError: no such live memory in this scope.
        """
        return self._life.archive([self._reads.require(memory_id).id]) == 1

    @_call
    def restore(self, memory_id: str) -> bool:
        """Bring an archived memory's text back.

        Returns:
            False if it was not archived.

        Raises:
            NotFoundError: no such live memory in this scope.
        """
        return self._life.restore(self._reads.require(memory_id).id)

    @_call
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
        listed in ``receipt.derived``.

        Raises:
            NotFoundError: an ``id`` that is no live memory of this scope.
        """
        return self._life.forget(_selector(id, conversation_id, about))

    @_call
    def undo(self, token: str) -> int:
        """Bring back what a forget removed (within its window). A derived memory one of
        whose other sources another forget still hides stays hidden, and comes back
        with that forget's undo.

        Returns:
            How many memories came back.

        Raises:
            NotFoundError: no forget under ``token`` (never, or past its window).
        """
        return self._life.undo(check_text("token", token))

    @_call
    def erase(
        self,
        *,
        id: str | None = None,  # noqa: A002
        conversation_id: str | None = None,
        about: str | None = None,
    ) -> EraseReport:
        """Hard, irreversible erase (GDPR) of what one of ``id``, ``conversation_id`` or
        ``about`` chooses: the text leaves every place it exists — the memory row, the
        keyword index, the vectors and the HNSW checkpoint, the archive, the belief
        history and the undo area, and the old pages of memory.db and the archive.
        What was derived from them (``Memory.sources``) is erased with them
        (``report.derived``; the next ``consolidate`` derives again from the sources
        that remain, by its own rule). A content-free tombstone remains.

        Returns:
            The report; if another process is reading an older snapshot, old pages can
            only go once it finishes: ``pending`` says so, and the next erase, ``close``
            or open completes it.

        Raises:
            NotFoundError: an ``id`` that is no memory of this scope (live or forgotten).
        """
        return self._life.erase(_selector(id, conversation_id, about))

    @_call
    def tombstones(self) -> list[dict[str, Any]]:
        """What erase removed in this scope (ids, counts and times, and the derived
        memories it took with them; never content)."""
        return self.gate.repo.tombstones()

    # ------------------------------------------------------------------ tiers, context
    @_call
    def pin(self, memory_id: str) -> None:
        """Pin a memory: it heads every ``context`` pack until unpinned. All pins of a
        scope share ``pin_budget_chars`` characters (a memory block's limit).

        Raises:
            NotFoundError: no such live memory in this scope.
            InvalidArgumentError: the pin would exceed the budget.
        """
        self._tiers.pin(memory_id)

    @_call
    def unpin(self, memory_id: str) -> None:
        """Unpin a memory (a no-op if it was not pinned)."""
        self._tiers.unpin(memory_id)

    @_call
    def pinned(self) -> list[Memory]:
        """The pinned memories that are live, oldest pin first."""
        return self._tiers.pinned()

    @_call
    def core_facts(self) -> list[Memory]:
        """The core semantic memories (current facts only), loaded at every spawn."""
        return self._tiers.core_facts()

    @_call
    def mark_core(self, memory_id: str, core: bool = True) -> None:
        """Make a semantic memory core (or, with ``core=False``, archival again).

        Raises:
            NotFoundError: no such live memory in this scope.
            InvalidArgumentError: it is not a semantic memory.
        """
        self._tiers.mark_core(memory_id, core)

    @_call
    def hot(self, conversation_id: str) -> list[Memory]:
        """The last ``hot_turns`` turns of a conversation, oldest first (from the hot
        tier: a cache checked against the change feed, see ``context``)."""
        return self._tiers.hot_tier(conversation_id)[0]

    @_call
    def latest_tool_result(self, conversation_id: str) -> Memory | None:
        """The conversation's latest turn of role ``tool``, kept beside the hot turns even
        once newer turns have pushed it out of them; None if it has none."""
        return self._tiers.hot_tier(conversation_id)[1]

    @_call
    def add_tool_result(self, conversation_id: str, tool: str, content: str) -> str:
        """Remember a tool's (or mesh peer's) result as a turn of role ``tool``, spoken
        by ``tool``; returns its id."""
        return self.add_turn(conversation_id, "tool", content, speaker=check_text("tool", tool))

    @_call
    def summarize(
        self, conversation_id: str, summarizer: TurnSummarizer | None = None
    ) -> tuple[str | None, list[str]]:
        """Make (or remake) the warm summary of a conversation's turns before its hot
        ones, kept ``warm_ttl_days``.

        Args:
            conversation_id: the conversation.
            summarizer: its text (an LLM, say); default extractive: the ``warm_turns``
                turns MMR picks.

        Returns:
            (the summary's text, or None when extractive; its source ids). (None, [])
            when no turn is older than the hot ones.
        """
        return self._tiers.summarize(conversation_id, summarizer)

    @_call
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
        the ``recall_k`` memories recalled for ``query`` (if given) — labelled, each
        memory once, never more than ``max_tokens`` (counted with the embedder's
        tokenizer when it has one, else estimated: ``ContextPack.counted_with`` says
        which)."""
        check_text("conversation_id", conversation_id)
        return self._tiers.context(conversation_id, query, max_tokens, recall_k)

    # ------------------------------------------------------------------ sharing, sessions
    @_call
    def namespace(self, name: str) -> ns.Namespace:
        """The shared namespace ``name`` of this org (to grant and revoke), created,
        owned by this agent, on first use.

        Raises:
            AccessDeniedError: it exists and this agent neither owns it nor is granted it.
        """
        return self._sessions.namespace(name)

    @_call
    def namespaces(self) -> list[ns.NamespaceInfo]:
        """The namespaces this agent owns or is granted, by name."""
        return self._sessions.namespaces()

    @_call
    def shared(self, name: str) -> AgentMemory:
        """This agent's handle on namespace ``name`` (same store; close it when done).

        Raises:
            AccessDeniedError: not granted, on this call and every later one.
        """
        return self._sibling(namespace=self._sessions.namespace_name(name))

    @_call
    def start_session(
        self, name: str, inherits_from: Sequence[str] = (), *, procedures: bool = False
    ) -> AgentMemory:
        """A session of this agent: a scope of its own that starts with the current core
        facts of ``inherits_from`` (sessions of this agent) copied in, and, with
        ``procedures``, their procedures' outcome counts. Belief history is never
        inherited. Starting a session that exists reopens it (no second copy).

        Returns:
            The session's handle (same store; close it when done).

        Raises:
            InvalidArgumentError: on a namespace's or session's handle, or a session
                that inherits from itself.
            NotFoundError: a parent that is no session of this agent.
        """
        name, parents = self._sessions.names(name, inherits_from)
        session = self._sibling(session=name)
        try:
            if self._sessions.put(name, parents):
                for parent in parents:
                    with self._sibling(session=parent) as src:
                        session._sessions.inherit(src._sessions, procedures)
        except BaseException:
            session.close()
            raise
        return session

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

    # ------------------------------------------------------------------ consolidation
    @_call
    def consolidate(
        self,
        now: datetime | None = None,
        *,
        dry_run: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> ConsolidationReport:
        """Promote recurring episodes, merge near-duplicate notes, decay, archive what
        faded, and erase (as ``erase`` does) what expired and forgets past their window;
        then the tier steps (core facts promoted and demoted, warm summaries evicted).
        Deterministic, idempotent, and safe to re-run after a crash at any point. With
        an extractor (``open``) not ``manual``, ``extract`` runs first.

        Args:
            now: the time it runs at (default the clock's).
            dry_run: report what it would do, change nothing.
            progress: ``progress(step, done, total)``, called after each of its steps.
        """
        self.flush()
        at = check_optional_time("now", now) or self.now()
        if self.extractor is not None and self.extract_mode != "manual" and not dry_run:
            self.extract()  # first: what it finds is consolidated with the rest
        report = consolidate(self._parts, self._life, at, dry_run=dry_run, progress=progress)
        return self._tiers.consolidated(report, to_us(at), dry_run)

    # ------------------------------------------------------------------ extraction
    @_call
    def extract(
        self,
        conversation_id: str | None = None,
        since: datetime | None = None,
        *,
        dry_run: bool = False,
        extractor: Extractor | None = None,
    ) -> ExtractReport:
        """Turn what speakers state about themselves in this scope's turns into facts
        and notes, written through ``assert_fact`` / ``remember`` with the turns as their
        ``sources``: duplicates are no-ops, a newer statement supersedes, a statement
        older than the belief that replaced it changes nothing (re-running is harmless).

        Args:
            conversation_id: of this conversation only.
            since: only turns made at or after it.
            dry_run: what would be written, nothing written.
            extractor: this call's (else the handle's, else ``RuleExtractor``).

        Raises:
            ExtractorError: the extractor failed or answered out of its contract.
        """
        if conversation_id is not None:
            check_text("conversation_id", conversation_id)
        turns = turns_of(self, conversation_id, since)
        return run(self, extractor or self.extractor or RuleExtractor(), turns, dry_run=dry_run)

    @_call
    def extract_turns(self, ids: Sequence[str]) -> ExtractReport:
        """``extract`` over the given turns only (those still live), with the handle's
        extractor (else ``RuleExtractor``)."""
        turns = [m for m in (self.get(i) for i in ids) if m is not None and m.type == "episodic"]
        return run(self, self.extractor or RuleExtractor(), turns, dry_run=False)

    def drain_extraction(self) -> None:
        """Wait until the background extraction has read every turn queued so far."""
        if self._background is not None:
            self._background.drain()


def _holds(store: LayerStore, org_id: str, agent_id: str) -> bool:
    """Whether the store holds a live memory in the scope (``org_id``, ``agent_id``)."""
    return bool(store.recent(1, org_id=org_id, agent_id=agent_id))


def _scope_names(store: LayerStore, org_id: str, agent_id: str) -> tuple[str, str]:
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


__all__ = ["DEFAULT_CONVERSATION", "FACT_CONVERSATION", "AgentMemory", "Archived"]
