"""Sealing a memory into a PostgreSQL row, and opening it again (client side only).

What the server sees of a memory: its id, its scope ids, its creation and expiry times,
a keyed fingerprint, its vector, and its blinded keyword terms. Everything else (the
content, role, kind, source, metadata and embedding model) is one AES-256-GCM blob under
a subkey of the store's master key. Its associated data binds the store id, the memory
id, the scope and the times, so a blob copied to another row, moved to another tenant,
or given a later expiry by someone with write access to the database fails to open
(``TamperedRecordError``) instead of being served.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from typing import Any

from ...base.errors import TamperedRecordError
from ...storage.crypto import InvalidTag, Sealer
from ...storage.keys import StoreKeys
from ..records import MemoryEntry, text_fingerprint
from ..rows import row_to_entry

ROW_FORMAT = "az-pg-memory/1"

COLUMNS = "label, id, org_id, agent_id, conversation_id, created_at_us, expires_at_us, sealed"
"""The columns ``RowCodec.open`` reads, in its order."""


class RowCodec:
    """Seals and opens memory rows, and fingerprints their text, with one store's keys.

    ``on_fail``: called when a row does not open, before ``TamperedRecordError`` is
    raised; it raises instead if the keys were rotated meanwhile (``KeyRotatedError``,
    see ``keyguard``)."""

    def __init__(self, keys: StoreKeys, *, on_fail: Callable[[], None] | None = None) -> None:
        self._store_id = keys.store_id
        self._sealer = Sealer(keys.subkey("pg-memory-rows"))
        self._fp_key = keys.subkey("pg-fingerprint")
        self._on_fail = on_fail

    def __repr__(self) -> str:
        return "RowCodec(<keys hidden>)"

    def _aad(
        self, eid: str, scope: tuple[str, str, str], created_us: int, expires_us: int | None
    ) -> bytes:
        fields = (ROW_FORMAT, self._store_id, eid, *scope, str(created_us), str(expires_us))
        # JSON: unambiguous whatever the ids hold (a "|" in an id cannot shift a field).
        return json.dumps(fields, separators=(",", ":")).encode("utf-8")

    def seal(
        self, e: MemoryEntry, eid: str, created_us: int, expires_us: int | None, model: str | None
    ) -> bytes:
        """The sealed blob of ``e`` stored under id ``eid`` (see the module docstring)."""
        payload = {
            "content": e.content,
            "role": e.role,
            "kind": e.kind,
            "source": e.source,
            "metadata": dict(e.metadata),
            "embedding_model": model,
        }
        plain = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        aad = self._aad(eid, (e.org_id, e.agent_id, e.conversation_id), created_us, expires_us)
        return self._sealer.seal(plain, aad)

    def open(self, row: Sequence[Any]) -> MemoryEntry:
        """The ``MemoryEntry`` of a row of ``COLUMNS``; ``TamperedRecordError`` if its blob
        does not open under this store's key with this row's id, scope and times."""
        label, eid, org, agent, conv, created_us, expires_us, blob = row
        aad = self._aad(eid, (org, agent, conv), created_us, expires_us)
        try:
            p = json.loads(self._sealer.open(bytes(blob), aad))
        except (InvalidTag, ValueError) as exc:
            if self._on_fail is not None:
                self._on_fail()
            raise TamperedRecordError(
                f"memory row {label} failed authentication (changed, moved to another scope "
                "or store, or sealed under another key)",
                path="az_memory",
                record=int(label),
            ) from exc
        meta = p["metadata"]
        return row_to_entry(
            (
                label,
                eid,
                p["role"],
                p["content"],
                created_us,
                conv,
                org,
                agent,
                expires_us,
                p["kind"],
                p["source"],
                json.dumps(meta) if meta else "{}",
                p["embedding_model"],
            )
        )

    def fingerprint(self, e: MemoryEntry) -> bytes:
        """A keyed hash (HMAC-SHA256, 16 bytes) of the entry's normalised text
        (``MemoryEntry.fingerprint``): equal texts match, but without the key the
        server cannot test a guess."""
        return self._keyed(e.fingerprint())

    def fingerprint_text(self, text: str) -> bytes:
        """``fingerprint`` of an entry whose content is ``text``."""
        return self._keyed(text_fingerprint(text))

    def _keyed(self, fingerprint: str) -> bytes:
        return hmac.new(self._fp_key, fingerprint.encode(), hashlib.sha256).digest()[:16]


__all__ = ["COLUMNS", "ROW_FORMAT", "RowCodec"]
