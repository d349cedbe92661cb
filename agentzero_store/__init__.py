"""agentzero_store: an embeddable, encrypted, local-first memory and RAG store."""

from .base.config import KdfParams, StoreConfig
from .base.errors import (
    AgentZeroStoreError,
    CorruptStoreError,
    CredentialRequiredError,
    DimensionMismatchError,
    DuplicateIdError,
    EmbedderError,
    EmbedderMismatchError,
    InvalidArgumentError,
    InvalidKeyError,
    NoEmbedderError,
    NotFoundError,
    SchemaVersionError,
    SidecarCorruptError,
    StoreClosedError,
    StoreExistsError,
    StoreIOError,
    StoreNotFoundError,
    TamperedRecordError,
    WrongKeyError,
)
from .base.version import __version__ as __version__
from .embed.local import LocalEmbedder
from .embed.vectors import Embedder
from .memory.records import MemoryEntry, MemoryHit
from .memory.store import SqliteMemoryStore
from .storage.credentials import Credential, generate_key_file

__all__ = [
    "AgentZeroStoreError",
    "CorruptStoreError",
    "Credential",
    "CredentialRequiredError",
    "DimensionMismatchError",
    "DuplicateIdError",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "InvalidArgumentError",
    "InvalidKeyError",
    "KdfParams",
    "LocalEmbedder",
    "MemoryEntry",
    "MemoryHit",
    "NoEmbedderError",
    "NotFoundError",
    "SchemaVersionError",
    "SidecarCorruptError",
    "SqliteMemoryStore",
    "StoreClosedError",
    "StoreConfig",
    "StoreExistsError",
    "StoreIOError",
    "StoreNotFoundError",
    "TamperedRecordError",
    "WrongKeyError",
    "generate_key_file",
]
