"""Provenance: what was derived from what (``Memory.sources``, the ``am_source`` rows),
followed to the end for forget, undo, erase and expiry.

A derived memory (a semantic memory consolidation promoted from recurring turns; any
memory or fact a later step derives) may hold its sources' text verbatim, so it must not
outlive them in any read path:

- forgetting a memory forgets what was derived from it, under the same token, in the
  same transaction; undo brings both back, except a derived memory one of whose other
  sources another forget still hides: it moves under that forget (its undo brings it);
- erasing a memory erases what was derived from it (the text may be theirs). What
  remains of its sources is derived again by the next consolidation, by its own rule
  (a promotion needs ``promote_min_duplicates`` of them);
- a memory that expires takes what was derived from it along.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .parts import LayerTx
    from .postgres.repository import PgRepository
    from .sqlite.repository import SqliteRepository


def derived_closure(
    repo: SqliteRepository | PgRepository, ids: Sequence[str], tx: LayerTx | None = None
) -> list[str]:
    """Every memory derived from ``ids``, directly or through other derived ones (live,
    forgotten or archived; ``ids`` themselves not), in id order."""
    seen = set(ids)
    frontier = set(ids)
    found: set[str] = set()
    while frontier:
        step = repo.derived_from(sorted(frontier), tx) - seen
        seen |= step
        found |= step
        frontier = step
    return sorted(found)


def split_derived(
    repo: SqliteRepository | PgRepository, ids: Sequence[str], tx: LayerTx | None = None
) -> tuple[list[tuple[str, int]], list[str]]:
    """What was derived from ``ids`` (``derived_closure``): the (id, label) of the live
    ones, and the ids of those in the undo area."""
    more = derived_closure(repo, ids, tx)
    if not more:
        return [], []
    return repo.live_of(more, tx), sorted(repo.forgotten_of(more, tx))


def held_elsewhere(
    repo: SqliteRepository | PgRepository, ids: Sequence[str], tx: LayerTx | None = None
) -> dict[str, tuple[str, int]]:
    """Those of ``ids`` (one forget's undo entries) that an undo must leave hidden, each
    with the (token, until_us) of the other forget that still hides one of its sources,
    directly or through another such memory."""
    sources = repo.sources_of(ids, tx)
    outside = sorted({s for srcs in sources.values() for s in srcs} - set(ids))
    held = repo.forgotten_of(outside, tx) if outside else {}
    kept: dict[str, tuple[str, int]] = {}
    changed = True
    while changed:  # a derived memory of a kept one stays hidden too
        changed = False
        for mid, srcs in sources.items():
            if mid in kept:
                continue
            hit = next((s for s in srcs if s in held or s in kept), None)
            if hit is not None:
                kept[mid] = held[hit] if hit in held else kept[hit]
                changed = True
    return kept


__all__ = ["derived_closure", "held_elsewhere", "split_derived"]
