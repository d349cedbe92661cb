"""Moving a memory store between backends: a data dir to a PostgreSQL database and back.

``migrate_store(source, target)`` copies every live memory of every scope, with its id,
times, metadata and vector, then the agent memory above them (``migrate_layer``), then
checks the copy (``migrate_check``, ``migrate_check_layer``). Either side is a data dir
or a PostgreSQL URL.

- **Same keys.** The target keeps the source's key header (store id, wrapped master key,
  every credential slot): a PostgreSQL target stores it in ``az_keys``
  (``PgMemoryStore.open(key_header=...)``), a data dir target as its keys.json
  (``create_keys(header=...)``). The same passphrase or key opens both. Each backend
  seals with its own subkeys of that master key, so what one sealed is opened and sealed
  again for the other on the way (PostgreSQL seals every text of the agent memory per
  table, row and scope, and blinds its lookup keys per scope). After the move the two
  are independent copies: a passphrase changed on one is not changed on the other.
- **The agent memory moves too.** Each memory row's layer state (type, speaker,
  confidence, decay and access state, entities, access log, archive and promotion), the
  facts with their history, procedures, edges, the belief history (its sequence numbers
  kept), tombstones, pins, core marks, warm summaries, sessions, namespaces and grants,
  and archived texts (into ``memory.archive.db`` or ``az_am_archive``, their keywords
  searchable as before). It goes through a backend-neutral plain form
  (``agentmem.transfer``), read out by the source's side and written by the target's as
  its own writes would; rows are matched by memory id (labels differ between stores).
- **Refused before anything is written**: a store with forgets in its undo area
  (``PendingForgetsError``: a forget's payload is shaped for its own backend's undo;
  undo them, or let their window pass and consolidate), a data dir holding skills
  (PostgreSQL has no skills) or items (ItemStore), and a target holding another store
  (another store id).
- **Idempotent and resumable.** Rows go in pages, one transaction each, with their ids:
  a page written before a crash (kill -9, a lost connection) is sent again on the next
  run and each store recognises an identical re-send of a stored memory and writes
  nothing; every write of the agent memory is an upsert, an insert that skips a row
  already there, or a set to the same values. So a re-run finishes the copy, and
  nothing is doubled or lost.
- **Checked.** After the copy, the counts of every (org, agent) scope, every memory
  (its fields and vector) and the answers to a sample of semantic and keyword queries
  must agree, and so must the agent memory: every memory's layer state, every scope's
  rows, and reads through ``AgentMemory`` on both sides (``get``, keyword ``recall``,
  ``facts``); otherwise ``MigrationMismatchError`` names what differs.

Only live memories move: deleted ones are gone and expired ones are not copied, nor are
the agent memory's rows pointing at them (facts, edges, pins, ...).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..base.config import Layout, StoreConfig
from ..base.errors import InvalidArgumentError, StoreExistsError, UnsupportedByBackendError
from ..items import schema as item_schema
from ..memory.choose import open_memory_store
from ..memory.postgres.store import PgMemoryStore, redact
from ..memory.records import MemoryEntry, to_us
from ..memory.seam import MemoryStore, supports
from ..memory.sqlite.store import SqliteMemoryStore
from ..storage.credentials import Credential, resolve_credential
from ..storage.datadir import store_credential
from ..storage.key_header import read_store_id, store_exists
from ..storage.keys import create_keys
from ..storage.lock import acquire_writer
from . import migrate_check, migrate_layer
from .backends import is_postgres_url
from .migrate_check_layer import check_layer

Store = MemoryStore
Advance = Callable[[int], None]

PAGE = 500  # memories per page: one read of the source, one write transaction


@dataclass(frozen=True)
class MigrateReport:
    """What a migration copied and checked."""

    source: str
    target: str
    store_id: str
    memories: int  # live memories in the source (and, checked, in the target)
    written: int  # of them, stored in the target by this run (the rest: earlier runs)
    scopes: list[dict[str, Any]]  # every (org, agent) with its count
    checked: dict[str, int]  # memories compared, semantic and keyword queries compared
    seconds: float
    # What moved of the agent memory, by kind (memories with layer state, facts,
    # history, archived texts, ...); empty for a store the agent memory never opened.
    agent_memory: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json``)."""
        return asdict(self)


