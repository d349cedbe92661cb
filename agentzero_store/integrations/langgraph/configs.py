"""The checkpointer's plumbing: LangGraph configs in and out, and the framing of
serialized parts in an item's bytes."""

from __future__ import annotations

import struct
from typing import Any

from langchain_core.runnables import RunnableConfig

from ... import InvalidArgumentError


def segment(value: Any, what: str) -> str:
    """``value`` if it is a string (a namespace segment of the item store)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(
            f"{what} must be a string, got {type(value).__name__}",
            hint='configs look like {"configurable": {"thread_id": "1"}}',
        )
    return value


def thread_of(config: RunnableConfig) -> str:
    """The config's ``thread_id`` as a string; a typed error if it has none."""
    conf = config.get("configurable") if isinstance(config, dict) else None
    if not conf or conf.get("thread_id") is None:
        raise InvalidArgumentError(
            "the config names no thread_id",
            hint='pass {"configurable": {"thread_id": "..."}}',
        )
    return segment(str(conf["thread_id"]), "thread_id")


def ns_of(config: RunnableConfig) -> str:
    """The config's ``checkpoint_ns`` (default ``""``)."""
    return segment(config["configurable"].get("checkpoint_ns", "") or "", "checkpoint_ns")


def checkpoint_id_of(cid: Any) -> str:
    """A checkpoint id, checked to be a string."""
    return segment(cid, "checkpoint_id")


def config_of(thread_id: str, ns: str, cid: str) -> RunnableConfig:
    """The config that names one checkpoint."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}


def metadata_matches(metadata: dict[str, Any], flt: dict[str, Any]) -> bool:
    """Whether ``metadata`` has every key-value of ``flt`` (as LangGraph's savers)."""
    return all(metadata.get(k) == v for k, v in flt.items())


def frame(*parts: bytes) -> bytes:
    """Byte strings, each behind its length (4 bytes, big-endian)."""
    return b"".join(struct.pack(">I", len(p)) + p for p in parts)


def unframe(data: bytes) -> list[bytes]:
    """The inverse of ``_frame``."""
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from(">I", data, i)
        out.append(data[i + 4 : i + 4 + n])
        i += 4 + n
    return out


__all__ = [
    "checkpoint_id_of",
    "ns_of",
    "config_of",
    "frame",
    "metadata_matches",
    "segment",
    "thread_of",
    "unframe",
]
