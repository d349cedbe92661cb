"""A revoke holds through every host of the agent memory (issue 30): the agent tools, the
MCP server's tool host and the UI's inspector, built on a namespace handle opened while
granted, refuse every call once the grant is revoked (each works on a granted twin
first). As in ``test_revoke``, the tables must name every tool and every public method
of the inspector, so one added later cannot slip past the grant unnoticed."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentzero_store import AgentMemory
from agentzero_store.agent.mcp import ToolHost, build_tools
from agentzero_store.agent.tools import MemoryScopes
from agentzero_store.base.errors import AccessDeniedError
from agentzero_store.storage.credentials import Credential
from agentzero_store.ui import Inspector, Settings
from tests.conftest import FAST, PASSPHRASE

from .conftest import Clock, open_memory
from .test_revoke import Seeded, check_complete, refuse_all, run_all, seed

TOOL_ARGS: dict[str, Callable[[Seeded], dict[str, Any]]] = {
    "memory_append": lambda s: {"content": "an appended zebra", "conversation_id": "c"},
    "memory_grant": lambda s: {"content": "the user likes green tea"},
    "memory_remember": lambda s: {"content": "a note of mine", "type": "semantic"},
    "memory_fact": lambda s: {"subject": "ana", "predicate": "lives_in", "object": "porto"},
    "memory_recall": lambda s: {"query": "deploy runbook"},
    "memory_list": lambda s: {},
    "memory_context": lambda s: {"conversation_id": "c", "query": "deploy"},
    "memory_feedback": lambda s: {"id": s.ids["read"], "used": True},
    "memory_archive": lambda s: {"id": s.ids["archive"]},
    "memory_forget": lambda s: {"id": s.ids["forget"]},
    "memory_undo": lambda s: {"token": s.token},
    "memory_extract": lambda s: {"conversation_id": "c"},
}


def host_on(mem: AgentMemory) -> ToolHost:
    """The MCP server's tool host over ``mem`` (as ``serve`` builds it, minus documents)."""
    host = ToolHost(build_tools(MemoryScopes.pinned(mem), None))
    assert set(host.tools) == set(TOOL_ARGS), "a tool this test does not call after a revoke"
    return host


def test_every_tool_and_mcp_call_is_refused_after_a_revoke(where: Path | str, clock: Clock) -> None:
    def appended() -> int:
        """The store rows ``memory_append`` wrote into the namespaces (it writes below
        the layer, into the handle's scope), read by their owner."""
        with open_memory(where, clock, agent_id="owner") as o:
            return sum(
                len(o.shared(n).memories(conversation_id="c"))
                for n in ("ops", "live", "ops2", "live2")
            )

    with open_memory(where, clock, agent_id="owner") as owner:
        for name in ("ops", "live", "ops2", "live2"):
            owner.namespace(name).grant("b")
        handles = {
            n: open_memory(where, clock, agent_id="b", namespace=n)
            for n in ("ops", "live", "ops2", "live2")
        }
        try:
            # The tools themselves (``run`` raises) ...
            live, ops = host_on(handles["live"]), host_on(handles["ops"])
            known = seed(handles["live"])
            for name, args in TOOL_ARGS.items():
                live.tools[name].run(args(known))
            known = seed(handles["ops"])
            owner.namespace("ops").revoke("b")
            before = appended()
            for name, args in TOOL_ARGS.items():
                with pytest.raises(AccessDeniedError):
                    ops.tools[name].run(args(known))
            assert appended() == before  # refused before anything was written
            # ... and the MCP server's calls (a tool error with the code, never data).
            live, ops = host_on(handles["live2"]), host_on(handles["ops2"])
            known = seed(handles["live2"])
            for name, args in TOOL_ARGS.items():
                ok, result = live.call(name, args(known))
                assert ok, (name, result)
            known = seed(handles["ops2"])
            owner.namespace("ops2").revoke("b")
            before = appended()
            for name, args in TOOL_ARGS.items():
                ok, result = ops.call(name, args(known))
                assert not ok and result["error"] == "access_denied", (name, result)
                assert "deploy" not in str(result)
            assert appended() == before
        finally:
            for m in handles.values():
                m.close()


def consolidated(i: Inspector, s: Seeded) -> dict[str, Any]:
    """Run the inspector's consolidation job to its end: its outcome."""
    job_id = i.start_consolidate(dry_run=False)
    for _ in range(600):
        job = i.jobs.get(job_id)
        assert job is not None
        if job.state != "running":
            if job.state == "failed":  # the job's error, as its page shows it
                assert "no access to namespace" in str(job.error), job.error
                raise AccessDeniedError(str(job.error))
            return job.to_dict()
        time.sleep(0.05)
    raise AssertionError("the consolidation job did not finish")


