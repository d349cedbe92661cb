"""Near-duplicate detection over short texts: token sets, Jaccard, MinHash-LSH.

Deterministic and pure: the same items give the same groups on every run, machine and
Python process (no salted ``hash()``, no random state; MinHash constants derive from
BLAKE2b of fixed labels). Consolidation uses it to find memories that say the same
thing in nearly the same words.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ...base.errors import InvalidArgumentError
from .jaccard_blocks import TokenSets, bucket_links

NUM_HASHES = 64
"""MinHash signature length: the LSH bands of every threshold are cut from it."""

MAX_MISS_PROBABILITY = 1e-3
"""Banding target: a pair exactly at the threshold is missed with at most this chance
(when 64 hashes allow it; see ``lsh_miss_probability``)."""

SMALL_BUCKET = 16
"""LSH buckets of up to this many sets are verified pair by pair in Python; larger
ones as matrix products (``jaccard_blocks``), whose fixed cost per bucket is larger."""

_WORD = re.compile(r"\w+")
# For ASCII, ``\w`` is exactly [A-Za-z0-9_]: keep those (lowered), blank the rest.
_ASCII_FOLD = (
    bytes(
        (c | 0x20 if chr(c).isalpha() else c) if chr(c).isalnum() or c == 0x5F else 0x20
        for c in range(128)
    )
    + b" " * 128
)
_U64 = npt.NDArray[np.uint64]


def tokens(text: str) -> frozenset[str]:
    """The set of word tokens of ``text``: casefolded, NFKC-normalised, ``\\w+`` runs.

    Nothing else: no stemming, no stop words, punctuation dropped. Normalisation is
    NFKC, casefold, NFKC again: the first pass turns compatibility forms into letters
    that have a case ("ᴬ" to "A", which then folds to "a"), the last recomposes what
    casefolding decomposes ("ǰ" folds to "j" plus a combining caron, which ``\\w+``
    would split off). For ASCII text all three reduce to ``str.lower``.

    Raises InvalidArgumentError if ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"text must be a str, got {type(text).__name__}", hint="pass the memory's text"
        )
    if text.isascii():
        # Same tokens as ``\w+`` on the lowered text, three times faster: one C pass
        # maps A-Z to a-z and every other non-word byte to a space, then split.
        return frozenset(text.encode("ascii").translate(_ASCII_FOLD).decode("ascii").split())
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return frozenset(_WORD.findall(folded))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|, in [0, 1].

    Two empty sets give 0.0, not 1.0: texts without a single word share nothing worth
    calling a duplicate, so ``near_duplicate_groups`` never groups them.
    """
    common = len(a & b)
    union = len(a) + len(b) - common
    return common / union if union else 0.0


def _as_float(value: float) -> float:
    """``value`` as a float, or NaN (which every range check refuses) if it is not a
    number. Text is not a number here, though ``float()`` would parse it."""
    if isinstance(value, str | bytes | bytearray):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _check_threshold(threshold: float) -> float:
    t = _as_float(threshold)
    if not 0.0 < t <= 1.0:  # also refuses NaN
        raise InvalidArgumentError(
            f"threshold must be in (0, 1], got {threshold!r}",
            hint="pass a Jaccard similarity such as 0.85 (1.0 groups identical texts only)",
        )
    return t


@lru_cache(maxsize=64)
def _banding(threshold: float) -> tuple[int, int]:
    """(bands, rows per band) for ``threshold``: rows grow from 1 for as long as the
    miss probability at the threshold stays within ``MAX_MISS_PROBABILITY``.

    More rows per band means fewer chance collisions between unrelated texts (fewer
    pairs to verify), fewer bands means more misses; this picks the cheapest banding
    that still meets the target, or one row per band if none does (threshold < ~0.1).
    Common words ("the", "to", "user") put many unrelated short texts near J = 0.2,
    where 16 bands of 4 rows (also within target at 0.85) propose ~7 times as many
    pairs to verify as the 12 bands of 5 chosen.
    """
    best = (NUM_HASHES, 1)
    for rows in range(2, NUM_HASHES + 1):
        bands = NUM_HASHES // rows
        if (1.0 - threshold**rows) ** bands > MAX_MISS_PROBABILITY:
            break
        best = (bands, rows)
    return best


def lsh_miss_probability(similarity: float, threshold: float = 0.85) -> float:
    """Chance that ``near_duplicate_groups(..., threshold)`` never checks a pair of
    texts whose token sets have Jaccard ``similarity``: (1 - s**r) ** b.

    The banding (b bands of r rows) depends on the threshold; at the default 0.85 it is
    12 bands of 5 rows, so a pair at J = 0.85 is missed with probability about 8.8e-4,
    at J = 0.9 about 2e-5, at J = 0.95 about 1e-8. A missed pair is still grouped when
    other pairs chain its two texts together. Identical token sets are grouped without
    LSH (0.0 here); at threshold 1.0 LSH does not run, so every other pair gives 1.0.

    Raises InvalidArgumentError if ``threshold`` is not in (0, 1] or ``similarity`` is
    not in [0, 1].
    """
    t = _check_threshold(threshold)
    s = _as_float(similarity)
    if not 0.0 <= s <= 1.0:  # also refuses NaN
        raise InvalidArgumentError(
            f"similarity must be in [0, 1], got {similarity!r}", hint="pass a Jaccard similarity"
        )
    if s == 1.0:
        return 0.0
    if t == 1.0:
        return 1.0
    bands, rows = _banding(t)
    return float((1.0 - s**rows) ** bands)


def _constants(label: str, count: int) -> _U64:
    """``count`` odd 64-bit constants from BLAKE2b: fixed forever, unlike a seeded RNG
    whose stream numpy may change between versions."""
    raw = b"".join(
        hashlib.blake2b(f"agentmem.dedup.{label}.{i}".encode(), digest_size=8).digest()
        for i in range(count)
    )
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64) | np.uint64(1)


_MULTIPLIERS = _constants("multiply", NUM_HASHES)
_ADDENDS = _constants("add", NUM_HASHES)
_BAND_MIX = _constants("band", NUM_HASHES)


def _token_sets(sets: Sequence[frozenset[str]]) -> tuple[TokenSets, list[str]]:
    """``sets`` as token ids (numbered by first appearance) and the vocabulary."""
    # Built with C-level iteration (chain, dict.fromkeys, map): a Python loop per token
    # costs more than all the hashing in ``_signatures``.
    all_tokens = list(itertools.chain.from_iterable(sets))
    vocab = {tok: i for i, tok in enumerate(dict.fromkeys(all_tokens))}
    ids = np.fromiter(map(vocab.__getitem__, all_tokens), dtype=np.intp, count=len(all_tokens))
    sizes = np.fromiter(map(len, sets), dtype=np.intp, count=len(sets))
    return TokenSets(ids, sizes), list(vocab)


def _signatures(sets: TokenSets, vocab: Sequence[str]) -> _U64:
    """MinHash signatures of non-empty token sets, shape (NUM_HASHES, number of sets).

    Each token is hashed once with BLAKE2b (8 bytes); hash function k is then
    x -> (a_k x + b_k) mod 2**64, whose high bits (which decide the minimum) are a
    multiply-shift universal hash of an already uniform x. Column i's row k is the
    minimum over set i's tokens, computed for all sets at once with ``reduceat``.
    """
    digests = b"".join(
        hashlib.blake2b(tok.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        for tok in vocab
    )
    flat = np.frombuffer(digests, dtype="<u8").astype(np.uint64)[sets.ids]
    signatures = np.empty((NUM_HASHES, len(sets.size)), dtype=np.uint64)
    scratch = np.empty_like(flat)
    for k in range(NUM_HASHES):
        # uint64 arithmetic wraps modulo 2**64, which is the hash's definition.
        np.multiply(flat, _MULTIPLIERS[k], out=scratch)
        np.add(scratch, _ADDENDS[k], out=scratch)
        signatures[k] = np.minimum.reduceat(scratch, sets.start)
    return signatures


def _buckets(signatures: _U64, bands: int, rows: int) -> list[list[int]]:
    """Every LSH bucket with two or more members, members ascending, over all bands."""
    found: list[list[int]] = []
    for band in range(bands):
        block = signatures[band * rows : (band + 1) * rows]
        # One 64-bit key per band: a random linear mix of its rows. Unequal rows that
        # collide anyway cost one extra verification, never a wrong group.
        key = (block * _BAND_MIX[:rows, None]).sum(axis=0, dtype=np.uint64)
        order = np.argsort(key, kind="stable")  # stable: a bucket lists members ascending
        ordered = key[order]
        same = np.concatenate(([False], ordered[1:] == ordered[:-1], [False]))
        edges = np.diff(same.astype(np.int8))
        run_starts = np.flatnonzero(edges == 1)  # ``same`` goes up at a run's 2nd member
        run_ends = np.flatnonzero(edges == -1)
        members = order.tolist()
        for start, end in zip(run_starts.tolist(), run_ends.tolist(), strict=True):
            found.append(members[start : end + 1])
    return found


def near_duplicate_groups(
    items: Sequence[tuple[str, str]], threshold: float = 0.85
) -> list[list[str]]:
    """Groups of ids whose texts are near-duplicates: Jaccard of ``tokens`` >= threshold.

    ``items`` are (id, text) pairs in a stable order. A group is a connected component,
    of two or more items, of the graph whose edges join texts with Jaccard >= threshold:
    membership is transitive, so two members of one group may differ more than the
    threshold allows while each link of the chain between them does not. Each group
    lists its ids in input order; groups are ordered by their first member's position.
    Ids are not checked for uniqueness: a repeated id is listed once per occurrence.

    Texts with identical token sets are always grouped (bucketed exactly, first).
    Texts without any word token are never grouped (``jaccard`` of them is 0.0).
    Distinct token sets are paired by MinHash-LSH (64 hashes, banded per threshold)
    and every candidate pair is verified with the exact Jaccard, so no group holds a
    false link. LSH can miss a true pair near the threshold: at 0.85 a pair at exactly
    J = 0.85 is missed with probability ~8.8e-4 (``lsh_miss_probability``), far less
    above it. Thresholds below ~0.5 make many candidates and get slow on large inputs.

    Raises InvalidArgumentError if ``threshold`` is not in (0, 1] or an item is not a
    (str, str) pair.
    """
    t = _check_threshold(threshold)
    # Exact duplicates first: one slot per distinct token set, numbered by first use.
    slot_of_set: dict[frozenset[str], int] = {}
    sets: list[frozenset[str]] = []
    slots: list[int] = []  # per item: its set's slot, or -1 for a text without words
    ids: list[str] = []
    for item in items:
        try:
            if isinstance(item, str):  # would unpack as two characters
                raise TypeError
            ident, text = item
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                "items must be (id, text) pairs", hint="pass a sequence of (str, str) tuples"
            ) from None
        if not isinstance(ident, str):
            raise InvalidArgumentError(
                f"an item id must be a str, got {type(ident).__name__}",
                hint="pass a sequence of (str, str) tuples",
            )
        token_set = tokens(text)
        ids.append(ident)
        if not token_set:
            slots.append(-1)
            continue
        slot = slot_of_set.setdefault(token_set, len(sets))
        if slot == len(sets):
            sets.append(token_set)
        slots.append(slot)

    parent = list(range(len(sets)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving keeps chains short
            x = parent[x]
        return x

    sizes = [len(s) for s in sets]

    def similar(x: int, y: int) -> bool:
        # J <= min/max of the sizes, and float division keeps that order, so this
        # cheap bound never skips a pair the exact test would keep.
        nx, ny = sizes[x], sizes[y]
        size_bound = nx / ny if nx <= ny else ny / nx
        return size_bound >= t and jaccard(sets[x], sets[y]) >= t

    if t < 1.0 and len(sets) > 1:
        bands, rows = _banding(t)
        token_sets, vocab = _token_sets(sets)
        need = token_sets.least_common_table(t)
        for bucket in _buckets(_signatures(token_sets, vocab), bands, rows):
            if len(bucket) > SMALL_BUCKET:
                # Every pair at once, as matrix products: the same exact test (see
                # ``jaccard_blocks``), whose links give the same components.
                for x, y in bucket_links(token_sets, bucket, need, similar):
                    rx, ry = find(x), find(y)
                    parent[rx] = parent[ry] = min(rx, ry)
                continue
            for j in range(1, len(bucket)):
                x = bucket[j]
                rx = find(x)
                for y in bucket[:j]:
                    ry = find(y)
                    # Already joined: the edge could not change any component, and
                    # skipping it keeps buckets of true duplicates near-linear.
                    if rx != ry and similar(x, y):
                        root = min(rx, ry)
                        parent[rx] = parent[ry] = root
                        rx = root

    by_root: dict[int, list[str]] = {}  # insertion order = first member's position
    for ident, slot in zip(ids, slots, strict=True):
        if slot >= 0:
            by_root.setdefault(find(slot), []).append(ident)
    return [group for group in by_root.values() if len(group) >= 2]
