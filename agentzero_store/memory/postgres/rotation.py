"""A key rotation of a PostgreSQL memory store: ONE transaction, so no journal.

A data dir rotates file by file and journals its progress in keys.json, because no
single write covers every file (``ops.rotate``). A database can re-seal every row,
replace the key header and bump the key version in one transaction: after a crash, a
lost connection or any error the server rolls all of it back, and the old credential
and the old master key still open every row; after the commit everything is under the
new key. There is no state in between to resume.

``rotation(url, cred)`` opens that transaction. In order:

1. the credential is checked against the key header before any lock (a wrong one
   raises ``WrongKeyError``, waits for nobody and changes no row);
2. ``keyguard.lock_exclusive``: waits for the write transactions in flight (each holds
   the key lock shared) and holds new ones off until the commit; readers are not held;
3. the key header is read ``FOR UPDATE`` (a concurrent passphrase change waits, or is
   seen) and unlocked again; a new random master key is drawn;
4. the caller re-keys the rows (``Rotation.tx``: ``rekey``, and a layer's tables);
5. ``Rotation.replace_header``: the new header; the key version is bumped and every
   listening client notified, both taking effect at the commit.

Clients connected with the old keys: see ``keyguard``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...base.errors import StoreNotFoundError, WrongKeyError
from ...storage.credentials import KEY_BYTES, Credential
from ...storage.key_header import parse_header
from ...storage.keys import StoreKeys, unlock_header
from . import keyguard, schema
from .rekey import RekeyTx
from .store import _translated, redact

TABLE = "az_keys"


@dataclass
class Rotation:
    """The rotation's open transaction: the old keys, the new ones, and the header."""

    tx: RekeyTx
    where: str  # the store, as errors name it (the URL without its password)
    old: StoreKeys = field(repr=False)
    new: StoreKeys = field(repr=False)
    slot: str  # the id of the slot the credential opened
    header: dict[str, Any]  # as read (locked) at the start
    version: int  # the key version before the rotation
    _conn: Any = field(repr=False)
    written: bool = False

    def replace_header(self, header: Mapping[str, Any]) -> int:
        """Store ``header`` (it must open with the new master key) in ``az_keys``, bump
        the key version and notify the listening clients: all at the commit. The new
        key version."""
        schema.replace_header(self._conn, json.dumps(dict(header), sort_keys=True))
        new = keyguard.bump(self._conn, self.version)
        keyguard.announce(self._conn, new)
        self.written = True
        return new


def _unlock(header: Mapping[str, Any], cred: Credential, where: str) -> tuple[StoreKeys, str]:
    try:
        return unlock_header(header, cred, where=where, path=TABLE)
    except WrongKeyError as exc:
        raise WrongKeyError(
            exc.message, hint="check the passphrase or key; no row in the database was changed"
        ) from None


@contextlib.contextmanager
def rotation(url: str, cred: Credential) -> Iterator[Rotation]:
    """The transaction of a key rotation of the store at ``url`` (see the module). It
    commits when the block ends, if ``Rotation.replace_header`` was called; otherwise,
    or if the block raises, it rolls back and nothing changed."""
    import psycopg

    where = redact(url)
    with _translated(where):
        conn = psycopg.connect(url, autocommit=True)
    try:
        with _translated(where):
            if not schema.exists(conn):
                raise StoreNotFoundError(
                    f"no memory store in {where}",
                    hint="create it with `agentzero init`, or check the URL",
                )
            # Before any lock: a wrong credential holds up no writer.
            raw, _ = keyguard.read_header(conn)
            _unlock(parse_header(raw, TABLE), cred, where)
            with conn.transaction():
                keyguard.lock_exclusive(conn)
                header = parse_header(schema.read_header(conn, for_update=True), TABLE)
                old, slot = _unlock(header, cred, where)  # again: it may have changed
                schema.check(conn, old.store_id)
                new = StoreKeys(
                    store_id=old.store_id, master=secrets.token_bytes(KEY_BYTES), acks_required=True
                )
                rot = Rotation(
                    RekeyTx(conn), where, old, new, slot, header, keyguard.current(conn), conn
                )
                yield rot
                if not rot.written:
                    raise _Abandon
    except _Abandon:
        pass
    finally:
        conn.close()


class _Abandon(Exception):
    """Rolls the rotation back when its caller stored no new header."""


__all__ = ["Rotation", "rotation"]
