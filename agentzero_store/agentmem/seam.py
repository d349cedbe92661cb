"""The agent memory's declared backend seam: what the layer above its backends may use.

``AgentMemory`` and the services over its parts (recall, lifecycle, consolidation,
provenance, namespaces, context, chat, extract, transfer, and ``ops`` / ``cli``) hold an
``AgentRepository``, an ``Archive`` and a ``StoreSide``, never a backend's class. Each
is small Protocols split by concern; both backends implement every one under the same
file names (``sqlite/`` and ``postgres/``), and mypy checks each against them where its
side hands them out (``sqlite/side.py``, ``postgres/side.py``: ``repository`` and
``archive`` are typed to return these Protocols), so a missing method or a drifted
signature fails the type check, not a caller.

- the repository (one (org, agent) scope's rows): ``MemoryRows``, ``MemoryReads``,
  ``ConversationRows``, ``BeliefRows``, ``ProcedureRows``, ``ForgetRows``,
  ``ArchiveRows``, ``SourceRows``, ``TierRows``, ``NamespaceRows``;
- ``Archive``: where archived texts live; ``StoreSide``: what else differs between the
  stores below (the vector index, checkpoints, what an erase must still purge);
- ``LayerTx``: the write transaction the repository hands out and takes back;
- ``LayerStore``: what the layer uses of the memory store below it (the memory store's
  own seam, ``memory.seam.MemoryStore``, and ``prepare``). What only some stores have
  is a capability of that seam (``memory.seam.supports``), never an ``isinstance``.

The records that cross it are in ``rows`` (``Filter``, ``Row``, ``ForgetPayload`` ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from ..memory.records import MemoryEntry, Scope
from ..memory.seam import DataDirOps, MemoryStore, supports
from .records import Fact, HistoryEntry, Procedure
from .rows import Candidate, Filter, ForgetPayload, Forgotten, NewMemory, Row

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class LayerTx(Protocol):
    """One open write transaction of the memory store, shared with the layer's tables:
    memory rows go in and out through it, and the layer's own statements run in it."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; the cursor."""
        ...

    def executemany(self, sql: str, rows: Any) -> Any:
        """Run one statement over many parameter rows."""
        ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """A read inside the transaction (sees its own writes)."""
        ...

    def delete_labels(self, labels: Sequence[int]) -> None:
        """Delete memory rows (with their vectors and keyword entries) by label."""
        ...

    def replace_keywords(self, label: int, text: str, scope: tuple[str, str, str]) -> None:
        """Index ``text`` as the keywords of row ``label`` (whose stored content is not
        that text: an archived memory put back by an undo keeps its words searchable)."""
        ...


class PreparedRows(Protocol):
    """Entries the memory store made ready to insert (ids chosen, vectors computed,
    outside any transaction): what ``MemoryRows.insert`` takes."""

    @property
    def ids(self) -> list[str]:
        """The ids chosen, in the entries' order."""
        ...

    @property
    def entries(self) -> list[MemoryEntry]:
        """The entries."""
        ...

    @property
    def now_us(self) -> int:
        """When they were prepared (µs): the creation time of an entry without one."""
        ...


