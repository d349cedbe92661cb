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
    writer_lock_timeout_s: float = 10.0  # a second writer waits this long for the data dir
    checkpoint_every: int = 100  # sidecar checkpoint after this many inserts
    hnsw_m: int = 16  # HNSW graph degree
    hnsw_ef_construction: int = 200  # HNSW build-time beam width
    hnsw_ef_search_min: int = 16  # query beam width is max(4*k, this)
    hnsw_initial_capacity: int = 1_024  # elements; the index doubles as needed
    rrf_k: int = 60  # Reciprocal Rank Fusion constant
    hybrid_candidates_factor: int = 4  # each signal contributes limit * this candidates
    embed_batch_size: int = 64  # texts per embedder call
    # Document BM25 index: "blinded" (Tantivy on disk, every term a keyed hash: leaks
    # term statistics, never a word) or "sealed" (plain words in RAM, sealed checkpoint
    # re-indexed on every open: leaks nothing). See agentzero_store.sidecar.bm25.
    bm25_terms: str = "blinded"


@dataclass(frozen=True)
class Layout:
    """Paths of every file in a data dir (see DESIGN.md, "On-disk layout")."""

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
