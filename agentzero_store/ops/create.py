"""``agentzero init``: create a store, or adopt an older AgentZero data dir in place.

A new store is its key header (with the OS keyring's key, ``--keyring``), its ledger
and an empty ``memory.db``. A data dir that holds a plaintext legacy ``rag/index.jsonl``
(AgentZero's document log) and no ``keys.json`` is *adopted*: the store is created
around it and every record is sealed under the new key, with no plaintext copy kept
(``rag.migrate``: one atomic replace, the old blocks overwritten).

The order makes a kill -9 at any instant safe:

1. every line of the legacy log is parsed (a bad one is refused before a byte is
   written);
2. the ledger, then ``keys.json`` (``storage.keys.create_keys``): from here on the data
   dir is a store whose ledger has never seen a sealed document log;
3. the log is sealed by one atomic replace: the commit point. Before it the plaintext
   log is whole; after it the adoption is done;
4. ``memory.db`` is created (empty; any later open would create it too).

A crash before step 2 leaves the data dir as it was (at most a ledger, which the next
init replaces); between 2 and 3, ``keys.json`` beside the untouched plaintext log, and
running ``agentzero init`` again (same credential) finishes the job. A plaintext log is
only sealed while the ledger says no sealed log was ever there: one planted where a
sealed log was is refused as tampering (``storage.sources.judge_documents``).

An AgentZero ``memory.db`` cannot be adopted in place (ours is SQLCipher under our key):
init refuses and says to move it out and import it (``ops.import_agentzero``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.config import Layout, StoreConfig
from ..base.errors import (
    CorruptStoreError,
    CredentialRequiredError,
    StoreExistsError,
    UnsupportedByBackendError,
)
from ..memory.postgres.store import PgMemoryStore, redact
from ..memory.sqlite.source import open_source
from ..storage.credentials import Credential, resolve_credential
from ..storage.datadir import create_data_dir, store_credential, unlock_data_dir
from ..storage.fileio import DEFAULT_IO, FileIO
from ..storage.foreign_db import is_plain_sqlite
from ..storage.key_header import read_header, store_exists
from ..storage.keys import StoreKeys
from ..storage.lock import writer_lock
from ..storage.os_keyring import keyring_account


@dataclass(frozen=True)
class InitResult:
    """What ``init_store`` did."""

    data_dir: str
    store_id: str
    created: bool  # keys.json was written by this call
    adopted_documents: int | None  # documents sealed from a plaintext log (None: none)
    resumed: bool  # an adoption a crash had interrupted was finished
    keyring: bool  # the OS keyring holds a key of this store

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def init_store(
    root: Path | str,
    *,
    passphrase: str | None = None,
    key: bytes | str | None = None,
    key_file: Path | str | None = None,
    keyring: bool = False,
    prompt: bool | None = None,
    config: StoreConfig | None = None,
    io: FileIO = DEFAULT_IO,
) -> InitResult:
    """Create the store in ``root``, adopting a plaintext legacy document log there.

    With ``keyring``, a random raw key is kept in the OS keyring and opens the store;
    a passphrase or key given as well opens it too, and none is asked for. Raises
    ``StoreExistsError`` if ``root`` already holds a store (unless an adoption there was
    interrupted: then it is finished, with the store's credential).
    """
    from rag.maintenance import adopt_legacy_log, legacy_documents, log_kind

    layout = Layout(Path(root).expanduser())
    config = config or StoreConfig()
    legacy = log_kind(layout.rag_log) == "plaintext"
    if store_exists(layout):
        if not legacy:
            raise StoreExistsError(f"a store already exists in {layout.root}")
        # keys.json beside a plaintext log: an adoption that stopped before its commit
        # point (or a store that never had a sealed log, which may be sealed the same way).
        keys = unlock_data_dir(
            layout,
            store_credential(
                layout, passphrase=passphrase, key=key, key_file=key_file, prompt=prompt
            ),
            io=io,
        )
        created = False
    else:
        _refuse_foreign_memory_db(layout)
        if legacy:
            legacy_documents(layout.rag_log)  # a bad line is refused before any write
        cred = _new_credential(passphrase, key, key_file, prompt, optional=keyring)
        keys, _ = create_data_dir(
            layout, cred, keyring=keyring, kdf=config.kdf, adopt_log=legacy, io=io
        )
        created = True
    adopted = None
    with writer_lock(layout.root, timeout=config.writer_lock_timeout_s, purpose="agentzero init"):
        if legacy:
            # The commit point of an adoption (see the module docstring).
            adopted, _ = adopt_legacy_log(layout, keys, io=io)
        _create_memory_db(layout, keys, config)
    return InitResult(
        data_dir=str(layout.root),
        store_id=keys.store_id,
        created=created,
        adopted_documents=adopted,
        resumed=legacy and not created,
        keyring=keyring_account(read_header(layout)) is not None,
    )


def _new_credential(
    passphrase: str | None,
    key: bytes | str | None,
    key_file: Path | str | None,
    prompt: bool | None,
    *,
    optional: bool,
) -> Credential | None:
    """The credential a new store is created with (asked twice on a terminal). With the
    OS keyring it is optional and never prompted for."""
    if not optional:
        return resolve_credential(
            passphrase=passphrase, key=key, key_file=key_file, prompt=prompt, confirm=True
        )
    try:
        return resolve_credential(passphrase=passphrase, key=key, key_file=key_file, prompt=False)
    except CredentialRequiredError:
        return None


def _create_memory_db(layout: Layout, keys: StoreKeys, config: StoreConfig) -> None:
    """Open (creating if new) ``memory.db``, checked against the ledger, then close it."""
    db, guard = open_source(layout, keys, config)
    db.close()
    guard.ledger.close()


def _refuse_foreign_memory_db(layout: Layout) -> None:
    """A ``memory.db`` without ``keys.json`` is never written over: ours (its key header
    lost) or AgentZero's, which is imported, not adopted in place."""
    path = layout.memory_db
    if not path.exists():
        return
    move = (
        f"move it out of the data dir (mv {path} ~/agentzero-memory.db), run `agentzero "
        "init` again, then `agentzero memory import-agentzero ~/agentzero-memory.db`"
    )
    if is_plain_sqlite(path):
        raise StoreExistsError(
            f"{path} is a plain SQLite database (AgentZero's memory, not an encrypted "
            "agentzero store file)",
            hint=f"{move}; nothing was changed",
        )
    raise CorruptStoreError(
        "memory.db exists but keys.json is missing",
        path=layout.keys,
        hint="restore keys.json from a backup (without it the data cannot be decrypted); "
        f"if it is AgentZero's SQLCipher memory.db, {move} --source-passphrase …",
    )


def init_database(
    url: str,
    *,
    passphrase: str | None = None,
    key: bytes | str | None = None,
    key_file: Path | str | None = None,
    keyring: bool = False,
    prompt: bool | None = None,
    config: StoreConfig | None = None,
) -> InitResult:
    """Create the memory store in the PostgreSQL database at ``url`` (``agentzero init``
    with a database URL). Raises ``StoreExistsError`` if it already holds one. The OS
    keyring is for data dirs: a team's shared database opens with a passphrase or key."""
    if keyring:
        raise UnsupportedByBackendError(
            "a key in the OS keyring (init --keyring) is for a data dir on one machine",
            hint="open a PostgreSQL store with a passphrase (AGENTZERO_PASSPHRASE) or a "
            "key (AGENTZERO_DATA_KEY or --key-file / --new-key-file)",
        )
    where = redact(url)
    if PgMemoryStore.exists(url):
        raise StoreExistsError(f"a memory store already exists in {where}")
    with PgMemoryStore.open(
        url, passphrase=passphrase, key=key, key_file=key_file, prompt=prompt, config=config
    ) as store:
        store_id = store.store_id
    return InitResult(where, store_id, True, None, False, False)


__all__ = ["InitResult", "init_database", "init_store"]
