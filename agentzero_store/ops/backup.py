"""``agentzero store backup OUT`` / ``restore OUT --data-dir NEW``: online snapshots.

A backup is a directory, still encrypted at rest::

    OUT/keys.json            the key header (wrapped keys only), as it was
    OUT/memory.db            VACUUM INTO under the same SQLCipher key: one consistent state
    OUT/memory.archive.db    the archive of archived memories' text (if the store has one),
                             VACUUM INTO under its key, taken after memory.db and checked to
                             hold every text memory.db's copy marks archived
    OUT/rag/index.jsonl      the document log up to its last acknowledged record
    OUT/backup.json          format, store id, seqs, sha256 + size of each file, and an
                             HMAC over all of it (a subkey of the master key)

Sidecars are left out: they are derived and rebuilt on the first open. ``backup.json``
is written last, so a backup interrupted half way has no manifest and is refused by
``restore``. Taking a backup needs no writer lock: SQLite's snapshot and the log's single
descriptor (see ``rag.maintenance.snapshot_log``) are consistent beside a writer, and
memory.db and its archive are copied in the order, and checked, so that the archive's
copy holds every text memory.db's copy needs (see ``_snapshot_memories``).

``restore`` refuses a non-empty target, checks every checksum and the HMAC, copies into
a staging dir beside the target, renames it into place, then verifies the result.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..agentmem.sqlite.archive import audit, required_texts
from ..base.config import Layout, StoreConfig
from ..base.errors import (
    CorruptStoreError,
    StoreExistsError,
    StoreIOError,
    StoreNotFoundError,
    TamperedRecordError,
)
from ..memory.sqlite.source import memory_seq
from ..storage.ack_format import Source, SourceState
from ..storage.acks import create_ledger
from ..storage.backup_log import note_backup
from ..storage.credentials import Credential
from ..storage.fileio import DEFAULT_IO, FileIO, atomic_write, fsync_path, translate_os_errors
from ..storage.keys import StoreKeys, unlock_slot
from ..storage.sqlcipher import Database
from .verify import VerifyReport, verify_store

BACKUP_FORMAT = "agentzero-backup/1"
MANIFEST = "backup.json"
KEYS, MEMORY, ARCHIVE, LOG = "keys.json", "memory.db", "memory.archive.db", "rag/index.jsonl"
SNAPSHOT_ATTEMPTS = 3  # memory.db + archive pairs tried before giving up (see _snapshot_memories)


@dataclass(frozen=True)
class BackupResult:
    """Where the backup went and what it holds."""

    path: str
    store_id: str
    memory_seq: int | None
    log_seq: int | None
    files: dict[str, dict[str, Any]]
    recorded: bool = False  # noted as the store's last backup (``storage.backup_log``)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def _mac_key(keys: StoreKeys) -> bytes:
    return keys.subkey("backup-manifest")


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with translate_os_errors("reading", path), open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _require_empty(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise StoreExistsError(f"{path} exists and is not empty")


def backup_store(
    root: Path | str, cred: Credential, out: Path | str, *, io: FileIO = DEFAULT_IO
) -> BackupResult:
    """Write a consistent, encrypted snapshot of the data dir ``root`` into ``out``."""
    layout, dest = Layout(Path(root).expanduser()), Path(out).expanduser()
    try:
        keys_bytes = layout.keys.read_bytes()
    except FileNotFoundError as exc:
        raise StoreNotFoundError(f"no store in {layout.root}") from exc
    keys, _ = unlock_slot(layout, cred)  # refuses a half-done key rotation
    _require_empty(dest)
    with translate_os_errors("creating", dest):
        dest.mkdir(parents=True, exist_ok=True, mode=0o700)
        (dest / "rag").mkdir(exist_ok=True, mode=0o700)
    memory_seq = _snapshot_memories(layout, keys, dest, io)
    log_seq = None
    if layout.rag_log.exists():
        from rag.maintenance import snapshot_log  # lazily: the engine never imports rag eagerly

        log_seq = snapshot_log(layout.rag_log, keys, dest / LOG, io=io).seq
    atomic_write(dest / KEYS, keys_bytes, io=io)
    if layout.keys.read_bytes() != keys_bytes:
        again, _ = unlock_slot(layout, cred)
        if again.master != keys.master:
            # A rotation re-keyed the files under us: the copies may not match keys.json.
            raise StoreIOError(
                "the store's keys were rotated during the backup", hint="run the backup again"
            )
    files = {
        rel: {"sha256": _sha256(dest / rel), "bytes": (dest / rel).stat().st_size}
        for rel in (KEYS, MEMORY, ARCHIVE, LOG)
        if (dest / rel).exists()
    }
    body: dict[str, Any] = {
        "format": BACKUP_FORMAT,
        "store_id": keys.store_id,
        "created_at": datetime.now(UTC).isoformat(),
        "memory_seq": memory_seq,
        "log_seq": log_seq,
        "files": files,
    }
    body["mac"] = hmac.new(_mac_key(keys), _canonical(body), "sha256").hexdigest()
    # The commit point: a backup without its manifest is incomplete and never restored.
    atomic_write(dest / MANIFEST, json.dumps(body, indent=2).encode() + b"\n", io=io)
    # Noted on this machine (never in the store: a backup writes nothing to it).
    recorded = note_backup(keys.store_id, body["created_at"], memory_seq, log_seq)
    return BackupResult(str(dest), keys.store_id, memory_seq, log_seq, files, recorded)


def _snapshot_memories(layout: Layout, keys: StoreKeys, dest: Path, io: FileIO) -> int | None:
    """Copy memory.db, then the archive; returns the seq of memory.db's copy.

    The two files have no shared transaction, and memory.db is the authority: its rows
    say which texts the archive must hold. The archive's copy is taken AFTER memory.db's
    because archiving writes the archive first and memory.db second: every text that
    memory.db's copy marks archived was committed to the archive before that copy was
    taken, so a later copy of the archive holds it. The other order would lose texts
    archived between the two copies. The later copy may hold extra rows (archived after
    memory.db's copy): harmless, consolidation drops spare copies.

    One race remains: a restore or erase (memory.db first, then the archive) landing
    between the two copies removes a text memory.db's copy still marks archived. So
    the pair is checked, and taken again when the archive's copy lacks a text; a backup
    that could not be restored is never written.
    """
    memory, archive = dest / MEMORY, dest / ARCHIVE
    missing: list[str] = []
    for _ in range(SNAPSHOT_ATTEMPTS):
        if not _snapshot_db(layout.memory_db, keys.sqlcipher_key, memory):
            return None
        _snapshot_db(layout.memory_archive, keys.archive_key, archive)
        seq, problems = _check_copies(keys, memory, archive)
        if not problems:
            return seq
        # Copies that do not match are never left for a manifest (and VACUUM INTO
        # refuses an existing target on the next attempt).
        for p in (memory, archive):
            if p.exists():
                io.unlink(p)
        for memory_id, problem in problems:
            if memory_id is None:  # the archive itself is wrong: no retry helps
                raise CorruptStoreError(
                    problem,
                    path=layout.memory_archive,
                    hint="run `agentzero store verify` for the findings",
                )
        missing = [i for i, _ in problems if i is not None]
    first = ", ".join(missing[:3])
    raise CorruptStoreError(
        f"the archive's copy lacks texts memory.db's copy marks archived (e.g. memory "
        f"{first}), {SNAPSHOT_ATTEMPTS} times: the archive is damaged, or archived memories "
        "were restored or erased all through the backup",
        path=layout.memory_archive,
        hint="run `agentzero store verify`; if it is clean, run the backup again",
    )


def _snapshot_db(path: Path, key: bytes, target: Path) -> bool:
    """VACUUM INTO ``target``, durable and private; False when ``path`` is absent."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    db = Database(path, key, busy_timeout_ms=StoreConfig().busy_timeout_ms)
    try:
        # VACUUM INTO reads one snapshot (a read transaction) and writes it, encrypted
        # with the same key, to a new file: consistent beside a writer, no plaintext.
        db.query("VACUUM INTO ?", (str(target),))
    finally:
        db.close()
    # VACUUM INTO creates the file with the umask's mode; keep it private like the rest.
    with translate_os_errors("securing", target):
        os.chmod(target, 0o600)
    # VACUUM INTO does not fsync; the manifest must not name a file that is not on disk.
    fsync_path(target)
    return True


def _check_copies(
    keys: StoreKeys, memory: Path, archive: Path
) -> tuple[int, list[tuple[str | None, str]]]:
    """The seq of memory.db's copy, and what is wrong with the archive's copy against it
    (``agentmem.archive.audit``: an id it lacks or holds another text for, or None)."""
    timeout_ms = StoreConfig().busy_timeout_ms
    copy = Database(memory, keys.sqlcipher_key, busy_timeout_ms=timeout_ms, readonly=True)
    try:
        # The seq of the copy itself (a write may have landed between any two statements).
        seq = memory_seq(copy)
        required = required_texts(copy)
    finally:
        copy.close()
    if not required:
        return seq, []
    if not archive.exists():
        first = ", ".join(sorted(required)[:3])
        return seq, [
            (
                None,
                f"the archive is missing: memory.db has {len(required):,} archived memories "
                f"whose text lives only in it (e.g. {first})",
            )
        ]
    arch = Database(archive, keys.archive_key, busy_timeout_ms=timeout_ms, readonly=True)
    try:
        problems = audit(arch, keys.store_id, required)
    finally:
        arch.close()
    return seq, problems


def read_manifest(backup: Path) -> dict[str, Any]:
    """The backup's manifest, after checking every file's size and checksum."""
    try:
        m = json.loads((backup / MANIFEST).read_bytes())
    except FileNotFoundError as exc:
        raise StoreNotFoundError(
            f"{backup} is not a complete backup (no {MANIFEST})",
            hint="a backup interrupted before its manifest was written cannot be restored",
        ) from exc
    except (OSError, ValueError) as exc:
        raise CorruptStoreError(f"{MANIFEST} is unreadable: {exc}", path=backup / MANIFEST) from exc
    if not isinstance(m, dict) or m.get("format") != BACKUP_FORMAT:
        raise CorruptStoreError("not an agentzero backup manifest", path=backup / MANIFEST)
    for rel, f in m.get("files", {}).items():
        path = backup / rel
        if not path.is_file() or path.stat().st_size != f.get("bytes"):
            raise CorruptStoreError("missing, or not the size the manifest says", path=path)
        if _sha256(path) != f.get("sha256"):
            raise CorruptStoreError("fails its checksum", path=path)
    return m


@dataclass(frozen=True)
class RestoreResult:
    """Where the store was restored, and the verification of the result."""

    data_dir: str
    store_id: str
    memory_seq: int | None
    log_seq: int | None
    verify: VerifyReport

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        d = dict(self.__dict__)
        d["verify"] = self.verify.to_dict()
        return d


def _restore_ledger(staging: Path, keys: StoreKeys, m: dict[str, Any], io: FileIO) -> None:
    """The restored store's acknowledgement ledger: exactly what the (authenticated)
    backup holds, so a later loss of it is detected like any other."""
    states: dict[Source, SourceState] = {}
    if m.get("memory_seq") is not None:
        states["memory"] = SourceState(created=True, seq=int(m["memory_seq"]))
    if m.get("log_seq") is not None:
        from rag.maintenance import check_log  # lazily: the engine never imports rag eagerly

        check = check_log(staging / LOG, keys)
        if check.error is not None or check.seq != m["log_seq"]:
            raise CorruptStoreError(
                f"the backed-up log holds {check.seq} records; the manifest says {m['log_seq']}",
                path=staging / LOG,
            )
        states["documents"] = SourceState(created=True, seq=check.seq, generation=check.generation)
    create_ledger(staging, keys.ledger_key, keys.store_id, states, io=io)


def restore_store(
    backup: Path | str, target: Path | str, cred: Credential, *, io: FileIO = DEFAULT_IO
) -> RestoreResult:
    """Restore ``backup`` into the new, empty data dir ``target`` and verify it."""
    src, dst = Path(backup).expanduser(), Path(target).expanduser()
    _require_empty(dst)
    m = read_manifest(src)
    keys, _ = unlock_slot(Layout(src), cred)
    unsigned = {k: v for k, v in m.items() if k != "mac"}
    want = hmac.new(_mac_key(keys), _canonical(unsigned), "sha256").hexdigest()
    if not hmac.compare_digest(str(m.get("mac")), want) or m.get("store_id") != keys.store_id:
        raise TamperedRecordError("the backup manifest fails authentication", path=src / MANIFEST)
    staging = dst.with_name(f".{dst.name}.restore-{secrets.token_hex(4)}")
    try:
        with translate_os_errors("creating", staging):
            # The staging dir becomes the data dir: private like every store directory
            # (mkdir's mode applies to the last component only, and through the umask).
            dst.parent.mkdir(parents=True, exist_ok=True)
            for d in (staging, staging / "rag"):
                d.mkdir(mode=0o700)
                os.chmod(d, 0o700)
        for rel in m["files"]:
            atomic_write(staging / rel, (src / rel).read_bytes(), io=io)
        _restore_ledger(staging, keys, m, io)
        with translate_os_errors("restoring into", dst):
            if dst.exists():
                dst.rmdir()  # empty (checked above); rename cannot replace a directory
            # The whole store appears at once, so a crash never leaves half a restore
            # under the real name; then make the rename itself durable.
            io.replace(staging, dst)
            io.fsync_dir(dst.parent)
    finally:
        if staging.exists():
            with contextlib.suppress(OSError):
                for p in sorted(staging.rglob("*"), reverse=True):
                    p.rmdir() if p.is_dir() else os.unlink(p)
                staging.rmdir()
    report = verify_store(dst, cred)
    if not report.clean:
        raise CorruptStoreError(
            "the restored store does not verify clean",
            path=dst,
            hint="run `agentzero store verify` on it for the findings",
        )
    return RestoreResult(str(dst), keys.store_id, m.get("memory_seq"), m.get("log_seq"), report)


__all__ = ["BackupResult", "RestoreResult", "backup_store", "read_manifest", "restore_store"]
