"""What the agent tools over ``AgentMemory`` share: scopes, arguments, result shapes.

A tool is built on an ``AgentMemory`` (and is then pinned to its org/agent, the usual
case) or on ``MemoryScopes`` (one open store, a memory per org/agent; the scope
arguments pin what the host pinned and are free otherwise).

Results are compact on purpose: a model needs a memory's id, type, text, where it came
from and how sure it is, not its decay state.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ...agentmem import AgentMemory, Memory, RecallHit
from ...agentmem.records import MEMORY_TYPES
from ...base.errors import InvalidArgumentError
from .base import AgentTool, Arg, Result, scope_args
from .memory import MemoryAppendTool

MAX_SCOPES = 16  # agent memories an unpinned host keeps open at once (least recent closes)


class MemoryScopes:
    """The agent memories of one open store, one ``AgentMemory`` per (org, agent).

    ``base`` (opened with ``AgentMemory.open``) owns the store; other scopes share it
    and are made on first use. ``org_id``/``agent_id``: the host's pins (``None``: the
    caller may name any; an omitted one is ``base``'s).
    """

    def __init__(
        self, base: AgentMemory, *, org_id: str | None = None, agent_id: str | None = None
    ) -> None:
        for name, pin, own in (
            ("org_id", org_id, base.org_id),
            ("agent_id", agent_id, base.agent_id),
        ):
            if pin is not None and pin != own:
                raise InvalidArgumentError(f"{name} is pinned to {pin!r} but the memory is {own!r}")
        self.base = base
        self.org_id = org_id
        self.agent_id = agent_id
        self._others: OrderedDict[tuple[str, str], AgentMemory] = OrderedDict()

    @classmethod
    def pinned(cls, memory: AgentMemory) -> MemoryScopes:
        """Exactly ``memory``'s scope."""
        return cls(memory, org_id=memory.org_id, agent_id=memory.agent_id)

    @property
    def embedder_id(self) -> str | None:
        """The model id of the store's embedder (None: keyword search only)."""
        e = self.base.store.embedder
        return e.model_id if e is not None else None

    def get(self, org_id: str | None, agent_id: str | None) -> AgentMemory:
        """The memory of (``org_id``, ``agent_id``); omitted: ``base``'s."""
        key = (org_id or self.base.org_id, agent_id or self.base.agent_id)
        if key == (self.base.org_id, self.base.agent_id):
            return self.base
        mem = self._others.pop(key, None)
        if mem is None:
            mem = self.base.for_scope(*key)
            if len(self._others) >= MAX_SCOPES:
                self._others.popitem(last=False)[1].close()  # writes its access log
        self._others[key] = mem
        return mem

    def close(self) -> None:
        """Close every scope's memory, then the base (and with it the store)."""
        try:
            while self._others:
                self._others.popitem()[1].close()
        finally:
            self.base.close()


def as_scopes(memory: AgentMemory | MemoryScopes) -> MemoryScopes:
    """``memory`` as ``MemoryScopes`` (an ``AgentMemory`` pins its own scope)."""
    return memory if isinstance(memory, MemoryScopes) else MemoryScopes.pinned(memory)


def memory_json(m: Memory) -> Result:
    """One memory as the tools return it."""
    return {
        "id": m.id,
        "type": m.type,
        "content": m.content,
        "role": m.role,
        "conversation_id": m.conversation_id,
        "speaker": m.speaker,
        "created_at": m.created_at.isoformat(),
        "expires_at": m.expires_at.isoformat() if m.expires_at else None,
        "confidence": m.confidence,
        "about": list(m.about),
        "archived": m.archived,
        "kind": m.kind,
    }


def hit_json(hit: RecallHit) -> Result:
    """One recall hit: the memory, its fused score and its rank per signal."""
    out = {**memory_json(hit.memory), "score": hit.score, "ranks": dict(hit.ranks)}
    if hit.explain is not None:
        out["explain"] = {k: dict(v) for k, v in hit.explain.items()}
    return out


def about_arg(what: str) -> Arg:
    """The ``about`` argument: entity names (people, places, things)."""
    return Arg(
        "about",
        "array",
        f'Names of the people, places or things {what}, e.g. ["Ana", "Lisbon"].',
        max_items=32,
        max_length=256,
    )


def types_arg(what: str) -> Arg:
    """The ``types`` argument: memory types."""
    return Arg(
        "types",
        "array",
        f"Only {what} of these types: episodic (conversation turns), semantic (facts and "
        "notes), procedural (how-tos and what worked).",
        enum=MEMORY_TYPES,
        max_items=3,
    )


class ScopedTool(AgentTool):
    """A tool over ``MemoryScopes``: its last arguments are the (pinned) org/agent."""

    def __init__(self, memory: AgentMemory | MemoryScopes, name: str, *args: Arg) -> None:
        self.scopes = as_scopes(memory)
        self.name = name
        self.args = (*args, *self._scope_args())

    def _scope_args(self) -> tuple[Arg, Arg]:
        """org_id and agent_id: pinned (``const``) as the host pinned them; otherwise
        which agent memory the call uses (omitted: the base's)."""
        pinned = scope_args(self.scopes.org_id, self.scopes.agent_id, conversation=False)
        free = (
            Arg(
                "org_id",
                "string",
                "The organisation (tenant) whose agent memory to use (omitted: "
                f"{self.scopes.base.org_id!r}).",
                max_length=256,
            ),
            Arg(
                "agent_id",
                "string",
                f"The agent whose memory to use (omitted: {self.scopes.base.agent_id!r}).",
                max_length=256,
            ),
        )
        org = pinned[0] if self.scopes.org_id is not None else free[0]
        agent = pinned[1] if self.scopes.agent_id is not None else free[1]
        return org, agent

    def memory(self, a: dict[str, Any]) -> AgentMemory:
        """The memory of the call's (validated, possibly pinned) scope."""
        return self.scopes.get(a["org_id"], a["agent_id"])


class AdoptingAppendTool(MemoryAppendTool):
    """``memory_append`` beside the agent memory: the entry goes to the memory store as
    ``MemoryAppendTool`` writes it (same schema), then its scope's agent memory adopts
    it, so memory_recall, memory_list and memory_forget see it on the next call rather
    than after the host reopens the store."""

    def __init__(self, memory: AgentMemory | MemoryScopes, *, name: str = "memory_append") -> None:
        self.scopes = as_scopes(memory)
        super().__init__(
            self.scopes.base.store,
            org_id=self.scopes.org_id,
            agent_id=self.scopes.agent_id,
            name=name,
        )

    def _run(self, a: dict[str, Any]) -> Result:
        # The scope first: a name open would refuse, or a handle whose namespace was
        # revoked, is refused before anything is written.
        mem = self.scopes.get(a["org_id"], a["agent_id"])
        mem.gate.check()
        # The row belongs to the handle's scope: a namespace's or a session's own, not the
        # acting agent's (whose id the caller names and the pin checks).
        out = super()._run({**a, "agent_id": mem.scope_agent})
        mem.adopt()
        return out


__all__ = [
    "AdoptingAppendTool",
    "MemoryScopes",
    "ScopedTool",
    "about_arg",
    "as_scopes",
    "hit_json",
    "memory_json",
    "types_arg",
]
