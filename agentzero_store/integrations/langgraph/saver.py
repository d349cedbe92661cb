"""``AgentZeroSaver``: LangGraph's ``BaseCheckpointSaver`` on an encrypted data dir.

Each checkpoint is one item of the ``ItemStore`` (namespace ``("cp", thread_id,
checkpoint_ns)``, key = the checkpoint id, which LangGraph makes sortable by time), its
serialized checkpoint and metadata in the item's bytes; each pending write is one item
under ``("w", thread_id, checkpoint_ns, checkpoint_id)``. All of it is inside the data
dir's SQLCipher ``memory.db``: checkpoints, metadata, channel values and writes are
encrypted at rest. A ``put`` is one transaction, durable when it returns: a process
killed in the middle leaves the previous checkpoint readable. The async methods run the
same work in a worker thread, so the event loop never blocks on the disk.
"""

from __future__ import annotations

import asyncio
import builtins
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ... import InvalidArgumentError, StoreConfig
from ... import Item as StoredItem
from .configs import (
    checkpoint_id_of,
    config_of,
    frame,
    metadata_matches,
    ns_of,
    segment,
    thread_of,
    unframe,
)
from .handle import ItemsHandle

COLLECTION = "langgraph.checkpoints"
_PAGE = 100  # checkpoints read per query while a list filters on metadata


