"""The key header of a memory store in PostgreSQL (the one row of ``az_keys``) behind
``storage.header_store.HeaderStore``, so the data dir's key operations (change the
passphrase, export a recovery key) run unchanged on a database.

A replacement is one transaction: the row is read ``FOR UPDATE`` (a second client
changing the header waits, then reads the first one's result: no lost update), the new
header is written with one UPDATE, and the commit makes it visible at once. If the
change raises (a wrong credential), the transaction rolls back and no row changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...base.errors import StoreNotFoundError
from ...storage.header_store import HeaderChange
from ...storage.key_header import parse_header
from . import schema
from .store import _translated, redact

TABLE = "az_keys"


class PgHeaders:
    """The key header in ``az_keys`` of the database at a PostgreSQL URL."""

    unchanged = "no row in the database was changed"

    def __init__(self, url: str) -> None:
        self._url = url
        self.where = redact(url)
        self.path: Path | str = TABLE

    def read(self) -> dict[str, Any]:
        """The key header, checked; reads only."""
        import psycopg

        with _translated(self.where), psycopg.connect(self._url, autocommit=True) as conn:
            self._check_exists(conn)
            return parse_header(schema.read_header(conn), TABLE)

    def replace(self, change: HeaderChange) -> dict[str, Any]:
        """One transaction: read the row locked, store ``change(header)`` with one UPDATE."""
        import psycopg

        with _translated(self.where), psycopg.connect(self._url, autocommit=True) as conn:
            self._check_exists(conn)
            with conn.transaction():
                header = change(parse_header(schema.read_header(conn, for_update=True), TABLE))
                schema.replace_header(conn, json.dumps(header, sort_keys=True))
            return header

    def _check_exists(self, conn: Any) -> None:
        if not schema.exists(conn):
            raise StoreNotFoundError(
                f"no memory store in {self.where}",
                hint="create it with `agentzero init`, or check the URL",
            )


__all__ = ["PgHeaders"]
