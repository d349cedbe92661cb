"""The acknowledgement ledger's file format: what one source's state holds
(``SourceState``) and how it is sealed into a slot and read back.

File format (``LEDGER_BYTES`` long): a 64-byte header (magic), then per source two
fixed-size slots. A slot is ``b"S1" | length (2 B) | nonce (12 B) | AES-256-GCM(state)``
under the ledger subkey, with the store id and the source name as associated data, so a
slot cannot be forged, edited, or moved to another source or store without the key. The
newest authentic slot (highest ``version``) is the state; an update writes the *other*
slot, so a torn write destroys at most the slot being written and the previous state
survives (like a file system's double superblock or LMDB's two meta pages).
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ACKS_FORMAT = "agentzero-acks/1"
MAGIC = b"AGENTZERO-ACKS/1"
HEADER_BYTES = 64
SLOT_BYTES = 2048  # a state with the newest MAX_LOSSES losses fits (about 1.3 KiB)
SLOT_TAG = b"S1"
NONCE_BYTES = 12
MAX_LOSSES = 8  # accepted losses kept per source (the newest)

Source = Literal["memory", "documents"]
SOURCES: tuple[Source, ...] = ("memory", "documents")
LEDGER_BYTES = HEADER_BYTES + 2 * SLOT_BYTES * len(SOURCES)


@dataclass(frozen=True)
class SourceState:
    """What the ledger says about one source."""

    version: int = 0  # orders the two slots; +1 on every update
    created: bool = False  # the source was created: from now on it must exist
    seq: int = 0  # the newest acknowledged seq
    generation: str | None = None  # documents: the log generation ``seq`` belongs to
    pending: tuple[str, int] | None = None  # documents: a compaction to (generation, seq)
    losses: tuple[dict[str, Any], ...] = field(default=())  # accepted losses, newest last

    def to_json(self) -> bytes:
        """The sealed payload."""
        d = {
            "version": self.version,
            "created": self.created,
            "seq": self.seq,
            "generation": self.generation,
            "pending": list(self.pending) if self.pending else None,
            "losses": list(self.losses),
        }
        return json.dumps(d, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> SourceState:
        """Parse a payload that authenticated (so it is ours; still checked for shape)."""
        d = json.loads(raw)
        pending = d.get("pending")
        return cls(
            version=int(d["version"]),
            created=bool(d["created"]),
            seq=int(d["seq"]),
            generation=d.get("generation"),
            pending=(str(pending[0]), int(pending[1])) if pending else None,
            losses=tuple(d.get("losses") or ()),
        )

    def with_loss(self, expected: str, found: str) -> SourceState:
        """This state plus a record of an accepted loss."""
        entry = {"at": datetime.now(UTC).isoformat(), "expected": expected, "found": found}
        return replace(self, losses=(*self.losses, entry)[-MAX_LOSSES:])


@dataclass(frozen=True)
class RegionRead:
    """Both slots of a source: the newest authentic state, and which slots are damaged."""

    state: SourceState | None
    damaged: tuple[int, ...]  # slot numbers (0, 1) that hold bytes that do not authenticate
    slot: int | None = None  # the slot ``state`` was read from


@functools.lru_cache(maxsize=64)
def _aad(store_id: str, source: str) -> bytes:
    return f"{ACKS_FORMAT}|{store_id}|{source}".encode()


def slot_offset(source: Source, slot: int) -> int:
    """Where ``slot`` (0 or 1) of ``source`` starts in the file."""
    return HEADER_BYTES + (SOURCES.index(source) * 2 + slot) * SLOT_BYTES


def seal_slot(aead: AESGCM, store_id: str, source: Source, state: SourceState) -> bytes:
    """One slot's bytes (``SLOT_BYTES``, zero padded)."""
    while True:
        nonce = secrets.token_bytes(NONCE_BYTES)  # fresh for every encryption, retries too
        ct = aead.encrypt(nonce, state.to_json(), _aad(store_id, source))
        body = SLOT_TAG + len(ct).to_bytes(2, "big") + nonce + ct
        if len(body) <= SLOT_BYTES:
            return body.ljust(SLOT_BYTES, b"\0")
        if not state.losses:
            raise ValueError("ledger state too large for its slot")
        state = replace(state, losses=state.losses[1:])  # the oldest accepted loss goes


def open_slot(aead: AESGCM, store_id: str, source: Source, raw: bytes) -> SourceState | None:
    """The state in one slot, or None if it does not authenticate (torn, damaged, foreign)."""
    if len(raw) != SLOT_BYTES or raw[:2] != SLOT_TAG:
        return None
    n = int.from_bytes(raw[2:4], "big")
    start = 4 + NONCE_BYTES
    if n < 16 or start + n > SLOT_BYTES or any(raw[start + n :]):
        return None  # (the padding must be zeros too: no byte of a slot goes unchecked)
    try:
        plain = aead.decrypt(raw[4:start], raw[start : start + n], _aad(store_id, source))
        return SourceState.from_json(plain)
    except (InvalidTag, ValueError, KeyError, TypeError, IndexError):
        return None


def initial_bytes(
    key: bytes, store_id: str, states: Mapping[Source, SourceState] | None = None
) -> bytes:
    """A fresh ledger: each source as ``states`` says (default: not created yet), in its
    first slot (version 1)."""
    aead = AESGCM(key)
    out = bytearray(MAGIC.ljust(HEADER_BYTES, b"\0"))
    for source in SOURCES:
        st = (states or {}).get(source, SourceState())
        out += seal_slot(aead, store_id, source, replace(st, version=1))
        out += bytes(SLOT_BYTES)
    return bytes(out)


__all__ = [
    "ACKS_FORMAT",
    "HEADER_BYTES",
    "LEDGER_BYTES",
    "MAGIC",
    "MAX_LOSSES",
    "SLOT_BYTES",
    "SOURCES",
    "RegionRead",
    "Source",
    "SourceState",
    "initial_bytes",
    "open_slot",
    "seal_slot",
    "slot_offset",
]
