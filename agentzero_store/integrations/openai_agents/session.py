"""``AgentZeroSession``: an OpenAI Agents SDK session on the encrypted agent memory.

A drop-in for the SDK's ``SQLiteSession``: the same four calls with the same meaning
(``get_items(limit)`` is the newest ``limit`` items, oldest first; ``limit=0`` none; a
negative limit all, as SQLite's ``LIMIT`` reads it; ``session_settings`` as that class
takes it). Each item is one episodic turn of the agent memory (``items``) in conversation
``session_id``, so ``AgentMemory.recall`` finds what was said, and everything is
encrypted in ``memory.db``: a sealed, durable commit per ``add_items`` (all items or
none).

``pop_item`` and ``clear_session`` take the items out of the history, of recall and of
every index at once: a soft forget by default (``AgentMemory.undo`` brings it back within
the undo window, consolidation purges it after), with ``erase=True`` an irreversible erase.

Sessions share one agent memory per data dir in a process (``_shared``): open as many as
you like, from any thread or event loop. A session object keeps the newest turns it read
or wrote (up to ``TAIL_TURNS``) decoded between calls and serves ``get_items`` from them
while memory.db's change feed has not moved: any write of a memory row, by this process
or another (an add, a forget, an erase, an undo), moves it, and the next call reads the
store again. Every async method runs its store call in a worker thread, so the event
loop never waits on SQLite, fsync or the key derivation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.items import TResponseInputItem
from agents.memory import SessionABC, SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from ...agentmem import AgentMemory, Memory
from ...agentmem.memory import DEFAULT_CONVERSATION, FACT_CONVERSATION
from ...base.config import StoreConfig
from ...base.errors import InvalidArgumentError, NotFoundError
from ...base.limits import MAX_RESULTS, check_name
from ...embed.vectors import Embedder
from ...memory.sqlite.store import SqliteMemoryStore
from .._shared import Handle, lease
from .items import Kept, StoredTurn, from_memory, to_turn

TAIL_TURNS = 5_000  # most turns a session object keeps decoded between calls


@dataclass
class _Tail:
    """The newest turns of a session, oldest first, as memory.db held them at change
    feed position ``seq``; all of its turns if ``complete``."""

    seq: int
    turns: list[StoredTurn]
    complete: bool


def _seq(mem: AgentMemory) -> int | None:
    """The change feed's position: it moves with every write of a memory row (added,
    forgotten, erased, brought back), by this process or another. None on PostgreSQL,
    where nothing is kept between calls."""
    store = mem.store
    return store.source_seq() if isinstance(store, SqliteMemoryStore) else None


class AgentZeroSession(Handle, SessionABC):
    """The items of one Agents SDK session, kept as turns of an encrypted agent memory."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        *,
        data_dir: Path | str,
        passphrase: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        org_id: str = "default",
        agent_id: str = "default",
        embedder: Embedder | None = None,
        erase: bool = False,
        config: StoreConfig | None = None,
    ) -> None:
        """Open session ``session_id`` of the agent memory (``org_id``, ``agent_id``) in
        ``data_dir`` (created if missing). ``embedder``: embed each item's text, for
        semantic recall (else recall is by keyword). ``erase``: ``pop_item`` and
        ``clear_session`` erase irreversibly instead of a soft, undoable forget."""
        check_name("session_id", session_id)
        if session_id in (FACT_CONVERSATION, DEFAULT_CONVERSATION):
            raise InvalidArgumentError(
                f"session_id {session_id!r} is where AgentMemory keeps its facts and notes:"
                " clearing the session would forget them",
                hint="choose another session id",
            )
        if not isinstance(erase, bool):
            raise InvalidArgumentError("erase must be True or False")
        self.session_id = session_id
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self.erase = erase
        self._tail: _Tail | None = None  # the newest turns as last read (see _newest)
        self._hold(
            lease(
                data_dir,
                passphrase=passphrase,
                org_id=org_id,
                agent_id=agent_id,
                embedder=embedder,
                config=config,
                what="AgentZeroSession",
            )
        )

    # ------------------------------------------------------------------ SessionABC
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first: all of them, or with ``limit`` (else
        ``session_settings.limit``) the newest ``limit``."""
        n = resolve_session_limit(limit, self.session_settings)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
            raise InvalidArgumentError(f"limit must be an integer or None, got {n!r}")
        if n == 0:
            self._lease.check_open()
            return []
        items = await self._lease.read(lambda mem: self._newest(mem, n))
        return items  # type: ignore[return-value]  # JSON objects of the SDK's shapes

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in one durable transaction: all of them or, on any error
        (an item that is not a JSON object, say), none."""
        self._lease.check_open()
        if isinstance(items, str | bytes | dict) or not isinstance(items, Sequence):
            raise InvalidArgumentError(
                f"add_items takes a list of items, got {type(items).__name__}",
                hint="session.add_items([{'role': 'user', 'content': '...'}])",
            )
        if not items:
            return
        batch = list(items)
        await self._lease.write(lambda mem: self._add(mem, batch))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (None if the session is empty)."""
        item = await self._lease.write(self._pop)
        return item  # type: ignore[return-value]  # a JSON object of the SDK's shapes

    async def clear_session(self) -> None:
        """Remove every item of the session."""
        await self._lease.write(self._clear)

    # ------------------------------------------------------------------ lifecycle
    def __repr__(self) -> str:
        return f"AgentZeroSession({self.session_id!r})"

    # ------------------------------------------------------------------ the store calls
    def _page(self, mem: AgentMemory, limit: int, offset: int) -> list[Memory]:
        return mem.memories(
            conversation_id=self.session_id,
            types="episodic",
            archived="include",
            limit=limit,
            offset=offset,
        )

    def _newest(self, mem: AgentMemory, n: int | None) -> list[dict[str, Any]]:
        """The newest ``n`` items (all with None or a negative n), oldest first: from
        the tail this object read before if nothing in memory.db changed since (its
        change feed says), else read afresh."""
        want = None if n is None or n < 0 else n
        seq = _seq(mem)  # read first: a write after it can only make the tail look stale
        tail = self._tail
        if (
            tail is None
            or seq is None
            or tail.seq != seq
            or not (tail.complete or (want is not None and want <= len(tail.turns)))
        ):
            tail = self._read(mem, want, seq)
        chosen = tail.turns if want is None else tail.turns[max(0, len(tail.turns) - want) :]
        return [from_memory(t) for t in chosen]

    def _read(self, mem: AgentMemory, want: int | None, seq: int | None) -> _Tail:
        got: list[StoredTurn] = []
        while want is None or len(got) < want:
            size = MAX_RESULTS if want is None else min(MAX_RESULTS, want - len(got))
            page = self._page(mem, size, len(got))
            got += page
            if len(page) < size:
                break
        tail = _Tail(-1 if seq is None else seq, got[::-1], want is None or len(got) < want)
        if seq is not None and len(got) <= TAIL_TURNS:
            self._tail = tail
        return tail

    def _add(self, mem: AgentMemory, items: list[Any]) -> None:
        turns = [to_turn(i) for i in items]
        before = _seq(mem)
        ids = mem.add_turns(self.session_id, turns)
        after = _seq(mem)
        tail, self._tail = self._tail, None
        # The feed grew by exactly our rows: nobody else wrote meanwhile, so the tail
        # plus what we wrote is the session's tail now.
        if (
            tail is not None
            and before is not None
            and after is not None
            and tail.seq == before
            and after - before == len(turns)
        ):
            tail.turns += [
                Kept(i, t.role, t.content, t.metadata) for i, t in zip(ids, turns, strict=True)
            ]
            tail.seq = after
            if len(tail.turns) > TAIL_TURNS:
                del tail.turns[: len(tail.turns) - TAIL_TURNS]
                tail.complete = False
            self._tail = tail

    def _pop(self, mem: AgentMemory) -> dict[str, Any] | None:
        self._tail = None
        while True:
            newest = self._page(mem, 1, 0)
            if not newest:
                return None
            item = from_memory(newest[0])  # decoded first: a bad turn is reported, kept
            try:
                if self.erase:
                    mem.erase(id=newest[0].id)
                else:
                    mem.forget(id=newest[0].id)
            except NotFoundError:  # another process removed it meanwhile: the next one
                continue
            return item

    def _clear(self, mem: AgentMemory) -> None:
        self._tail = None
        if self.erase:
            mem.erase(conversation_id=self.session_id)
        else:
            mem.forget(conversation_id=self.session_id)


__all__ = ["AgentZeroSession"]
