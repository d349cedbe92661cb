"""Exact Jaccard over every pair of one LSH bucket at once, in integer arithmetic.

``dedup.near_duplicate_groups`` verifies each candidate pair that MinHash-LSH proposes.
Template sentences share half their words, so a bucket can hold thousands of texts
(~58M candidate pairs over 100k conversational turns), too many to check one ``jaccard``
call at a time. Here a bucket's pairs are checked in tiles of ``TILE`` × ``TILE``
members: each member's tokens become a row of bits (one per token the tile's members
share), and |A ∩ B| is the popcount of the AND of two rows, for a whole strip of rows
against all columns at once. |A ∪ B| = |A| + |B| − |A ∩ B|.

Bit for bit the test of ``dedup.jaccard``: counts are exact integers, and
``c / (s - c) >= t`` (s = |A| + |B|, the division in float64 as Python's ``int / int``
rounds it) only grows with c, so it holds exactly when c reaches ``least_common(s)``,
the smallest c for which that same float64 expression passes (``need`` below). No
float is rounded anywhere else.

Plain numpy, no BLAS: a float matrix product would fan out to OpenBLAS threads, which
spin on a busy machine (three times the CPU for the same work, measured here).

Memory is bounded whatever the bucket: a tile's bit rows hold only the tokens both sides
share (on a diagonal tile, tokens of two or more members), at most ``DENSE_LIMIT`` bits
before packing (a denser tile is checked pair by pair with ``jaccard``), and a strip's
counts are at most ``STRIP`` entries. Identical token sets never reach here (the caller
collapses them first), so a bucket's members are distinct sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

TILE = 1_024
"""Members per side of a tile of a bucket's pair matrix."""

DENSE_LIMIT = 1 << 24
"""Most bits of a tile's two token-incidence matrices together (16 MiB as bools, before
they are packed 64 to a word)."""

STRIP = 1 << 18
"""Most pairs counted at once (a tile is counted in row strips, ~3 MiB of counts)."""

_GATHER = 1 << 14  # strips of up to this many pairs look up each pair's least count

_I64 = npt.NDArray[np.int64]
# Counts never exceed the tokens a tile's members share: the narrowest type holding them.
_COUNT_TYPES: list[tuple[type[np.integer[Any]], int]] = [
    (np.uint8, 255),
    (np.uint16, 65_535),
    (np.int64, 2**62),
]
PairCheck = Callable[[int, int], bool]
"""The caller's exact test of two sets by index (for a tile too dense for bit rows)."""


class TokenSets:
    """Distinct token sets as one flat array of token ids (CSR): set ``i`` is
    ``ids[start[i] : start[i] + size[i]]``, each id once."""

    def __init__(self, ids: npt.NDArray[np.intp], sizes: npt.NDArray[np.intp]) -> None:
        self.ids = ids.astype(np.int64, copy=False)
        self.size = sizes.astype(np.int64, copy=False)
        self.start = np.zeros(len(sizes), np.int64)
        np.cumsum(self.size[:-1], out=self.start[1:])

    def least_common_table(self, threshold: float) -> _I64:
        """``least_common(s, threshold)`` for s = 0 .. twice the largest set."""
        return least_common(np.arange(2 * int(self.size.max(initial=0)) + 1), threshold)

    def tokens(self, members: _I64) -> tuple[_I64, _I64]:
        """(row, token id) of every token of ``members`` (row = position in it)."""
        lens = self.size[members]
        total = int(lens.sum())
        rows = np.repeat(np.arange(len(members), dtype=np.int64), lens)
        shift = self.start[members] - (np.cumsum(lens) - lens)
        return rows, self.ids[np.arange(total, dtype=np.int64) + np.repeat(shift, lens)]


