"""The memory store's sidecar index: the HNSW graph plus the in-memory scope map.

``MemoryIndex`` is one ``SidecarIndex[MemoryItem]``: every insert and delete of the
change feed reaches the HNSW graph and the ``ScopeMap`` in the same replay step, under
the sidecar's lock, so the two never disagree. Its checkpoint holds both (the graph as
``sidecar.hnsw`` writes it, the map's labels/scope/expiry beside it); the map's vectors
are not stored twice: on load it reads them in place from the graph's state in the
decrypted checkpoint, which it keeps (``LoadsBuffers``).

Memory at N rows of d dims: hnswlib's own copy of the graph (~(4d + 140)·N bytes) plus
the decrypted checkpoint the map reads its vectors from (about the same again), both
during and after the load; nothing else of that size is allocated. The map keeps its
own float32 vectors because hnswlib's ``get_items`` costs ~80 µs a row (measured at
100k), which exact search over a few thousand rows cannot afford.

``top_k`` answers a query without touching SQLCipher:

- unscoped: HNSW with ``k`` candidates (beam ``4k``), expired rows dropped, widening ×4;
- scoped: the scope's rows come from the map's posting lists (its size is counted once
  and cached until the map changes). A scope of at most
  ``exact_scope_limit`` rows is searched exactly over its in-memory vectors (so small
  scopes return exactly the exact top-k); a larger one goes through HNSW with
  ``1.5·k·N/s`` candidates (enough to hold ~1.5k rows of an s-row scope), filtered by
  the map, widening ×2 until ``k`` qualify;
- if the candidates run out (``MAX_CANDIDATES`` or the whole index) the answer is exact
  search over the scope's rows in memory, which is authoritative.

The caller still reads the final ``k`` rows from SQLCipher and re-checks them there.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ...base.errors import DimensionMismatchError, SidecarCorruptError
from ...sidecar.hnsw import HnswIndex
from ..records import Scope
from .feed import MemoryItem
from .scope_map import ScopeMap, Want

SCOPE_MAP_FORMAT = 1
MAGIC = b"AZMEMIX\x00\x01"
_LEN = struct.Struct("<Q")

# Exact or HNSW for a scope of s rows out of N? Exact costs ~0.15–0.25 µs per row
# (gather its vector, one dot product); HNSW costs ~3.5 µs per unit of beam, and the
# beam must hold ~1.5·k·N/s candidates to find k in the scope. They meet near
# s = sqrt(40·k·N) (6,300 rows for k=10 in 100k); below it exact is cheaper and exact.
EXACT_SCOPE_MIN = 64  # always exact at or below this many rows
EXACT_SCOPE_MAX = 8_192
SCAN_LIMIT = 32_768  # posting lists longer than this are estimated, not scanned
OVERSAMPLE = 1.5
MAX_CANDIDATES = 4_096

_ANY: Want = (None, None, None)
Answer = tuple[list[tuple[int, float]], Literal["index", "exact"]]


def exact_scope_limit(k: int, live: int) -> int:
    """Scopes of at most this many rows are searched exactly (see above)."""
    return int(min(EXACT_SCOPE_MAX, max(EXACT_SCOPE_MIN, k, math.sqrt(40 * k * live))))


class MemoryIndex:
    """``SidecarIndex[MemoryItem]``: an ``HnswIndex`` and a ``ScopeMap`` kept in step."""

    kind = "hnsw"

    def __init__(self, hnsw: HnswIndex) -> None:
        self.hnsw = hnsw
        self.dim = hnsw.dim
        self.map = ScopeMap(hnsw.dim)

    def __repr__(self) -> str:
        return f"MemoryIndex({self.hnsw!r}, {self.map!r})"

    # ---------------------------------------------------------------- SidecarIndex
    def params(self) -> Mapping[str, Any]:
        """The graph's parameters plus the map format (older checkpoints are rebuilt)."""
        return {**self.hnsw.params(), "scope_map": SCOPE_MAP_FORMAT}

    def reset(self) -> None:
        """Empty graph and map."""
        self.hnsw.reset()
        self.map = ScopeMap(self.dim)

    def insert(self, items: Sequence[tuple[int, MemoryItem]]) -> None:
        """Add or replace rows in the graph and the map."""
        if not items:
            return
        width = self.dim * 4
        for _, it in items:
            if len(it.vector) != width:
                raise DimensionMismatchError(
                    f"a stored vector has {len(it.vector) // 4} dimensions, the index {self.dim}"
                )
        labels = [lab for lab, _ in items]
        matrix = np.frombuffer(b"".join(it.vector for _, it in items), np.float32)
        matrix = matrix.reshape(len(items), self.dim)
        self.hnsw.add_vectors(np.asarray(labels, np.uint64), matrix)
        self.map.upsert(
            labels,
            [(it.org_id, it.agent_id, it.conversation_id) for _, it in items],
            [it.expires_at_us for _, it in items],
            matrix,
        )

    def delete(self, keys: Sequence[int]) -> None:
        """Drop rows from both (unknown or already-deleted keys are ignored)."""
        self.hnsw.delete(keys)
        self.map.delete(keys)

    def count(self) -> int:
        """Live rows."""
        return self.hnsw.count()

    def scrub(self) -> int:
        """Drop deleted rows' vectors and links from the graph (``HnswIndex.scrub``)
        and their vectors from the map's dead slots; returns how many rows it scrubbed."""
        self.map.zero_dead()
        return self.hnsw.scrub()

    def dump(self) -> dict[str, bytes]:
        """One file: ``MAGIC``, the HNSW state's length, the HNSW state, the scope map."""
        graph = self.hnsw.dump()["index"]
        return {"index": b"".join([MAGIC, _LEN.pack(len(graph)), graph, self.map.dump()])}

    def load(self, files: Mapping[str, bytes]) -> None:
        """Load both from ``dump``'s bytes (see ``load_buffers``)."""
        self.load_buffers({name: bytearray(b) for name, b in files.items()})

    def load_buffers(self, files: Mapping[str, bytearray]) -> None:
        """Load both, then check they hold exactly the same live rows.

        Memory: the decrypted checkpoint is read through views (never sliced or copied);
        hnswlib copies the graph out of it, then the vectors are compacted in place to
        its front and the scope map keeps them there. So the peak is the plaintext plus
        hnswlib's copy, the floor of hnswlib's Python API, and no third copy exists.
        """
        blob = files.get("index")
        head = len(MAGIC) + _LEN.size
        if set(files) != {"index"} or blob is None or len(blob) < head:
            raise SidecarCorruptError("not a memory index checkpoint")
        view = memoryview(blob)
        if bytes(view[: len(MAGIC)]) != MAGIC:
            raise SidecarCorruptError("not a memory index checkpoint")
        (glen,) = _LEN.unpack_from(view, len(MAGIC))
        if head + glen > len(blob):
            raise SidecarCorruptError("the memory index checkpoint is truncated")
        state = self.hnsw.parse(view[head : head + glen])
        graph_labels, graph_vectors = state.rows(self.dim)
        scope_map = ScopeMap.load(view[head + glen :], self.dim, graph_labels, graph_vectors)
        self.hnsw.load_state(state)
        # Every map row is a graph row (ScopeMap.load checked); the graph's live rows
        # must be exactly the map's.
        held = scope_map.live_labels().astype(np.uint64)
        deleted = state.arrays["deleted_labels"]
        if (
            len(held) != self.hnsw.count()
            or np.isin(held, deleted).any()
            or not np.isin(held, state.arrays["label_lookup_external"]).all()
        ):
            raise SidecarCorruptError("the scope map and the HNSW graph disagree")
        # hnswlib has its copy: move the vectors to the front of the buffer, contiguous
        # and aligned (a gather from the strided, unaligned rows is 2.4x slower).
        scope_map.rebase(_compact(blob, graph_vectors))
        self.map = scope_map

    # ---------------------------------------------------------------- queries
    def search(
        self, query: npt.NDArray[np.float32], k: int, *, ef: int | None = None
    ) -> list[tuple[int, float]]:
        """The graph's own search (unfiltered; dimension checked): see ``HnswIndex.search``."""
        return self.hnsw.search(query, k, ef=ef)

    def top_k(self, q: npt.NDArray[np.float32], k: int, scope: Scope, now_us: int) -> Answer:
        """Top-``k`` (label, cosine) among live, unexpired rows in ``scope``."""
        m = self.map
        want = m.resolve(scope)
        live = m.live
        if want is None or live == 0:
            return [], "exact"  # a scope value never stored: nothing to find
        if want == _ANY:
            return self._hnsw(q, k, want, now_us, n=k, widen=4)
        limit = exact_scope_limit(k, live)
        # The shortest posting list bounds the scope; its exact size (live, unexpired, in
        # every given field) is counted once and cached until the map changes, instead of
        # scanning a 10k-row list on every query (~0.2 ms).
        size = m.upper_bound(want)
        if limit < size <= SCAN_LIMIT:
            size = m.scope_size(want, now_us)
        if size <= limit:
            slots = m.scope_slots(want, now_us)
            assert slots is not None
            return self._exact(slots, q, k), "exact"
        n = math.ceil(OVERSAMPLE * k * live / max(size, 1))
        return self._hnsw(q, k, want, now_us, n=n, widen=2)

    def _hnsw(
        self, q: npt.NDArray[np.float32], k: int, want: Want, now_us: int, *, n: int, widen: int
    ) -> Answer:
        n = min(max(n, k), MAX_CANDIDATES)
        live = self.hnsw.count()
        while True:
            labels, sims = self.hnsw.search_arrays(q, n, ef=max(4 * k, n))
            keep = np.flatnonzero(self.map.admit(labels.astype(np.int64), want, now_us))[:k]
            if len(keep) >= k:
                return list(zip(labels[keep].tolist(), sims[keep].tolist(), strict=True)), "index"
            if n >= live or n >= MAX_CANDIDATES:
                # Scope or index exhausted: exact over the scope's rows is authoritative
                # (a graph left sparse by deletes may not reach every node).
                slots = self.map.scope_slots(want, now_us)
                assert slots is not None
                return self._exact(slots, q, k), "exact"
            n = min(n * widen, MAX_CANDIDATES)

    def _exact(
        self, slots: npt.NDArray[np.int64], q: npt.NDArray[np.float32], k: int
    ) -> list[tuple[int, float]]:
        if not len(slots):
            return []
        labels = self.map.labels(slots)
        # einsum, not ``matrix @ q``: BLAS matvec may fan out to OpenBLAS threads that
        # spin on a busy machine (measured 1.5 ms vs 0.2 ms CPU for 2,000 × 384).
        scores = np.einsum("ij,j->i", self.map.vectors(slots), q)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        # By score, ties by label: the order exact search in SQL gives (rows by label),
        # whatever order the slots are in.
        top = top[np.lexsort((labels[top], -scores[top]))]
        return list(zip(labels[top].tolist(), scores[top].astype(np.float64).tolist(), strict=True))


def _compact(buf: bytearray, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Copy ``rows`` (a view into ``buf``: row i at byte ``D + i·per`` with ``per`` ≥ its
    width) to the start of ``buf`` and return that contiguous view. Every other view of
    ``buf`` is garbage afterwards. Forward, in chunks: row i goes to ``i·width`` ≤ its
    source, so a chunk never overwrites a row not yet copied (numpy buffers a chunk that
    overlaps its own destination)."""
    n, dim = rows.shape
    out = np.frombuffer(buf, np.float32, n * dim).reshape(n, dim)
    for i in range(0, n, 1_024):
        out[i : i + 1_024] = rows[i : i + 1_024]
    return out


__all__ = ["MAX_CANDIDATES", "MemoryIndex", "exact_scope_limit"]
