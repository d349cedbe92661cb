"""The agent-memory repository's provenance on PostgreSQL (``az_am_source``): the same
methods as ``sqlite.sources.SourceRows`` (SQLite). Ids only, in the clear, as every id is
(``postgres.schema``); ``PgRepositoryCore.sources_of`` reads them with the rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .core import PgRepositoryCore

if TYPE_CHECKING:
    from ...memory.postgres.tx import PgWriteTx


class PgSourceRows(PgRepositoryCore):
    """Provenance rows of one scope (see the module)."""

    def add_sources(self, tx: PgWriteTx, memory_id: str, sources: Sequence[str]) -> None:
        """Record that ``memory_id`` was derived from ``sources`` (more may follow)."""
        tx.execute(
            "INSERT INTO az_am_source (memory_id, source_id, org_id, agent_id)"
            " SELECT %s, unnest(%s::text[]), %s, %s ON CONFLICT DO NOTHING",
            (memory_id, list(sources), *self._scope),
        )

    def derived_from(self, ids: Sequence[str], tx: PgWriteTx | None = None) -> set[str]:
        """Ids of the memories derived directly from any of ``ids`` (live, forgotten or
        archived: provenance outlives a forget)."""
        rows = self._q(
            "SELECT memory_id FROM az_am_source WHERE source_id = ANY(%s) AND org_id = %s"
            " AND agent_id = %s",
            (list(ids), *self._scope),
            tx,
        )
        return {str(r[0]) for r in rows}

    def live_of(self, ids: Sequence[str], tx: PgWriteTx | None = None) -> list[tuple[str, int]]:
        """(id, label) of those of ``ids`` that are live memories of this scope."""
        rows = self._q(
            "SELECT id, label FROM az_memory WHERE id = ANY(%s) AND org_id = %s"
            " AND agent_id = %s AND type IS NOT NULL",
            (list(ids), *self._scope),
            tx,
        )
        return sorted((str(r[0]), int(r[1])) for r in rows)

    def forgotten_of(
        self, ids: Sequence[str], tx: PgWriteTx | None = None
    ) -> dict[str, tuple[str, int]]:
        """The (token, until_us) of those of ``ids`` in this scope's undo area."""
        rows = self._q(
            "SELECT memory_id, token, until_us FROM az_am_forgotten WHERE memory_id = ANY(%s)"
            " AND org_id = %s AND agent_id = %s",
            (list(ids), *self._scope),
            tx,
        )
        return {str(r[0]): (str(r[1]), int(r[2])) for r in rows}

    def move_forgotten(self, tx: PgWriteTx, ids: Sequence[str], token: str, until_us: int) -> None:
        """Put undo entries under another forget (its token and window): a derived
        memory one undo cannot bring back while another forget still hides a source."""
        tx.execute(
            "UPDATE az_am_forgotten SET token = %s, until_us = %s WHERE memory_id = ANY(%s)"
            " AND org_id = %s AND agent_id = %s",
            (token, until_us, list(ids), *self._scope),
        )


__all__ = ["PgSourceRows"]
