"""Shared namespaces and sessions: scopes of their own beside an agent's memory.

A **namespace** is a space several agents of one org read and write. Its memories live in
a scope of their own, (org, ``scope_agent(name)``), so every read path that is already
scoped (HNSW, FTS5, the repository, graph edges, context) keeps them apart from each
agent's own memories with no new code. Who may use it is in ``am_namespace`` (its owner:
the agent that created it) and ``am_grant`` (the agents it granted).

A handle's scope is reached only through its ``ScopeGate``: the repository (every row of
the scope), the archive and the scope itself for the store's indexes are attributes of
the gate that check the grant when they are read (one indexed query, read from the
store, so a revoke made by another handle or another process holds from the next call,
even on a handle already open). ``AgentMemory``, its services (``Parts``),
``ChatHistory`` and ``SkillStore`` hold the gate, never the repository: code that
reaches a namespace's data without the check cannot be written against them.

The check is bound to a call: each public method of those classes is ``one_call``, so the
first read of the gate in it checks the grant and the rest of that call (every service
and nested public method it runs, in its thread) reaches the scope without checking
again. Outside a call every read checks. A grant revoked between two calls is seen by
the second; one revoked while a call runs takes effect at the next.

A **session** (``start_session``) is a scope of its own for one agent,
(org, ``session_agent(agent, name)``): it starts with the current core facts of the
sessions it inherits from copied in (scope-filtered: only this agent's sessions; belief
history is never copied, the copies start their own).

Scope ids made here hold a control character (``SEP``) that ``check_agent_id`` refuses
in any agent id, namespace or session name, so no agent can be named into another
one's namespace or session.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..base.errors import AccessDeniedError, InvalidArgumentError
from ..base.limits import check_name, scope_name
from ..memory.records import Scope, from_us
from .names import resolve

if TYPE_CHECKING:
    from .seam import AgentRepository, Archive

SEP = "\x1e"  # ASCII record separator: never in a name (check_name)


def scope_agent(namespace: str) -> str:
    """The agent id of a namespace's own scope."""
    return f"{SEP}ns{SEP}{namespace}"


def session_agent(agent_id: str, session: str) -> str:
    """The agent id of one agent's session scope."""
    return f"{agent_id}{SEP}session{SEP}{session}"


@dataclass(frozen=True)
class NamespaceInfo:
    """A namespace as ``AgentMemory.namespaces`` lists it for one agent."""

    name: str
    owner: str
    created_at: datetime
    role: str  # "owner" or "member"
    members: tuple[str, ...]  # the granted agents (only listed to the owner)


class Namespace:
    """The owner's (or a member's) handle on a shared namespace: who may use it.

    ``grant`` and ``revoke`` are the owner's; anyone may ask ``has_access``. Reading and
    writing the namespace is ``AgentMemory.open(..., namespace=name)`` (or ``open``).
    """

    def __init__(
        self,
        repo: AgentRepository,
        name: str,
        agent_id: str,
        owner: str,
        now_us: Callable[[], int],
    ) -> None:
        self._repo = repo
        self.name = name
        self.agent_id = agent_id  # who holds this handle
        self.owner = owner
        self._now_us = now_us

    def _owner_only(self, verb: str) -> None:
        if self.agent_id != self.owner:
            raise AccessDeniedError(
                f"only the owner of namespace {self.name!r} ({self.owner}) may {verb}",
                hint=f"ask {self.owner} to {verb}",
            )

    def grant(self, agent_id: str) -> None:
        """Let ``agent_id`` (of the same org) read and write this namespace."""
        self._owner_only("grant access")
        agent_id = scope_name("agent_id", agent_id)
        if agent_id != self.owner:
            self._repo.set_grant(self.name, agent_id, self.agent_id, self._now_us(), True)

    def revoke(self, agent_id: str) -> None:
        """Take the access away; it holds from ``agent_id``'s next call on, even on a
        handle it already has open. Its owner's access cannot be revoked."""
        self._owner_only("revoke access")
        agent_id = _member_name(agent_id, lambda: self._repo.members(self.name))
        if agent_id == self.owner:
            raise InvalidArgumentError("the owner's access cannot be revoked")
        self._repo.set_grant(self.name, agent_id, self.agent_id, self._now_us(), False)

    def has_access(self, agent_id: str) -> bool:
        """Whether ``agent_id`` owns this namespace or is granted it (now)."""
        agent_id = _member_name(agent_id, lambda: [self.owner, *self._repo.members(self.name)])
        return self._repo.may_use(self.name, agent_id)

    def members(self) -> list[str]:
        """The agents granted this namespace (not its owner)."""
        return self._repo.members(self.name)

    def __repr__(self) -> str:
        return f"Namespace({self.name!r}, owner={self.owner!r})"


