"""``agentzero store verify``: check every byte of a data dir that can be checked.

- ``keys.json`` parses and the credential opens it; no key rotation is half done;
- ``memory.db``: ``PRAGMA cipher_integrity_check`` (every page's HMAC) and ``PRAGMA
  integrity_check`` (b-trees, indexes, FTS), it belongs to this store, and every stored
  time is one a read can turn back into a datetime;
- ``memory.archive.db`` (when it exists or memory.db has archived memories): present,
  every page's HMAC, this store's, and holding the text of every memory memory.db marks
  archived with the digest memory.db recorded;
- ``rag/index.jsonl``: every sealed record authenticates and seqs run 1..N;
- every sidecar checkpoint: manifest MAC, each data file's checksum and AES-GCM tag,
  and that it belongs to its source (store id, log generation) and is not ahead of it.

Nothing is modified (SQLite may create its ``-wal``/``-shm`` files, as every reader
does). Each problem becomes a ``Finding`` naming the file, where in it, what is wrong and
the command that fixes it. ``error`` findings make the store unclean; ``note`` findings
are states the store heals by itself (a torn tail cut on the next write, an index
rebuilt on the next open).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..agentmem.sqlite.archive import audit, required_texts
from ..base.config import Layout, StoreConfig
from ..base.errors import AgentZeroStoreError, CorruptStoreError, SidecarCorruptError
from ..memory.sqlite.schema import get_meta
from ..memory.sqlite.source import feed_seq, memory_present, memory_seq, unreadable_times
from ..sidecar.manifest import MANIFEST
from ..sidecar.mechanism import Sidecar
from ..sidecar.types import Change
from ..storage.acks import FIX_LOSS, SOURCES, Ledger, Source, SourceState
from ..storage.credentials import Credential
from ..storage.key_header import read_header
from ..storage.keys import StoreKeys, unlock_slot
from ..storage.sources import judge_documents, judge_memory
from ..storage.sqlcipher import Database

Severity = Literal["error", "note"]

FIX_RESTORE = "agentzero store restore BACKUP --data-dir NEW_DIR (then point agents at NEW_DIR)"
FIX_SALVAGE = (
    "agentzero rag salvage RECOVERED.jsonl, replace rag/index.jsonl with it, then "
    "agentzero store accept-loss --yes (records what salvage could not recover)"
)
FIX_REBUILD = "agentzero store rebuild"
FIX_ROTATE = "agentzero key rotate"
FIX_ACCEPT = FIX_LOSS
FIX_TIME = (
    "agentzero memory erase --id ID --yes --org ORG --agent AGENT (or restore a backup from "
    "before it was written)"
)
_PAGE = re.compile(r"page (\d+)")
Progress = Callable[[str, int, int], None]  # (what was just checked, done, total)
_STAGES = ("keys.json", "ledger", "memory.db", "memory.archive.db", "rag/index.jsonl")
MAX_SIDECARS = 3  # the memory's HNSW, the documents' BM25 and HNSW (``_sidecars``)
MAX_ID_FINDINGS = 100  # per-memory findings of the archive; the rest are counted in one


@dataclass(frozen=True)
class Finding:
    """One problem: which file, where in it, what is wrong, what fixes it."""

    file: str
    where: str | None
    problem: str
    fix: str
    severity: Severity = "error"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


@dataclass
class VerifyReport:
    """Every finding, and what was checked (counts, seqs) for the summary."""

    data_dir: str
    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, Any] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity == "error" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "data_dir": self.data_dir,
            "clean": self.clean,
            "checked": self.checked,
            "findings": [f.to_dict() for f in self.findings],
        }


def verify_store(
    root: Path | str, cred: Credential, progress: Progress | None = None
) -> VerifyReport:
    """Verify the data dir ``root``. A wrong credential raises ``WrongKeyError``.

    ``progress(step, done, total)`` is called after each check: the keys, the ledger,
    memory.db, the archive, the document log, then each index checkpoint. ``total``
    counts every checkpoint a data dir can have until the ones this one has are known."""
    tell = progress or (lambda step, done, total: None)
    layout = Layout(Path(root).expanduser())
    report = VerifyReport(str(layout.root))
    try:
        keys, slot = unlock_slot(layout, cred, allow_rotation=True)
        header = read_header(layout)
    except CorruptStoreError as exc:
        report.findings.append(Finding(str(layout.keys), None, exc.message, FIX_RESTORE))
        return report
    report.checked["keys"] = {
        "store_id": keys.store_id,
        "slot": slot,
        "slots": [s.get("id") for s in header["slots"]],
    }
    if header.get("rotation") is not None:
        # Files may be under either key until the rotation finishes: check nothing more.
        report.findings.append(
            Finding(
                str(layout.keys),
                "rotation",
                "a key rotation was interrupted; the data is under the old and new keys",
                FIX_ROTATE,
            )
        )
        return report
    most = len(_STAGES) + MAX_SIDECARS
    tell(_STAGES[0], 1, most)
    acked = _check_ledger(layout, keys, report)
    tell(_STAGES[1], 2, most)
    covered, archived = _check_memory(layout, keys, report, acked["memory"])
    tell(_STAGES[2], 3, most)
    _check_archive(layout, keys, archived, report)
    tell(_STAGES[3], 4, most)
    log_state = _check_log(layout, keys, report, acked["documents"])
    tell(_STAGES[4], 5, most)
    sidecars = list(_sidecars(layout, keys, covered, log_state))
    total = len(_STAGES) + len(sidecars)
    report.checked["sidecars"] = {}
    for done, sidecar in enumerate(sidecars, len(_STAGES) + 1):
        _check_sidecar(keys, *sidecar, report)
        tell(sidecar[0].name, done, total)
    return report


# ---------------------------------------------------------------------- the ledger
def _check_ledger(
    layout: Layout, keys: StoreKeys, report: VerifyReport
) -> dict[Source, SourceState]:
    """What the ledger says was acknowledged (a source it cannot vouch for: nothing)."""
    states: dict[Source, SourceState] = {s: SourceState() for s in SOURCES}
    path = layout.ledger
    if not path.exists():
        if keys.acks_required:
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    "the acknowledgement ledger is missing: whether a source lost "
                    "acknowledged data cannot be told",
                    FIX_ACCEPT,
                )
            )
        else:
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    "no acknowledgement ledger yet (a store from before it); the next open "
                    "starts one from the sources as they are",
                    "none needed",
                    "note",
                )
            )
        return states
    try:
        ledger = Ledger(layout.root, keys.ledger_key, keys.store_id, writable=False)
    except AgentZeroStoreError as exc:
        report.findings.append(Finding(str(path), None, exc.message, FIX_ACCEPT))
        return states
    with ledger:
        for source in SOURCES:
            got = ledger.read(source)
            if got.state is None:
                report.findings.append(
                    Finding(
                        str(path),
                        f"{source} entry",
                        "no slot of this entry authenticates",
                        FIX_ACCEPT,
                    )
                )
                continue
            if got.damaged:
                report.findings.append(
                    Finding(
                        str(path),
                        f"{source} entry, slot {got.damaged[0]}",
                        "a slot does not authenticate (a torn update); the other holds the "
                        "state and the next update rewrites it",
                        "none needed",
                        "note",
                    )
                )
            states[source] = got.state
    report.checked["acknowledged"] = {
        source: {
            "created": st.created,
            "seq": st.seq,
            **({"generation": st.generation} if source == "documents" else {}),
            "accepted_losses": len(st.losses),
        }
        for source, st in states.items()
    }
    return states


# ---------------------------------------------------------------------- memory.db
def _check_memory(
    layout: Layout, keys: StoreKeys, report: VerifyReport, acked: SourceState
) -> tuple[int | None, dict[str, str] | None]:
    """Check memory.db; returns its change-feed seq (what its sidecars must cover) and
    the archived texts it requires (id → digest), each None when it cannot be read."""
    path = layout.memory_db
    if not memory_present(path):
        # Never opened here: SQLite would write a header into an empty file.
        if (problem := judge_memory(acked, present=False, seq=0)) is not None:
            report.findings.append(Finding(str(path), None, problem, FIX_ACCEPT))
        else:
            report.checked["memory_db"] = "absent (no memory written yet)"
        return None, {}
    db = None
    try:
        db = Database(path, keys.sqlcipher_key, busy_timeout_ms=StoreConfig().busy_timeout_ms)
        for line in (str(r[0]) for r in db.query("PRAGMA cipher_integrity_check")):
            report.findings.append(Finding(str(path), _page_of(line), line, FIX_RESTORE))
        rows = [str(r[0]) for r in db.query("PRAGMA integrity_check")]
        for line in rows if rows != ["ok"] else []:
            report.findings.append(
                Finding(str(path), None, f"integrity_check: {line}", FIX_RESTORE)
            )
        migrated = bool(db.query("SELECT 1 FROM sqlite_master WHERE name = 'meta'"))
        if migrated and get_meta(db, "store_id") != keys.store_id:
            report.findings.append(
                Finding(str(path), "meta.store_id", "memory.db is another store's", FIX_RESTORE)
            )
        for mid, column, us in unreadable_times(db, MAX_ID_FINDINGS) if migrated else []:
            report.findings.append(
                Finding(
                    str(path),
                    f"memory {mid}, {column}",
                    f"the stored time {us} µs since 1970 is outside the years 1 to 9999: "
                    "every read of this memory fails",
                    FIX_TIME,
                )
            )
        seq = memory_seq(db)
        if (problem := judge_memory(acked, present=True, seq=seq)) is not None:
            report.findings.append(Finding(str(path), f"seq {seq}", problem, FIX_ACCEPT))
        report.checked["memory_db"] = {"pages_checked": True, "seq": seq}
        return feed_seq(db), required_texts(db)  # what the sidecars cover, the archive holds
    except AgentZeroStoreError as exc:
        # Damage bad enough that SQLite cannot even run the checks (page 1, the schema).
        report.findings.append(Finding(str(path), _page_of(exc.message), exc.message, FIX_RESTORE))
        return None, None
    finally:
        if db is not None:
            db.close()


def _check_archive(
    layout: Layout, keys: StoreKeys, required: dict[str, str] | None, report: VerifyReport
) -> None:
    """Check memory.archive.db against what memory.db requires of it (``required``: id →
    digest; None when memory.db could not be read, so only the file itself is checked).

    memory.db is the authority: an archive missing rows it names is data loss (the
    memory's text lives nowhere else), while spare rows are harmless (consolidation drops
    them), so only the former are findings.
    """
    path = layout.memory_archive
    if not (path.exists() and path.stat().st_size > 0):
        if required:
            first = ", ".join(sorted(required)[:3])
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    f"the archive is missing: memory.db has {len(required):,} archived "
                    f"memories whose text lives only in it (e.g. {first})",
                    FIX_RESTORE,
                )
            )
        else:
            report.checked["memory_archive"] = "absent (no memory archived)"
        return
    db = None
    try:
        # Not read-only, like memory.db above: a reader of a WAL database may need to
        # create its -shm; no row is written.
        db = Database(path, keys.archive_key, busy_timeout_ms=StoreConfig().busy_timeout_ms)
        bad_pages = [str(r[0]) for r in db.query("PRAGMA cipher_integrity_check")]
        for line in bad_pages:
            report.findings.append(Finding(str(path), _page_of(line), line, FIX_RESTORE))
        rows = [str(r[0]) for r in db.query("PRAGMA integrity_check")]
        for line in rows if rows != ["ok"] else []:
            report.findings.append(
                Finding(str(path), None, f"integrity_check: {line}", FIX_RESTORE)
            )
        problems = audit(db, keys.store_id, required or {})
    except AgentZeroStoreError as exc:
        # Not under this store's archive key (another store's file), or damage bad
        # enough that SQLite cannot read the schema.
        report.findings.append(Finding(str(path), _page_of(exc.message), exc.message, FIX_RESTORE))
        return
    finally:
        if db is not None:
            db.close()
    per_id = [(i, p) for i, p in problems if i is not None]
    for _, problem in (p for p in problems if p[0] is None):
        report.findings.append(Finding(str(path), "meta", problem, FIX_RESTORE))
    for memory_id, problem in per_id[:MAX_ID_FINDINGS]:
        report.findings.append(Finding(str(path), f"memory {memory_id}", problem, FIX_RESTORE))
    if len(per_id) > MAX_ID_FINDINGS:
        report.findings.append(
            Finding(
                str(path),
                None,
                f"{len(per_id) - MAX_ID_FINDINGS:,} more archived memories have no or "
                "another text in the archive",
                FIX_RESTORE,
            )
        )
    report.checked["memory_archive"] = {
        "pages_checked": True,
        "archived_required": len(required or {}),
        "missing_or_different": len(per_id),
    }


def _page_of(message: str) -> str | None:
    m = _PAGE.search(message)
    return f"page {m[1]}" if m else None


# ---------------------------------------------------------------------- document log
@dataclass(frozen=True)
class _LogState:
    seq: int
    generation: str
    chunking_id: str


def _check_log(
    layout: Layout, keys: StoreKeys, report: VerifyReport, acked: SourceState
) -> _LogState | None:
    path = layout.rag_log
    from rag.chunking import DEFAULT_PARAMS  # lazily: the engine never imports rag eagerly
    from rag.maintenance import check_log, log_kind

    kind = log_kind(path)
    if kind != "sealed":
        problem = judge_documents(acked, kind=kind)
        if problem is not None:
            report.findings.append(Finding(str(path), None, problem, FIX_ACCEPT))
        elif kind == "plaintext":
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    "a plaintext legacy log (this store never had a sealed one); it is "
                    "sealed on the next read-write open",
                    "none needed (or any agentzero rag write command)",
                    "note",
                )
            )
        else:
            report.checked["document_log"] = f"{kind} (no document ingested yet)"
        return None

    try:
        check = check_log(path, keys)
    except AgentZeroStoreError as exc:
        report.findings.append(Finding(str(path), None, exc.message, FIX_SALVAGE))
        return None
    if check.error is not None:
        e = check.error
        where = f"line {e.record}, byte {e.offset}" if e.record is not None else None
        report.findings.append(Finding(str(path), where, e.message, FIX_SALVAGE))
        return None
    if check.torn_bytes:
        report.findings.append(
            Finding(
                str(path),
                f"byte {check.size}",
                f"a torn last line of {check.torn_bytes} bytes (an append that was never "
                "acknowledged); it is cut on the next read-write open",
                "none needed (or any agentzero rag write command)",
                "note",
            )
        )
    report.checked["document_log"] = {"records": check.seq, "live": check.live}
    assert check.generation is not None
    problem = judge_documents(acked, kind="sealed", generation=check.generation, seq=check.seq)
    if problem is not None:
        report.findings.append(Finding(str(path), f"byte {check.size}", problem, FIX_ACCEPT))
    return _LogState(check.seq, check.generation, DEFAULT_PARAMS.id)


# ---------------------------------------------------------------------- sidecars
class _Probe:
    """Stands in for an index library: verification never hands a byte to a loader."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def params(self) -> Mapping[str, Any]:
        return {}

    def reset(self) -> None:
        return None

    def insert(self, items: Sequence[tuple[int, object]]) -> None:
        return None

    def delete(self, keys: Sequence[int]) -> None:
        return None

    def count(self) -> int:
        return 0

    def dump(self) -> dict[str, bytes]:
        return {}

    def load(self, files: Mapping[str, bytes]) -> None:
        return None


