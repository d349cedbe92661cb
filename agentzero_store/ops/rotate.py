"""``agentzero key rotate``: a new master key for every byte, crash-safe and resumable.

The journal lives in keys.json itself. Steps, each safe to repeat::

    1. journal   keys.json += {"rotation": {id, new master sealed under the OLD master}}
    2. memory    memory.db: PRAGMA rekey to the new SQLCipher subkey (one transaction),
                 then reopened under the new key and every page checked: rekey answers
                 ok even when a full disk kept it from rewriting the file
    3. archive   memory.archive.db (if present), the same way, to the new archive subkey:
                 it holds the text of archived memories, unreadable once the old master
                 is forgotten
    4. log       rag/index.jsonl re-sealed under the new documents subkey (atomic_write),
                 then every record authenticated under the new key
    5. ledger    sources.ledger re-sealed under the new ledger subkey (atomic_write)
    6. sidecars  checkpoints under the old sidecar subkey removed (rebuilt on next open)
    7. commit    keys.json: the credential's slot now wraps the new master; journal gone

Any failure before step 7 raises a typed error and leaves the journal: the old key still
opens the store, and `key rotate` (or the next open) resumes.

The journal is durable before any file uses the new key, so no state exists in which
data is under a key nobody can unwrap. While the journal exists, the credential still
opens the OLD master, which unseals the new one: any credential of the store can finish
the job. Each data file is under exactly one of the two keys at any instant (steps 2 to
4 are atomic per file) and the code probes which. Opening a store whose journal is
present finishes the rotation first (``storage.datadir.open_data_dir`` calls
``resume_rotation``, which the package root installs there), so after a crash the store
opens with the same credential, under the new key.

Other slots (a recovery key, a second passphrase) wrap the old master and cannot be
rewrapped without their secrets: they are dropped and reported; export a new recovery
key afterwards. Stop other agentzero processes first: an open connection keeps the old
key (the writer lock keeps out writers that take it, not readers).

A PostgreSQL URL is rotated in one transaction instead (``ops.pg_rotate``): no journal,
and clients may stay connected (they get ``KeyRotatedError`` and reopen).
"""

from __future__ import annotations

import base64
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.config import KdfParams, Layout, StoreConfig
from ..base.errors import CorruptStoreError, StoreIOError
from ..sidecar.manifest import MANIFEST, TREE_SUFFIX
from ..storage.ack_format import SOURCES
from ..storage.acks import Ledger, create_ledger
from ..storage.credentials import KEY_BYTES, Credential
from ..storage.crypto import InvalidTag, Sealer
from ..storage.fileio import DEFAULT_IO, FileIO
from ..storage.key_header import read_header, write_header
from ..storage.keys import StoreKeys, new_slot, unlock, unlock_slot
from ..storage.lock import writer_lock
from ..storage.sqlcipher import Database
from .backends import is_postgres_url
from .keyops import slot_kdf

ROTATION_FORMAT = "agentzero-rotation/1"


@dataclass(frozen=True)
class RotateResult:
    """What a rotation did (``resumed``: it finished one a crash had interrupted).

    ``data_dir`` is the data dir, or the PostgreSQL URL (without its password).
    PostgreSQL only (a data dir re-keys whole files): ``resealed``, rows re-keyed per
    table; ``recomputed``, what did not derive from its row as written and was computed
    again from it (ids; empty when the store was consistent)."""

    data_dir: str
    store_id: str
    resumed: bool
    memory_rekeyed: bool
    log_resealed: bool
    sidecars_dropped: int
    slots_dropped: list[str]
    archive_rekeyed: bool = False
    resealed: dict[str, int] = field(default_factory=dict)
    recomputed: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def _journal_sealer(old: StoreKeys) -> Sealer:
    return Sealer(old.subkey("rotation-journal"))


def _journal_aad(store_id: str, rotation_id: str) -> bytes:
    return f"{ROTATION_FORMAT}|{store_id}|{rotation_id}".encode()


def rotate_keys(
    root: Path | str,
    cred: Credential,
    *,
    timeout: float | None = None,
    io: FileIO = DEFAULT_IO,
    progress: Callable[[int, int], None] | None = None,
) -> RotateResult:
    """Rotate the master key of the data dir ``root``, or finish an interrupted rotation.

    ``root`` may be a PostgreSQL URL: every row is re-keyed in one transaction
    (``ops.pg_rotate``), with ``progress(rows done, rows in all)``."""
    if isinstance(root, str) and is_postgres_url(root):
        from .pg_rotate import rotate_postgres

        r = rotate_postgres(root, cred, progress=progress)
        return RotateResult(
            r.where,
            r.store_id,
            False,
            True,
            False,
            0,
            r.slots_dropped,
            archive_rekeyed=r.archive,
            resealed=r.resealed,
            recomputed=r.notes,
        )
    result = _rotate(Layout(Path(root).expanduser()), cred, timeout, io, start=True)
    assert result is not None  # start=True always rotates
    return result


