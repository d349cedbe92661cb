"""The tiers of one agent memory (``context`` holds their pieces): pins within a budget,
core facts, the hot turns (a cache checked against the store's change seq), the warm
summary of the turns before them, consolidation's tier steps, and the context pack that
loads them in priority order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..base.errors import InvalidArgumentError
from ..base.limits import check_text
from ..memory.batch import new_ids
from ..memory.records import text_fingerprint
from . import context as ctx
from .context import Budget, ContextItem, ContextPack, HotTier, TurnSummarizer
from .decay import DAY_US
from .parts import Parts
from .reads import Reads
from .recall.search import Recaller
from .records import ConsolidationReport, Memory


class Tiers:
    """Pins, core facts, hot and warm tiers and context packs of one scope."""

    def __init__(self, parts: Parts, reads: Reads, recaller: Recaller, hot: HotTier) -> None:
        self._p = parts
        self._reads = reads
        self._recaller = recaller
        self._hot = hot
        self._tokens = Budget(parts.store.embedder)

    # ------------------------------------------------------------------ pins, core
    def pin(self, memory_id: str) -> None:
        """``AgentMemory.pin``: within ``pin_budget_chars`` for all pins of the scope."""
        m = self._reads.require(memory_id)
        pinned = self.pinned()
        if any(p.id == m.id for p in pinned):
            return
        used = sum(len(p.content) for p in pinned)
        budget = self._p.config.pin_budget_chars
        if used + len(m.content) > budget:
            raise InvalidArgumentError(
                f"pinning {len(m.content)} more characters would exceed the pin budget"
                f" ({used} of {budget} used)",
                hint="unpin something first, or raise StoreConfig.pin_budget_chars",
            )
        self._p.repo.set_pin(m.id, self._p.now_us(), True)

    def unpin(self, memory_id: str) -> None:
        """``AgentMemory.unpin``."""
        self._p.repo.set_pin(check_text("id", memory_id), self._p.now_us(), False)

    def pinned(self) -> list[Memory]:
        """``AgentMemory.pinned``."""
        return self._reads.by_labels(self._p.repo.pinned_labels())

    def core_facts(self) -> list[Memory]:
        """``AgentMemory.core_facts``."""
        return self._reads.by_labels(self._p.repo.core_labels())

    def mark_core(self, memory_id: str, core: bool) -> None:
        """``AgentMemory.mark_core``: semantic memories only."""
        m = self._reads.require(memory_id)
        if m.type != "semantic":
            raise InvalidArgumentError(f"only semantic memories can be core; {m.id} is {m.type}")
        self._p.repo.set_core([m.id], self._p.now_us(), "asserted" if core else None)

    def consolidated(
        self, report: ConsolidationReport, now_us: int, dry_run: bool
    ) -> ConsolidationReport:
        """Consolidation's tier steps: promote archival facts accessed
        ``core_promote_accesses`` times to core, demote core facts promoted that way and
        idle ``core_idle_days`` (and any no longer current), evict expired summaries."""
        repo, config = self._p.repo, self._p.config
        up = repo.core_candidates(config.core_promote_accesses)
        down = repo.core_idle(now_us - round(config.core_idle_days * DAY_US))
        evicted = 0
        if not dry_run:
            repo.set_core(up, now_us, "accessed")
            repo.set_core(down, now_us, None)
            evicted = repo.evict_summaries(now_us)
        return dataclasses.replace(
            report, core_promoted=len(up), core_demoted=len(down), warm_evicted=evicted
        )

    # ------------------------------------------------------------------ hot
    def hot_tier(self, conversation_id: str) -> tuple[list[Memory], Memory | None]:
        """The hot turns of a conversation and its latest tool result."""
        check_text("conversation_id", conversation_id)
        # The cache holds the scope's turns: serving it is reading the scope, and a
        # revoke moves no change feed that would invalidate it.
        self._p.gate.check()
        self._hot.valid_at(self._p.side.change_seq())
        cached = self._hot.get(conversation_id)
        if cached is not None:
            return cached
        repo, by_labels = self._p.repo, self._reads.by_labels
        turns = by_labels(repo.last_turns(conversation_id, self._p.config.hot_turns))
        tool = next((t for t in reversed(turns) if t.role == "tool"), None)
        if tool is None and (label := repo.latest_tool_turn(conversation_id)) is not None:
            # Kept beside the ring even once newer turns have pushed it out of it.
            tool = next(iter(by_labels([label])), None)
        self._hot.fill(conversation_id, turns, tool)
        return turns, tool

    # ------------------------------------------------------------------ warm
    def summarize(
        self, conversation_id: str, summarizer: TurnSummarizer | None
    ) -> tuple[str | None, list[str]]:
        """``AgentMemory.summarize``: (text or None, source ids)."""
        check_text("conversation_id", conversation_id)
        older = self._older_turns(conversation_id)
        if not older:
            return None, []
        now = self._p.now_us()
        expires = now + round(self._p.config.warm_ttl_days * DAY_US)
        if summarizer is not None:
            memories = self._reads.by_labels([lab for lab, _ in older])
            text = summarizer.summarize(memories)
            if not isinstance(text, str):
                raise InvalidArgumentError("a Summarizer must return a str")
            sources = [m.id for m in memories]
        else:
            text = None
            sources = [older[i][1] for i in self._extract(older)]
        self._p.repo.put_summary(new_ids(1, now)[0], conversation_id, text, sources, now, expires)
        return text, sources

    def _older_turns(self, conversation_id: str) -> list[tuple[int, str]]:
        repo = self._p.repo
        hot = repo.last_turns(conversation_id, self._p.config.hot_turns)
        return repo.turns_before(conversation_id, hot[0] if hot else None)

    def _extract(self, older: Sequence[tuple[int, str]]) -> list[int]:
        config = self._p.config
        labels = [lab for lab, _ in older]
        vectors = dict(zip(*self._p.repo.vectors_of(labels), strict=True)) if labels else {}
        if len(vectors) == len(labels) and labels:
            matrix = np.frombuffer(b"".join(vectors[lab] for lab in labels), dtype=np.float32)
            return ctx.extractive(
                matrix.reshape(len(labels), -1), config.warm_turns, config.warm_mmr_lambda
            )
        return ctx.spaced(len(labels), config.warm_turns)

    def _warm(self, conversation_id: str) -> list[ContextItem]:
        stored = self._p.repo.summary(conversation_id, self._p.now_us())
        if stored is not None:
            text, labels = stored
            if text is not None:
                return [ContextItem("warm", text, 0)]
            return ctx.items("warm", self._reads.by_labels(labels))
        older = self._older_turns(conversation_id)
        if not older:
            return []
        picked = [older[i][0] for i in self._extract(older)]
        return ctx.items("warm", self._reads.by_labels(picked))

    # ------------------------------------------------------------------ the pack
    def context(
        self, conversation_id: str, query: str | None, max_tokens: int, recall_k: int
    ) -> ContextPack:
        """``AgentMemory.context``: pinned, core, hot, warm, then recalled."""
        hot = self.hot_tier(conversation_id)[0]
        candidates: list[tuple[str, Sequence[ContextItem]]] = [
            ("pinned", ctx.items("pinned", self.pinned())),
            ("core", ctx.items("core", self.core_facts())),
            ("hot", ctx.items("hot", hot)),
            ("warm", self._warm(conversation_id)),
        ]
        if query is not None and query.strip():
            hits = self._recaller.recall(
                query,
                recall_k,
                mode=None,
                types=None,
                about=None,
                as_of=None,
                include_archived=False,
                explain=False,
                weights=None,
            )
            candidates.append(("recalled", ctx.items("recalled", [h.memory for h in hits])))
        return ctx.pack(candidates, max_tokens, self._tokens, text_fingerprint)
