"""In-memory scope, expiry and vector of every row the memory index holds.

Reading a row from SQLCipher costs 10–30 µs (one encrypted page per row), so filtering
HNSW candidates or scanning a scope row by row cannot meet a 1 ms budget. ``ScopeMap``
keeps what recall needs to decide *which* rows qualify, in numpy arrays indexed by a
dense slot: the org / agent / conversation of each row interned as small ints, its
expiry, a live flag, and its float32 vector (for exact search over a scope). Per scope
field a posting list (value → slots) finds a scope's rows without a full-table mask.

It is derived state, never the authority: it is filled only through the change feed
(``MemoryIndex`` applies the same inserts and deletes as the HNSW graph, in the same
replay), and the final ``k`` rows of every answer are re-checked in SQLCipher.

Memory per row, at dimension d: 29 bytes of metadata (label 8, scope 3×4, expiry 8,
live 1), ~12–24 bytes of posting lists, 4 bytes per label ever assigned (the label → slot
table), and its vector: rows loaded from a checkpoint read theirs in place from the
decrypted checkpoint (which stays alive: the HNSW rows' vectors are ~90% of it, links and
labels the rest), rows added later keep 4·d bytes in a growable matrix. Deleted (and
re-upserted) rows keep their slot until the next load or rebuild, which compacts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...base.errors import SidecarCorruptError
from ..records import Scope
from .scope_format import encode, has_duplicates, parse

NO_EXPIRY = np.iinfo(np.int64).max
FIELDS = ("org_id", "agent_id", "conversation_id")

Want = tuple[int | None, int | None, int | None]
"""A resolved scope: the interned id of each given field, None where unconstrained."""
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]


class _Slots:
    """A growable int32 array of slots (a posting list)."""

    __slots__ = ("a", "n")

    def __init__(self) -> None:
        self.a = np.empty(8, np.int32)
        self.n = 0

    def add(self, slots: npt.NDArray[np.int64]) -> None:
        need = self.n + len(slots)
        if need > len(self.a):
            grown = np.empty(max(need, 2 * len(self.a)), np.int32)
            grown[: self.n] = self.a[: self.n]
            self.a = grown
        self.a[self.n : need] = slots
        self.n = need

    @classmethod
    def of(cls, slots: npt.NDArray[np.int32]) -> _Slots:
        """A list holding ``slots`` (kept as is: ``add`` copies before it grows)."""
        s = cls()
        s.a, s.n = slots, len(slots)
        return s

    def view(self) -> npt.NDArray[np.int32]:
        return self.a[: self.n]


class ScopeMap:
    """Slot-indexed scope/expiry/live/vector arrays plus per-field posting lists.

    Slots ``< base_n`` are the rows of a loaded HNSW state, in its order: their vectors
    are a read-only view into the checkpoint's plaintext (no second copy; see ``load``).
    Later rows get slots after them, with vectors in a growable ``tail`` matrix. A row
    that is upserted again gets a fresh slot (its old one dies), so a base vector is never
    written.
    """

    def __init__(self, dim: int, capacity: int = 1_024) -> None:
        self.dim = dim
        self._ids: tuple[dict[str, int], ...] = ({}, {}, {})
        self._slot_of = np.full(capacity, -1, np.int32)  # by label
        self._labels = np.zeros(capacity, np.int64)
        self._scope = np.zeros((capacity, 3), np.int32)
        self._expires = np.zeros(capacity, np.int64)
        self._live = np.zeros(capacity, bool)
        self._base: F32 = np.zeros((0, dim), np.float32)  # vectors of slots < base_n
        self._base_n = 0
        self._tail = np.zeros((0, dim), np.float32)  # vectors of slots >= base_n
        self._postings: tuple[dict[int, _Slots], ...] = ({}, {}, {})
        self.size = 0  # slots in use (live or not)
        self.live = 0
        # scope -> (now_us it was counted at, now_us it stays valid until, rows): cleared
        # by every upsert/delete; see ``scope_size``.
        self._sizes: dict[Want, tuple[int, int, int]] = {}

    def __repr__(self) -> str:
        return f"ScopeMap(live={self.live}, slots={self.size})"

    # ---------------------------------------------------------------- updates
    def upsert(
        self,
        labels: Sequence[int],
        scopes: Sequence[tuple[str, str, str]],
        expires: Sequence[int | None],
        vectors: F32,
    ) -> None:
        """Add rows (or replace rows already held, reviving deleted ones)."""
        self._sizes.clear()
        lab = np.asarray(labels, np.int64)
        if has_duplicates(lab):  # a label twice in one batch: last one wins
            for i in range(len(lab)):
                self.upsert(
                    labels[i : i + 1], scopes[i : i + 1], expires[i : i + 1], vectors[i : i + 1]
                )
            return
        ids = np.array(
            [[self._intern(f, v) for f, v in enumerate(s)] for s in scopes], np.int32
        ).reshape(len(lab), 3)
        exp = np.fromiter((NO_EXPIRY if e is None else e for e in expires), np.int64, len(lab))
        self._grow_labels(int(lab.max(initial=0)) + 1)
        # A row held already loses its old slot (it stays in the posting lists, dead).
        old = self._slot_of[lab].astype(np.int64)
        old = old[old >= 0]
        self.live -= int(self._live[old].sum())
        self._live[old] = False
        slots = np.arange(self.size, self.size + len(lab), dtype=np.int64)
        self._grow_slots(self.size + len(lab))
        self.size += len(lab)
        self._slot_of[lab] = slots
        for f in range(3):
            for value in np.flatnonzero(np.bincount(ids[:, f])).tolist():
                self._postings[f].setdefault(value, _Slots()).add(slots[ids[:, f] == value])
        self.live += len(lab)
        self._labels[slots] = lab
        self._scope[slots] = ids
        self._expires[slots] = exp
        self._live[slots] = True
        self._tail[slots - self._base_n] = vectors

    def delete(self, labels: Sequence[int]) -> None:
        """Mark rows deleted; unknown or already-deleted labels are ignored."""
        self._sizes.clear()
        slots = self._slots_of(np.asarray(labels, np.int64))
        slots = np.sort(slots[slots >= 0])
        slots = slots[np.r_[True, slots[1:] != slots[:-1]]] if len(slots) else slots
        slots = slots[self._live[slots]]
        self._live[slots] = False
        self.live -= len(slots)

    def zero_dead(self) -> None:
        """Zero the vectors of dead slots (deleted or replaced rows): nothing reads them,
        and an erased row's vector should not outlive it in memory either."""
        dead = np.flatnonzero(~self._live[: self.size])
        base = dead[dead < self._base_n]
        if len(base):
            if not self._base.flags.writeable:
                self._base = self._base.copy()
            self._base[base] = 0
        self._tail[dead[dead >= self._base_n] - self._base_n] = 0

    # ---------------------------------------------------------------- queries
    def resolve(self, scope: Scope) -> Want | None:
        """The scope as interned ids; None if a given value was never seen (no rows)."""
        ids = self._ids
        o, a, c = scope.org_id, scope.agent_id, scope.conversation_id
        want: Want = (
            None if o is None else ids[0].get(o, -1),
            None if a is None else ids[1].get(a, -1),
            None if c is None else ids[2].get(c, -1),
        )
        return None if -1 in want else want

    def admit(self, labels: I64, want: Want, now_us: int) -> npt.NDArray[np.bool_]:
        """For each label: held, live, unexpired at ``now_us`` and inside ``want``."""
        slots = self._slots_of(labels)
        ok = slots >= 0
        return ok & self._qualify(np.where(ok, slots, 0), want, now_us)

    def scope_slots(
        self, want: Want, now_us: int, scan_limit: int | None = None
    ) -> npt.NDArray[np.int64] | None:
        """Slots of the live, unexpired rows in ``want`` (all rows if unconstrained).

        Scans the shortest posting list of the given fields; None if it is longer than
        ``scan_limit`` (the caller then estimates with ``upper_bound``).
        """
        lists = [self._postings[f].get(v) for f, v in enumerate(want) if v is not None]
        if not lists:
            if scan_limit is not None and self.size > scan_limit:
                return None
            cand = np.arange(self.size, dtype=np.int64)
        else:
            shortest = min(lists, key=lambda p: p.n if p is not None else 0)
            if shortest is None:
                return np.empty(0, np.int64)
            if scan_limit is not None and shortest.n > scan_limit:
                return None
            cand = shortest.view().astype(np.int64)
        return cand[self._qualify(cand, want, now_us)]

    def scope_size(self, want: Want, now_us: int) -> int:
        """How many live rows in ``want`` are unexpired at ``now_us`` (what
        ``scope_slots`` would return), from a cache when nothing changed since it was
        counted and no counted row has expired since (an unchanged scope is counted once,
        not scanned per query)."""
        got = self._sizes.get(want)
        if got is not None and got[0] <= now_us < got[1]:
            return got[2]
        slots = self.scope_slots(want, now_us)
        assert slots is not None
        until = int(self._expires[slots].min(initial=NO_EXPIRY))
        if len(self._sizes) >= 4_096:
            self._sizes.clear()
        self._sizes[want] = (now_us, until, len(slots))
        return len(slots)

    def upper_bound(self, want: Want) -> int:
        """An upper bound on the rows in ``want`` (its shortest posting list)."""
        sizes = [
            p.n if (p := self._postings[f].get(v)) is not None else 0
            for f, v in enumerate(want)
            if v is not None
        ]
        return min(sizes, default=self.live)

    def labels(self, slots: npt.NDArray[np.int64]) -> I64:
        """The labels of ``slots``."""
        return self._labels[slots]

    def vectors(self, slots: npt.NDArray[np.int64]) -> F32:
        """The vectors of ``slots`` as an (n, dim) matrix (a copy)."""
        base_n = self._base_n
        if not len(slots) or not base_n:
            return np.take(self._tail, slots - base_n, axis=0)
        if int(slots.max()) < base_n:  # the common case after a load: one take
            return np.take(self._base, slots, axis=0)
        in_base = slots < base_n
        out = np.empty((len(slots), self.dim), np.float32)
        out[in_base] = self._base[slots[in_base]]
        out[~in_base] = self._tail[slots[~in_base] - base_n]
        return out

    def live_labels(self) -> I64:
        """Labels of every live row, in slot order."""
        return self._labels[: self.size][self._live[: self.size]]

    # ---------------------------------------------------------------- (de)serialisation
    def dump(self) -> bytes:
        """Live rows' labels, scope and expiry (not vectors: the HNSW state has them),
        with the names still in use (see ``scope_format``)."""
        live = np.flatnonzero(self._live[: self.size])
        scope = self._scope[live]
        names: list[list[str]] = []
        remapped = np.empty_like(scope)
        for f in range(3):
            used = np.flatnonzero(np.bincount(scope[:, f], minlength=len(self._ids[f])))
            renumber = np.zeros(len(self._ids[f]), np.int32)
            renumber[used] = np.arange(len(used), dtype=np.int32)
            by_id = {i: s for s, i in self._ids[f].items()}
            names.append([by_id[i] for i in used.tolist()])
            remapped[:, f] = renumber[scope[:, f]]
        return encode(self.dim, self._labels[live], remapped, self._expires[live], names)

    @classmethod
    def load(
        cls, blob: memoryview, dim: int, graph_labels: npt.NDArray[np.uint64], graph_vectors: F32
    ) -> ScopeMap:
        """Rebuild from ``dump``'s bytes over a loaded HNSW state: ``graph_labels`` and
        ``graph_vectors`` are the label and vector of each of its rows, in its order.

        Bulk numpy, no per-row Python (a 100k map loads in milliseconds). Slot ``i`` is
        graph row ``i`` and ``graph_vectors`` is kept as is (a view into the decrypted
        checkpoint, not a copy: a second float32 matrix would cost 4·d bytes per row).
        Rows of the graph the map does not name (deleted ones) are dead slots. A map row
        the graph lacks, a duplicate name or an out-of-range value is corrupt.
        """
        labels, scope, expires, names = parse(blob, dim)
        cur, n = len(graph_labels), len(labels)
        order = np.argsort(graph_labels, kind="stable")
        pos = np.searchsorted(graph_labels[order], labels.astype(np.uint64))
        pos = np.minimum(pos, max(cur - 1, 0))
        if n and (not cur or np.any(graph_labels[order][pos] != labels.astype(np.uint64))):
            raise SidecarCorruptError("the scope map names rows the HNSW index lacks")
        if graph_vectors.shape != (cur, dim):
            raise SidecarCorruptError("the HNSW state's vectors have the wrong shape")
        ids = tuple({s: i for i, s in enumerate(ns)} for ns in names)
        if any(len(d) != len(ns) for d, ns in zip(ids, names, strict=True)):
            raise SidecarCorruptError("the scope map names a value twice")
        rows = order[pos].astype(np.int64)  # the graph row (= slot) of each map row
        m = cls(dim, capacity=max(cur, 16))
        m._ids = ids
        m._grow_labels(int(labels.max(initial=0)) + 1)
        m._slot_of[labels] = rows
        m._labels[rows] = labels
        m._scope[rows] = scope
        m._expires[rows] = expires
        m._live[rows] = True
        m._base, m._base_n = graph_vectors, cur
        m.size, m.live = cur, n
        for f in range(3):
            # Posting lists: the rows sorted by value, then by slot, cut at each value.
            by_value = np.lexsort((rows, scope[:, f]))
            sorted_slots = rows[by_value].astype(np.int32)
            counts = np.bincount(scope[:, f], minlength=len(names[f]))
            ends = np.cumsum(counts)
            m._postings[f].update(
                (v, _Slots.of(sorted_slots[int(e) - int(c) : int(e)]))
                for v, (c, e) in enumerate(zip(counts.tolist(), ends.tolist(), strict=True))
                if c
            )
        return m

    def rebase(self, vectors: F32) -> None:
        """Read the loaded rows' vectors from ``vectors`` (the same values, moved)."""
        if vectors.shape != self._base.shape:
            raise ValueError("rebase needs the same rows")
        self._base = vectors

    # ---------------------------------------------------------------- internals
    def _intern(self, field: int, value: str) -> int:
        ids = self._ids[field]
        got = ids.get(value)
        if got is None:
            got = ids[value] = len(ids)
        return got

    def _slots_of(self, labels: I64) -> npt.NDArray[np.int64]:
        inside = (labels >= 0) & (labels < len(self._slot_of))
        return np.where(inside, self._slot_of[np.where(inside, labels, 0)], -1).astype(np.int64)

    def _qualify(
        self, slots: npt.NDArray[np.int64], want: Want, now_us: int
    ) -> npt.NDArray[np.bool_]:
        ok: npt.NDArray[np.bool_] = self._live[slots] & (self._expires[slots] > now_us)
        for f, v in enumerate(want):
            if v is not None:
                ok &= self._scope[slots, f] == v
        return ok

    def _grow_labels(self, need: int) -> None:
        if need > len(self._slot_of):
            grown = np.full(max(need, 2 * len(self._slot_of)), -1, np.int32)
            grown[: len(self._slot_of)] = self._slot_of
            self._slot_of = grown

    def _grow_slots(self, need: int) -> None:
        cap = len(self._labels)
        if need > cap:
            new = max(need, 2 * cap)
            for name in ("_labels", "_scope", "_expires", "_live"):
                old: npt.NDArray[Any] = getattr(self, name)
                grown = np.zeros((new, *old.shape[1:]), old.dtype)
                grown[:cap] = old
                setattr(self, name, grown)
        tail_need, tail_cap = need - self._base_n, len(self._tail)
        if tail_need > tail_cap:
            # np.zeros: pages never written stay unmapped, so spare capacity costs no RSS.
            tail = np.zeros((max(tail_need, 2 * tail_cap, 16), self.dim), np.float32)
            tail[:tail_cap] = self._tail
            self._tail = tail


__all__ = ["NO_EXPIRY", "ScopeMap", "Want"]
