"""Each source checked against the acknowledgement ledger (``acks``) before it is used.

``judge_memory`` and ``judge_documents`` compare what a source holds with what the ledger
says was acknowledged and return the problem in words (None when the source is whole):
both the stores' opens and ``agentzero store verify`` use them, so a store refuses exactly
what verify reports. ``SourceGuard`` is what a store holds while open: it checks the
source, records a source the ledger does not know yet (a store from before the ledger,
or a crash between creating a source and recording it), and acknowledges writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Literal

from ..base.config import Layout
from .ack_format import Source, SourceState
from .acks import FIX_LOSS, Ledger, SourceLossError, count, missing_range
from .keys import StoreKeys

LogKind = Literal["missing", "empty", "plaintext", "sealed"]
Writer = Callable[[], AbstractContextManager[object]]


def judge_memory(state: SourceState, *, present: bool, seq: int) -> str | None:
    """The problem with a ``memory.db`` that holds changes up to ``seq`` (or is absent or
    empty: ``present`` false), or None when it holds all that was acknowledged."""
    if not state.created:
        return None
    if not present:
        if state.seq == 0:
            return None  # created, but nothing was ever acknowledged: nothing to lose
        return (
            f"memory.db is missing or empty; changes up to seq {count(state.seq)} were "
            f"acknowledged ({missing_range(0, state.seq)} missing)"
        )
    if seq < state.seq:
        return (
            f"memory.db holds changes up to seq {count(seq)}; {count(state.seq)} were "
            f"acknowledged ({missing_range(seq, state.seq)} missing): a lost or damaged "
            "memory.db-wal, or an older copy of memory.db"
        )
    return None


def judge_documents(
    state: SourceState, *, kind: LogKind, generation: str | None = None, seq: int = 0
) -> str | None:
    """The problem with a document log of ``kind`` (``generation``, ``seq`` records when
    sealed), or None when it holds all that was acknowledged."""
    if not state.created:
        return None
    n = count(state.seq)
    if kind in ("missing", "empty"):
        if state.seq == 0:
            return None
        return (
            f"the document log is {kind}; {n} records were acknowledged "
            f"({missing_range(0, state.seq)} missing)"
        )
    if kind == "plaintext":
        return (
            f"a plaintext log is where the sealed document log was ({n} records were "
            "acknowledged): the file was replaced; it is not migrated, because this store "
            "already had a sealed log"
        )
    if state.seq == 0 or state.generation is None or generation == state.generation:
        if seq < state.seq:
            return (
                f"the document log holds {count(seq)} records; {n} were acknowledged "
                f"({missing_range(seq, state.seq)} missing)"
            )
        return None
    if state.pending is not None and generation == state.pending[0]:
        want = state.pending[1]
        if seq < want:
            return (
                f"the compacted document log holds {count(seq)} records; {count(want)} were "
                f"written ({missing_range(seq, want)} missing)"
            )
        return None
    return (
        f"the document log is generation {generation}, but generation {state.generation} "
        f"was acknowledged ({n} records): the file was replaced by another (an older "
        "copy, a copy from before a compaction, or another store's)"
    )


def loss_error(problem: str, path: Path) -> SourceLossError:
    """The error an open raises for ``problem``."""
    return SourceLossError(problem, path=path, hint=FIX_LOSS)


class SourceGuard:
    """One source's use of the ledger while its store is open."""

    def __init__(
        self, ledger: Ledger, source: Source, path: Path, *, writer: Writer | None = None
    ) -> None:
        self.ledger = ledger
        self.source = source
        self.path = path
        self._writer = writer  # the data dir's writer role, for rare read-modify-writes

    def state(self) -> SourceState:
        """What the ledger says now."""
        return self.ledger.state(self.source)

    def _locked_update(self, change: SourceState, *, sync: bool = True) -> None:
        # Rare state changes (creation, adoption) read, change and write back the region:
        # under the data dir's writer role, unless the caller already holds it.
        with self._writer() if self._writer is not None else contextlib.nullcontext():
            self.ledger.update(self.source, change, sync=sync)

    def will_create(self) -> None:
        """Record, before the source file is first created, that it exists from now on
        (so a planted or emptied file is never taken for a new source later)."""
        self.adopt(0)

    def adopt(self, seq: int, generation: str | None = None) -> None:
        """Record a source the ledger did not know (a store from before the ledger)."""
        st = self.state()
        if not st.created:
            self._locked_update(replace(st, created=True, seq=seq, generation=generation))

    def acknowledge(self, seq: int, generation: str | None = None) -> None:
        """After the source's fsync or commit returned: it holds everything up to ``seq``."""
        self.ledger.acknowledge(self.source, seq, generation)

    def begin_generation(self, generation: str, seq: int) -> None:
        """Before a new generation of the source replaces the file (compaction)."""
        st = self.state()
        self.ledger.update(self.source, replace(st, pending=(generation, seq)), sync=True)

    def end_generation(self, generation: str, seq: int) -> None:
        """After the new generation is durable in place."""
        st = self.state()
        self.ledger.update(
            self.source,
            replace(st, created=True, generation=generation, seq=seq, pending=None),
            sync=True,
        )


def open_ledger(
    layout: Layout, keys: StoreKeys, *, writable: bool, flush_every: int = 100
) -> Ledger:
    """The data dir's ledger (``SourceLossError`` if it is missing)."""
    return Ledger(
        layout.root, keys.ledger_key, keys.store_id, writable=writable, flush_every=flush_every
    )


__all__ = [
    "LogKind",
    "SourceGuard",
    "Writer",
    "judge_documents",
    "judge_memory",
    "loss_error",
    "open_ledger",
]
