"""``AgentZeroRetriever``: a LangChain ``BaseRetriever`` over ``AgentMemory.recall``.

Each hit is a ``Document``: the memory's text as ``page_content``, its id as the
document's, and ``metadata`` with ``id``, ``score`` (recall's fused score), ``type``
(episodic, semantic, procedural), ``role``, ``conversation`` and ``created_at`` (ISO
8601). Recall's guarantees hold: only this memory's scope, nothing expired, forgotten or
erased.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, field_validator

from ...agentmem import AgentMemory, RecallHit
from ...base.errors import InvalidArgumentError
from ...base.limits import check_limit
from .._shared import lock_of

Mode = Literal["auto", "semantic", "keyword", "hybrid"]
_MODES = ("auto", "semantic", "keyword", "hybrid")


class AgentZeroRetriever(BaseRetriever):
    """The ``k`` memories of ``memory`` most relevant to a query, best first.

    ``mode``: recall's mode (``auto`` fuses every signal with an embedder and is keyword
    search without one). ``types``: only these memory types. ``k``, ``mode`` and
    ``types`` may also be given per call: ``retriever.invoke(query, k=2)``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: AgentMemory
    k: int = 4
    mode: Mode = "auto"
    types: list[str] | None = None

    # Typed errors with a hint, not pydantic's ValidationError (raised before its checks).
    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, memory: Any) -> AgentMemory:
        if not isinstance(memory, AgentMemory):
            raise InvalidArgumentError(
                f"memory must be an AgentMemory, got {type(memory).__name__}",
                hint="AgentZeroRetriever(memory=AgentMemory.open(data_dir, ...))",
            )
        return memory

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, k: Any) -> int:
        return check_limit(k, "k")

    @field_validator("mode", mode="before")
    @classmethod
    def _check_mode(cls, mode: Any) -> Any:
        if mode not in _MODES:
            raise InvalidArgumentError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
        return mode

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k, mode, types = self._options(kwargs)
        with lock_of(self.memory):
            hits = self.memory.recall(query, k, mode=None if mode == "auto" else mode, types=types)
        return [document_of(h) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # Recall reads SQLite and may embed the query: a worker thread, not the loop.
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync(), **kwargs
        )

    def _options(self, kwargs: dict[str, Any]) -> tuple[int, Mode, list[str] | None]:
        unknown = sorted(set(kwargs) - {"k", "mode", "types"})
        if unknown:
            raise InvalidArgumentError(
                f"AgentZeroRetriever takes k, mode and types per call, not {', '.join(unknown)}"
            )
        k = check_limit(kwargs.get("k", self.k), "k")
        mode = kwargs.get("mode", self.mode)
        if mode not in _MODES:
            raise InvalidArgumentError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
        return k, mode, kwargs.get("types", self.types)


def document_of(hit: RecallHit) -> Document:
    """The ``Document`` of one recall hit (see the module)."""
    m = hit.memory
    return Document(
        id=m.id,
        page_content=m.content,
        metadata={
            "id": m.id,
            "score": hit.score,
            "type": m.type,
            "role": m.role,
            "conversation": m.conversation_id,
            "created_at": m.created_at.isoformat(),
        },
    )


__all__ = ["AgentZeroRetriever", "document_of"]
