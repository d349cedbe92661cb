"""agentzero_store: an embeddable, encrypted, local-first memory and RAG store.

This module names the public API and composes the layers where a lower one needs a
higher one (see docs/architecture.md). Python runs it before any submodule of the
package can be imported, so what it plugs in holds in every process.
"""

from .agentmem import (
    AgentMemory,
    CapacityLimitedChat,
    ChatHistory,
    ChatMessage,
    ExtractiveSummarizer,
    Skill,
    SkillStore,
    Summarizer,
    SummarizingChat,
    TokenLimitedChat,
    Turn,
)
from .agentmem.extract import Extractor, LLMExtractor, RuleExtractor
from .base.config import KdfParams, StoreConfig
from .base.errors import (
    AgentZeroStoreError,
    CorruptStoreError,
    CredentialRequiredError,
    DimensionMismatchError,
    DuplicateIdError,
    EmbedderError,
    EmbedderMismatchError,
    ExtractorError,
    InvalidArgumentError,
    InvalidKeyError,
    KeyRotatedError,
    MigrationMismatchError,
    NoEmbedderError,
    NotFoundError,
    PendingForgetsError,
    SchemaVersionError,
    SidecarCorruptError,
    SkillFileError,
    StoreClosedError,
    StoreExistsError,
    StoreIOError,
    StoreNotFoundError,
    TamperedRecordError,
    UnsupportedByBackendError,
    WrongKeyError,
)
from .base.version import __version__ as __version__
from .embed.local import LocalEmbedder
from .embed.vectors import Embedder
from .items import Item, ItemBatch, ItemHit, ItemStore
from .memory.postgres.store import PgMemoryStore
from .memory.records import MemoryEntry, MemoryHit
from .memory.sqlite.store import SqliteMemoryStore
from .ops.backends import open_memory_store
from .ops.rotate import resume_rotation
from .storage.credentials import Credential, generate_key_file
from .storage.datadir import install_rotation_resumer

# Every store's open starts with storage.datadir.open_data_dir, which finishes a key
# rotation a crash interrupted; rotation is an operation of ops/, above the stores.
install_rotation_resumer(resume_rotation)

__all__ = [
    "AgentMemory",
    "AgentZeroStoreError",
    "CapacityLimitedChat",
    "ChatHistory",
    "ChatMessage",
    "CorruptStoreError",
    "Credential",
    "CredentialRequiredError",
    "DimensionMismatchError",
    "DuplicateIdError",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "ExtractorError",
    "ExtractiveSummarizer",
    "Extractor",
    "InvalidArgumentError",
    "InvalidKeyError",
    "LLMExtractor",
    "Item",
    "ItemBatch",
    "ItemHit",
    "ItemStore",
    "KdfParams",
    "KeyRotatedError",
    "LocalEmbedder",
    "MemoryEntry",
    "MemoryHit",
    "MigrationMismatchError",
    "NoEmbedderError",
    "NotFoundError",
    "PendingForgetsError",
    "PgMemoryStore",
    "RuleExtractor",
    "SchemaVersionError",
    "SidecarCorruptError",
    "Skill",
    "SkillFileError",
    "SkillStore",
    "SqliteMemoryStore",
    "StoreClosedError",
    "StoreConfig",
    "StoreExistsError",
    "StoreIOError",
    "StoreNotFoundError",
    "SummarizingChat",
    "Summarizer",
    "TamperedRecordError",
    "TokenLimitedChat",
    "Turn",
    "UnsupportedByBackendError",
    "WrongKeyError",
    "generate_key_file",
    "open_memory_store",
]
