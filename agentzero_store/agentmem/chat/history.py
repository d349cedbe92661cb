"""``ChatHistory``: one conversation's messages over an ``AgentMemory`` (TnsAI's
MemoryStore contract, for frameworks that want a chat history and nothing more).

Every message is an episodic turn written through ``AgentMemory.add_turn``: encrypted in
``memory.db``, embedded when the store has an embedder, recallable by the agent's
``recall``, and scoped to the memory's (org, agent) like everything else. The history
keeps no state of its own: two ``ChatHistory`` objects on one conversation (or one in
another process) see the same messages.

Removal (``clear``, ``prune``, the limits in ``chat.limits``) is a soft forget by
default: the messages leave the history, recall and every index at once, and
``AgentMemory.undo(token)`` brings them back within the undo window (consolidation
purges them after it). With ``erase=True`` it is ``AgentMemory.erase``: irreversible, the
text leaves memory.db's pages, its WAL, the archive and the HNSW checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Protocol, runtime_checkable

from ...base.errors import InvalidArgumentError
from ...base.limits import check_limit, check_text
from ...memory.records import from_us
from ..memory import DEFAULT_CONVERSATION, FACT_CONVERSATION, AgentMemory
from ..namespaces import one_call
from ..records import Memory
from ..rows import Filter
from ..tokens import count_tokens
from .messages import (
    ChatMessage,
    Removal,
    Strategy,
    choose_by_tokens,
    from_memory,
    message_of,
    parse_message,
)

DEFAULT_CHAT = "chat"  # the conversation id of a ChatHistory opened without one


@runtime_checkable
class ChatMemory(Protocol):
    """What ``ChatHistory`` and every decorator of it (``chat.limits``) offer."""

    @property
    def conversation_id(self) -> str:
        """The conversation this history is."""
        ...

    @property
    def memory(self) -> AgentMemory:
        """The agent memory the messages are stored in."""
        ...

    def init(self, agent_id: str, *, fresh: bool = False) -> ChatMemory:
        """Bind to ``agent_id`` (see ``ChatHistory.init``)."""
        ...

    def add_message(
        self, message: str | Mapping[str, Any], content: str | None = None
    ) -> ChatMessage:
        """Add one message: ``add_message(role, content)`` or ``add_message(dict)``."""
        ...

    def history(self) -> list[ChatMessage]:
        """Every message, oldest first."""
        ...

    def recent(self, n: int) -> list[ChatMessage]:
        """The newest ``n`` messages, oldest first."""
        ...

    def clear(self) -> Removal:
        """Remove the whole conversation."""
        ...

    def prune(self, max_tokens: int, *, strategy: Strategy = "keep_system") -> Removal:
        """Remove the oldest messages until the rest fit in ``max_tokens``."""
        ...

    def search(self, query: str, limit: int = 5) -> list[ChatMessage]:
        """The messages most relevant to ``query``, best first."""
        ...

    def remove(self, ids: Sequence[str]) -> Removal:
        """Remove these messages of the conversation."""
        ...

    def add_summary(self, text: str, replaces: Sequence[ChatMessage]) -> ChatMessage:
        """Store ``text`` as a summary in place of ``replaces``, then remove them."""
        ...

    def token_counts(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Tokens of each message's content (``tokens.count_tokens``)."""
        ...

    def close(self) -> None:
        """Close the memory if this history opened it."""
        ...


_call = one_call(attrgetter("_mem.gate"))  # one grant check per public call