def _refuse_items(src: Store) -> None:
    """Items (ItemStore: the framework adapters' stores and checkpoints) have no
    PostgreSQL tables: a data dir holding any is refused, never moved without them."""
    if not supports(src, "data_dir"):
        return
    n = item_schema.stored_items(src)
    if n:
        raise UnsupportedByBackendError(
            f"this data dir holds {n:,} items (ItemStore: LangGraph stores and "
            "checkpoints, LangChain vector stores): they run on a data dir only and store "
            "migrate does not copy them",
            hint="delete them (ItemStore.delete_under) or keep this data dir for them; "
            "migrate a data dir that holds none",
        )


def migrate_store(
    source: Path | str,
    target: Path | str,
    *,
    passphrase: str | None = None,
    key: bytes | str | None = None,
    key_file: Path | str | None = None,
    prompt: bool | None = None,
    config: StoreConfig | None = None,
    page: int = PAGE,
    sample: int = migrate_check.SAMPLE,
    total: Callable[[int], None] | None = None,
    advance: Advance | None = None,
) -> MigrateReport:
    """Copy the memory store at ``source`` to ``target``, with its agent memory, and
    check the copy.

    ``source`` and ``target`` are data dirs or PostgreSQL URLs. ``total(n)`` is called
    once with the number of memories to copy (the agent memory's counted twice: its
    rows, then its state), ``advance(n)`` after each page.
    """
    if str(source) == str(target):
        raise InvalidArgumentError("the source and the target of a migration are the same")
    if page < 1 or sample < 0:
        raise InvalidArgumentError("page must be at least 1 and sample at least 0")
    config = config or StoreConfig()
    started = time.monotonic()
    cred = _credential(source, passphrase, key, key_file, prompt)
    opened = {"config": config, "hnsw": False, **_as_kwargs(cred)}
    with contextlib.ExitStack() as stack:
        # hnsw=False on both sides: the copy never waits for an HNSW sidecar (a data dir
        # target gets one from `agentzero store rebuild`, or the agent memory's first
        # open, as a new store does), and the check compares exact answers.
        src = _hold(stack, source, open_memory_store(source, create=False, **opened))
        now_us = to_us(src.clock())  # what is live: the same instant for every read
        src_layer = migrate_layer.layer_of(src) if _has_layer(src) else None
        if src_layer is not None:
            stack.callback(src_layer.close)
            src_layer.prepare()  # an older layer schema upgraded, as any open of it does
            migrate_layer.refuse(src_layer)  # before the target is touched
        _refuse_items(src)
        dst = _hold(stack, target, _open_target(target, src.key_header(), cred, opened))
        dst_layer = migrate_layer.layer_of(dst)
        stack.callback(dst_layer.close)  # before the store closes (callbacks run last first)
        n = src.count()
        layer_n = 0 if src_layer is None else sum(src_layer.layer_counts(now_us).values())
        if total is not None:
            total(n + layer_n)
        before = dst.count()
        moved: dict[str, int] = {}
        # Into PostgreSQL: the HNSW index is built once after the copy (if the target
        # has none yet), not updated row by row.
        with dst.bulk_load() if supports(dst, "bulk_load") else contextlib.nullcontext():
            if src_layer is not None:
                dst_layer.prepare()
            _copy(src, dst, page, advance)
            if src_layer is not None:
                moved = migrate_layer.copy_layer(
                    src_layer, dst_layer, now_us=now_us, page=page, advance=advance
                )
        written = dst.count() - before
        checked = migrate_check.check(src, dst, sample=sample)
        if src_layer is not None:
            # Live as of now: a memory that expired while it was being moved is on
            # neither side now, as the memory rows' check sees it.
            at = to_us(src.clock())
            checked |= check_layer(src, dst, src_layer, dst_layer, now_us=at, sample=sample)
        scopes = [{"org_id": o, "agent_id": a, "count": c} for o, a, c in src.scopes()]
    return MigrateReport(
        source=_where(source),
        target=_where(target),
        store_id=src.store_id,
        memories=n,
        written=written,
        scopes=scopes,
        checked=checked,
        seconds=round(time.monotonic() - started, 3),
        agent_memory=moved,
    )