class AgentZeroSaver(ItemsHandle, BaseCheckpointSaver[str]):
    """LangGraph's checkpointer in an encrypted data dir (SQLCipher ``memory.db``).

    Args:
        data_dir: The data dir (created on first use); it may be shared with an
            ``AgentZeroStore`` and the rest of the package.
        passphrase / key / key_file: The credential; a wrong one raises
            ``WrongKeyError`` and changes nothing.
        serde: LangGraph's serializer (default: its ``JsonPlusSerializer``).
    """

    def __init__(
        self,
        data_dir: Path | str,
        *,
        passphrase: str | None = None,
        key: bytes | str | None = None,
        key_file: Path | str | None = None,
        serde: SerializerProtocol | None = None,
        collection: str = COLLECTION,
        config: StoreConfig | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._open_items(data_dir, collection, passphrase, key, key_file, config)

    # ------------------------------------------------------------------ reads
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint of ``config`` (its ``checkpoint_id``, else the thread's
        latest in ``checkpoint_ns``), with its pending writes; None if there is none."""
        thread_id, ns = thread_of(config), ns_of(config)
        cid = get_checkpoint_id(config)
        if cid:
            found = self._items.get(("cp", thread_id, ns), checkpoint_id_of(cid))
        else:
            latest = self._items.scan(("cp", thread_id, ns), exact=True, order="-key", limit=1)
            found = latest[0] if latest else None
        return self._tuple(found) if found is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and ``checkpoint_ns``, and
        ``checkpoint_id`` if it names one) or of every thread, before ``before``'s
        checkpoint, whose metadata has every key–value of ``filter``; at most ``limit``."""
        yield from self._list(config, filter, before, limit)

    def _list(
        self,
        config: RunnableConfig | None,
        flt: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> builtins.list[CheckpointTuple]:
        if limit is not None and limit <= 0:
            return []
        prefix: tuple[str, ...] = ("cp",)
        exact = False
        only: str | None = None
        if config is not None:
            prefix = ("cp", thread_of(config))
            ns = config.get("configurable", {}).get("checkpoint_ns")
            if ns is not None:
                prefix, exact = (*prefix, segment(ns, "checkpoint_ns")), True
            only = get_checkpoint_id(config)
        below = get_checkpoint_id(before) if before else None
        out: builtins.list[CheckpointTuple] = []
        offset = 0
        while True:
            page = self._items.scan(
                prefix, exact=exact, order="-key", before=below, limit=_PAGE, offset=offset
            )
            offset += len(page)
            for item in page:
                if only and item.key != only:
                    continue
                if flt and not metadata_matches(self._metadata(item), flt):
                    continue
                out.append(self._tuple(item))
                if limit is not None and len(out) >= limit:
                    return out
            if len(page) < _PAGE:
                return out

    def _tuple(self, item: StoredItem) -> CheckpointTuple:
        _, thread_id, ns = item.namespace
        parts = unframe(item.data or b"")
        checkpoint = self.serde.loads_typed((parts[0].decode(), parts[1]))
        metadata = self.serde.loads_typed((parts[2].decode(), parts[3]))
        parent = item.value.get("parent")
        writes = self._items.scan(("w", thread_id, ns, item.key), exact=True, order="key")
        ordered = sorted(
            writes, key=lambda w: (w.value["task_path"], w.value["task_id"], w.value["idx"])
        )
        pending = []
        for w in ordered:
            t, v = unframe(w.data or b"")
            pending.append(
                (w.value["task_id"], w.value["channel"], self.serde.loads_typed((t.decode(), v)))
            )
        return CheckpointTuple(
            config=config_of(thread_id, ns, item.key),
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=config_of(thread_id, ns, parent) if parent else None,
            pending_writes=pending,
        )

    def _metadata(self, item: StoredItem) -> dict[str, Any]:
        parts = unframe(item.data or b"")
        got: dict[str, Any] = self.serde.loads_typed((parts[2].decode(), parts[3]))
        return got

    # ------------------------------------------------------------------ writes
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (one transaction, durable when this returns); the config
        that names it."""
        thread_id, ns = thread_of(config), ns_of(config)
        cid = checkpoint_id_of(checkpoint["id"])
        full = get_checkpoint_metadata(config, metadata)
        ck_type, ck_bytes = self.serde.dumps_typed(checkpoint)
        md_type, md_bytes = self.serde.dumps_typed(full)
        value: dict[str, Any] = {"parent": config["configurable"].get("checkpoint_id")}
        run_id = full.get("run_id")
        if isinstance(run_id, str):
            value["run_id"] = run_id
        self._items.put(
            ("cp", thread_id, ns),
            cid,
            value,
            data=frame(ck_type.encode(), ck_bytes, md_type.encode(), md_bytes),
        )
        return config_of(thread_id, ns, cid)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store the writes of a task against a checkpoint, all in one transaction. A
        write already stored for (task, index) is kept, except on LangGraph's special
        channels (errors, interrupts...), which are replaced, as in its own savers."""
        thread_id, ns = thread_of(config), ns_of(config)
        cid = checkpoint_id_of(str(config["configurable"]["checkpoint_id"]))
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        rows = []
        for idx, (channel, value) in enumerate(writes):
            i = WRITES_IDX_MAP.get(channel, idx)
            t, b = self.serde.dumps_typed(value)
            meta = {"task_id": task_id, "task_path": task_path, "idx": i, "channel": channel}
            rows.append((f"{segment(task_id, 'task_id')}\x1e{i:+011d}", meta, frame(t.encode(), b)))
        with self._items.batch() as batch:
            for key, meta, data in rows:
                batch.put(("w", thread_id, ns, cid), key, meta, data=data, if_absent=not replace)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, in every namespace."""
        tid = segment(str(thread_id), "thread_id")
        with self._items.batch() as batch:
            batch.delete_under(("cp", tid))
            batch.delete_under(("w", tid))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints written by these runs (``metadata["run_id"]``) and
        their writes, in one transaction."""
        found = [
            item
            for rid in dict.fromkeys(str(r) for r in run_ids)
            for item in self._items.scan(("cp",), filter={"run_id": rid})
        ]
        if not found:
            return
        with self._items.batch() as batch:
            for item in found:
                batch.delete(item.namespace, item.key)
                batch.delete_under(("w", *item.namespace[1:], item.key), exact=True)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread (the whole parent chain, every
        namespace) to another, in one transaction."""
        src = segment(str(source_thread_id), "thread_id")
        dst = segment(str(target_thread_id), "thread_id")
        found = [*self._items.scan(("cp", src)), *self._items.scan(("w", src))]
        if not found:
            return
        with self._items.batch() as batch:
            for item in found:
                ns = (item.namespace[0], dst, *item.namespace[2:])
                batch.put(ns, item.key, item.value, data=item.data)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads: ``"delete"`` removes them; ``"keep_latest"`` keeps the latest
        checkpoint of each namespace (with its writes) and drops the rest, except the
        ancestors (and their writes) a ``DeltaChannel`` still needs to be rebuilt, so
        none is silently rebuilt empty (LangGraph's warning on ``prune``). Each thread
        is one transaction."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidArgumentError(
                f"unknown prune strategy {strategy!r}", hint='use "keep_latest" or "delete"'
            )
        for tid in dict.fromkeys(segment(str(t), "thread_id") for t in thread_ids):
            if strategy == "delete":
                self.delete_thread(tid)
                continue
            found = self._items.scan(("cp", tid), order="-key")
            keep: set[tuple[tuple[str, ...], str]] = set()
            by_ns: dict[tuple[str, ...], dict[str, StoredItem]] = {}
            for item in found:
                by_ns.setdefault(item.namespace, {})[item.key] = item
            for chain in by_ns.values():
                keep |= {(i.namespace, i.key) for i in self._needed(chain)}
            drop = [i for i in found if (i.namespace, i.key) not in keep]
            if drop:
                with self._items.batch() as batch:
                    for item in drop:
                        batch.delete(item.namespace, item.key)
                        batch.delete_under(("w", *item.namespace[1:], item.key), exact=True)

    def _needed(self, chain: dict[str, StoredItem]) -> builtins.list[StoredItem]:
        """The latest checkpoint of one namespace and the ancestors its delta channels
        need: back to the nearest one holding a value (a ``_DeltaSnapshot``) of each.
        The delta channels are those LangGraph counts in the metadata
        (``counters_since_delta_snapshot``); one between snapshots has no value in the
        checkpoint, and is rebuilt from the writes of the checkpoints since."""
        latest = chain[max(chain)]
        counters = self._metadata(latest).get("counters_since_delta_snapshot") or {}
        missing = set(counters)
        out: builtins.list[StoredItem] = []
        item: StoredItem | None = latest
        while item is not None:
            out.append(item)
            if missing:
                missing -= set(self._checkpoint(item).get("channel_values", {}))
            if not missing:
                break
            parent = item.value.get("parent")
            item = chain.get(parent) if isinstance(parent, str) else None
        return out

    def _checkpoint(self, item: StoredItem) -> dict[str, Any]:
        parts = unframe(item.data or b"")
        got: dict[str, Any] = self.serde.loads_typed((parts[0].decode(), parts[1]))
        return got

    # ------------------------------------------------------------------ async
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``get_tuple`` in a worker thread."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """``list`` in a worker thread."""
        for tup in await asyncio.to_thread(self._list, config, filter, before, limit):
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``put`` in a worker thread."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """``put_writes`` in a worker thread."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """``delete_thread`` in a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """``delete_for_runs`` in a worker thread."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``prune`` in a worker thread."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """``copy_thread`` in a worker thread."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The next channel version: a zero-padded counter (so versions sort as text)
        and a random fraction, as LangGraph's SQLite saver makes them."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"


__all__ = ["AgentZeroSaver"]
