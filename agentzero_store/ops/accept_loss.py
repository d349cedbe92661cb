"""``agentzero store accept-loss``: record a loss the user accepts, and go on from what is there.

When a source holds less than the acknowledgement ledger says (a lost or truncated
document log, a lost ``memory.db-wal``, a file replaced by an older copy), every open
refuses it. A user who has no backup, or chose not to restore one, runs this: each
source that fails its check is taken as it is now, the ledger records what was expected
and what was found (the newest ``ack_format.MAX_LOSSES`` losses stay in the ledger, and
``store verify --json`` shows how many), and a new state begins:

- a missing or emptied source starts over empty (a new ``memory.db``, a new log
  generation), so a planted or emptied file is never mistaken for the store's;
- a shorter or older source is accepted at what it holds (generation and seq);
- a missing or unreadable ledger is started again from the sources as they are.

It does not repair damage inside a source (a record or page that fails
authentication): that is ``rag salvage`` or a restore, and this refuses to paper over
it. Every derived index checkpoint is dropped (they may cover what was lost) and rebuilt
on the next open. Runs under the writer lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base.config import Layout, StoreConfig
from ..base.errors import CorruptStoreError
from ..memory.sqlite.schema import migrate
from ..memory.sqlite.source import memory_present, memory_seq
from ..storage.ack_format import SOURCES, Source, SourceState
from ..storage.acks import Ledger, count, create_ledger
from ..storage.credentials import Credential
from ..storage.fileio import DEFAULT_IO, FileIO
from ..storage.keys import StoreKeys, unlock_slot
from ..storage.lock import writer_lock
from ..storage.sources import judge_documents, judge_memory
from ..storage.sqlcipher import Database
from .rotate import drop_sidecar_checkpoints


@dataclass(frozen=True)
class AcceptedLoss:
    """One source whose loss was accepted."""

    source: str
    problem: str
    expected: str
    found: str


@dataclass
class AcceptLossResult:
    """What ``accept_loss`` recorded (empty ``losses``: every source was whole)."""

    data_dir: str
    losses: list[AcceptedLoss] = field(default_factory=list)
    ledger_restarted: bool = False
    indexes_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "data_dir": self.data_dir,
            "losses": [loss.__dict__ for loss in self.losses],
            "ledger_restarted": self.ledger_restarted,
            "indexes_dropped": self.indexes_dropped,
        }


def accept_loss(root: Path | str, cred: Credential, *, io: FileIO = DEFAULT_IO) -> AcceptLossResult:
    """Accept every source of the data dir ``root`` as it is; record what was lost."""
    layout = Layout(Path(root).expanduser())
    result = AcceptLossResult(str(layout.root))
    # A wrong credential fails here, before writer.lock is created or written.
    unlock_slot(layout, cred, allow_rotation=True)
    with writer_lock(layout.root, purpose="store accept-loss"):
        keys, _ = unlock_slot(layout, cred)  # an unfinished rotation is finished first
        ledger = _ledger(layout, keys, result, io)
        with ledger:
            _memory(layout, keys, ledger, result)
            _documents(layout, keys, ledger, result, io)
        if result.losses or result.ledger_restarted:
            result.indexes_dropped = drop_sidecar_checkpoints(layout, io)
    return result


def _ledger(layout: Layout, keys: StoreKeys, result: AcceptLossResult, io: FileIO) -> Ledger:
    def opened() -> Ledger:
        return Ledger(layout.root, keys.ledger_key, keys.store_id, writable=True, io=io)

    try:
        ledger: Ledger | None = opened()
    except CorruptStoreError:
        ledger = None  # missing, or not a ledger any more
    if ledger is not None and all(ledger.read(s).state is not None for s in SOURCES):
        return ledger
    if ledger is not None:
        ledger.close()  # a source's entry has no authentic slot left
    # A new ledger; every source is then recorded as found.
    create_ledger(layout.root, keys.ledger_key, keys.store_id, io=io)
    result.ledger_restarted = True
    return opened()


def _record(
    ledger: Ledger,
    source: Source,
    state: SourceState,
    result: AcceptLossResult,
    problem: str | None,
    new: SourceState,
) -> None:
    if problem is None and not result.ledger_restarted:
        return
    expected = _describe(state)
    found = _describe(new)
    if problem is None:
        problem = "the acknowledgement ledger was missing or unreadable"
        expected = "unknown"
    ledger.update(source, new.with_loss(expected, found), sync=True)
    result.losses.append(AcceptedLoss(source, problem, expected, found))


def _describe(st: SourceState) -> str:
    if not st.created:
        return "not created"
    gen = f" of generation {st.generation}" if st.generation else ""
    return f"seq {count(st.seq)}{gen}"


def _memory(layout: Layout, keys: StoreKeys, ledger: Ledger, result: AcceptLossResult) -> None:
    path = layout.memory_db
    state = ledger.state("memory")
    present = memory_present(path)
    if not present:
        problem = judge_memory(state, present=False, seq=0)
        if problem is None and not result.ledger_restarted:
            return
        if problem is None and not path.exists():
            # A store that never wrote memory: nothing to record but its absence.
            ledger.update("memory", replace(state, created=False, seq=0), sync=True)
            return
        # Start over empty, so the file the ledger vouches for is one we created.
        db = _open(path, keys)
        db.close()
        _record(ledger, "memory", state, result, problem, replace(state, created=True, seq=0))
        return
    db = _open(path, keys)
    try:
        seq = memory_seq(db)
    finally:
        db.close()
    problem = judge_memory(state, present=True, seq=seq)
    _record(ledger, "memory", state, result, problem, replace(state, created=True, seq=seq))


def _open(path: Path, keys: StoreKeys) -> Database:
    db = Database(path, keys.sqlcipher_key, busy_timeout_ms=StoreConfig().busy_timeout_ms)
    try:
        # Damaged pages are not a loss to accept: restore or salvage them.
        bad = [str(r[0]) for r in db.query("PRAGMA cipher_integrity_check")]
        if bad:
            raise CorruptStoreError(
                f"memory.db has damaged pages ({bad[0]}); accept-loss does not repair damage",
                path=path,
                hint="restore memory.db from a backup (`agentzero store restore`)",
            )
        migrate(db, keys.store_id)
    except BaseException:
        db.close()
        raise
    return db


def _documents(
    layout: Layout, keys: StoreKeys, ledger: Ledger, result: AcceptLossResult, io: FileIO
) -> None:
    from rag.maintenance import check_log, start_log  # lazily: the engine never imports rag
    from rag.migrate import log_kind

    path = layout.rag_log
    state = ledger.state("documents")
    kind = log_kind(path)
    if kind == "plaintext":
        if state.created:
            raise CorruptStoreError(
                "a plaintext log is where the sealed document log was; accept-loss never "
                "seals a file it did not write",
                path=path,
                hint="move the file out of the data dir (it may be planted), then run "
                "`agentzero store accept-loss` again; to import documents, use "
                "`agentzero rag ingest`",
            )
        return  # a store that never had a sealed log: the next open migrates it
    if kind in ("missing", "empty"):
        problem = judge_documents(state, kind=kind)
        if problem is None and not result.ledger_restarted:
            return
        if problem is None and kind == "missing":
            ledger.update("documents", replace(state, created=False, seq=0), sync=True)
            return
        generation = start_log(path, keys, io=io)
        new = replace(state, created=True, seq=0, generation=generation, pending=None)
        _record(ledger, "documents", state, result, problem, new)
        return
    check = check_log(path, keys)
    if check.error is not None:
        raise CorruptStoreError(
            f"the document log is damaged ({check.error.message}); accept-loss does not "
            "repair damage",
            path=path,
            record=check.error.record,
            offset=check.error.offset,
            hint="recover what is readable with `agentzero rag salvage`, or restore a backup",
        )
    problem = judge_documents(state, kind="sealed", generation=check.generation, seq=check.seq)
    new = replace(state, created=True, seq=check.seq, generation=check.generation, pending=None)
    _record(ledger, "documents", state, result, problem, new)


__all__ = ["AcceptLossResult", "AcceptedLoss", "accept_loss"]
