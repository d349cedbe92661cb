"""``agentzero store backup OUT`` / ``restore OUT --data-dir NEW``: online snapshots.

A backup is a directory, still encrypted at rest::

    OUT/keys.json            the key header (wrapped keys only), as it was
    OUT/memory.db            VACUUM INTO under the same SQLCipher key: one consistent state
    OUT/rag/index.jsonl      the document log up to its last acknowledged record
    OUT/backup.json          format, store id, seqs, sha256 + size of each file, and an
                             HMAC over all of it (a subkey of the master key)

Sidecars are left out: they are derived and rebuilt on the first open. ``backup.json``
is written last, so a backup interrupted half way has no manifest and is refused by
``restore``. Taking a backup needs no writer lock: SQLite's snapshot and the log's single
descriptor (see ``rag.maintenance.snapshot_log``) are consistent beside a writer.

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

from ..base.config import Layout, StoreConfig
from ..base.errors import (
    CorruptStoreError,
    StoreExistsError,
    StoreIOError,
    StoreNotFoundError,
    TamperedRecordError,
)
from ..memory.source import memory_seq
from ..storage.acks import Source, SourceState, create_ledger
from ..storage.credentials import Credential
from ..storage.fileio import DEFAULT_IO, FileIO, atomic_write, fsync_path, translate_os_errors
from ..storage.keys import StoreKeys, unlock_slot
from ..storage.sqlcipher import Database
from .verify import VerifyReport, verify_store

BACKUP_FORMAT = "agentzero-backup/1"
MANIFEST = "backup.json"
KEYS, MEMORY, LOG = "keys.json", "memory.db", "rag/index.jsonl"


@dataclass(frozen=True)
class BackupResult:
    """Where the backup went and what it holds."""

    path: str
    store_id: str
    memory_seq: int | None
    log_seq: int | None
    files: dict[str, dict[str, Any]]

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
    memory_seq = _snapshot_memory(layout, keys, dest / MEMORY)
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
        for rel in (KEYS, MEMORY, LOG)
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
    return BackupResult(str(dest), keys.store_id, memory_seq, log_seq, files)


def _snapshot_memory(layout: Layout, keys: StoreKeys, target: Path) -> int | None:
    if not layout.memory_db.exists():
        return None
    cfg = StoreConfig()
    db = Database(layout.memory_db, keys.sqlcipher_key, busy_timeout_ms=cfg.busy_timeout_ms)
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
    # The seq of the copy itself (a write may have landed between any two statements).
    copy = Database(target, keys.sqlcipher_key, busy_timeout_ms=cfg.busy_timeout_ms, readonly=True)
    try:
        return memory_seq(copy)
    finally:
        copy.close()


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
                f"the backed-up log holds {check.seq} records; the manifest says "
                f"{m['log_seq']}",
                path=staging / LOG,
            )
        states["documents"] = SourceState(
            created=True, seq=check.seq, generation=check.generation
        )
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
