"""Sharing and sessions of one agent memory (the scopes are made in ``namespaces``): a
shared namespace created on first use and its grants, the names a namespace or session
is known under, and what a new session inherits (the current core facts of its parents,
and with ``procedures`` their outcome counts; never belief history).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base.errors import AccessDeniedError, InvalidArgumentError, NotFoundError
from . import namespaces as ns
from .beliefs import Beliefs
from .names import resolve
from .parts import Parts
from .tiers import Tiers
from .writes import Writes


class Sessions:
    """Namespaces and sessions as seen from one handle, acting as ``agent_id``; the
    handle is an agent's own memory unless ``own`` is False (a namespace's or a
    session's)."""

    def __init__(
        self,
        parts: Parts,
        writes: Writes,
        beliefs: Beliefs,
        tiers: Tiers,
        *,
        agent_id: str,
        own: bool,
    ) -> None:
        self._p = parts
        self._w = writes
        self._beliefs = beliefs
        self._tiers = tiers
        self._agent_id = agent_id
        self._own = own

    # ------------------------------------------------------------------ namespaces
    def namespace(self, name: str) -> ns.Namespace:
        """``AgentMemory.namespace``: created, owned by this agent, on first use."""
        p = self._p
        name = self.namespace_name(name)
        owner = p.repo.namespace_owner(name)
        if owner is None:
            owner = p.repo.create_namespace(name, self._agent_id, p.now_us())
        # Grants are managed as the acting agent: the handle holds that agent's own
        # repository, never this one's scope (a namespace's rows stay behind the gate).
        mine = p.side.repository(p.org_id, self._agent_id)
        handle = ns.Namespace(mine, name, self._agent_id, owner, p.now_us)
        if not handle.has_access(self._agent_id):
            raise AccessDeniedError(f"agent {self._agent_id!r} has no access to namespace {name!r}")
        return handle

    def namespace_name(self, name: str) -> str:
        """``name``'s one spelling (``names.resolve``), or as given if a namespace exists
        under exactly that spelling."""
        (out,) = resolve(
            [("namespace", name)], lambda: self._p.repo.namespace_owner(name) is not None
        )
        return out

    def namespaces(self) -> list[ns.NamespaceInfo]:
        """``AgentMemory.namespaces``."""
        return ns.namespaces_of(self._p.repo, self._agent_id)

    # ------------------------------------------------------------------ sessions
    def _session_name(self, what: str, name: str) -> str:
        """``name``'s one spelling, or as given if this agent has a session spelled so."""
        (out,) = resolve([(what, name)], lambda: self._p.repo.session(name) is not None)
        return out

    def names(self, name: str, inherits_from: Sequence[str]) -> tuple[str, list[str]]:
        """A new session's name and its parents', checked: started from an agent's own
        handle, not its own parent, every parent an existing session of this agent."""
        if not self._own:
            raise InvalidArgumentError("sessions start from an agent's own memory handle")
        name = self._session_name("session", name)
        parents = [self._session_name("inherits_from", p) for p in inherits_from]
        if name in parents:
            raise InvalidArgumentError("a session cannot inherit from itself")
        missing = [p for p in parents if self._p.repo.session(p) is None]
        if missing:
            raise NotFoundError(f"no session {', '.join(map(repr, missing))} of this agent")
        return name, parents

    def put(self, name: str, parents: Sequence[str]) -> bool:
        """Record the session; False if it existed (then it inherits nothing again)."""
        return self._p.repo.put_session(name, list(parents), self._p.now_us())

    def inherit(self, src: Sessions, procedures: bool) -> None:
        """Copy ``src``'s (a parent session's) current core facts into this session's
        scope as core facts of its own, and with ``procedures`` its procedures' counts."""
        repo = self._p.repo
        for m in src._tiers.core_facts():
            fact = src._p.repo.fact(m.id)
            if fact is None:  # a core note, not a triple
                r = self._w.remember(
                    m.content,
                    type_="semantic",
                    confidence=m.confidence,
                    importance=0.5,
                    about=(),
                    metadata=None,
                    ttl=None,
                    conversation_id=None,
                    vector=None,
                    sources=(),
                )
            else:
                r = self._beliefs.assert_fact(
                    fact.subject,
                    fact.predicate,
                    fact.object,
                    confidence=fact.confidence,
                    single_valued=fact.single_valued,
                    valid_from=None,
                    vector=None,
                    core=False,
                    sources=(),
                )
            repo.set_core([r.id], self._p.now_us(), "inherited")
        if procedures:
            for p in src._p.repo.all_procedures():
                mine = self._beliefs.record_outcome(p.action, True, p.context, None)
                repo.set_outcomes(mine.id, p.successes, p.failures, self._p.now_us())