def _has_layer(store: Store) -> bool:
    """Whether the agent memory ever opened ``store`` (then it moves too)."""
    side = migrate_layer.layer_of(store)
    try:
        return side.present()
    finally:
        side.close()


def _hold(stack: contextlib.ExitStack, where: Path | str, store: Store) -> Store:
    """Close ``store`` when ``stack`` ends; a data dir's writer role is held until then,
    so no other process changes it between the copy and the check (PostgreSQL has no
    such role: stop its writers first). The store closes before the role goes."""
    try:
        if not is_postgres_url(where):
            stack.enter_context(acquire_writer(where, purpose="agentzero store migrate"))
    except BaseException:
        store.close()
        raise
    stack.callback(store.close)
    return store


def _copy(src: Store, dst: Store, page: int, advance: Advance | None) -> None:
    """Every live memory of ``src`` into ``dst``, page by page, in the order stored."""
    after = 0
    while rows := src.entries_after(after, page):
        after = rows[-1][0]
        for entries, vectors in _runs([(e, v) for _, e, v in rows]):
            dst.append_many(entries, vectors)
        if advance is not None:
            advance(len(rows))


def _runs(rows: list[tuple[MemoryEntry, Any]]) -> Iterator[tuple[list[MemoryEntry], Any]]:
    """``rows`` cut into runs that all have a vector, or all have none, in order.

    A batch with vectors takes its first entry's ``embedding_model`` as the store's
    model when it fixes the dimension, so a run must not start with a row without one.
    """
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or (rows[i][1] is None) != (rows[start][1] is None):
            run = rows[start:i]
            has = run[0][1] is not None
            yield [e for e, _ in run], ([v for _, v in run] if has else None)
            start = i


def _credential(
    source: Path | str,
    passphrase: str | None,
    key: bytes | str | None,
    key_file: Path | str | None,
    prompt: bool | None,
) -> Credential:
    """The credential that opens the source (a data dir's may be in the OS keyring); the
    target is made with the same key header, so it opens the target too."""
    if is_postgres_url(source):
        return resolve_credential(
            passphrase=passphrase, key=key, key_file=key_file, prompt=prompt, confirm=False
        )
    return store_credential(
        Layout(Path(source).expanduser()),
        passphrase=passphrase,
        key=key,
        key_file=key_file,
        prompt=prompt,
    )


def _as_kwargs(cred: Credential) -> dict[str, Any]:
    if cred.kind == "passphrase":
        return {"passphrase": cred.secret.decode("utf-8")}
    return {"key": cred.secret}


def _open_target(
    target: Path | str, header: dict[str, Any], cred: Credential, opened: dict[str, Any]
) -> Store:
    """The target store, created with ``header`` if there is none, or the one an earlier
    run of this migration created (the same store id); any other store is refused."""
    if is_postgres_url(target):
        return PgMemoryStore.open(str(target), key_header=header, create=True, **opened)
    layout = Layout(Path(target).expanduser())
    if store_exists(layout):
        if read_store_id(layout) != header["store_id"]:
            raise StoreExistsError(
                f"{layout.root} already holds another store",
                hint="migrate into a new (or empty) data dir, or into the one this store "
                "was migrated to before",
            )
    else:
        create_keys(layout, cred, kdf=opened["config"].kdf, header=header)
    return SqliteMemoryStore.open(layout.root, create=False, **opened)


def _where(side: Path | str) -> str:
    return redact(str(side)) if is_postgres_url(side) else str(side)


__all__ = ["PAGE", "MigrateReport", "migrate_store"]