class ChatHistory:
    """The messages of one conversation of one agent memory (see the module)."""

    def __init__(
        self,
        mem: AgentMemory,
        conversation_id: str = DEFAULT_CHAT,
        *,
        erase: bool = False,
        _own_memory: bool = False,
    ) -> None:
        if not isinstance(mem, AgentMemory):
            raise InvalidArgumentError(
                f"ChatHistory needs an AgentMemory, got {type(mem).__name__}",
                hint="AgentMemory.open(data_dir, ...), or ChatHistory.open(data_dir, ...)",
            )
        if not isinstance(conversation_id, str) or not conversation_id.strip():
            raise InvalidArgumentError("conversation_id must be a non-empty string")
        check_text("conversation_id", conversation_id)
        if conversation_id in (FACT_CONVERSATION, DEFAULT_CONVERSATION):
            raise InvalidArgumentError(
                f"conversation_id {conversation_id!r} is where AgentMemory keeps its facts,"
                " procedures and notes: clearing the chat would forget them",
                hint="choose another conversation id",
            )
        if not isinstance(erase, bool):
            raise InvalidArgumentError("erase must be True or False")
        self._mem = mem
        self._cid = conversation_id
        self._erase = erase
        self._own = _own_memory

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        conversation_id: str = DEFAULT_CHAT,
        erase: bool = False,
        **open_kwargs: Any,
    ) -> ChatHistory:
        """Open ``AgentMemory.open(data_dir, **open_kwargs)`` (credentials, ``org_id``,
        ``agent_id``, ``embedder`` ...) and a history of ``conversation_id`` on it;
        ``close`` closes that memory."""
        mem = AgentMemory.open(data_dir, **open_kwargs)
        try:
            return cls(mem, conversation_id, erase=erase, _own_memory=True)
        except BaseException:
            mem.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    @property
    def conversation_id(self) -> str:
        """The conversation this history is."""
        return self._cid

    @property
    def memory(self) -> AgentMemory:
        """The agent memory the messages are stored in."""
        return self._mem

    @property
    def erases(self) -> bool:
        """True if removals erase (irreversibly) instead of soft-forgetting."""
        return self._erase

    def close(self) -> None:
        """Close the memory if ``open`` opened it (a history on a caller's memory leaves
        it open)."""
        if self._own:
            self._mem.close()

    def __enter__(self) -> ChatHistory:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @_call
    def init(self, agent_id: str, *, fresh: bool = False) -> ChatHistory:
        """TnsAI's ``init(agentId)``: bind the history to an agent.

        A memory is one (org, agent) scope, chosen when it is opened, and a history never
        switches scope behind its caller's back: ``agent_id`` must be that agent's (else
        an ``InvalidArgumentError``). The stored messages stay, since persisting them
        across restarts is the point; ``fresh=True`` clears them first (a soft forget,
        or an erase with ``erase=True``).

        Args:
            agent_id: the memory's own agent id.
            fresh: clear the stored messages first.

        Returns:
            This history.

        Raises:
            InvalidArgumentError: ``agent_id`` is another agent's.
            AccessDeniedError: the memory's namespace is no longer granted.
        """
        check_text("agent_id", agent_id)
        self._mem.gate.check()  # binding is using the memory: refused once revoked
        if agent_id != self._mem.agent_id:
            raise InvalidArgumentError(
                f"this history is agent {self._mem.agent_id!r}'s; init({agent_id!r}) names "
                "another agent",
                hint="open AgentMemory (or ChatHistory.open) with agent_id= that agent: one "
                "memory is one agent's scope",
            )
        if not isinstance(fresh, bool):
            raise InvalidArgumentError("fresh must be True or False")
        if fresh:
            self.clear()
        return self

    # ------------------------------------------------------------------ writes
    @_call
    def add_message(
        self, message: str | Mapping[str, Any], content: str | None = None
    ) -> ChatMessage:
        """Add one message: ``add_message("user", "hi")`` or ``add_message({"role":
        "user", "content": "hi", ...})``. A dict is copied (its other fields kept as
        ``extra``, JSON values only); the role is one of ``ROLES``, the content a
        non-blank string. Durable when it returns.

        Args:
            message: a role, or a whole message as a dict.
            content: the text, when ``message`` is a role.

        Returns:
            The message as stored (``history`` reads it back equal).

        Raises:
            InvalidArgumentError: an unknown role, blank content, a non-JSON field.
        """
        role, text, extra = parse_message(message, content)
        return self._add(role, text, {"chat": {"extra": extra}} if extra else {})

    @_call
    def add_summary(self, text: str, replaces: Sequence[ChatMessage]) -> ChatMessage:
        """Store ``text`` as a system message summarizing ``replaces`` (messages of this
        history), dated like the newest of them so it takes their place in the order,
        then remove them. The summary is written first: a crash between the two steps
        leaves both, never neither.

        Args:
            text: the summary (non-blank).
            replaces: messages of this history (at least one).

        Returns:
            The summary message as stored.

        Raises:
            InvalidArgumentError: a blank text, no message, or one not of this history.
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError("a summary must be a non-blank string")
        check_text("summary", text)
        current = {m.id: m for m in self.history()}
        chosen = [current[i] for i in self._ids_of(replaces, current)]
        if not chosen:
            raise InvalidArgumentError("a summary must replace at least one message")
        n = sum(m.summarized if m.summary else 1 for m in chosen)
        msg = self._add(
            "system",
            text,
            {"chat": {"summary": n}},
            created_at=max(m.created_at for m in chosen),
        )
        self._remove([m.id for m in chosen])
        return msg

    def _add(
        self,
        role: str,
        text: str,
        metadata: dict[str, Any],
        created_at: datetime | None = None,
    ) -> ChatMessage:
        # The time as stored (µs), so the returned message equals what history() reads.
        at = created_at or from_us(self._mem.now_us())
        mid = self._mem.add_turn(self._cid, role, text, created_at=at, metadata=metadata)
        return message_of(mid, role, text, at, metadata)

    # ------------------------------------------------------------------ reads
    @_call
    def history(self) -> list[ChatMessage]:
        """Every message of the conversation, oldest first (by time, then by the order
        they were written), archived ones with their text read back."""
        repo = self._mem.repo
        chosen = repo.select("conversation_id", self._cid)
        f = Filter(
            now_us=self._mem.now_us(),
            types=("episodic",),
            include_archived=True,
            any_validity=True,
        )
        rows = sorted(
            repo.rows([label for _, label in chosen], f).values(),
            key=lambda r: (r.memory.created_at, r.label),
        )
        out = []
        for r in rows:
            m: Memory | None = r.memory
            if r.memory.archived:  # consolidation archived it: its text is in the archive
                m = self._mem.get(r.memory.id)
            if m is not None:
                out.append(from_memory(m))
        return out

    @_call
    def recent(self, n: int) -> list[ChatMessage]:
        """The newest ``n`` messages (``n`` >= 1), oldest first."""
        n = check_limit(n, "n")
        return self.history()[-n:]

    @_call
    def search(self, query: str, limit: int = 5) -> list[ChatMessage]:
        """The messages of this conversation most relevant to ``query``, best first:
        hybrid (semantic and keyword) with an embedder, keyword without one. Archived
        messages are not searched (their words left the index with their text).

        Args:
            query: the text to search for.
            limit: at most this many messages.
        """
        limit = check_limit(limit)
        store = self._mem.store
        mode: Literal["hybrid", "keyword"] = "hybrid" if store.embedder else "keyword"
        # The memory's scope (a namespace's or session's, not the acting agent's), read
        # through its gate: the grant is checked before the indexes are searched.
        scope = self._mem.gate.scope()
        hits = store.recall(
            check_text("query", query),
            limit,
            mode=mode,
            org_id=scope.org_id,
            agent_id=scope.agent_id,
            conversation_id=self._cid,
        )
        out = []
        for h in hits:
            m = self._mem.get(h.id)  # re-checked against the layer: type, scope, liveness
            if m is not None and m.type == "episodic" and m.conversation_id == self._cid:
                out.append(from_memory(m))
        return out

    def token_counts(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Tokens of each message's content: the embedder's tokenizer if it has one,
        else the 4/3-per-word estimate (``tokens.count_tokens``)."""
        return count_tokens([m.content for m in messages], self._mem.store.embedder)

    # ------------------------------------------------------------------ removal
    @_call
    def clear(self) -> Removal:
        """Remove the whole conversation (every memory with its id, notes given this
        conversation id included) in one transaction.

        Returns:
            The ``Removal``: the ids, and the undo tokens (a soft forget) or whether an
            erase is still ``pending``.
        """
        if self._erase:
            report = self._mem.erase(conversation_id=self._cid)
            return Removal(report.ids, (), True, report.pending)
        receipt = self._mem.forget(conversation_id=self._cid)
        return Removal(receipt.ids, (receipt.token,) if receipt.count else ())

    @_call
    def prune(self, max_tokens: int, *, strategy: Strategy = "keep_system") -> Removal:
        """Remove the oldest messages until the rest fit in ``max_tokens`` (counted by
        ``token_counts``). ``keep_system``: every other message goes before a system
        prompt does; ``oldest_first``: strictly by age. The newest message always
        stays, so the rest may exceed the budget only by that one message.

        Returns:
            The ``Removal`` of the messages dropped (none if they fit).
        """
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise InvalidArgumentError(
                f"max_tokens must be a whole number >= 0, got {max_tokens!r}"
            )
        messages = self.history()
        drop = choose_by_tokens(messages, self.token_counts(messages), max_tokens, strategy)
        return self._remove([m.id for m in drop])

    @_call
    def remove(self, ids: Sequence[str]) -> Removal:
        """Remove these messages (ids of this conversation's messages, else an
        ``InvalidArgumentError`` and nothing removed).

        Returns:
            The ``Removal``, as ``clear``'s.
        """
        if isinstance(ids, str):
            ids = [ids]
        current = {m.id: m for m in self.history()}
        return self._remove(self._ids_of(ids, current))

    def _ids_of(
        self, items: Sequence[str] | Sequence[ChatMessage], current: Mapping[str, ChatMessage]
    ) -> list[str]:
        ids = [i.id if isinstance(i, ChatMessage) else i for i in items]
        for i in ids:
            check_text("id", i)
        unknown = [i for i in ids if i not in current]
        if unknown:
            raise InvalidArgumentError(
                f"{len(unknown)} of the ids are not messages of conversation {self._cid!r} "
                f"in this scope (e.g. {unknown[0]!r})",
                hint="pass ids from this history's history()",
            )
        return list(dict.fromkeys(ids))

    def _remove(self, ids: Sequence[str]) -> Removal:
        # One forget (or erase) per message: AgentMemory selects by one id at a time.
        tokens: list[str] = []
        pending = False
        for mid in ids:
            if self._erase:
                pending = self._mem.erase(id=mid).pending or pending
            else:
                tokens.append(self._mem.forget(id=mid).token)
        return Removal(tuple(ids), tuple(tokens), self._erase, pending)


__all__ = ["DEFAULT_CHAT", "ChatHistory", "ChatMemory"]
