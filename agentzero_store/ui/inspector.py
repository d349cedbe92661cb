"""``Inspector``: what the pages show and do, over one pinned ``AgentMemory``.

Every call on the memory runs under one lock (the routes run in a thread pool, the jobs
in their own threads); every write also holds the data dir's writer role for that call
only, as the MCP server does, so CLI writers run beside a long-lived inspector. The
store's credential stays in this process: documents and verify open with it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from ..agentmem import AgentMemory
from ..agentmem.memory import Archived
from ..agentmem.records import Edge, Fact, ForgetReceipt, HistoryEntry, Memory, RecallHit
from ..base.config import Layout
from ..base.errors import AccessDeniedError, InvalidArgumentError, NotFoundError
from ..base.modes import MODES, Mode, search_mode
from ..memory.seam import supports
from ..storage.backup_log import last_backup
from ..storage.credentials import Credential
from ..storage.lock import writer_lock
from . import drawing
from .jobs import Jobs, Tell
from .records import FactChain, MemoryView, Settings, age

PAGE = 25  # memories per timeline page
ENTITY_NODES = 60  # memories an entity's graph draws at most (the newest)
Selector = Literal["id", "conversation_id", "about"]


def credential_kwargs(cred: Credential) -> dict[str, Any]:
    """The credential as the stores' ``open`` takes it."""
    if cred.kind == "passphrase":
        return {"passphrase": cred.secret.decode("utf-8")}
    return {"key": cred.secret}