class _SeqSource:
    """The two facts about a source a checkpoint is checked against."""

    def __init__(self, store_id: str, seq: int) -> None:
        self._store_id, self._seq = store_id, seq

    @property
    def store_id(self) -> str:
        return self._store_id

    def source_seq(self) -> int:
        return self._seq

    def changes_since(self, seq: int, limit: int) -> Sequence[Change[object]]:
        return []

    def item_count(self) -> int:
        return 0

    def snapshot(self, batch: int) -> Iterator[Sequence[tuple[int, object]]]:
        return iter(())


def _sidecars(
    layout: Layout, keys: StoreKeys, memory_seq: int | None, log: _LogState | None
) -> Iterable[tuple[Path, str, str, int]]:
    if memory_seq is not None:
        yield layout.memory_hnsw, "hnsw", keys.store_id, memory_seq
    if log is not None:
        source_id = f"{keys.store_id}:{log.generation}:{log.chunking_id}"
        yield layout.rag_tantivy, "bm25", source_id, log.seq
        yield layout.rag_hnsw, "hnsw", source_id, log.seq


def _check_sidecar(
    keys: StoreKeys,
    directory: Path,
    kind: str,
    source_id: str,
    seq: int,
    report: VerifyReport,
) -> None:
    checked: dict[str, Any] = report.checked["sidecars"]
    if not (directory / MANIFEST).exists():
        checked[directory.name] = "no checkpoint (built on the next open)"
        return
    sidecar: Sidecar[object] = Sidecar(
        directory, _Probe(kind), _SeqSource(source_id, seq), key=keys.sidecar_key
    )
    try:
        manifest, stale = sidecar.verify_checkpoint()
    except SidecarCorruptError as exc:
        report.findings.append(Finding(str(directory), MANIFEST, exc.message, FIX_REBUILD))
        return
    if stale is not None:
        report.findings.append(
            Finding(
                str(directory),
                MANIFEST,
                f"the checkpoint was built from another {stale} (e.g. before a compaction); "
                "it is rebuilt on the next open",
                FIX_REBUILD,
                "note",
            )
        )
        return
    checked[directory.name] = {
        "covered_seq": manifest.get("covered_seq"),
        "entries": manifest.get("entries"),
    }


__all__ = ["Finding", "VerifyReport", "verify_store"]
