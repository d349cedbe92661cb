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

Memory per row, at dimension d: 4·d bytes of vector (1,536 at 384-d), 29 bytes of
metadata (label 8, scope 3×4, expiry 8, live 1), ~12–24 bytes of posting lists, plus
4 bytes per label ever assigned (the label → slot table). Deleted rows keep their slot
until the next load or rebuild, which compacts.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import SidecarCorruptError
from .records import Scope

NO_EXPIRY = np.iinfo(np.int64).max
FIELDS = ("org_id", "agent_id", "conversation_id")
MAGIC = b"AZSCOPE\x00\x01"
FORMAT = 1
_LEN = struct.Struct("<Q")

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

    def view(self) -> npt.NDArray[np.int32]:
        return self.a[: self.n]


class ScopeMap:
    """Slot-indexed scope/expiry/live/vector arrays plus per-field posting lists."""

    def __init__(self, dim: int, capacity: int = 1_024) -> None:
        self.dim = dim
        self._ids: tuple[dict[str, int], ...] = ({}, {}, {})
        self._slot_of = np.full(capacity, -1, np.int32)  # by label
        self._labels = np.zeros(capacity, np.int64)
        self._scope = np.zeros((capacity, 3), np.int32)
        self._expires = np.zeros(capacity, np.int64)
        self._live = np.zeros(capacity, bool)
        self._vectors = np.zeros((capacity, dim), np.float32)
        self._postings: tuple[dict[int, _Slots], ...] = ({}, {}, {})
        self.size = 0  # slots in use (live or not)
        self.live = 0

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
        lab = np.asarray(labels, np.int64)
        if len(np.unique(lab)) != len(lab):  # a label twice in one batch: last one wins
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
        slots = self._slot_of[lab].astype(np.int64)
        new = slots < 0
        slots[new] = np.arange(self.size, self.size + int(new.sum()))
        self._grow_slots(self.size + int(new.sum()))
        self.size += int(new.sum())
        self._slot_of[lab[new]] = slots[new]
        # Posting lists: every new slot, and old slots whose field value changed.
        for f in range(3):
            changed = new | (self._scope[slots, f] != ids[:, f])
            for value in np.unique(ids[changed, f]).tolist():
                sel = changed & (ids[:, f] == value)
                self._postings[f].setdefault(value, _Slots()).add(slots[sel])
        self.live += int((~self._live[slots]).sum())
        self._labels[slots] = lab
        self._scope[slots] = ids
        self._expires[slots] = exp
        self._live[slots] = True
        self._vectors[slots] = vectors

    def delete(self, labels: Sequence[int]) -> None:
        """Mark rows deleted; unknown or already-deleted labels are ignored."""
        slots = self._slots_of(np.asarray(labels, np.int64))
        slots = np.unique(slots[slots >= 0])
        slots = slots[self._live[slots]]
        self._live[slots] = False
        self.live -= len(slots)

    # ---------------------------------------------------------------- queries
    def resolve(self, scope: Scope) -> Want | None:
        """The scope as interned ids; None if a given value was never seen (no rows)."""
        want: list[int | None] = []
        for f, name in enumerate(FIELDS):
            value = getattr(scope, name)
            if value is not None and value not in self._ids[f]:
                return None
            want.append(None if value is None else self._ids[f][value])
        return want[0], want[1], want[2]

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
        return self._vectors[slots]

    def live_labels(self) -> I64:
        """Labels of every live row, in slot order."""
        return self._labels[: self.size][self._live[: self.size]]

    # ---------------------------------------------------------------- (de)serialisation
    def dump(self) -> bytes:
        """Live rows' labels, scope and expiry (not vectors: the HNSW state has them),
        with the names still in use; explicit format, no pickle."""
        live = np.flatnonzero(self._live[: self.size])
        scope = self._scope[live]
        names: list[list[str]] = []
        remapped = np.empty_like(scope)
        for f in range(3):
            used, inverse = np.unique(scope[:, f], return_inverse=True)
            by_id = {i: s for s, i in self._ids[f].items()}
            names.append([by_id[int(i)] for i in used])
            remapped[:, f] = inverse.reshape(-1)
        header = json.dumps(
            {"format": FORMAT, "dim": self.dim, "count": len(live), "names": names}, sort_keys=True
        ).encode()
        return b"".join(
            [
                MAGIC,
                _LEN.pack(len(header)),
                header,
                self._labels[live].tobytes(),
                np.ascontiguousarray(remapped).tobytes(),
                self._expires[live].tobytes(),
            ]
        )

    @classmethod
    def load(cls, blob: bytes, dim: int, vec_labels: npt.NDArray[np.uint64], vecs: F32) -> ScopeMap:
        """Rebuild from ``dump``'s bytes; each row's vector is looked up by label in
        ``vec_labels``/``vecs`` (the HNSW state). Inconsistent input is corrupt."""
        labels, scope, expires, names = _parse(blob, dim)
        order = np.argsort(vec_labels)
        pos = np.searchsorted(vec_labels[order], labels.astype(np.uint64))
        pos = np.minimum(pos, max(len(order) - 1, 0))
        if len(labels) and (not len(order) or np.any(vec_labels[order][pos] != labels)):
            raise SidecarCorruptError("the scope map names rows the HNSW index lacks")
        m = cls(dim, capacity=max(len(labels), 16))
        scopes = [(names[0][a], names[1][b], names[2][c]) for a, b, c in scope.tolist()]
        exp = [None if e == NO_EXPIRY else e for e in expires.tolist()]
        if len(labels):
            m.upsert(labels.tolist(), scopes, exp, vecs[order[pos]])
        return m

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
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name in ("_labels", "_scope", "_expires", "_live", "_vectors"):
            old: npt.NDArray[Any] = getattr(self, name)
            grown = np.zeros((new, *old.shape[1:]), old.dtype)
            grown[:cap] = old
            setattr(self, name, grown)


def _parse(blob: bytes, dim: int) -> tuple[I64, npt.NDArray[np.int32], I64, list[list[str]]]:
    head = len(MAGIC) + _LEN.size
    if not blob.startswith(MAGIC) or len(blob) < head:
        raise SidecarCorruptError("not a scope map (bad magic)")
    (hlen,) = _LEN.unpack_from(blob, len(MAGIC))
    try:
        h = json.loads(blob[head : head + hlen])
        n, names = int(h["count"]), h["names"]
        ok = (
            h["format"] == FORMAT
            and h["dim"] == dim
            and n >= 0
            and len(names) == 3
            and all(isinstance(s, str) for ns in names for s in ns)
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise SidecarCorruptError("the scope map header is unreadable") from exc
    body = blob[head + hlen :]
    if not ok or len(body) != n * (8 + 12 + 8):
        raise SidecarCorruptError("the scope map is inconsistent or truncated")
    labels = np.frombuffer(body, np.int64, n, 0)
    scope = np.frombuffer(body, np.int32, 3 * n, 8 * n).reshape(n, 3)
    expires = np.frombuffer(body, np.int64, n, 20 * n)
    if n and (
        labels.min() <= 0
        or len(np.unique(labels)) != n
        or scope.min() < 0
        or any(int(scope[:, f].max()) >= len(names[f]) for f in range(3))
    ):
        raise SidecarCorruptError("the scope map holds out-of-range values")
    return labels, scope, expires, names


__all__ = ["NO_EXPIRY", "ScopeMap", "Want"]
