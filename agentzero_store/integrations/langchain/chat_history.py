"""``AgentZeroChatMessageHistory``: a LangChain ``BaseChatMessageHistory`` over
``ChatHistory``, so every message is an encrypted, recallable turn of the agent memory.

A drop-in for LangChain's SQL and file histories: ``messages``, ``add_messages``,
``clear`` and their async forms. Messages round-trip unchanged (``messages``: type,
content, ``additional_kwargs``, tool calls ...). ``clear`` is ``ChatHistory.clear``: a
soft forget (undoable within the window) unless opened with ``erase=True``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from ...agentmem import AgentMemory, ChatHistory
from ...base.config import StoreConfig
from ...base.errors import InvalidArgumentError
from ...embed.vectors import Embedder
from .._shared import Handle, lease
from .messages import from_stored, to_stored


class AgentZeroChatMessageHistory(Handle, BaseChatMessageHistory):
    """The messages of conversation ``session_id`` of an encrypted agent memory."""

    def __init__(
        self,
        session_id: str,
        *,
        data_dir: Path | str,
        passphrase: str | None = None,
        org_id: str = "default",
        agent_id: str = "default",
        embedder: Embedder | None = None,
        erase: bool = False,
        config: StoreConfig | None = None,
    ) -> None:
        """Open the history of ``session_id`` in the agent memory (``org_id``,
        ``agent_id``) of ``data_dir`` (created if missing); one memory per data dir is
        shared by every history and session of this process. ``embedder``: embed each
        message for semantic recall. ``erase``: ``clear`` erases irreversibly."""
        self._hold(
            lease(
                data_dir,
                passphrase=passphrase,
                org_id=org_id,
                agent_id=agent_id,
                embedder=embedder,
                config=config,
                what="AgentZeroChatMessageHistory",
            )
        )
        try:
            self._chat = self._lease.call(lambda mem: ChatHistory(mem, session_id, erase=erase))
        except BaseException:
            self.close()
            raise
        self.session_id = session_id

    # ------------------------------------------------------------------ reads
    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message, oldest first."""
        return self._lease.call(self._read)

    async def aget_messages(self) -> list[BaseMessage]:
        """``messages``, in a worker thread."""
        return await self._lease.read(self._read)

    def _read(self, _mem: AgentMemory) -> list[BaseMessage]:
        return [from_stored(m) for m in self._chat.history()]

    # ------------------------------------------------------------------ writes
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages, each durable when stored. All are checked first, so a bad
        one (not a message, not JSON) stores none of them."""
        stored = self._encode(messages)
        self._lease.call(lambda _mem: self._write(stored))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """``add_messages``, in a worker thread."""
        stored = self._encode(messages)
        await self._lease.write(lambda _mem: self._write(stored))

    def clear(self) -> None:
        """Remove every message (a soft forget, or an erase with ``erase=True``)."""
        self._lease.call(lambda _mem: self._chat.clear())

    async def aclear(self) -> None:
        """``clear``, in a worker thread."""
        await self._lease.write(lambda _mem: self._chat.clear())

    def _encode(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        self._lease.check_open()
        if isinstance(messages, BaseMessage | str) or not isinstance(messages, Sequence):
            raise InvalidArgumentError(
                f"add_messages takes a list of messages, got {type(messages).__name__}",
                hint="history.add_messages([HumanMessage('...')])",
            )
        return [to_stored(m) for m in messages]

    def _write(self, stored: list[dict[str, Any]]) -> None:
        for message in stored:
            self._chat.add_message(message)

    # ------------------------------------------------------------------ lifecycle
    def __repr__(self) -> str:
        return f"AgentZeroChatMessageHistory({self.session_id!r})"


__all__ = ["AgentZeroChatMessageHistory"]
