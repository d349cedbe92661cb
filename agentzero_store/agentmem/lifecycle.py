"""What happens to a memory after it is written: archive and restore, soft forget with
undo, hard erase — each one transaction in ``memory.db`` (so no index can return a
forgotten or erased memory once the call returns), ordered against the archive file so a
crash at any point loses nothing and leaves no text behind that erase promised to remove.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import secrets
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import CorruptStoreError, NotFoundError
from ..memory.records import MemoryEntry, from_us, to_us
from .provenance import held_elsewhere, split_derived
from .records import EraseReport, ForgetReceipt, Memory
from .sqlite.repository import Row

if TYPE_CHECKING:
    from .parts import LayerTx, Parts

log = logging.getLogger(__name__)

ARCHIVE_BATCH = 1_000  # memories per archive transaction


def undo_token() -> str:
    """A random undo token (144 bits, URL-safe) that never begins with ``-``: a user
    pastes it as ``agentzero memory undo TOKEN``, where a leading ``-`` reads as an
    option (one token in 64 did)."""
    while (token := secrets.token_urlsafe(18)).startswith("-"):
        pass
    return token


class Lifecycle:
    """Archive, restore, forget, undo and erase for one agent memory."""

    def __init__(self, parts: Parts) -> None:
        self._mem = parts
        # Erased ids whose archive copy, keyword tokens and HNSW vectors this process
        # already purged while their WAL could not be emptied yet: a retry in this
        # process only has to empty the WAL (a new process redoes everything).
        self._purged: set[str] = set()

    @property
    def erase_unfinished(self) -> bool:
        """True if an erase of this process could not yet empty the WAL (see
        ``finish_pending_erase``)."""
        return bool(self._purged)

    # ------------------------------------------------------------------ archive
    def check_archive(self) -> None:
        """On open: archived memories (forgotten ones too: undo reads their text back)
        need their archive file (fail closed, precisely)."""
        mem = self._mem
        archived = set(mem.repo.all_archived()) | mem.repo.archived_payload_ids()
        if archived and not mem.archive.exists():
            first = ", ".join(sorted(archived)[:3])
            raise CorruptStoreError(
                f"the archive is missing: memory.db has {len(archived):,} archived memories "
                f"whose text lives in it (e.g. {first})",
                path=mem.archive.path,
                hint="restore the data dir from a backup (agentzero store restore)",
            )

    def hydrate(self, rows: Sequence[Row]) -> list[Memory]:
        """The memories of ``rows``, archived ones with their text read back (checked
        against the digest memory.db recorded)."""
        digests = {r.memory.id: r.digest for r in rows if r.digest is not None}
        if not digests:
            return [r.memory for r in rows]
        texts = self._mem.archive.get(digests)
        out = []
        for r in rows:
            m = r.memory
            if m.id in texts:
                content, meta = texts[m.id]
                m = dataclasses.replace(m, content=content, metadata=json.loads(meta))
            out.append(m)
        return out

    def archive(
        self, ids: Sequence[str], also: Callable[[LayerTx, list[str]], None] | None = None
    ) -> int:
        """Move these memories' text to the archive; returns how many moved.

        The text is committed in the archive first, then memory.db drops it from the row
        (a crash between leaves a spare copy, removed by consolidation): never a memory
        without its text. ``also(tx, archived_ids)`` runs inside each memory.db
        transaction that marks ids archived, with exactly those ids: what must happen
        once per archived memory commits with it (consolidation's merge).
        """
        mem = self._mem
        done = 0
        for start in range(0, len(ids), ARCHIVE_BATCH):
            rows = mem.repo.texts(ids[start : start + ARCHIVE_BATCH])
            if not rows:
                continue
            now_us = mem.now_us()
            mem.archive.put([(i, content, meta) for i, _, content, meta in rows], now_us)
            with mem.repo.transaction() as tx:
                mem.repo.mark_archived(
                    tx, [(i, label, mem.archive.digest(c, m)) for i, label, c, m in rows], now_us
                )
                if also is not None:
                    also(tx, [i for i, _, _, _ in rows])
            done += len(rows)
        return done

    def restore(self, memory_id: str) -> bool:
        """Put an archived memory's text back; then drop the archive's copy."""
        mem = self._mem
        row = mem.repo.by_id(memory_id, mem.now_us())
        if row is None or row.digest is None:
            return False
        content, meta = mem.archive.get({memory_id: row.digest})[memory_id]
        with mem.repo.transaction() as tx:
            mem.repo.unarchive(tx, memory_id, row.label, content, meta)
        mem.archive.delete([memory_id])
        return True

    def drop_spare_archive_copies(self) -> int:
        """Delete archive rows no memory needs (a crash between the two commits of
        archive or restore, or a purged forget)."""
        mem = self._mem
        spare = mem.archive.ids() - set(mem.repo.all_archived())
        spare -= mem.repo.archived_payload_ids()
        return mem.archive.delete(sorted(spare))

    # ------------------------------------------------------------------ forget, undo
    def forget(self, selector: tuple[str, str]) -> ForgetReceipt:
        """Soft forget (see ``AgentMemory.forget``)."""
        mem = self._mem
        chosen = mem.repo.select(*selector)
        if not chosen and selector[0] == "id":
            raise NotFoundError(f"no memory {selector[1]!r} in this scope")
        now = mem.now()
        until = now + timedelta(days=mem.config.forget_undo_days)
        token = undo_token()
        derived: list[tuple[str, int]] = []
        if chosen:
            now_us, until_us = to_us(now), to_us(until)
            with mem.repo.transaction() as tx:
                # What was derived from them may quote them: it goes too, in this same
                # transaction, under the same token (``provenance``).
                derived = split_derived(mem.repo, [mid for mid, _ in chosen], tx)[0]
                mem.repo.forget(tx, chosen + derived, token, now_us, until_us)
                mem.repo.append_history(
                    tx,
                    now_us,
                    [("forget", mid, {"token": token}) for mid, _ in chosen]
                    + [("forget", mid, {"token": token, "derived": True}) for mid, _ in derived],
                )
        return ForgetReceipt(
            token,
            len(chosen),
            until,
            tuple(mid for mid, _ in chosen),
            tuple(mid for mid, _ in derived),
        )

    def undo(self, token: str) -> int:
        """Bring back a forget still within its window (see ``AgentMemory.undo``)."""
        mem = self._mem
        entries = mem.repo.forgotten(token, mem.now_us())
        if not entries:
            raise NotFoundError(
                "no forget with this token in its undo window",
                hint="undo works until the receipt's recoverable_until, in the same scope",
            )
        # A derived memory another forget still hides a source of stays hidden, under
        # that forget (``provenance``); the rest comes back.
        held = held_elsewhere(mem.repo, [mid for mid, _, _ in entries])
        entries = [e for e in entries if e[0] not in held]
        if not entries:
            with mem.repo.transaction() as tx:
                self._move_held(tx, held)
            return 0
        payloads = [p for _, p, _ in entries]
        archived = {
            p["am_memory"][0]: p["am_memory"][19]
            for p in payloads
            if p["am_memory"][18] is not None
        }
        texts = mem.archive.get(archived)
        memory_rows = [p["memory"] for p in payloads]
        records = [
            MemoryEntry(
                r[2],
                role=r[1],
                conversation_id=r[4],
                org_id=r[5],
                agent_id=r[6],
                created_at=from_us(r[3]),
                expires_at=from_us(r[7]) if r[7] is not None else None,
                kind=r[8],
                source=r[9],
                metadata=json.loads(r[10]),
                id=r[0],
                embedding_model=r[11],
            )
            for r in memory_rows
        ]
        vectors: list[Any] | None = [
            np.frombuffer(v, dtype=np.float32) if v is not None else None for _, _, v in entries
        ]
        if vectors is not None and all(v is None for v in vectors):
            vectors = None
        prepared = mem.store.prepare(records, vectors)
        now_us = mem.now_us()
        with mem.repo.transaction() as tx:
            self._move_held(tx, held)
            written = dict(tx.insert(prepared))
            if len(written) < len(memory_rows):  # another handle undid it meanwhile
                raise NotFoundError(
                    "no forget with this token in its undo window (undone meanwhile)",
                    hint="undo works once, until the receipt's recoverable_until",
                )
            labels = [written[r[0]] for r in memory_rows]
            mem.repo.unforget(tx, payloads, labels)
            for r, label in zip(memory_rows, labels, strict=True):
                if r[0] in texts:  # archived when forgotten: its words stay searchable
                    tx.replace_keywords(label, texts[r[0]][0], (r[5], r[6], r[4]))
            mem.repo.append_history(
                tx, now_us, [("undo", r[0], {"token": token}) for r in memory_rows]
            )
        return len(entries)

    def _move_held(self, tx: LayerTx, held: dict[str, tuple[str, int]]) -> None:
        """Put undo entries an undo leaves hidden under the forget that holds them."""
        by_forget: dict[tuple[str, int], list[str]] = {}
        for mid, where in sorted(held.items()):
            by_forget.setdefault(where, []).append(mid)
        for (token, until_us), ids in by_forget.items():
            self._mem.repo.move_forgotten(tx, ids, token, until_us)

    # ------------------------------------------------------------------ erase
    def erase(self, selector: tuple[str, str]) -> EraseReport:
        """Hard erase (see ``AgentMemory.erase``)."""
        mem = self._mem
        chosen = mem.repo.select(*selector)
        forgotten = mem.repo.forgotten_select(*selector)
        if not chosen and not forgotten and selector[0] == "id":
            raise NotFoundError(f"no memory {selector[1]!r} in this scope")
        ids = tuple(sorted({mid for mid, _ in chosen} | set(forgotten)))
        pending = False
        derived: list[str] = []
        if ids:
            with mem.repo.transaction() as tx:
                # What was derived from them (live or forgotten) may hold their text: it
                # is erased with them (``provenance``).
                live, hidden = split_derived(mem.repo, ids, tx)
                derived = sorted({mid for mid, _ in live} | set(hidden))
                mem.repo.erase(
                    tx, chosen + live, [*forgotten, *hidden], selector[0], mem.now_us(), derived
                )
            pending = not self.finish_pending_erase()
        return EraseReport(len(ids), ids, pending, tuple(derived))

    def finish_pending_erase(self) -> bool:
        """The steps of an erase after its commit, resumable (``am_purge``): the archive's
        copy, the keyword index's segments, the HNSW checkpoint and the WAL's old frames.

        False when another connection (another process reading the store) holds a
        snapshot from before the erase past the busy timeout: SQLite can then neither
        write the erased pages back into the file nor empty the WAL, so old page images
        with the text stay on disk. The purge then stays pending, and the next erase,
        ``close`` or open finishes it, instead of being recorded as done.
        """
        mem = self._mem
        ids = mem.repo.pending_purge()
        if not ids:
            return True
        todo = [i for i in ids if i not in self._purged]
        if todo:
            self.purge_everywhere(todo)
            self._purged.update(todo)
        # Only once no page image with the text is left may the pending record go.
        if not (self.truncate_wal() and mem.archive.truncate_wal()):
            log.warning(
                "erase of %d memories: another connection is reading an older snapshot, so "
                "old pages still hold their text; finished on the next erase, close or open",
                len(ids),
            )
            return False
        with mem.repo.transaction() as tx:
            mem.repo.clear_purge(tx, ids)
        self._purged.difference_update(ids)
        # The clear's own frames hold ids only; empty the WAL again all the same.
        self.truncate_wal()
        return True

    def purge_everywhere(self, ids: Sequence[str]) -> None:
        """Remove every trace of deleted memories beyond their rows: archive copies,
        keyword tokens, vectors in the HNSW checkpoint (the WAL: ``truncate_wal``)."""
        mem = self._mem
        mem.archive.delete(ids)
        mem.side.purge()

    def truncate_wal(self) -> bool:
        """Copy the WAL into memory.db and empty it (old frames hold old pages); False
        if a reader of an older snapshot kept it from finishing within the busy timeout
        (``StoreSide.settle``; always True on PostgreSQL)."""
        return self._mem.side.settle()


__all__ = ["Lifecycle", "undo_token"]
