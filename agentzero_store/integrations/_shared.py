"""One agent memory per data dir in a process, shared by every adapter object on it.

The frameworks open many small objects at once: an Agents SDK session or a LangChain chat
history per conversation, from several threads and event loops. Each
``AgentMemory.open`` costs a key derivation (scrypt, ~0.1 s), its own SQLCipher connection
and its own HNSW index over the same files; so the adapters share one handle per data dir
(and credential, and embedder) instead, counted by its users and closed with the last.

An ``AgentMemory`` is one connection whose Python-side state (the hot tier, the access
buffer, the HNSW index) is not meant for two threads at once, so every call of every
adapter on a data dir runs under that data dir's lock: calls on one data dir take turns
(SQLite has one writer anyway), calls on two data dirs run in parallel. The lock is a
``threading.RLock``, not an ``asyncio.Lock``: a session is used from several threads and
event loops, and an asyncio lock belongs to one loop. Async adapter methods run the
locked call in a worker thread (``asyncio.to_thread``), so the event loop never blocks.

Another process on the same data dir is a separate writer: the store's writer lock and
SQLite's transactions keep the two apart (see ``storage.lock``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from ..agentmem import AgentMemory
from ..base.config import StoreConfig
from ..base.errors import InvalidArgumentError, StoreClosedError
from ..embed.vectors import Embedder

T = TypeVar("T")

# A per-process secret, so the registry can tell two credentials apart without keeping
# either: the passphrase itself is never stored here, only this keyed digest of it.
_PEPPER = secrets.token_bytes(32)


class HandleClosedError(StoreClosedError, RuntimeError):
    """An adapter object (session, chat history, vector store) was used after ``close``.

    Also a ``RuntimeError``: the frameworks' own SQLite classes raise that for a closed
    handle, and code written against them catches it."""

    code = "handle_closed"


def _tag(secret: str | bytes | None) -> bytes | None:
    if secret is None:
        return None
    raw = secret.encode("utf-8", "surrogatepass") if isinstance(secret, str) else bytes(secret)
    return hmac.new(_PEPPER, raw, hashlib.sha256).digest()


def _where(data_dir: Path | str) -> str:
    if isinstance(data_dir, str) and "://" in data_dir:  # a PostgreSQL URL: as given
        return data_dir
    return str(Path(data_dir).expanduser().resolve())


@dataclass(eq=False)
class _Shared:
    """One open agent memory and everyone using it."""

    key: tuple[Any, ...]
    opened: AgentMemory  # the handle ``AgentMemory.open`` made: it owns the store
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: int = 0
    scopes: dict[tuple[str, str], AgentMemory] = field(default_factory=dict)

    def scope(self, org_id: str, agent_id: str) -> AgentMemory:
        if (org_id, agent_id) == (self.opened.org_id, self.opened.agent_id):
            return self.opened
        mem = self.scopes.get((org_id, agent_id))
        if mem is None:
            mem = self.scopes[(org_id, agent_id)] = self.opened.for_scope(org_id, agent_id)
        return mem

    def close(self) -> None:
        try:
            for mem in self.scopes.values():
                mem.close()
        finally:
            self.opened.close()


_OPEN: dict[tuple[Any, ...], _Shared] = {}
_GUARD = threading.Lock()  # guards _OPEN and every _Shared.users


class Lease:
    """One adapter object's use of a shared agent memory (see the module): ``call(fn)``
    runs ``fn(memory)`` under the data dir's lock; ``release`` once, when the object is
    closed (later calls raise ``HandleClosedError``)."""

    def __init__(self, shared: _Shared, memory: AgentMemory, what: str) -> None:
        self._shared = shared
        self._memory = memory
        self._what = what
        self.closed = False

    @property
    def lock(self) -> threading.RLock:
        """The lock every call on this data dir holds."""
        return self._shared.lock

    def check_open(self) -> None:
        """Raise ``HandleClosedError`` if released."""
        if self.closed:
            raise HandleClosedError(f"this {self._what} is closed", hint=f"open a new {self._what}")

    def call(self, fn: Callable[[AgentMemory], T]) -> T:
        """``fn(memory)`` under the data dir's lock (blocking: for sync methods)."""
        with self._shared.lock:
            self.check_open()
            return fn(self._memory)

    async def read(self, fn: Callable[[AgentMemory], T]) -> T:
        """``call(fn)`` in a worker thread: the event loop runs on meanwhile."""
        self.check_open()
        return await asyncio.to_thread(self.call, fn)

    async def write(self, fn: Callable[[AgentMemory], T]) -> T:
        """``read`` for a write: once started it finishes even if the caller is
        cancelled (then the cancellation is raised after it), so a cancelled caller
        never leaves a write whose outcome nobody knows."""
        self.check_open()
        return await finish_despite_cancel(asyncio.to_thread(self.call, fn))

    def release(self) -> None:
        """Stop using the memory (idempotent); the last user closes it."""
        shared = self._shared
        with shared.lock:  # waits for a call of this lease under way in another thread
            if self.closed:
                return
            self.closed = True
        # _GUARD and a data dir's lock are never held together, anywhere in this module:
        # no two threads can wait on each other.
        with _GUARD:
            shared.users -= 1
            last = shared.users == 0
            if last:
                del _OPEN[shared.key]  # a later lease() opens the data dir afresh
        if last:
            with shared.lock:
                shared.close()


