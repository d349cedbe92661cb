"""Where a store keeps its key header: read it, or replace it atomically.

The key header (``key_header``: wrapped master key, slots, salts, KDF parameters) lives
in a data dir's keys.json or in a database's key table (the PostgreSQL backend's
``az_keys``). Operations that only rewrap a slot (``ops.keyops``: change the
passphrase, export a recovery key) are written once against ``HeaderStore``; each
backend says how it reads the header and how it replaces it so that two clients
changing it at once cannot lose each other's change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ..base.config import Layout
from .fileio import DEFAULT_IO, FileIO
from .key_header import read_header, write_header
from .lock import writer_lock

HeaderChange = Callable[[dict[str, Any]], dict[str, Any]]


class HeaderStore(Protocol):
    """The key header of one store, and its atomic replacement."""

    where: str  # the store, as errors name it (a data dir, a redacted URL)
    path: Path | str  # the header itself, as errors name it (keys.json, az_keys)
    unchanged: str  # what a refused change left alone, for error hints

    def read(self) -> dict[str, Any]:
        """The checked key header (``key_header.parse_header``); writes nothing."""
        ...

    def replace(self, change: HeaderChange) -> dict[str, Any]:
        """Store ``change(current header)`` in place of the current header, and return it.

        The current header is read with every other ``replace`` of this store held off
        until the new one is stored (read-modify-write, never a lost update); if
        ``change`` raises, nothing is written. After a crash either the old or the new
        header is in place, never neither.
        """
        ...


class DataDirHeaders:
    """keys.json of a data dir: replaced under the writer lock by one atomic rename."""

    unchanged = "no file under the data dir was changed"

    def __init__(
        self,
        layout: Layout,
        *,
        purpose: str,
        timeout: float | None = None,
        io: FileIO = DEFAULT_IO,
    ) -> None:
        self._layout = layout
        self._purpose = purpose
        self._timeout = timeout
        self._io = io
        self.where = str(layout.root)
        self.path: Path | str = layout.keys

    def read(self) -> dict[str, Any]:
        """keys.json, checked."""
        return read_header(self._layout)

    def replace(self, change: HeaderChange) -> dict[str, Any]:
        """Rewrite keys.json under the writer lock (held by every writer of the data dir,
        so no other key change reads it meanwhile); ``write_header`` renames atomically."""
        with writer_lock(self._layout.root, timeout=self._timeout, purpose=self._purpose):
            header = change(read_header(self._layout))
            write_header(self._layout, header, io=self._io)
            return header


__all__ = ["DataDirHeaders", "HeaderChange", "HeaderStore"]