def least_common(sums: _I64, threshold: float) -> _I64:
    """For each s in ``sums`` (|A| + |B|, s >= 2), the least integer c with
    ``c / (s - c) >= threshold`` as float64 division computes it; s + 1 if none in
    [0, s) passes. The exact test of a pair is then ``|A ∩ B| >= least_common(|A| + |B|)``.

    The real solution is c >= s·t/(1 + t); float rounding moves the answer by less than
    one, so the candidates around it are tried exactly, with the very division
    ``jaccard`` performs.
    """
    s = np.asarray(sums, dtype=np.int64)
    base = np.floor(s * (threshold / (1.0 + threshold))).astype(np.int64) - 2
    cand = np.maximum(base, 0)[:, None] + np.arange(6, dtype=np.int64)
    ok = cand < s[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ok &= cand / (s[:, None] - cand).astype(np.float64) >= threshold
    # Below the window every c fails (c <= s·t/(1 + t) - 2), and some c in it passes
    # (c >= s·t/(1 + t) + 1 clears t by far more than a rounding) unless c < s allows
    # none; c / (s - c) grows with c, so the first that passes is the least.
    least = cand[np.arange(len(s)), ok.argmax(axis=1)]
    return np.where(ok.any(axis=1), least, s + 1).astype(np.int64)


def bucket_links(
    sets: TokenSets, members: Sequence[int], need: _I64, jaccard_pair: PairCheck
) -> list[tuple[int, int]]:
    """Links that join ``members`` (distinct sets, ascending) exactly as every pair with
    Jaccard >= threshold does: (member, its component's first member) for each member
    that is not first in its component. Components are those of the pair graph.

    ``need[s]`` is ``least_common(s, threshold)`` for every s up to twice the largest
    set (``TokenSets.least_common_table``).
    """
    m = len(members)
    slots = np.asarray(members, dtype=np.int64)
    parent = np.arange(m, dtype=np.int64)  # flat: parent[k] is always a root
    for i0 in range(0, m, TILE):
        rows = slots[i0 : i0 + TILE]
        for j0 in range(0, i0 + 1, TILE):
            cols = slots[j0 : j0 + TILE]
            for a, b in _tile_pairs(sets, rows, cols, i0 == j0, need, jaccard_pair):
                _hook(parent, a + i0, b + j0)
    joined = np.flatnonzero(parent != np.arange(m))
    return list(zip(slots[joined].tolist(), slots[parent[joined]].tolist(), strict=True))


def _tile_pairs(
    sets: TokenSets,
    rows: _I64,
    cols: _I64,
    diagonal: bool,
    need: _I64,
    jaccard_pair: PairCheck,
) -> Iterator[tuple[_I64, _I64]]:
    """(row, column) positions of the tile's pairs with Jaccard >= threshold, a strip
    at a time; on the diagonal each unordered pair once."""
    r_row, r_tok = sets.tokens(rows)
    if diagonal:
        values, counts = np.unique(r_tok, return_counts=True)
        shared = values[counts >= 2]  # a token of one member adds to no intersection
    else:
        c_row, c_tok = sets.tokens(cols)
        shared = np.intersect1d(r_tok, c_tok)
    if not len(shared):
        return  # no pair shares a word: every Jaccard is 0 < threshold
    if (len(rows) + len(cols)) * len(shared) > DENSE_LIMIT:
        yield _pairwise(rows, cols, diagonal, jaccard_pair)
        return
    # Members by size (stable), so each column size is one slice of a strip.
    r_order = np.argsort(sets.size[rows], kind="stable")
    x = _bits(len(rows), r_row, r_tok, shared)[r_order]
    if diagonal:
        c_order, y = r_order, x
    else:
        c_order = np.argsort(sets.size[cols], kind="stable")
        y = _bits(len(cols), c_row, c_tok, shared)[c_order]
    a_size, b_size = sets.size[rows][r_order], sets.size[cols][c_order]
    # Counts never exceed the shared tokens: the narrowest type that holds them.
    count_type, most = next((t, m) for t, m in _COUNT_TYPES if len(shared) < m)
    need = np.minimum(need, most).astype(count_type)
    cuts = (np.flatnonzero(b_size[1:] != b_size[:-1]) + 1).tolist()
    classes = list(zip([0, *cuts], [*cuts, len(cols)], strict=True))
    step = max(1, STRIP // len(cols))
    for r0 in range(0, len(rows), step):
        r1 = min(len(rows), r0 + step)
        # On the diagonal, a row is paired with the rows before it (in size order).
        width = r1 if diagonal else len(cols)
        common = _popcount_and(x[r0:r1], y[:width], count_type)
        if common.size <= _GATHER:  # one lookup per pair beats a call per column size
            hit = common >= need[a_size[r0:r1, None] + b_size[None, :width]]
        else:
            hit = np.empty(common.shape, dtype=bool)
            for c0, c1 in classes:
                if c0 >= width:
                    break
                c1 = min(c1, width)
                least = need[a_size[r0:r1] + b_size[c0]]
                np.greater_equal(common[:, c0:c1], least[:, None], out=hit[:, c0:c1])
        a, b = np.nonzero(hit)
        if diagonal:
            below = b < a + r0
            a, b = a[below], b[below]
        yield r_order[a + r0], c_order[b]


def _bits(n: int, row: _I64, tok: _I64, shared: _I64) -> npt.NDArray[np.uint64]:
    """Rows of the n × len(shared) 0/1 incidence matrix, packed 64 columns to a word."""
    col = np.searchsorted(shared, tok)
    keep = col < len(shared)
    keep[keep] = shared[col[keep]] == tok[keep]
    words = (len(shared) + 63) // 64
    dense = np.zeros((n, words * 64), dtype=bool)
    dense[row[keep], col[keep]] = True
    return np.packbits(dense, axis=1, bitorder="little").view(np.uint64)


def _popcount_and(
    x: npt.NDArray[np.uint64], y: npt.NDArray[np.uint64], count_type: npt.DTypeLike
) -> npt.NDArray[np.integer[Any]]:
    """out[i, j] = |x_i ∩ y_j|: popcounts of the ANDs of their words, summed."""
    scratch = np.empty((len(x), len(y)), dtype=np.uint64)
    out = np.zeros((len(x), len(y)), dtype=count_type)
    for w in range(x.shape[1]):
        np.bitwise_and(x[:, w, None], y[None, :, w], out=scratch)
        out += np.bitwise_count(scratch)
    return out


def _pairwise(rows: _I64, cols: _I64, diagonal: bool, jaccard_pair: PairCheck) -> tuple[_I64, _I64]:
    """A tile too dense for bit rows (sets of thousands of words): pair by pair."""
    a: list[int] = []
    b: list[int] = []
    col_slots = cols.tolist()
    for i, x in enumerate(rows.tolist()):
        for j, y in enumerate(col_slots[:i] if diagonal else col_slots):
            if jaccard_pair(x, y):
                a.append(i)
                b.append(j)
    return np.asarray(a, np.int64), np.asarray(b, np.int64)


def _hook(parent: _I64, a: _I64, b: _I64) -> None:
    """Join the components of each pair (a[k], b[k]) in ``parent`` (kept flat).

    Each round points every root that has a link to a smaller root at the smallest
    such root (always downwards, so no cycle), then flattens by pointer jumping, until
    no link joins two roots. Every round removes at least one root.
    """
    while len(a):
        ra, rb = parent[a], parent[b]
        apart = ra != rb
        if not apart.any():
            return
        a, b, ra, rb = a[apart], b[apart], ra[apart], rb[apart]
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent[:] = jumped


__all__ = ["DENSE_LIMIT", "STRIP", "TILE", "PairCheck", "TokenSets", "bucket_links", "least_common"]
