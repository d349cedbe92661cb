"""The agent-memory repository's provenance (``am_source``): which memories a derived
memory came from, and which memories were derived from given ones (``provenance``
follows that to the end for forget, undo and erase)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .core import RepositoryCore

if TYPE_CHECKING:
    from ...memory.sqlite.tx import WriteTx


class SourceRows(RepositoryCore):
    """Provenance rows of one scope (see the module)."""

    def add_sources(self, tx: WriteTx, memory_id: str, sources: Sequence[str]) -> None:
        """Record that ``memory_id`` was derived from ``sources`` (more may follow)."""
        tx.executemany(
            "INSERT OR IGNORE INTO am_source (memory_id, source_id, org_id, agent_id)"
            " VALUES (?,?,?,?)",
            [(memory_id, s, *self._scope) for s in sources],
        )

    def sources_of(
        self, ids: Sequence[str], tx: WriteTx | None = None
    ) -> dict[str, tuple[str, ...]]:
        """The sources of each of ``ids`` that is derived, in id order."""
        out: dict[str, list[str]] = {}
        sql = (
            "SELECT memory_id, source_id FROM am_source WHERE memory_id IN ({in})"
            " AND org_id = ? AND agent_id = ? ORDER BY memory_id, source_id"
        )
        for mid, src in self._each(sql, ids, self._scope, tx):
            out.setdefault(str(mid), []).append(str(src))
        return {k: tuple(v) for k, v in out.items()}

    def derived_from(self, ids: Sequence[str], tx: WriteTx | None = None) -> set[str]:
        """Ids of the memories derived directly from any of ``ids`` (live, forgotten or
        archived: provenance outlives a forget)."""
        sql = (
            "SELECT memory_id FROM am_source WHERE source_id IN ({in})"
            " AND org_id = ? AND agent_id = ?"
        )
        return {str(r[0]) for r in self._each(sql, ids, self._scope, tx)}

    def live_of(self, ids: Sequence[str], tx: WriteTx | None = None) -> list[tuple[str, int]]:
        """(id, label) of those of ``ids`` that are live memories of this scope."""
        sql = "SELECT id, label FROM am_memory WHERE id IN ({in}) AND org_id = ? AND agent_id = ?"
        return sorted((str(r[0]), int(r[1])) for r in self._each(sql, ids, self._scope, tx))

    def forgotten_of(
        self, ids: Sequence[str], tx: WriteTx | None = None
    ) -> dict[str, tuple[str, int]]:
        """The (token, until_us) of those of ``ids`` in this scope's undo area."""
        sql = (
            "SELECT memory_id, token, until_us FROM am_forgotten WHERE memory_id IN ({in})"
            " AND org_id = ? AND agent_id = ?"
        )
        return {str(r[0]): (str(r[1]), int(r[2])) for r in self._each(sql, ids, self._scope, tx)}

    def move_forgotten(self, tx: WriteTx, ids: Sequence[str], token: str, until_us: int) -> None:
        """Put undo entries under another forget (its token and window): a derived
        memory one undo cannot bring back while another forget still hides a source."""
        tx.executemany(
            "UPDATE am_forgotten SET token = ?, until_us = ? WHERE memory_id = ?"
            " AND org_id = ? AND agent_id = ?",
            [(token, until_us, i, *self._scope) for i in ids],
        )


__all__ = ["SourceRows"]