def resume_rotation(layout: Layout, cred: Credential, *, io: FileIO = DEFAULT_IO) -> StoreKeys:
    """Finish an interrupted rotation (unless another process has by now) and unlock.

    Never starts a new one: the process that was rotating may have finished while we
    waited for the writer lock.
    """
    _rotate(layout, cred, None, io, start=False)
    return unlock(layout, cred)


def _rotate(
    layout: Layout, cred: Credential, timeout: float | None, io: FileIO, *, start: bool
) -> RotateResult | None:
    # The credential first: a wrong one changes nothing, not even writer.lock.
    unlock_slot(layout, cred, allow_rotation=True)
    with writer_lock(layout.root, timeout=timeout, purpose="key rotate"):
        old, slot = unlock_slot(layout, cred, allow_rotation=True)
        header = read_header(layout)
        journal = header.get("rotation")
        resumed = journal is not None
        if journal is None and not start:
            return None
        if journal is None:
            new_master = secrets.token_bytes(KEY_BYTES)
            rid = secrets.token_hex(8)
            sealed = _journal_sealer(old).seal(new_master, _journal_aad(old.store_id, rid))
            header["rotation"] = {
                "format": ROTATION_FORMAT,
                "id": rid,
                "started_at": datetime.now(UTC).isoformat(),
                "new_master": base64.b64encode(sealed).decode("ascii"),
            }
            # Step 1, durable before any file is written under the new key.
            write_header(layout, header, io=io)
        else:
            new_master = _unseal_journal(layout, old, journal)
        new = StoreKeys(store_id=old.store_id, master=new_master)
        memory = _rekey_memory(layout.memory_db, old, new)
        _verify_memory(layout.memory_db, new)
        archive = _rekey_archive(layout.memory_archive, old, new)
        _verify_archive(layout.memory_archive, new)
        log = False
        if layout.rag_log.exists():
            # lazily: the engine never imports rag eagerly
            from rag.maintenance import check_log, reseal_log

            log = reseal_log(layout.rag_log, old, new, io=io)
            check = check_log(layout.rag_log, new)
            if check.error is not None:
                raise CorruptStoreError(
                    f"the re-sealed document log does not authenticate under the new key "
                    f"({check.error.message})",
                    path=layout.rag_log,
                    hint="run `agentzero key rotate` again to finish; the old key still "
                    "opens the store until the rotation commits",
                )
        _reseal_ledger(layout, old, new, io)
        dropped_sidecars = drop_sidecar_checkpoints(layout, io)
        dropped_slots = _commit(layout, cred, slot, new, io)
    return RotateResult(
        str(layout.root),
        old.store_id,
        resumed,
        memory,
        log,
        dropped_sidecars,
        dropped_slots,
        archive_rekeyed=archive,
    )


def _unseal_journal(layout: Layout, old: StoreKeys, journal: Any) -> bytes:
    try:
        blob = base64.b64decode(journal["new_master"], validate=True)
        return _journal_sealer(old).open(blob, _journal_aad(old.store_id, journal["id"]))
    except (InvalidTag, KeyError, TypeError, ValueError) as exc:
        raise CorruptStoreError(
            "the key-rotation journal in keys.json is damaged",
            path=layout.keys,
            hint="restore keys.json from a backup taken before the rotation",
        ) from exc


def _rekey_memory(path: Path, old: StoreKeys, new: StoreKeys) -> bool:
    """Step 2. False when memory.db is absent or already under the new key."""
    return _rekey_sqlcipher(path, old.sqlcipher_key, new.sqlcipher_key)


def _verify_memory(path: Path, new: StoreKeys) -> None:
    """Step 2's check, before the commit forgets the old key."""
    _verify_sqlcipher(path, new.sqlcipher_key)


def _rekey_archive(path: Path, old: StoreKeys, new: StoreKeys) -> bool:
    """Step 3. False when there is no archive or it is already under the new key.

    After memory.db, so a crash between the two leaves each file wholly under one key:
    the resumed run finds memory.db done (probe) and re-keys only the archive.
    """
    return _rekey_sqlcipher(path, old.archive_key, new.archive_key)


def _verify_archive(path: Path, new: StoreKeys) -> None:
    """Step 3's check: the archived texts must read under the new key before the commit."""
    _verify_sqlcipher(path, new.archive_key)


