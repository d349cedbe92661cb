"""The seam's tiers and scopes: pins, core facts and sessions (``TierRows``), namespaces
and grants (``NamespaceRows``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class TierRows(Protocol):
    """Pins and core facts (the hot tier), and sessions."""

    def set_pin(self, memory_id: str, at_us: int, pinned: bool) -> None:
        """Pin (or unpin) a memory of this scope."""
        ...

    def pinned_labels(self) -> list[int]:
        """Labels of the live pinned memories of this scope, oldest pin first."""
        ...

    def set_core(self, ids: Sequence[str], at_us: int, reason: str | None) -> None:
        """Mark semantic memories core (``reason``) or, with None, archival again."""
        ...

    def core_labels(self) -> list[int]:
        """Labels of the live core memories of this scope (current facts only."""
        ...

    def core_candidates(self, min_accesses: int) -> list[str]:
        """Archival semantic memories of this scope accessed at least ``min_accesses`` times
        (promotion to core)."""
        ...

    def core_idle(self, before_us: int) -> list[str]:
        """Core memories promoted by access whose last access (or promotion) is older than
        ``before_us``, or that are no longer current (demotion)."""
        ...

    def session(self, name: str) -> tuple[list[str], int] | None:
        """(inherits, created_at_us) of a session of this scope."""
        ...

    def put_session(self, name: str, inherits: Sequence[str], at_us: int) -> bool:
        """Record a session."""
        ...


class NamespaceRows(Protocol):
    """Namespaces of the org and their grants (read by org, whatever the scope)."""

    def namespace_owner(self, name: str) -> str | None:
        """The owner of namespace ``name`` of this org, None if there is none."""
        ...

    def create_namespace(self, name: str, owner: str, at_us: int) -> str:
        """Create namespace ``name`` owned by ``owner`` unless it exists."""
        ...

    def set_grant(self, name: str, agent_id: str, by: str, at_us: int, granted: bool) -> None:
        """Grant (or revoke) ``agent_id`` the use of namespace ``name``."""
        ...

    def may_use(self, name: str, agent_id: str) -> bool:
        """Whether ``agent_id`` owns namespace ``name`` or is granted it (one query."""
        ...

    def members(self, name: str) -> list[str]:
        """The agents granted namespace ``name`` (its owner not included)."""
        ...

    def namespaces_of(self, agent_id: str) -> list[tuple[str, str, int]]:
        """(name, owner, created_at_us) of the namespaces ``agent_id`` owns or is granted."""
        ...


__all__ = ["NamespaceRows", "TierRows"]
