"""Decay and reinforcement of memories (the math is ``fsrs``): retrievability now,
feedback that strengthens a used memory and hardens an unused one, the importance score,
and the soft prune to a token budget. Recall alone never strengthens a memory.
"""

from __future__ import annotations

from datetime import datetime

from ..base.errors import InvalidArgumentError
from ..base.limits import check_optional_time
from ..memory.records import to_us
from . import fsrs
from .lifecycle import Lifecycle
from .parts import Parts
from .reads import Reads
from .records import Memory
from .tokens import count_tokens

DAY_US = 86_400 * 1_000_000


class Decay:
    """FSRS decay and reinforcement of one agent memory's scope."""

    def __init__(self, parts: Parts, reads: Reads, life: Lifecycle) -> None:
        self._p = parts
        self._reads = reads
        self._life = life

    def _retrievability(self, m: Memory, at: datetime) -> float:
        s_eff = fsrs.effective_stability(m.stability_days, m.salience, self._p.config.salience_beta)
        return fsrs.retrievability((at - m.last_review).total_seconds() / 86_400, s_eff)

    def retrievability(self, memory_id: str, at: datetime | None) -> float:
        """``AgentMemory.retrievability``."""
        at = check_optional_time("at", at)
        return self._retrievability(self._reads.require(memory_id), at or self._p.now())

    def feedback(self, memory_id: str, used: bool) -> Memory:
        """``AgentMemory.feedback``: only ``used=True`` strengthens."""
        if not isinstance(used, bool):
            raise InvalidArgumentError("used must be True or False")
        m = self._reads.require(memory_id)
        now = self._p.now()
        d = fsrs.difficulty_after(m.difficulty, used)
        s = m.stability_days
        review = m.last_review
        if used:
            s = fsrs.stability_after_recall(s, m.difficulty, self._retrievability(m, now))
            review = max(now, m.last_review)
        repo = self._p.repo
        with repo.transaction() as tx:
            repo.set_review(tx, m.id, s, d, to_us(review))
        return self._reads.require(memory_id)

    def importance(self, memory_id: str) -> float:
        """``AgentMemory.importance``."""
        m = self._reads.require(memory_id)
        days = max(0.0, (self._p.now() - m.created_at).total_seconds() / 86_400)
        self._reads.flush()
        return fsrs.importance_score(days, m.access_count, m.salience, m.importance)

    def prune(self, max_tokens: int, dry_run: bool) -> list[str]:
        """``AgentMemory.prune``: the ids archived (or, ``dry_run``, to be)."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise InvalidArgumentError(
                f"max_tokens must be a whole number >= 0, got {max_tokens!r}"
            )
        self._reads.flush()
        now_us = self._p.now_us()
        scored = []
        total = 0
        live = self._p.repo.live_texts()
        counts = count_tokens([r[1] for r in live], self._p.store.embedder)
        for (mid, _, created, last, count, sal, imp), tokens in zip(live, counts, strict=True):
            total += tokens
            days = max(0.0, (now_us - (last or created)) / DAY_US)
            scored.append((fsrs.importance_score(days, count, sal, imp), created, mid, tokens))
        scored.sort()
        drop: list[str] = []
        for _, _, mid, tokens in scored:
            if total <= max_tokens:
                break
            drop.append(mid)
            total -= tokens
        if drop and not dry_run:
            self._life.archive(drop)
        return drop