INSPECTOR_CALLS: dict[str, Callable[[Inspector, Seeded], object]] = {
    "timeline": lambda i, s: i.timeline(type_=None, conversation=None, archived="exclude", page=0),
    "search": lambda i, s: i.search("deploy", mode="", k=5, type_=None, include_archived=False),
    "marks": lambda i, s: i.marks(),
    "memory": lambda i, s: i.memory(s.ids["read"]),
    "entity_graph": lambda i, s: i.entity_graph("ana"),
    "decay": lambda i, s: i.decay(0),
    "facts": lambda i, s: i.facts(None, None, None),
    "fact_history": lambda i, s: i.fact_history(s.ids["retract"]),
    "sources": lambda i, s: i.sources([s.ids["read"]]),
    "namespaces": lambda i, s: i.namespaces(),
    "pin": lambda i, s: i.pin(s.ids["pin"], True),
    "archive": lambda i, s: i.archive(s.ids["archive"], True),
    "forget": lambda i, s: i.forget("id", s.ids["forget"]),
    "undo": lambda i, s: i.undo(s.token),
    "erase": lambda i, s: i.erase("id", s.ids["erase"]),
    "grant": lambda i, s: i.grant(str(i.mem.shared_namespace), "c", True),
    "start_consolidate": consolidated,
    "switch": lambda i, s: i.switch("acme", "zed"),  # last: the page then shows zed
}
INSPECTOR_EXEMPT = {
    "open": "a constructor: opens an agent's own memory",
    "close": "closing never needs the grant",
    "scope": "the (org, agent) shown: ids only",
    "receipts": "this page session's forget receipts, held in memory",
    "scopes": "every agent of the store (namespaces are never listed): no namespace data",
    "last_backup": "the store's backup note: no namespace data",
    "index_status": "the store's sidecars' status: no namespace data",
    "search_documents": "documents have no tenant (the data dir's)",
    "document": "documents have no tenant (the data dir's)",
    "start_verify": "verifies the whole data dir: no namespace data",
}
# Only a namespace's owner grants, so a member's grant is refused, revoked or not.
INSPECTOR_EXPECTED: dict[str, type] = {"grant": AccessDeniedError}


def test_every_inspector_call_is_refused_after_a_revoke(data_dir: Path, clock: Clock) -> None:
    """The UI on a namespace handle (SQLite: the inspector serves a data dir). Pages on
    b's own memory no longer list the namespace once revoked."""
    check_complete(Inspector, INSPECTOR_CALLS, INSPECTOR_EXEMPT)
    settings = Settings(
        data_dir,
        Credential.from_passphrase(PASSPHRASE),
        org_id="acme",
        agent_id="b",
        pinned=False,
        config=FAST,
    )
    with open_memory(data_dir, clock, agent_id="owner") as owner:
        for name in ("ops", "live"):
            owner.namespace(name).grant("b")
        live = Inspector(settings, open_memory(data_dir, clock, agent_id="b", namespace="live"))
        try:
            run_all(live, seed(live.mem), INSPECTOR_CALLS, INSPECTOR_EXPECTED)
        finally:
            live.close()
        ops = Inspector(settings, open_memory(data_dir, clock, agent_id="b", namespace="ops"))
        try:
            known = seed(ops.mem)
            owner.namespace("ops").revoke("b")
            refuse_all(ops, known, INSPECTOR_CALLS, INSPECTOR_EXPECTED)
        finally:
            ops.close()
    mine = Inspector(settings, open_memory(data_dir, clock, agent_id="b"))
    try:
        assert [n.name for n in mine.namespaces()] == ["live"]
        with pytest.raises(AccessDeniedError):
            mine.grant("ops", "c", True)
    finally:
        mine.close()


@pytest.mark.parametrize("kind", ["namespace", "session"])
def test_memory_append_on_a_shared_or_session_handle_writes_into_that_scope(
    where: Path | str, clock: Clock, kind: str
) -> None:
    """``memory_append`` writes below the layer: on a namespace or session handle the row
    belongs to that scope (where recall, list and forget of the handle find it), never
    to the acting agent's own memory."""
    with open_memory(where, clock, agent_id="owner") as owner:
        owner.namespace("team").grant("b")
        with open_memory(where, clock, agent_id="b") as b:
            handle = b.shared("team") if kind == "namespace" else b.start_session("trip")
            tools = {t.name: t for t in build_tools(MemoryScopes.pinned(handle), None)}
            tools["memory_append"].run({"content": "an appended zebra", "conversation_id": "c"})
            assert [m.content for m in handle.memories(conversation_id="c")] == [
                "an appended zebra"
            ]
            hits = tools["memory_recall"].run({"query": "zebra", "mode": "keyword"})["results"]
            assert [h["content"] for h in hits] == ["an appended zebra"]
            assert b.memories(conversation_id="c") == []  # not the acting agent's own
            if kind == "namespace":
                assert [m.content for m in owner.shared("team").memories()] == ["an appended zebra"]
