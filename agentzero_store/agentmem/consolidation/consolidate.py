"""Consolidation: promote recurring episodes to semantic memories, merge near-duplicate
notes, decay everything, archive what faded, erase what expired and old forgets.

Deterministic (inputs are read in a fixed order; near-duplicates are a fixed MinHash
with an exact Jaccard check) and idempotent (a second run at the same time changes
nothing: promoted episodes are marked, merged twins and faded memories are archived,
retrievability snapshots are equal). Crash-safe: each step commits on its own; a
promotion commits the new semantic memory and the marks on its sources in one
transaction (never doubled), and anything archived afterwards is archived only after
what replaces it is committed; what is erased is first recorded as a pending purge,
which the end of the run (or, after a crash, the next open) finishes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from ...memory.records import MemoryEntry, to_us
from .. import fsrs
from ..parts import new_memory
from ..provenance import split_derived
from ..records import ConsolidationReport
from . import dedup, meaning

if TYPE_CHECKING:
    from ..lifecycle import Lifecycle
    from ..parts import Parts
    from ..seam import LayerTx

Progress = Callable[[str, int, int], None]  # (step, done, total)
DAY_US = 86_400 * 1_000_000


def consolidate(
    mem: Parts, life: Lifecycle, now: datetime, *, dry_run: bool, progress: Progress | None
) -> ConsolidationReport:
    """See ``AgentMemory.consolidate``."""
    tell = progress or (lambda step, done, total: None)
    now_us = to_us(now)
    # The HNSW sidecar takes every change as it commits but writes no checkpoint until
    # the end: at 100k memories each one rewrites ~170 MB, and the promotions alone
    # used to fall due twice. A crash loses nothing: the next open replays the changes.
    with mem.side.deferred_checkpoints():
        expired, purged = _expire(mem, now_us, dry_run)
        tell("expire", 1, 6)
        promoted, linked = _promote(mem, now_us, dry_run)
        tell("promote", 2, 6)
        merged = _merge(mem, life, now_us, dry_run)
        tell("merge", 3, 6)
        decayed, faded = _decay(mem, now_us, dry_run)
        tell("decay", 4, 6)
        archived = len(faded) if dry_run else life.archive(faded)
        if not dry_run:
            life.drop_spare_archive_copies()
        tell("archive", 5, 6)
        if not dry_run:
            # What expired and the forgets past their window, erased once for the run:
            # archive copies, keyword segments, the HNSW graph and its checkpoint (one
            # scrub, one checkpoint, which also covers every change above), the WAL.
            life.finish_pending_erase()
        tell("purge", 6, 6)
    if not dry_run:
        mem.side.refresh_statistics()
    return ConsolidationReport(
        promoted=promoted,
        linked=linked,
        decayed=decayed,
        archived=archived,
        merged=merged,
        expired=expired,
        purged=purged,
        dry_run=dry_run,
    )


def _expire(mem: Parts, now_us: int, dry_run: bool) -> tuple[int, int]:
    """Delete memories past their TTL (and layer rows whose memory row the store
    deleted), and empty undo entries past their window; both are then erased (see
    ``consolidate``)."""
    repo = mem.repo
    expired = repo.expired(now_us)
    # What was derived from an expired memory may quote it: it goes with it.
    live, hidden = split_derived(repo, [i for i, _ in expired]) if expired else ([], [])
    expired = sorted(set(expired) | set(live))
    orphans = [(o, -1) for o in repo.orphans()]
    purge = sorted(set(repo.purgeable(now_us)) | set(hidden))
    if dry_run or not (expired or orphans or purge):
        return len(expired), len(purge)
    with repo.transaction() as tx:
        repo.drop(tx, expired + orphans)
        # An expired memory, like a forget past its window, is erased: a pending purge
        # (``am_purge``) finishes it after the commit, resumable after a crash.
        repo.schedule_purge(tx, purge + [i for i, _ in expired])
        repo.prune_speakers(tx)  # once, after both: whose last memory went
    return len(expired), len(purge)


def _promote(mem: Parts, now_us: int, dry_run: bool) -> tuple[int, int]:
    """Episodes that recur (``promote_min_duplicates`` of them state one fact, in the
    same words or, by their vectors, in other words: ``meaning``) become one semantic
    memory linked to its sources by ``semantic`` edges."""
    repo, cfg = mem.repo, mem.config
    episodes = repo.texts_of_type("episodic")
    by_id = {e[0]: e for e in episodes}
    label_of = {e[0]: e[1] for e in episodes}

    def vectors(ids: Sequence[str]) -> dict[str, bytes]:
        labels, raw = repo.vectors_of([label_of[i] for i in ids])
        id_of = {label_of[i]: i for i in ids}
        return {id_of[label]: v for label, v in zip(labels, raw, strict=True)}

    groups = meaning.recurring_groups(
        [(e[0], e[2]) for e in episodes],
        jaccard=cfg.near_duplicate_jaccard,
        cosine=cfg.recurrence_cosine,
        vectors=vectors,
        entities=repo.about_of,
    )
    promoted = linked = 0
    for group in groups:
        if len(group) < cfg.promote_min_duplicates:
            continue
        targets = sorted({t for i in group if (t := by_id[i][4]) is not None})
        live = [t for t in targets if repo.by_id(t, now_us) is not None]
        fresh = [i for i in group if by_id[i][4] is None or by_id[i][4] not in live]
        if not fresh:
            continue
        if dry_run:
            promoted, linked = promoted + (not live), linked + (len(fresh) if live else 0)
            continue
        if live:
            with repo.transaction() as tx:
                repo.set_promoted(tx, fresh, live[0])
                repo.add_sources(tx, live[0], fresh)
                repo.add_edges(tx, [(live[0], i, "semantic", 1.0) for i in fresh], now_us)
            linked += len(fresh)
            continue
        first = by_id[group[0]]
        about = sorted({a for names in repo.about_of(group).values() for a in names})
        vec = repo.vector_of(first[1])
        entry = MemoryEntry(
            first[2],
            role="memory",
            conversation_id="memories",
            org_id=mem.org_id,
            agent_id=mem.agent_id,
            embedding_model=mem.store.embedding_info()[0] if vec is not None else None,
        )
        prepared = mem.store.prepare(
            [entry], None if vec is None else [np.frombuffer(vec, dtype=np.float32)]
        )
        confidence = min(0.99, 1.0 - 0.5 ** len(group))
        meta = new_memory(mem.config, "semantic", confidence=confidence, about=about)
        with repo.transaction() as tx:
            repo.insert(tx, prepared, [meta])
            new_id = prepared.ids[0]
            repo.set_promoted(tx, group, new_id)
            # Its text is one of theirs: forgetting or erasing any of them reaches it.
            repo.add_sources(tx, new_id, group)
            repo.add_edges(tx, [(new_id, i, "semantic", 1.0) for i in group], now_us)
            repo.append_history(tx, now_us, [("promote", new_id, {"sources": list(group)})])
        promoted += 1
    return promoted, linked


def _merge(mem: Parts, life: Lifecycle, now_us: int, dry_run: bool) -> int:
    """Near-duplicate semantic notes (not facts: they supersede instead) are merged into
    the oldest: it gets their access counts and an edge, and they are archived.

    Each twin is folded into its keeper in the same memory.db transaction that marks it
    archived: a crash leaves a twin either folded and archived or neither, so a re-run
    (which sees only unarchived twins) never folds one twice.
    """
    repo, cfg = mem.repo, mem.config
    notes = repo.texts_of_type("semantic")
    groups = dedup.near_duplicate_groups(
        [(n[0], n[2]) for n in notes], threshold=cfg.near_duplicate_jaccard
    )
    twins = [i for g in groups for i in g[1:]]
    if dry_run or not twins:
        return len(twins)

    def fold(tx: LayerTx, archived: list[str]) -> None:
        now_archived = set(archived)
        for g in groups:  # in group order, twins in group order (one archive batch: all)
            done = [i for i in g[1:] if i in now_archived]
            if done:
                repo.add_access_counts(tx, g[0], done)
                repo.add_edges(tx, [(g[0], i, "semantic", 1.0) for i in done], now_us)
                repo.append_history(tx, now_us, [("merge", g[0], {"twins": done})])

    return life.archive(twins, fold)


def _decay(mem: Parts, now_us: int, dry_run: bool) -> tuple[int, list[str]]:
    """Retrievability of every memory at ``now_us``: the snapshots that went down are
    stored; the live ones below ``archive_below`` are returned to be archived."""
    rows = mem.repo.decay_rows()
    if not rows:
        return 0, []
    # Memories are written without their salience (a text heuristic kept off the write
    # path): the first consolidation that sees one computes and stores it.
    salience = {r[0]: r[4] for r in rows}
    if any(v is None for v in salience.values()):
        if dry_run:
            salience.update(mem.repo.missing_salience())
        else:
            with mem.repo.transaction() as tx:
                salience.update(mem.repo.fill_salience(tx))
    cfg = mem.config
    r_now = fsrs.retrievability_many(
        (now_us - np.array([r[5] for r in rows], dtype=np.float64)) / DAY_US,
        np.array([r[3] for r in rows], dtype=np.float64),
        np.array([salience[r[0]] or 0.0 for r in rows], dtype=np.float64),
        cfg.salience_beta,
    )
    changed = [
        (float(r), row[0])
        for r, row in zip(r_now, rows, strict=True)
        if row[6] is None or float(r) < row[6] - 1e-12
    ]
    faded = [
        row[0]
        for r, row in zip(r_now, rows, strict=True)
        if float(r) < cfg.archive_below and row[8] is None
    ]
    if changed and not dry_run:
        with mem.repo.transaction() as tx:
            mem.repo.set_retrievability(tx, changed)
    return len(changed), faded


__all__ = ["consolidate"]
