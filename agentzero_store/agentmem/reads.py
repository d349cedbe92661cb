"""Reading memories by id, by label and page by page, and the access log of what recall
returned (buffered, written in batches: a crash loses at most a batch of accesses, never
a memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from ..base.errors import InvalidArgumentError, NotFoundError
from ..base.limits import check_limit, check_text
from ..memory.records import KINDS, from_us
from .lifecycle import Lifecycle
from .parts import Parts
from .records import Memory, RecallHit, check_types, entity_key
from .rows import Filter

Archived = Literal["exclude", "include", "only"]  # which memories ``memories`` lists


class Reads:
    """Reads of one agent memory's scope; archived text is read back through
    ``life.hydrate``."""

    def __init__(self, parts: Parts, life: Lifecycle) -> None:
        self._p = parts
        self._life = life
        self._accesses: list[tuple[str, int]] = []

    def get(self, memory_id: str) -> Memory | None:
        """``AgentMemory.get``."""
        p = self._p
        row = p.repo.by_id(check_text("id", memory_id), p.now_us())
        return None if row is None else self._life.hydrate([row])[0]

    def require(self, memory_id: str) -> Memory:
        """``get``, or NotFoundError."""
        m = self.get(memory_id)
        if m is None:
            raise NotFoundError(f"no memory {memory_id!r} in this scope")
        return m

    def by_labels(self, labels: Sequence[int]) -> list[Memory]:
        """The live memories of ``labels`` (archived ones with their text), in order."""
        f = Filter(now_us=self._p.now_us(), include_archived=True)
        rows = self._p.repo.rows(labels, f)
        return self._life.hydrate([rows[lab] for lab in labels if lab in rows])

    def memories(
        self,
        *,
        kind: str | None,
        types: Sequence[str] | str | None,
        conversation_id: str | None,
        about: str | None,
        archived: Archived,
        limit: int,
        offset: int,
    ) -> list[Memory]:
        """``AgentMemory.memories``: a page of this scope's memories, newest first."""
        if kind is not None and kind not in KINDS:
            raise InvalidArgumentError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
        if archived not in ("exclude", "include", "only"):
            raise InvalidArgumentError(
                f"archived must be exclude, include or only; got {archived!r}"
            )
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < 2**62:
            raise InvalidArgumentError(
                f"offset must be a whole number >= 0, got {offset!r}",
                hint="the offset of the next page is this one's offset plus its length",
            )
        if conversation_id is not None:
            check_text("conversation_id", conversation_id)
        f = Filter(
            now_us=self._p.now_us(),
            types=check_types(types),
            about=None if about is None else (entity_key(check_text("about", about)),),
            include_archived=archived != "exclude",
        )
        rows = self._p.repo.page(
            f,
            kind=kind,
            conversation_id=conversation_id,
            archived_only=archived == "only",
            limit=check_limit(limit),
            offset=offset,
        )
        return self._life.hydrate(rows)

    # ------------------------------------------------------------------ the access log
    def logged(self, hits: Sequence[RecallHit]) -> None:
        """Buffer an access of each hit (written every ``access_flush_every``)."""
        if hits:
            at = self._p.now_us()
            self._accesses.extend((h.id, at) for h in hits)
            if len(self._accesses) >= self._p.config.access_flush_every:
                self.flush()

    def flush(self) -> None:
        """``AgentMemory.flush``: write the buffered accesses."""
        repo = self._p.repo  # checked before the buffer is taken: a refusal loses nothing
        if self._accesses:
            pending, self._accesses = self._accesses, []
            with repo.transaction() as tx:
                repo.log_access(tx, pending)

    def drop_accesses(self) -> None:
        """Forget the buffered accesses (on close)."""
        self._accesses = []

    def accesses(self, memory_id: str) -> list[datetime]:
        """``AgentMemory.accesses``: when recalls returned the memory, oldest first."""
        self.flush()
        return [from_us(t) for t in self._p.repo.accesses(self.require(memory_id).id)]
