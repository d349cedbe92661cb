"""Sealing the agent memory's texts for PostgreSQL, and blinding its lookup keys.

Every text the layer stores beside a memory row (an entity's spelling, a fact's
subject, predicate and object, a procedure, a summary, the belief history, a forget's
payload, an archived text) is AES-256-GCM sealed under a subkey of the store's master
key. Its associated data binds the store, the table, the row's id and its scope, so a
blob copied to another row, table or tenant fails to open (``TamperedRecordError``,
naming the table and the row) instead of being served.

A lookup key (an entity key, a fact's subject or predicate key, a procedure's action)
is a keyed hash of the scope and the key: equal keys of one scope match in SQL, and the
server can neither read them nor test a guess, nor tell that two tenants share one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

from ...base.errors import TamperedRecordError
from ...storage.crypto import InvalidTag, Sealer
from ...storage.keys import StoreKeys

SEAL_FORMAT = "az-pg-am/1"


class LayerCodec:
    """Seals, opens, blinds and digests for one scope (org, agent) of one store.

    ``on_fail``: called when a value does not open, before ``TamperedRecordError``; it
    raises ``KeyRotatedError`` instead if the store's key was rotated meanwhile
    (``PgMemoryStore.check_key_version``)."""

    def __init__(
        self,
        keys: StoreKeys,
        org_id: str,
        agent_id: str,
        *,
        on_fail: Callable[[], None] | None = None,
    ) -> None:
        self._on_fail = on_fail
        self._store_id = keys.store_id
        self._scope = (org_id, agent_id)
        self._sealer = Sealer(keys.subkey("pg-agent-memory"))
        self._blind_key = keys.subkey("pg-agent-memory-keys")
        self._fp_key = keys.subkey("pg-fingerprint")  # the memory rows' (pg.rows)
        self._blinded: dict[str, str] = {}

    def __repr__(self) -> str:
        return "LayerCodec(<keys hidden>)"

    def _aad(self, table: str, row_id: str) -> bytes:
        fields = (SEAL_FORMAT, self._store_id, table, row_id, *self._scope)
        return json.dumps(fields, separators=(",", ":")).encode("utf-8")

    def seal(self, table: str, row_id: str, value: Any) -> bytes:
        """``value`` (anything JSON holds) sealed for row ``row_id`` of ``table``."""
        plain = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return self._sealer.seal(plain, self._aad(table, row_id))

    def open(self, table: str, row_id: str, blob: bytes | memoryview) -> Any:
        """What ``seal`` sealed; ``TamperedRecordError`` naming the row if it does not
        open under this store's key for this table, row and scope."""
        try:
            return json.loads(self._sealer.open(bytes(blob), self._aad(table, row_id)))
        except (InvalidTag, ValueError) as exc:
            if self._on_fail is not None:
                self._on_fail()
            raise TamperedRecordError(
                f"{table} row {row_id!r} failed authentication (changed, moved to another "
                "row or scope, or sealed under another key)",
                path=table,
                record=row_id,
            ) from exc

    def blind(self, key: str) -> str:
        """The keyed hash of lookup key ``key`` in this scope (32 hex)."""
        out = self._blinded.get(key)
        if out is None:
            msg = "\0".join((*self._scope, key)).encode("utf-8")
            out = hmac.new(self._blind_key, msg, hashlib.sha256).hexdigest()[:32]
            if len(self._blinded) < 10_000:
                self._blinded[key] = out
        return out

    def fingerprint(self, fingerprint: str) -> bytes:
        """A text fingerprint (``text_fingerprint``) as the memory rows store it: keyed,
        as ``pg.rows.RowCodec.fingerprint`` computes it."""
        return hmac.new(self._fp_key, fingerprint.encode(), hashlib.sha256).digest()[:16]

    def digest(self, content: str, metadata: str) -> str:
        """What a memory row records of its archived text: a keyed digest (a plain
        SHA-256 would let the server test a guess of the text)."""
        h = hmac.new(self._blind_key, content.encode("utf-8"), hashlib.sha256)
        h.update(b"\0")
        h.update(metadata.encode("utf-8"))
        return h.hexdigest()


__all__ = ["SEAL_FORMAT", "LayerCodec"]