class Handle:
    """What every adapter object (session, chat history, vector store) does with its
    lease: ``close`` (idempotent), ``with`` blocks, and release when garbage-collected
    unclosed. Later calls raise ``HandleClosedError`` (a ``RuntimeError``, like the
    frameworks' SQLite classes); other objects on the data dir go on."""

    _lease: Lease

    def _hold(self, held: Lease) -> None:
        self._lease = held
        # Released when closed, or when the object is garbage-collected unclosed.
        self._finalizer = weakref.finalize(self, held.release)

    def close(self) -> None:
        """Stop using the data dir (the last user in this process closes its memory)."""
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


async def finish_despite_cancel(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to its end even if the awaiting task is cancelled meanwhile
    (as many times as it is); its error, else the cancellation, is raised after."""
    task = asyncio.ensure_future(awaitable)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller sees
        raise cancelled
    return task.result()


def lease(
    data_dir: Path | str,
    *,
    passphrase: str | None = None,
    key: bytes | str | None = None,
    key_file: Path | str | None = None,
    org_id: str = "default",
    agent_id: str = "default",
    embedder: Embedder | None = None,
    config: StoreConfig | None = None,
    what: str = "handle",
) -> Lease:
    """A lease on the agent memory of (``org_id``, ``agent_id``) in ``data_dir``, opening
    it (``AgentMemory.open``, which checks the credential) unless this process already
    has it open with the same credential and embedder. ``config`` applies where this call
    opens it (the first open in a process decides). ``what`` names the adapter object in
    errors."""
    if not isinstance(data_dir, str | os.PathLike) or not str(data_dir).strip():
        raise InvalidArgumentError(
            f"data_dir must be a directory path, got {data_dir!r}",
            hint="data_dir='~/.agent-data' (created on first use)",
        )
    where = _where(data_dir)
    ident = (
        where,
        _tag(passphrase),
        _tag(key),
        None if key_file is None else _where(key_file),
        None if embedder is None else id(embedder),
    )
    with _GUARD:
        shared = _OPEN.get(ident)
        if shared is None:
            mem = AgentMemory.open(
                data_dir,
                passphrase=passphrase,
                key=key,
                key_file=key_file,
                org_id=org_id,
                agent_id=agent_id,
                embedder=embedder,
                config=config,
                prompt=False,
            )
            shared = _OPEN[ident] = _Shared(ident, mem)
        shared.users += 1
    try:
        with shared.lock:
            memory = shared.scope(org_id, agent_id)
    except BaseException:
        Lease(shared, shared.opened, what).release()
        raise
    return Lease(shared, memory, what)


_CALLER_LOCKS: weakref.WeakKeyDictionary[AgentMemory, threading.RLock] = weakref.WeakKeyDictionary()


def lock_of(memory: AgentMemory) -> threading.RLock:
    """The lock to hold around calls on a caller's ``memory`` (a retriever's): its data
    dir's lock if an adapter shares it, else one lock per memory object, so the
    adapters' own calls on it (from worker threads) take turns."""
    with _GUARD:
        for shared in _OPEN.values():
            if memory is shared.opened or any(memory is m for m in shared.scopes.values()):
                return shared.lock
        lock = _CALLER_LOCKS.get(memory)
        if lock is None:
            lock = _CALLER_LOCKS[memory] = threading.RLock()
        return lock


def open_count() -> int:
    """How many agent memories the adapters hold open in this process (for tests)."""
    with _GUARD:
        return len(_OPEN)


__all__ = [
    "Handle",
    "HandleClosedError",
    "Lease",
    "finish_despite_cancel",
    "lease",
    "lock_of",
    "open_count",
]