class LayerStore(MemoryStore, Protocol):
    """What the layer uses of the memory store below it: the memory store's seam, and
    preparing entries for an insert in the layer's transaction."""

    def prepare(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> PreparedRows:
        """Entries made ready for ``MemoryRows.insert`` (validated, ids chosen, vectors
        computed by the store's embedder unless given); call outside a transaction."""
        ...

    def transaction(self) -> AbstractContextManager[LayerTx]:
        """One write transaction for the layer's tables and the memory rows."""
        ...


class DataDirLayerStore(LayerStore, DataDirOps, Protocol):
    """A ``LayerStore`` in a data dir (capability ``"data_dir"``)."""


def in_data_dir(store: LayerStore) -> TypeGuard[DataDirLayerStore]:
    """True if ``store`` lives in a data dir (``memory.seam.supports(store, "data_dir")``:
    one writer at a time, the database and archive files beside it)."""
    return supports(store, "data_dir")


class MemoryRows(Protocol):
    """The scope's memory rows: the schema, the write transaction, inserts, decay and access."""

    def migrate(self) -> None:
        """Create or upgrade the layer's tables (``schema.migrate_chain``)."""
        ...

    def transaction(self) -> AbstractContextManager[LayerTx]:
        """The memory store's write transaction: the layer's rows and the memory rows
        written through it commit together, or not at all."""
        ...

    def feed_seq(self, tx: LayerTx) -> int:
        """The change feed's newest seq, read inside ``tx`` (under the write lock)."""
        ...

    def insert(
        self, tx: LayerTx, prepared: PreparedRows, metas: Sequence[NewMemory]
    ) -> list[tuple[str, int]]:
        """Insert memory rows with the layer's columns through ``tx``."""
        ...

    def find_duplicate(self, fingerprint: str, type_: str, tx: LayerTx | None = None) -> str | None:
        """The id of a memory of this type with the same text fingerprint, if any."""
        ...

    def select(self, selector: str, value: str) -> list[tuple[str, int]]:
        """(id, label) of this scope's memories chosen by ``id``, ``conversation_id`` or ``about``
        (an entity key), archived ones included."""
        ...

    def log_access(self, tx: LayerTx, accesses: Sequence[tuple[str, int]]) -> None:
        """Append (memory id, time) accesses and bump each memory's counters."""
        ...

    def accesses(self, memory_id: str) -> list[int]:
        """Times (µs) a recall returned this memory, oldest first."""
        ...

    def set_review(
        self, tx: LayerTx, memory_id: str, stability: float, difficulty: float, at_us: int
    ) -> None:
        """Store a memory's FSRS state after feedback."""
        ...

    def decay_rows(
        self,
    ) -> list[tuple[str, int, str, float, float | None, int, float | None, float, int | None]]:
        """(id, label, type, stability, salience, last_review_us, retrievability, importance,
        archived_at_us) of every memory in scope, by id."""
        ...

    def missing_salience(
        self, ids: Sequence[str] | None = None, tx: LayerTx | None = None
    ) -> dict[str, float]:
        """The salience of memories that have none stored yet (of ``ids``, or of the whole scope),
        computed from their text, by id (``fill_salience`` stores it)."""
        ...

    def fill_salience(self, tx: LayerTx, ids: Sequence[str] | None = None) -> dict[str, float]:
        """Compute and store the salience of memories that have none yet (of ``ids``, or of the
        whole scope)."""
        ...

    def live_texts(self) -> list[tuple[str, str, int, int | None, int, float, float]]:
        """(id, content, created_at_us, last_access_us, access_count, salience, importance) of every
        live, unarchived memory of the scope, by id."""
        ...

    def set_retrievability(self, tx: LayerTx, values: Sequence[tuple[float, str]]) -> None:
        """Store each (R, id) snapshot."""
        ...


class MemoryReads(Protocol):
    """Reading memories and recall's candidates, signals and vectors (no write)."""

    def rows(self, labels: Sequence[int], f: Filter) -> dict[int, Row]:
        """The memories of ``labels`` that are live, unexpired, in scope and pass ``f``."""
        ...

    def candidates(self, labels: Sequence[int], f: Filter) -> dict[int, Candidate]:
        """Those of ``labels`` that are live, unexpired, in scope and pass ``f``, with what recall's
        signals read of them (no text)."""
        ...

    def by_id(self, memory_id: str, now_us: int) -> Row | None:
        """One live memory of this scope by id."""
        ...

    def page(
        self,
        f: Filter,
        *,
        kind: str | None,
        conversation_id: str | None,
        archived_only: bool,
        limit: int,
        offset: int,
    ) -> list[Row]:
        """One page of this scope's live, unexpired memories that pass ``f`` (and ``kind``,
        ``conversation_id``."""
        ...

    def keyword_ranked(self, query_text: str, k: int, f: Filter) -> list[int]:
        """Labels of up to ``k`` best BM25 matches of the scope, unexpired, best first, before the
        filter."""
        ...

    def keyword_filtered(self, query_text: str, k: int, f: Filter) -> list[int]:
        """The ``k`` best BM25 matches that pass ``f``, the filter applied inside the ranking (each
        match joined to its rows."""
        ...

    def keyword_scores(self, query_text: str, labels: Sequence[int]) -> dict[int, float]:
        """The BM25 score (lower is better) of each of ``labels`` that matches ``query_text`` in
        this scope (reads the keyword index alone)."""
        ...

    def nearest_exact(
        self, qv: npt.NDArray[np.float32], pool: int, f: Filter
    ) -> list[tuple[int, float]]:
        """Up to ``pool`` (label, cosine) nearest ``qv`` among every memory that passes ``f``,
        exactly (recall's fallback when a filter starves the index's candidates)."""
        ...

    def vectors_of(self, labels: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """(labels, float32 vector bytes) of those of ``labels`` that hold a vector."""
        ...

    def vector_of(self, label: int) -> bytes | None:
        """The stored float32 vector of a memory row, if it has one."""
        ...

    def about_of(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Entities of each memory (as written)."""
        ...

    def known_entities(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` are entities some memory of this scope is about."""
        ...

    def labels_about(self, labels: Sequence[int], keys: Sequence[str]) -> set[int]:
        """Which of ``labels`` are about any of the entity ``keys``."""
        ...

    def access_times(self, labels: Sequence[int]) -> dict[int, list[int]]:
        """The logged access times (µs) of each label that has any."""
        ...


class ConversationRows(Protocol):
    """A conversation's turns, their neighbours and its warm summaries."""

    def last_turns(self, conversation_id: str, n: int) -> list[int]:
        """Labels of the last ``n`` turns (episodic memories) of a conversation, oldest first (one
        backwards range of the conversation index)."""
        ...

    def latest_tool_turn(self, conversation_id: str) -> int | None:
        """Label of a conversation's newest live turn of role ``tool``, if any (walks the
        conversation backwards from its end to that turn)."""
        ...

    def turns_before(self, conversation_id: str, label: int | None) -> list[tuple[int, str]]:
        """(label, id) of a conversation's turns before the turn ``label`` (all of them with None),
        oldest first."""
        ...

    def turn_places(self, labels: Sequence[int]) -> list[tuple[int, str, int]]:
        """(label, conversation_id, created_at_us) of the episodic memories among ``labels`` (for
        ``turn_neighbours``)."""
        ...

    def turn_neighbours(
        self, places: Sequence[tuple[int, str, int]], window: int
    ) -> dict[int, list[tuple[int, int]]]:
        """For each episodic memory at ``places`` (``turn_places``)."""
        ...

    def neighbours_in_conversation(self, memory_id: str) -> list[tuple[str, int]]:
        """(id, created_at_us) of the turns just before and after a memory in its conversation
        (implicit temporal edges)."""
        ...

    def put_summary(
        self,
        summary_id: str,
        conversation_id: str,
        text: str | None,
        sources: Sequence[str],
        at_us: int,
        expires_us: int,
    ) -> None:
        """Store a warm summary of a conversation, replacing its previous ones."""
        ...

    def summary(self, conversation_id: str, now_us: int) -> tuple[str | None, list[int]] | None:
        """The live warm summary of a conversation."""
        ...

    def evict_summaries(self, now_us: int) -> int:
        """Delete the warm summaries of this scope past their TTL; how many."""
        ...


class BeliefRows(Protocol):
    """Beliefs: the change history, facts (bi-temporal) and typed edges."""

    def append_history(
        self, tx: LayerTx, at_us: int, entries: Sequence[tuple[str, str, dict[str, Any]]]
    ) -> None:
        """Append (op, target, detail) lines to the belief history."""
        ...

    def history(self, target: str | None, limit: int) -> list[HistoryEntry]:
        """The belief history (of one target, or all), oldest first."""
        ...

    def lock_belief(self, tx: LayerTx, subject_key: str, predicate_key: str) -> None:
        """Serialise writers of one (subject, predicate) until ``tx`` ends."""
        ...

    def current_facts(
        self, subject_key: str, predicate_key: str, tx: LayerTx | None = None
    ) -> list[Fact]:
        """Facts of (subject, predicate) still believed, oldest first."""
        ...

    def facts(
        self,
        subject_key: str | None,
        predicate_key: str | None,
        as_of_us: int | None,
        history: bool,
    ) -> list[Fact]:
        """Facts believed now, at ``as_of_us``, or (``history``) ever."""
        ...

    def fact(self, fact_id: str) -> Fact | None:
        """One fact of this scope by id."""
        ...

    def insert_fact(
        self,
        tx: LayerTx,
        fact_id: str,
        parts: tuple[str, str, str],
        keys: tuple[str, str, str],
        confidence: float,
        single_valued: bool,
        valid_from_us: int,
    ) -> None:
        """A new fact, stored under the id of the semantic memory holding its text."""
        ...

    def close_fact(self, tx: LayerTx, fact_id: str, at_us: int, superseded_by: str | None) -> None:
        """End a fact's validity (superseded by another, or retracted)."""
        ...

    def set_confidence(self, tx: LayerTx, fact_id: str, confidence: float) -> None:
        """Change a fact's (and its memory's) confidence."""
        ...

    def add_edges(
        self, tx: LayerTx, edges: Sequence[tuple[str, str, str, float]], at_us: int
    ) -> None:
        """Add (src, dst, type, confidence) edges (an existing one is kept)."""
        ...

    def edges(self, node: str) -> list[tuple[str, str, str, float, int]]:
        """Stored edges touching ``node``."""
        ...


class ProcedureRows(Protocol):
    """Procedures: actions in a context with their outcome counts."""

    def procedure_by_key(
        self, action_key: str, context_key: str, tx: LayerTx | None = None
    ) -> Procedure | None:
        """The procedure recorded for this action (in this context), if any."""
        ...

    def procedures(self, ids: Sequence[str]) -> dict[str, Procedure]:
        """Procedures by id."""
        ...

    def all_procedures(self) -> list[Procedure]:
        """Every procedure of this scope, by id."""
        ...

    def insert_procedure(
        self,
        tx: LayerTx,
        pid: str,
        action: str,
        context: str | None,
        keys: tuple[str, str],
        success: bool,
        at_us: int,
    ) -> None:
        """A new procedure with its first outcome."""
        ...

    def count_outcome(self, tx: LayerTx, pid: str, success: bool, at_us: int) -> None:
        """One more success or failure."""
        ...

    def set_outcomes(self, pid: str, successes: int, failures: int, at_us: int) -> None:
        """Set a procedure's outcome counts (a session inheriting them)."""
        ...


class ForgetRows(Protocol):
    """Forget and undo, erase and its pending purge, expiry and orphans."""

    def forget(
        self, tx: LayerTx, chosen: Sequence[tuple[str, int]], token: str, at_us: int, until_us: int
    ) -> None:
        """Move memories into the undo area."""
        ...

    def forgotten(self, token: str, now_us: int) -> list[Forgotten]:
        """(id, payload, vector) of a forget still within its undo window."""
        ...

    def reinsert(self, tx: LayerTx, prepared: PreparedRows) -> dict[str, int]:
        """Insert forgotten memories' rows again (``unforget`` then puts the layer's
        columns back); id -> label of the rows written."""
        ...

    def unforget(
        self, tx: LayerTx, payloads: Sequence[ForgetPayload], labels: Sequence[int]
    ) -> None:
        """Put the layer's rows of forgotten memories back (their memory rows were just re-inserted
        through ``tx`` under ``labels``) and empty their undo entries."""
        ...

    def forgotten_select(self, selector: str, value: str) -> list[str]:
        """Ids in the undo area chosen like ``select`` (erase reaches them too)."""
        ...

    def purgeable(self, now_us: int) -> list[str]:
        """Ids in the undo area whose window has passed."""
        ...

    def erase(
        self,
        tx: LayerTx,
        chosen: Sequence[tuple[str, int]],
        forgotten: Sequence[str],
        selector: str,
        at_us: int,
        derived: Sequence[str] = (),
    ) -> None:
        """Delete every row holding these memories, in every table, with their history, access log
        and undo entries."""
        ...

    def prune_speakers(self, tx: LayerTx) -> None:
        """Forget the speakers of this scope no live memory has any more (after erase or a purge."""
        ...

    def schedule_purge(self, tx: LayerTx, ids: Sequence[str]) -> None:
        """Empty undo entries whose window passed, leaving their cleanup pending exactly like an
        erase's."""
        ...

    def pending_purge(self) -> list[str]:
        """Ids erased whose cleanup after the commit has not finished (any scope)."""
        ...

    def clear_purge(self, tx: LayerTx, ids: Sequence[str]) -> None:
        """The cleanup of these erased ids finished."""
        ...

    def tombstones(self) -> list[dict[str, Any]]:
        """What erase removed in this scope."""
        ...

    def drop(self, tx: LayerTx, chosen: Sequence[tuple[str, int]]) -> None:
        """Delete memories for good (expired, or orphaned), with their layer rows."""
        ...

    def expired(self, now_us: int) -> list[tuple[str, int]]:
        """(id, label) of memories past their TTL, not yet deleted."""
        ...

    def orphans(self) -> list[str]:
        """Ids with layer rows (entities, a fact, a procedure) whose memory row is gone."""
        ...


class ArchiveRows(Protocol):
    """Archiving texts, consolidation's selections and adopting rows written below the layer."""

    def texts(self, ids: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(id, label, content, metadata JSON) of live, not yet archived memories."""
        ...

    def mark_archived(self, tx: LayerTx, rows: Sequence[tuple[str, int, str]], at_us: int) -> None:
        """The text of (id, label, digest) rows is now in the archive."""
        ...

    def unarchive(self, tx: LayerTx, mid: str, label: int, content: str, metadata: str) -> None:
        """Put an archived memory's text back into its row."""
        ...

    def all_archived(self) -> dict[str, str]:
        """Every archived id of the data dir (all scopes."""
        ...

    def archived_payload_ids(self) -> set[str]:
        """Ids in the undo area that were archived when forgotten (their text stays in the archive
        until undone or purged)."""
        ...

    def texts_of_type(self, type_: str) -> list[tuple[str, int, str, int, str | None]]:
        """(id, label, content, created_at_us, promoted_to) of live, unarchived memories of one type
        that are not facts, by creation time then id."""
        ...

    def set_promoted(self, tx: LayerTx, ids: Sequence[str], to: str) -> None:
        """These episodes made (or joined) the semantic memory ``to``."""
        ...

    def add_access_counts(self, tx: LayerTx, into: str, from_ids: Sequence[str]) -> None:
        """Fold the access counts of merged twins into the one kept."""
        ...

    def unadopted(
        self, limit: int = 5000, tx: LayerTx | None = None
    ) -> tuple[list[tuple[int, str, str, str, int]], int, int]:
        """Up to ``limit`` (label, id, conversation_id, content, created_at_us) of memory rows of
        this scope without a layer row yet (written by ``SqliteMemoryStore`` or the CLI's ``memory
        append``), above the label adoption last reached."""
        ...

    def adopt(
        self,
        rows: Sequence[tuple[int, str, str, str, int]],
        metas: Sequence[NewMemory],
        reached: int,
    ) -> None:
        """Give memory rows their layer rows (``unadopted``), and remember the label adoption
        reached, so the next open looks only above it."""
        ...


class SourceRows(Protocol):
    """Provenance: the memories each derived memory came from."""

    def add_sources(self, tx: LayerTx, memory_id: str, sources: Sequence[str]) -> None:
        """Record that ``memory_id`` was derived from ``sources`` (more may follow)."""
        ...

    def sources_of(
        self, ids: Sequence[str], tx: LayerTx | None = None
    ) -> dict[str, tuple[str, ...]]:
        """The sources of each of ``ids`` that is derived, in id order."""
        ...

    def derived_from(self, ids: Sequence[str], tx: LayerTx | None = None) -> set[str]:
        """Ids of the memories derived directly from any of ``ids`` (live, forgotten or archived."""
        ...

    def live_of(self, ids: Sequence[str], tx: LayerTx | None = None) -> list[tuple[str, int]]:
        """(id, label) of those of ``ids`` that are live memories of this scope."""
        ...

    def forgotten_of(
        self, ids: Sequence[str], tx: LayerTx | None = None
    ) -> dict[str, tuple[str, int]]:
        """The (token, until_us) of those of ``ids`` in this scope's undo area."""
        ...

    def move_forgotten(self, tx: LayerTx, ids: Sequence[str], token: str, until_us: int) -> None:
        """Put undo entries under another forget (its token and window)."""
        ...


class TierRows(Protocol):
    """Pins and core facts (the hot tier), and sessions."""

    def set_pin(self, memory_id: str, at_us: int, pinned: bool) -> None:
        """Pin (or unpin) a memory of this scope."""
        ...

    def pinned_labels(self) -> list[int]:
        """Labels of the live pinned memories of this scope, oldest pin first."""
        ...

    def set_core(self, ids: Sequence[str], at_us: int, reason: str | None) -> None:
        """Mark semantic memories core (``reason``) or, with None, archival again."""
        ...

    def core_labels(self) -> list[int]:
        """Labels of the live core memories of this scope (current facts only."""
        ...

    def core_candidates(self, min_accesses: int) -> list[str]:
        """Archival semantic memories of this scope accessed at least ``min_accesses`` times
        (promotion to core)."""
        ...

    def core_idle(self, before_us: int) -> list[str]:
        """Core memories promoted by access whose last access (or promotion) is older than
        ``before_us``, or that are no longer current (demotion)."""
        ...

    def session(self, name: str) -> tuple[list[str], int] | None:
        """(inherits, created_at_us) of a session of this scope."""
        ...

    def put_session(self, name: str, inherits: Sequence[str], at_us: int) -> bool:
        """Record a session."""
        ...


class NamespaceRows(Protocol):
    """Namespaces of the org and their grants (read by org, whatever the scope)."""

    def namespace_owner(self, name: str) -> str | None:
        """The owner of namespace ``name`` of this org, None if there is none."""
        ...

    def create_namespace(self, name: str, owner: str, at_us: int) -> str:
        """Create namespace ``name`` owned by ``owner`` unless it exists."""
        ...

    def set_grant(self, name: str, agent_id: str, by: str, at_us: int, granted: bool) -> None:
        """Grant (or revoke) ``agent_id`` the use of namespace ``name``."""
        ...

    def may_use(self, name: str, agent_id: str) -> bool:
        """Whether ``agent_id`` owns namespace ``name`` or is granted it (one query."""
        ...

    def members(self, name: str) -> list[str]:
        """The agents granted namespace ``name`` (its owner not included)."""
        ...

    def namespaces_of(self, agent_id: str) -> list[tuple[str, str, int]]:
        """(name, owner, created_at_us) of the namespaces ``agent_id`` owns or is granted."""
        ...


class AgentRepository(
    MemoryRows,
    MemoryReads,
    ConversationRows,
    BeliefRows,
    ProcedureRows,
    ForgetRows,
    ArchiveRows,
    SourceRows,
    TierRows,
    NamespaceRows,
    Protocol,
):
    """Every table of the agent memory for one (org, agent) scope: what a backend's
    repository implements (``sqlite.repository.SqliteRepository``,
    ``postgres.repository.PgRepository``)."""

    org_id: str
    agent_id: str


class Archive(Protocol):
    """Where archived memories' texts live (a data dir's ``memory.archive.db``, or a
    PostgreSQL table), checked against the digest the memory row recorded."""

    @property
    def path(self) -> Path | str:
        """What errors name: the archive's file, or its table."""
        ...

    def digest(self, content: str, metadata: str) -> str:
        """What a memory row records of an archived text."""
        ...

    def exists(self) -> bool:
        """True if the archive exists (it may be created on first write)."""
        ...

    def put(self, rows: Sequence[tuple[str, str, str]], now_us: int) -> None:
        """Store (id, content, metadata JSON) rows, replacing earlier copies."""
        ...

    def get(self, digests: dict[str, str]) -> dict[str, tuple[str, str]]:
        """(content, metadata JSON) of each id, checked against its digest (a missing or
        different text is a ``CorruptStoreError``)."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Delete these ids' texts; how many there were."""
        ...

    def truncate_wal(self) -> bool:
        """Leave no old page with a deleted text behind; False if a reader kept it."""
        ...

    def ids(self) -> set[str]:
        """Every id the archive holds a text for (to find spare copies)."""
        ...

    def close(self) -> None:
        """Close the archive (idempotent)."""
        ...


class StoreSide(Protocol):
    """What differs between the stores below the layer (``backends``)."""

    def repository(self, org_id: str, agent_id: str) -> AgentRepository:
        """The repository of one (org, agent) scope."""
        ...

    def archive(self, org_id: str, agent_id: str) -> Archive:
        """The archive of one (org, agent) scope."""
        ...

    def nearest(
        self, qv: npt.NDArray[np.float32], pool: int, scope: Scope, now_us: int
    ) -> list[tuple[int, float]] | None:
        """Semantic candidates from the store's vector index; None where there is none."""
        ...

    def deferred_checkpoints(self) -> AbstractContextManager[Any]:
        """A bulk write's index checkpoints held back to the end of the block."""
        ...

    def purge(self) -> None:
        """What an erase must still remove after its commit (old index segments ...)."""
        ...

    def settle(self) -> bool:
        """Leave no old page image behind; False if a reader of an older snapshot kept it."""
        ...

    def change_seq(self) -> int:
        """A value that moves with every committed write (the hot tier's cache key)."""
        ...

    def refresh_statistics(self) -> None:
        """After a consolidation: the planner's statistics, where there are any."""
        ...


__all__ = [
    "AgentRepository",
    "Archive",
    "ArchiveRows",
    "BeliefRows",
    "ConversationRows",
    "DataDirLayerStore",
    "ForgetRows",
    "LayerStore",
    "LayerTx",
    "MemoryReads",
    "MemoryRows",
    "NamespaceRows",
    "PreparedRows",
    "ProcedureRows",
    "SourceRows",
    "StoreSide",
    "TierRows",
    "in_data_dir",
]
