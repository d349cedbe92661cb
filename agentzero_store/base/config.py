"""All tunables in one frozen dataclass, with units, and the data-dir layout."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidArgumentError
from .limits import scrypt_problem

DEFAULT_DIM = 384  # all-MiniLM-L6-v2


@dataclass(frozen=True)
class KdfParams:
    """scrypt parameters used to stretch a passphrase (stored in keys.json per slot)."""

    n: int = 2**15  # CPU/memory cost: 2**15 * r * 128 B = 32 MiB, ~0.1 s here
    r: int = 8  # block size
    p: int = 1  # parallelism

    def __post_init__(self) -> None:
        # The bounds every keys.json is read with (``limits``): a store is never created
        # with parameters it could not open again.
        problem = scrypt_problem(self.n, self.r, self.p)
        if problem is not None:
            raise InvalidArgumentError(f"scrypt parameters out of bounds: {problem}")


# Tests and benchmarks may use this to keep passphrase opens fast; never the default.
FAST_KDF_FOR_TESTS = KdfParams(n=2**10, r=8, p=1)


@dataclass(frozen=True)
class StoreConfig:
    """Settings of a store. Every default is here, with its unit."""

    kdf: KdfParams = KdfParams()
    busy_timeout_ms: int = 5_000  # SQLite waits this long for another writer's lock
    # SQLite's page cache of memory.db, MiB (filled only as pages are read). Every page
    # read past it is decrypted and HMAC-checked again: at 100k memories the 2 MiB
    # default made each recall re-decrypt the index pages it read last time.
    cache_mib: int = 64
    writer_lock_timeout_s: float = 10.0  # a second writer waits this long for the data dir
    checkpoint_every: int = 100  # sidecar checkpoint after this many inserts
    hnsw_m: int = 16  # HNSW graph degree
    hnsw_ef_construction: int = 200  # HNSW build-time beam width
    hnsw_ef_search_min: int = 16  # query beam width is max(4*k, this)
    hnsw_initial_capacity: int = 1_024  # elements; the index doubles as needed
    # A thread (watchdog) watches the memory index's directory while the store is open,
    # so a long-running process rebuilds it at once if it is deleted. The CLI's one-shot
    # commands turn it off: a watcher started and stopped within a second raced
    # watchdog's own shutdown (a stray ERROR line on stderr); they see a lost index anyway.
    watch_indexes: bool = True
    rrf_k: int = 60  # Reciprocal Rank Fusion constant of document queries
    hybrid_candidates_factor: int = 4  # each signal contributes limit * this candidates
    embed_batch_size: int = 64  # texts per embedder call
    # Memories stored without a vector that a store opened with an embedder embeds in
    # the background, this many per write transaction; 0: never (``memory.backfill``).
    backfill_batch: int = 32
    # Document BM25 index: "blinded" (Tantivy on disk, every term a keyed hash: leaks
    # term statistics, never a word) or "sealed" (plain words in RAM, sealed checkpoint
    # re-indexed on every open: leaks nothing). See agentzero_store.sidecar.bm25.
    bm25_terms: str = "blinded"
    # Agent memory (agentzero_store.agentmem). Stabilities are FSRS S: the time after
    # which a memory's retrievability R falls to 0.9 (R = 0.5 at 9 S).
    stability_episodic_days: float = 3.0
    stability_semantic_days: float = 30.0
    stability_procedural_days: float = 14.0
    salience_beta: float = 1.0  # S_eff = S * (1 + beta * salience), salience in [0, 1]
    archive_below: float = 0.05  # consolidation archives memories whose R fell below this
    forget_undo_days: float = 7.0  # a soft forget can be undone this long
    promote_min_duplicates: int = 3  # episodic near-duplicates that make a semantic fact
    near_duplicate_jaccard: float = 0.85  # word-set Jaccard at which texts are duplicates
    # Cosine of their vectors at which two episodes say one recurring fact in other words
    # (with their negation, numbers, dates, quantities and names equal; chosen on labelled
    # dev pairs, see consolidation/meaning.py). Above 1.0: the Jaccard rule alone.
    recurrence_cosine: float = 0.925
    access_flush_every: int = 256  # recall accesses buffered before one write
    # Agent recall, mode "auto": weighted RRF, sum of w_r / (k + rank_r), over the signals
    # below (chosen on the LoCoMo and LongMemEval_S dev halves together; see
    # BENCHMARKS.md). A signal that does not tell the candidates apart on a query (all
    # equal) is left out of that query.
    recall_pool: int = 100  # candidates each of semantic and keyword search propose
    recall_seed_k: int = 5  # RRF k of semantic + keyword (memory hybrid recall, and the
    # first stage of auto)
    # Final RRF k at 200 candidates; scaled with the pool size. Chosen on both dev halves
    # together (BENCHMARKS.md run 26): LongMemEval 0.884 at 10, 0.891 at 15, 0.893 at 20;
    # LoCoMo 0.757, 0.759, 0.756.
    recall_rrf_k: int = 15
    spread_seeds: int = 20  # the best first-stage hits that spread activation
    spread_window: int = 2  # turns before and after a seed that it activates
    spread_decay: float = 0.5  # activation kept per further turn of distance
    weight_semantic: float = 0.8
    weight_keyword: float = 1.0
    # Turns next to a hit (on LoCoMo the answer often sits in the reply); left out of a
    # question the role signal answers (its replies are the other party's). LoCoMo dev
    # at k 15: 0.750 at 0.5, 0.756 at 0.75, 0.759 at 1.0, 0.754 at 1.25.
    weight_temporal: float = 1.0
    weight_entity: float = 0.6  # memories about (or said by) an entity the query names
    # ACT-R base level from the access log: off by default. On the LoCoMo dev half, where
    # the log holds what earlier questions' recalls returned, it costs recall@10 at every
    # weight tried (0.743 at 0, 0.739 at 0.05, 0.735 at 0.1, 0.729 at 0.3): what recall
    # returned is not evidence of use. Worth a weight where accesses mean use.
    weight_activation: float = 0.0
    weight_intent: float = 0.3  # the memory type the question asks for (not on LoCoMo)
    # The party a question asks about ("what did I buy": not the assistant's replies;
    # "what did you recommend": not the user's turns), by rules; out of a query that
    # names neither and of a store whose turns are all one party's (LoCoMo).
    # LongMemEval dev: auto 0.792 without it, 0.874 at 0.5, 0.891 at 1.0 (run 26).
    weight_role: float = 1.0
    weight_confidence: float = 0.2  # the memory's confidence (not on LoCoMo)
    # Rare but relevant (near the query, unlike the pool): off. On the LoCoMo dev half it
    # costs recall@10 (auto 0.743 → 0.741 at weight 0.1, 0.739 at 0.3; alone 0.434).
    weight_surprise: float = 0.0
    # Time expressions in the query ("in May 2023", "last week") against created_at: on
    # LoCoMo dev auto 0.743 at 0, 0.746 at 0.3, 0.757 at 1.0, 0.765 at 1.5, 0.767 at 2.0,
    # 0.762 at 3.0; 1.5 is on the plateau's cautious side. Only queries naming a time.
    weight_when: float = 1.5
    # Edge confidence halves every this many days (0: never decays).
    half_life_temporal_days: float = 30.0
    half_life_causal_days: float = 180.0
    half_life_entity_days: float = 365.0
    half_life_semantic_days: float = 90.0
    half_life_supersedes_days: float = 0.0
    # Tiers (issue 17): hot = the last turns of each conversation, the pins and the latest
    # tool result, cached per handle; warm = a summary of the turns before the hot ones,
    # kept this long; cold = everything above. Core facts load at every spawn.
    hot_turns: int = 12  # turns per conversation in the hot ring buffer
    pin_budget_chars: int = 2_000  # total characters pinned memories may hold
    warm_ttl_days: float = 7.0  # a warm summary is evicted this long after it was made
    warm_turns: int = 8  # turns an extractive warm summary keeps (MMR over vectors)
    warm_mmr_lambda: float = 0.5  # MMR: relevance to the conversation vs novelty
    core_promote_accesses: int = 5  # an archival fact accessed this often becomes core
    core_idle_days: float = 90.0  # consolidation demotes an accessed core fact idle this long


@dataclass(frozen=True)
class Layout:
    """Paths of every file in a data dir (see docs/design.md, "The data dir")."""

    root: Path

    @property
    def keys(self) -> Path:
        """The key header: KDF params, salts, wrapped master key, store id."""
        return self.root / "keys.json"

    @property
    def ledger(self) -> Path:
        """The acknowledgement ledger: what each source holds (see ``acks``)."""
        return self.root / "sources.ledger"

    @property
    def writer_lock(self) -> Path:
        """The single-writer lock file (holder's pid, host and command; see ``storage.lock``)."""
        return self.root / "writer.lock"

    @property
    def memory_db(self) -> Path:
        """SQLCipher database holding conversation memory."""
        return self.root / "memory.db"

    @property
    def memory_archive(self) -> Path:
        """SQLCipher database holding archived memories' text (``agentmem.archive``)."""
        return self.root / "memory.archive.db"

    @property
    def memory_hnsw(self) -> Path:
        """HNSW sidecar directory over memory embeddings."""
        return self.root / "memory.hnsw"

    @property
    def rag_dir(self) -> Path:
        """Directory of the document store."""
        return self.root / "rag"

    @property
    def rag_log(self) -> Path:
        """The sealed, append-only document log."""
        return self.rag_dir / "index.jsonl"

    @property
    def rag_catalog(self) -> Path:
        """Sealed snapshot of the log's replay state (derived: an open may skip it)."""
        return self.rag_dir / "index.jsonl.catalog"

    @property
    def rag_tantivy(self) -> Path:
        """Tantivy (BM25) sidecar directory over document chunks."""
        return self.rag_dir / "index.jsonl.tantivy"

    @property
    def rag_hnsw(self) -> Path:
        """HNSW sidecar directory over document chunk embeddings."""
        return self.rag_dir / "index.jsonl.hnsw"


def default_data_dir() -> Path:
    """The data dir: env ``AGENTZERO_DATA_DIR``, else the platform's user data dir."""
    env = os.environ.get("AGENTZERO_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("agentzero", appauthor=False))