def _rekey_sqlcipher(path: Path, old_key: bytes, new_key: bytes) -> bool:
    """PRAGMA rekey one SQLCipher file from ``old_key`` to ``new_key``, idempotently.

    False when the file is absent or already under the new key (a previous run got past
    its rekey commit).
    """
    if not path.exists():
        return False
    timeout_ms = StoreConfig().busy_timeout_ms
    try:
        Database(path, new_key, busy_timeout_ms=timeout_ms).close()
        return False  # a previous run got past the rekey commit
    except CorruptStoreError:
        pass  # not (yet) under the new key: it must open with the old one
    db = Database(path, old_key, busy_timeout_ms=timeout_ms)
    try:
        # PRAGMA rekey rewrites every page in ONE transaction: after a crash the file is
        # entirely under the old key or entirely under the new one.
        db.query(f"PRAGMA rekey = \"x'{new_key.hex()}'\"")
    finally:
        db.close()
    return True


def _verify_sqlcipher(path: Path, new_key: bytes) -> None:
    """Before the commit forgets the old key: the file must open under the new key and
    every page must pass its HMAC. ``PRAGMA rekey`` answers ok even when it could not
    rewrite the file (a disk with less free space than the file's size)."""
    if not path.exists():
        return
    try:
        db = Database(path, new_key, busy_timeout_ms=StoreConfig().busy_timeout_ms)
    except CorruptStoreError as exc:
        free = shutil.disk_usage(path.parent).free
        size = path.stat().st_size
        raise StoreIOError(
            f"{path.name} is still under the old key after PRAGMA rekey ({free:,} bytes "
            f"free, {size:,} needed to rewrite it): the re-key did not take effect",
            hint=f"free at least {size:,} bytes on {path.parent}, then run `agentzero key "
            "rotate` to finish; the old key still opens the store until the rotation commits",
        ) from exc
    try:
        bad = [str(r[0]) for r in db.query("PRAGMA cipher_integrity_check")]
    finally:
        db.close()
    if bad:
        raise CorruptStoreError(
            f"{path.name} fails its page check under the new key ({bad[0]})",
            path=path,
            hint="run `agentzero key rotate` again to finish; the old key still opens the "
            "store until the rotation commits",
        )


def _reseal_ledger(layout: Layout, old: StoreKeys, new: StoreKeys, io: FileIO) -> None:
    """The acknowledgement ledger under the new key (idempotent: already done is fine)."""
    path = layout.ledger
    if not path.exists():
        create_ledger(layout.root, new.ledger_key, new.store_id, io=io)
        return
    for keys in (new, old):
        try:
            with Ledger(layout.root, keys.ledger_key, keys.store_id, writable=False) as ledger:
                states = {source: ledger.state(source) for source in SOURCES}
        except CorruptStoreError:
            continue
        if keys is new:
            return
        create_ledger(layout.root, new.ledger_key, new.store_id, states, io=io)
        return
    raise CorruptStoreError(
        "the acknowledgement ledger opens under neither the old nor the new key",
        path=path,
        hint="finish with `agentzero store accept-loss` after the rotation, or restore a backup",
    )


def drop_sidecar_checkpoints(layout: Layout, io: FileIO) -> int:
    """Every index checkpoint (and the log's replay catalog) goes; the next open rebuilds.

    Step 6 of a rotation (they are sealed with the old sidecar subkey), and what
    ``store accept-loss`` does (they may cover what was lost)."""
    n = 0
    if layout.rag_catalog.exists():  # sealed under the old key: ignored by now, so drop it
        io.unlink(layout.rag_catalog)
    for d in (layout.memory_hnsw, layout.rag_tantivy, layout.rag_hnsw):
        if not d.is_dir():
            continue  # the directory stays: its presence is what enables an index
        if (d / MANIFEST).exists():
            # The manifest first: without it the data files are never read, whatever
            # happens to them next.
            io.unlink(d / MANIFEST)
            n += 1
        for p in d.iterdir():
            if p.name.endswith(".sealed"):
                io.unlink(p)
            elif p.name.endswith(TREE_SUFFIX):  # blinded BM25: terms hashed under the old key
                shutil.rmtree(p)
        io.fsync_dir(d)
    return n


def _commit(layout: Layout, cred: Credential, slot: str, new: StoreKeys, io: FileIO) -> list[str]:
    """Step 7, the commit point: one atomic rewrite of keys.json."""
    header = read_header(layout)
    kdf = slot_kdf(header, slot) or KdfParams()
    dropped = [str(s.get("id")) for s in header["slots"] if s.get("id") != slot]
    header["slots"] = [new_slot(slot, cred, new.master, new.store_id, kdf)]
    header.pop("rotation", None)
    header["rotated_at"] = datetime.now(UTC).isoformat()
    write_header(layout, header, io=io)
    return dropped


__all__ = ["RotateResult", "drop_sidecar_checkpoints", "resume_rotation", "rotate_keys"]