def _member_name(agent_id: str, members: Callable[[], list[str]]) -> str:
    """``agent_id``'s one spelling, or as given if it is one of ``members()`` (granted
    before names were folded: ``names.resolve``)."""
    (out,) = resolve([("agent_id", agent_id)], lambda: agent_id in members())
    return out


def namespaces_of(repo: AgentRepository, agent_id: str) -> list[NamespaceInfo]:
    """The namespaces ``agent_id`` owns or is granted, by name."""
    out = []
    for name, owner, at in repo.namespaces_of(agent_id):
        mine = owner == agent_id
        out.append(
            NamespaceInfo(
                name,
                owner,
                from_us(at),
                "owner" if mine else "member",
                tuple(repo.members(name)) if mine else (),
            )
        )
    return out


class _Call(threading.local):
    """One thread's call in progress on a gate: how deep, and whether it was checked."""

    depth = 0
    checked = False


class ScopeGate:
    """The one way to a handle's scope (see the module): its repository, archive and
    ``Scope``, each checked for the grant when it is read, once per call (``call``). A
    handle on an agent's own memory or session (``namespace`` None) checks nothing and
    pays nothing."""

    def __init__(
        self,
        repo: AgentRepository,
        archive: Archive,
        scope: Scope,
        namespace: str | None,
        agent_id: str,
    ) -> None:
        # Name-mangled: outside the gate nothing holds the scope's repository or archive.
        self.__repo = repo
        self.__archive = archive
        self.__scope = scope
        self.namespace = namespace
        self._agent_id = agent_id
        self._call = _Call()  # per thread: a worker thread's call is checked on its own

    def check(self) -> None:
        """Raise AccessDeniedError unless the agent may use the namespace (now, as the
        store says: another process's revoke counts at once). Within a ``call`` that
        has already checked, nothing more is asked."""
        if self.namespace is None or self._call.checked:
            return
        if not self.__repo.may_use(self.namespace, self._agent_id):
            raise AccessDeniedError(
                f"agent {self._agent_id!r} has no access to namespace {self.namespace!r}"
                " (never granted, or revoked)"
            )
        if self._call.depth:
            self._call.checked = True  # the rest of this call is bound to this check

    @contextmanager
    def call(self) -> Iterator[None]:
        """One public call: its first read of the gate checks the grant, the later ones
        (nested calls included) reuse that check; the next call checks again."""
        c = self._call
        c.depth += 1
        try:
            yield
        finally:
            c.depth -= 1
            if not c.depth:
                c.checked = False

    @property
    def repo(self) -> AgentRepository:
        """The scope's repository, once the grant is checked."""
        self.check()
        return self.__repo

    @property
    def archive(self) -> Archive:
        """The scope's archive of texts, once the grant is checked."""
        self.check()
        return self.__archive

    def scope(self) -> Scope:
        """The scope's (org, agent id) for the store's indexes, once the grant is checked."""
        self.check()
        return self.__scope

    def migrate(self) -> None:
        """Create or upgrade the layer's tables (no scope's data: unchecked, and needed
        before the grant can be read at all)."""
        self.__repo.migrate()

    def close(self) -> None:
        """Close the archive (no check: closing never needs the grant)."""
        self.__archive.close()


F = TypeVar("F", bound=Callable[..., Any])


def one_call(gate_of: Callable[[Any], ScopeGate]) -> Callable[[F], F]:
    """A decorator making each decorated method one call of the gate ``gate_of(self)``
    (``ScopeGate.call``): the grant is checked at most once in it. Written on each
    public method, where a reader sees it."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def in_one_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            gate = gate_of(self)
            if gate.namespace is None:  # nothing to check: no call to keep
                return method(self, *args, **kwargs)
            with gate.call():
                return method(self, *args, **kwargs)

        return cast(F, in_one_call)

    return decorate


__all__ = [
    "Namespace",
    "NamespaceInfo",
    "ScopeGate",
    "check_name",
    "namespaces_of",
    "one_call",
    "scope_agent",
    "session_agent",
]