class Inspector:
    """The pages' API over one agent memory (see the module docstring)."""

    def __init__(self, settings: Settings, memory: AgentMemory) -> None:
        self.settings = settings
        self.mem = memory  # the agent memory the pages show now (``switch``)
        self._opened = memory  # the one ``open`` made: it owns the store
        self.jobs = Jobs()
        # This session's forgets, for their Undo, with the scope each was made in.
        self._receipts: list[tuple[tuple[str, str], ForgetReceipt]] = []
        self._lock = threading.RLock()

    @property
    def scope(self) -> tuple[str, str]:
        """The (org, agent) the pages show now."""
        return self.mem.org_id, self.mem.agent_id

    @property
    def receipts(self) -> list[ForgetReceipt]:
        """This session's undoable forgets in the scope shown now, newest first."""
        with self._lock:
            return [r for scope, r in self._receipts if scope == self.scope]

    def scopes(self) -> list[tuple[str, str, int]]:
        """The agents' memories a page may switch to: every (org, agent) with memories
        (namespaces and sessions are reached through their agents, never listed)."""
        with self._reading() as mem:
            found = mem.store.scopes()
        return [(o, a, n) for o, a, n in found if a.isprintable() and o.isprintable()]

    def switch(self, org_id: str, agent_id: str) -> None:
        """Show another agent's memory (``--org``/``--agent`` pin it: refused then)."""
        if self.settings.pinned:
            raise AccessDeniedError(
                f"this inspector is pinned to {self.settings.org_id} / {self.settings.agent_id}",
                hint="start `agentzero ui` without --org/--agent to switch between agents",
            )
        with self._lock:
            if (org_id, agent_id) == self.scope:
                return
            opened = self._opened
            if (org_id, agent_id) == (opened.org_id, opened.agent_id):
                new = opened
            else:
                new = opened.for_scope(org_id, agent_id)  # checks the names
            if self.mem is not opened:
                self.mem.close()
            self.mem = new

    @classmethod
    def open(cls, settings: Settings) -> Inspector:
        """Open the pinned agent memory (a wrong credential or a missing store raises)."""
        mem = AgentMemory.open(
            settings.data_dir,
            org_id=settings.org_id,
            agent_id=settings.agent_id,
            embedder=settings.embedder,
            create=False,
            config=settings.config,
            prompt=False,
            **credential_kwargs(settings.credential),
        )
        return cls(settings, mem)

    def close(self) -> None:
        """Close the memories (after any running job's call)."""
        with self._lock:
            if self.mem is not self._opened:
                self.mem.close()
            self._opened.close()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[AgentMemory]:
        with self._lock:
            yield self.mem

    @contextlib.contextmanager
    def _writing(self) -> Iterator[AgentMemory]:
        with self._lock, writer_lock(self.settings.data_dir, purpose="agentzero ui"):
            yield self.mem

    # ------------------------------------------------------------------ reads
    def timeline(
        self,
        *,
        type_: str | None,
        conversation: str | None,
        archived: Archived,
        page: int,
        kind: str | None = None,
    ) -> tuple[list[Memory], bool]:
        """One page of memories, newest first, and whether there is a next page.
        ``kind``: how they came to be remembered (``memory.records.KINDS``)."""
        with self._reading() as mem:
            found = mem.memories(
                kind=kind,
                types=type_,
                conversation_id=conversation,
                archived=archived,
                limit=PAGE + 1,
                offset=page * PAGE,
            )
        return found[:PAGE], len(found) > PAGE

    def search(
        self, query: str, *, mode: str, k: int, type_: str | None, include_archived: bool
    ) -> list[RecallHit]:
        """Recall with ``explain``: each hit's rank, weight and share per signal. Mode
        ``""``: the memory's default (auto with an embedder, keyword without one)."""
        m: Mode = search_mode(mode or None)  # type: ignore[assignment]
        with self._reading() as mem:
            return mem.recall(
                query, k, mode=m, types=type_, include_archived=include_archived, explain=True
            )

    def marks(self) -> tuple[set[str], set[str]]:
        """The ids of pinned and of core memories."""
        with self._reading() as mem:
            return {m.id for m in mem.pinned()}, {m.id for m in mem.core_facts()}

    def memory(self, memory_id: str) -> MemoryView:
        """Everything one memory's page shows."""
        with self._reading() as mem:
            m = mem.get(memory_id)
            if m is None:
                raise NotFoundError(f"no memory {memory_id!r} in this scope")
            now = mem.now()
            pinned, core = self.marks()
            curve = drawing.curve(lambda d: mem.retrievability(m.id, now + timedelta(days=d)))
            edges = mem.edges(m.id)

            def label(other: str) -> str:
                o = mem.get(other)
                return o.content if o is not None else other

            graph = drawing.graph(m.id, m.content, edges, label)
            history = mem.history(m.id)
        return MemoryView(m, m.id in pinned, m.id in core, curve.now_r, curve, graph, history)

    def entity_graph(self, name: str) -> tuple[drawing.Graph, int, bool]:
        """The memories about (or said by) an entity around it: the newest
        ``ENTITY_NODES`` of them (a drawing of more is unreadable), how many are drawn, and
        whether there are more."""
        with self._reading() as mem:
            about = mem.memories(about=name, archived="include", limit=ENTITY_NODES + 1)
            now = mem.now()
        more = len(about) > ENTITY_NODES
        about = about[:ENTITY_NODES]
        edges = [Edge(f"entity:{name}", m.id, "entity", 1.0, now) for m in about]
        labels = {m.id: m.content for m in about}
        graph = drawing.graph(f"entity:{name}", name, edges, lambda i: labels.get(i, i))
        return graph, len(about), more

    def decay(self, page: int) -> tuple[list[tuple[Memory, float, bool, bool]], bool]:
        """A page of memories with their retrievability now and their tier marks."""
        memories, more = self.timeline(type_=None, conversation=None, archived="exclude", page=page)
        pinned, core = self.marks()
        with self._reading() as mem:
            now = mem.now()
            rows = [
                (m, mem.retrievability(m.id, now), m.id in pinned, m.id in core) for m in memories
            ]
        return rows, more

    def facts(
        self, subject: str | None, predicate: str | None, as_of: datetime | None
    ) -> tuple[list[Fact], list[FactChain]]:
        """The facts believed now (or at ``as_of``), and every fact's chain of versions."""
        with self._reading() as mem:
            believed = mem.facts(subject, predicate, as_of=as_of)
            every = mem.facts(subject, predicate, history=True)
        chains: dict[tuple[str, str], FactChain] = {}
        for f in sorted(every, key=lambda f: f.valid_from):
            key = (f.subject.casefold(), f.predicate.casefold())
            chains.setdefault(key, FactChain(f.subject, f.predicate, [])).versions.append(f)
        return believed, list(chains.values())

    def sources(self, ids: list[str]) -> dict[str, tuple[str, ...]]:
        """The memories (turns) each of ``ids`` was derived from (extracted facts)."""
        with self._reading() as mem:
            found = {i: mem.get(i) for i in ids}
        return {i: m.sources for i, m in found.items() if m is not None and m.sources}

    def fact_history(self, fact_id: str) -> list[HistoryEntry]:
        """The belief history entries of one fact."""
        with self._reading() as mem:
            return mem.history(fact_id)

    def namespaces(self) -> list[Any]:
        """The namespaces this agent owns or is granted."""
        with self._reading() as mem:
            return list(mem.namespaces())

    def last_backup(self) -> dict[str, Any] | None:
        """The last backup this machine took of the store, with its age
        (``storage.backup_log``)."""
        with self._reading() as mem:
            note = last_backup(mem.store.store_id)
            now = mem.now()
        if note is None:
            return None
        return {**note, "age": age(now - datetime.fromisoformat(note["at"]))}

    def index_status(self) -> list[dict[str, Any]]:
        """Every sidecar's status, with how far it lags its source."""
        with self._reading() as mem:
            store = mem.store
            # A store without sidecars (PostgreSQL) has none to list.
            rows = (
                [s.to_dict() for s in store.index_status()] if supports(store, "sidecars") else []
            )
        with self._documents() as docs:
            if docs is not None:
                rows += [s.to_dict() for s in docs.index_status()]
        for r in rows:
            r["behind"] = max(0, r["source_seq"] - r["covered_seq"])
            p = Path(r["path"])
            root = self.settings.data_dir
            r["name"] = str(p.relative_to(root)) if p.is_relative_to(root) else r["path"]
        return rows

    # ------------------------------------------------------------------ actions
    def pin(self, memory_id: str, pinned: bool) -> None:
        """Pin or unpin a memory."""
        with self._writing() as mem:
            (mem.pin if pinned else mem.unpin)(memory_id)

    def archive(self, memory_id: str, archived: bool) -> bool:
        """Archive a memory, or restore an archived one."""
        with self._writing() as mem:
            return mem.archive(memory_id) if archived else mem.restore(memory_id)

    def forget(self, by: Selector, value: str) -> ForgetReceipt:
        """Forget undoably; the receipt (with its token) is kept for the Undo button."""
        with self._writing() as mem:
            receipt = mem.forget(**{by: value})
            self._receipts.insert(0, ((mem.org_id, mem.agent_id), receipt))
            del self._receipts[20:]
        return receipt

    def undo(self, token: str) -> int:
        """Bring back what a forget removed; drop its receipt."""
        with self._writing() as mem:
            n = mem.undo(token)
            self._receipts = [(sc, r) for sc, r in self._receipts if r.token != token]
        return n

    def erase(self, by: Selector, value: str) -> int:
        """Erase for good (the routes ask twice first); how many memories went."""
        with self._writing() as mem:
            return mem.erase(**{by: value}).count

    def grant(self, namespace: str, agent_id: str, granted: bool) -> None:
        """Grant or revoke an agent's access to a namespace this agent owns."""
        with self._writing() as mem:
            handle = mem.namespace(namespace)
            (handle.grant if granted else handle.revoke)(agent_id)

    # ------------------------------------------------------------------ documents
    @contextlib.contextmanager
    def _documents(self) -> Iterator[Any]:
        """The document store, read-only, for this call; None when the data dir has none."""
        if not Layout(self.settings.data_dir).rag_log.exists():
            yield None
            return
        from rag.store import DocumentStore  # lazily: only the document pages need rag

        with DocumentStore.open(
            self.settings.data_dir,
            embedder=self.settings.embedder,
            create=False,
            readonly=True,
            config=self.settings.config,
            prompt=False,
            **credential_kwargs(self.settings.credential),
        ) as store:
            yield store

    def search_documents(self, query: str, mode: str, k: int) -> list[Any] | None:
        """Document hits (each with its best chunk), or None when there are no documents."""
        m: Mode = search_mode(mode or None)  # type: ignore[assignment]
        with self._documents() as docs:
            return None if docs is None else list(docs.query(query, k, m))

    def document(self, doc_id: str) -> Any:
        """One document's live version."""
        with self._documents() as docs:
            found = None if docs is None else docs.get(doc_id)
        if found is None:
            raise NotFoundError(f"no document {doc_id!r}")
        return found

    # ------------------------------------------------------------------ jobs
    def start_verify(self) -> str:
        """Verify the data dir in the background; the job's id."""
        verify = self.settings.verify
        if verify is None:
            raise InvalidArgumentError("verify is not available in this server")

        return self.jobs.start("verify", verify).id

    def start_consolidate(self, dry_run: bool) -> str:
        """Consolidate in the background (holding the writer role); the job's id."""

        def work(tell: Tell) -> dict[str, Any]:
            with self._writing() as mem:
                return mem.consolidate(dry_run=dry_run, progress=tell).to_dict()

        return self.jobs.start("consolidate", work).id


__all__ = ["MODES", "PAGE", "Inspector", "Selector", "credential_kwargs"]
