"""Operations and disaster recovery over a whole data dir (both stores and their keys).

- ``verify``: check every page, record and checkpoint; findings with the fixing command;
- ``backup``: consistent, encrypted online snapshots, and restore into a new dir;
- ``keyops``: change the passphrase, export a recovery key (rewrap only);
- ``rotate``: a new master key for every byte, crash-safe and resumable;
- ``accept_loss``: accept a source that holds less than was acknowledged, and go on;
- ``reembed``: re-embed both stores with another embedder, switching each atomically;
- ``create``: ``agentzero init`` — a new store (key in the OS keyring if asked), or an
  older AgentZero data dir adopted in place (its plaintext document log sealed);
- ``import_agentzero``: AgentZero's ``memory.db`` (SQLite or SQLCipher) imported, idempotently;
- ``backends``: a memory store opened from a data dir or a PostgreSQL URL;
- ``migrate`` (with ``migrate_check``): a memory store moved between a data dir and
  PostgreSQL with the same key header, resumable, and checked against its source.

Like the CLI, this layer composes the memory store and the document log; the document
log's half of each operation lives in ``rag.maintenance`` and is imported lazily.
"""

from .backup import BackupResult, RestoreResult, backup_store, restore_store
from .create import InitResult, init_store
from .import_agentzero import ImportReport, import_agentzero, open_agentzero
from .keyops import KeyChange, change_passphrase, export_recovery
from .rotate import RotateResult, resume_rotation, rotate_keys
from .verify import Finding, VerifyReport, verify_store

__all__ = [
    "BackupResult",
    "Finding",
    "ImportReport",
    "InitResult",
    "KeyChange",
    "RestoreResult",
    "RotateResult",
    "VerifyReport",
    "backup_store",
    "change_passphrase",
    "export_recovery",
    "import_agentzero",
    "init_store",
    "open_agentzero",
    "restore_store",
    "resume_rotation",
    "rotate_keys",
    "verify_store",
]
