"""The agent tools over AgentMemory (memory_grant ... memory_undo) on real stores:
schemas, validation, pinned and unpinned scopes, and what each one does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentzero_store import AgentMemory, InvalidArgumentError, LocalEmbedder, NotFoundError
from agentzero_store.tools import (
    AdoptingAppendTool,
    AgentArchiveTool,
    AgentContextTool,
    AgentExtractTool,
    AgentFactTool,
    AgentFeedbackTool,
    AgentForgetTool,
    AgentGrantTool,
    AgentListTool,
    AgentRecallTool,
    AgentRememberTool,
    AgentTool,
    AgentUndoTool,
    MemoryScopes,
    ScopeViolationError,
    agent_memory_tools,
)

from ..agentmem.conftest import Clock, open_memory

NAMES = [
    "memory_grant",
    "memory_remember",
    "memory_fact",
    "memory_recall",
    "memory_list",
    "memory_context",
    "memory_feedback",
    "memory_archive",
    "memory_forget",
    "memory_undo",
    "memory_extract",
]
MEMORY_KEYS = {
    "id",
    "type",
    "content",
    "role",
    "conversation_id",
    "speaker",
    "created_at",
    "expires_at",
    "confidence",
    "about",
    "archived",
    "kind",
}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(data_dir: Path, clock: Clock) -> Iterator[AgentMemory]:
    """The agent memory of acme/a1, no embedder."""
    m = open_memory(data_dir, clock)
    yield m
    m.close()


def tools(memory: AgentMemory | MemoryScopes) -> dict[str, AgentTool]:
    return {t.name: t for t in agent_memory_tools(memory)}


def recalled(t: dict[str, AgentTool], query: str, **kw: Any) -> list[str]:
    return [r["content"] for r in t["memory_recall"].run({"query": query, **kw})["results"]]


# ---------------------------------------------------------------- schemas


def test_every_schema_is_valid_pinned_and_documented(mem: AgentMemory) -> None:
    t = tools(mem)
    assert list(t) == NAMES
    for tool in t.values():
        schema = tool.schema()
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False
        assert len(tool.description) > 150, tool.name  # when to use it, with an example
        props = schema["properties"]
        assert props["org_id"]["const"] == "acme" and props["agent_id"]["const"] == "a1"
        assert all(p["description"] for p in props.values())
    recall = t["memory_recall"].schema()["properties"]
    # Without an embedder only keyword search is offered (auto is keyword there; bm25 the
    # old name of keyword): a model cannot pick a failing mode.
    assert recall["mode"]["enum"] == ["auto", "keyword", "bm25"]
    assert recall["mode"]["default"] == "auto"
    assert recall["types"] == {
        "type": "array",
        "description": recall["types"]["description"],
        "items": {"type": "string", "minLength": 1, "enum": ["episodic", "semantic", "procedural"]},
        "maxItems": 3,
    }
    assert t["memory_forget"].schema()["required"] == []
    assert t["memory_fact"].schema()["required"] == ["subject", "predicate", "object"]
    assert t["memory_feedback"].schema()["required"] == ["id", "used"]


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_grant", {}, "content is required"),
    ("memory_grant", {"content": "x", "about": "Ana"}, "must be a JSON array, got string"),
    ("memory_grant", {"content": "x", "about": [1]}, "an array of strings"),
    ("memory_grant", {"content": "x", "about": [""]}, "must not hold an empty string"),
    ("memory_remember", {"content": "x", "type": "dream"}, "one of semantic"),
    ("memory_remember", {"content": "x", "confidence": 1.5}, "at most 1"),
    ("memory_remember", {"content": "x", "ttl_seconds": 0}, "at least 1"),
    ("memory_recall", {"query": "x", "mode": "semantic"}, "must be one of auto, keyword, bm25"),
    ("memory_recall", {"query": "x", "types": ["dream"]}, "each types item must be one of"),
    ("memory_recall", {"query": "x", "limit": 51}, "at most 50"),
    ("memory_list", {"archived": "yes"}, "one of exclude, include, only"),
    ("memory_list", {"offset": -1}, "at least 0"),
    ("memory_list", {"kind": "rumour"}, "one of granted"),
    ("memory_fact", {"subject": "Ana", "predicate": "likes"}, "object is required"),
    ("memory_feedback", {"id": "x"}, "used is required"),
    ("memory_feedback", {"id": "x", "used": "yes"}, "must be a JSON boolean"),
    ("memory_undo", {"token": ""}, "must not be empty"),
    ("memory_forget", {"id": "x", "top": 1}, "unknown argument(s) 'top'"),
]


@pytest.mark.parametrize(("name", "args", "message"), BAD_CALLS)
def test_bad_input_is_refused_with_a_hint_as_the_schema_says(
    mem: AgentMemory, name: str, args: dict[str, Any], message: str
) -> None:
    tool = tools(mem)[name]
    with pytest.raises(InvalidArgumentError) as info:
        tool.run(args)
    assert message in info.value.message and info.value.hint
    assert not jsonschema.Draft202012Validator(tool.schema()).is_valid(args)


def test_errors_the_schema_cannot_express_are_typed_too(mem: AgentMemory) -> None:
    t = tools(mem)
    with pytest.raises(InvalidArgumentError) as info:
        t["memory_recall"].run({"query": "x", "as_of": "2025-06-01T12:00:00"})  # no timezone
    assert "as_of" in info.value.message and "timezone" in info.value.hint
    with pytest.raises(InvalidArgumentError, match="at least one of"):
        t["memory_forget"].run({})
    with pytest.raises(InvalidArgumentError, match="exactly one of"):
        t["memory_forget"].run({"id": "x", "about": "Ana"})
    for name, args in [
        ("memory_archive", {"id": "nope"}),
        ("memory_feedback", {"id": "nope", "used": True}),
        ("memory_forget", {"id": "nope"}),
        ("memory_undo", {"token": "nope"}),
    ]:
        with pytest.raises(NotFoundError):
            t[name].run(args)


# ---------------------------------------------------------------- what they do


def test_grant_remember_recall_list_and_feedback(mem: AgentMemory, clock: Clock) -> None:
    t = tools(mem)
    g = t["memory_grant"].run({"content": "The user is vegetarian", "about": ["user"]})
    assert g == {"id": g["id"], "status": "created", "superseded": []}
    again = t["memory_grant"].run({"content": "the user is  VEGETARIAN", "about": ["user"]})
    assert again == {"id": g["id"], "status": "duplicate", "superseded": []}
    assert mem.store.get(g["id"]).kind == "granted"  # type: ignore[union-attr]
    clock.advance(seconds=1)
    r = t["memory_remember"].run(
        {
            "content": "The user is travelling to Oslo today",
            "type": "episodic",
            "about": ["Oslo"],
            "confidence": 0.7,
            "ttl_seconds": 86_400,
        }
    )
    m = mem.get(r["id"])
    assert m is not None and m.type == "episodic" and m.about == ("Oslo",)
    assert m.confidence == 0.7 and m.expires_at == clock.now + timedelta(days=1)
    out = t["memory_recall"].run({"query": "vegetarian", "explain": True})
    json.dumps(out)
    assert out["mode"] == "keyword" and out["embedder"] is None
    (hit,) = out["results"]
    assert set(hit) == MEMORY_KEYS | {"score", "ranks", "explain"}
    assert hit["id"] == g["id"] and hit["type"] == "semantic" and hit["about"] == ["user"]
    assert hit["ranks"] == {"keyword": 1} and hit["explain"]["keyword"]["rank"] == 1
    assert recalled(t, "user", types=["episodic"]) == ["The user is travelling to Oslo today"]
    assert recalled(t, "user", about=["oslo"]) == ["The user is travelling to Oslo today"]
    page = t["memory_list"].run({"limit": 1})
    assert [x["id"] for x in page["memories"]] == [r["id"]] and page["next_offset"] == 1
    assert set(page["memories"][0]) == MEMORY_KEYS
    last = t["memory_list"].run({"limit": 1, "offset": 1})
    assert [x["id"] for x in last["memories"]] == [g["id"]]
    assert t["memory_list"].run({"limit": 5})["next_offset"] is None
    assert t["memory_list"].run({"types": ["semantic"]})["memories"][0]["id"] == g["id"]
    before = mem.get(g["id"])
    clock.advance(days=3)
    fb = t["memory_feedback"].run({"id": g["id"], "used": True})
    assert set(fb) == MEMORY_KEYS and fb["id"] == g["id"]
    after = mem.get(g["id"])
    assert before is not None and after is not None
    assert after.stability_days > before.stability_days
    clock.advance(days=2)
    assert recalled(t, "Oslo") == []  # its day is over


def test_fact_supersedes_and_recall_as_of_sees_the_old_belief(
    mem: AgentMemory, clock: Clock
) -> None:
    t = tools(mem)
    old = t["memory_fact"].run({"subject": "Ana", "predicate": "lives_in", "object": "Porto"})
    then = clock.now.isoformat()
    clock.advance(days=1)
    new = t["memory_fact"].run({"subject": "Ana", "predicate": "lives_in", "object": "Lisbon"})
    assert new["status"] == "created" and new["superseded"] == [old["id"]]
    assert recalled(t, "Ana lives") == ["Ana lives in Lisbon"]
    assert recalled(t, "Ana lives", as_of=then) == ["Ana lives in Porto"]
    t["memory_fact"].run(
        {"subject": "Ana", "predicate": "speaks", "object": "English", "multi_valued": True}
    )
    both = t["memory_fact"].run(
        {"subject": "Ana", "predicate": "speaks", "object": "Portuguese", "multi_valued": True}
    )
    assert both["superseded"] == []
    assert {f.object for f in mem.facts("Ana", "speaks")} == {"English", "Portuguese"}


def test_archive_forget_and_undo(mem: AgentMemory) -> None:
    t = tools(mem)
    a = t["memory_grant"].run({"content": "The quokka sleeps in the garage"})["id"]
    b = t["memory_grant"].run({"content": "Ana's quokka is called Zanzibar", "about": ["Ana"]})
    assert t["memory_archive"].run({"id": a}) == {"id": a, "archived": True}
    assert t["memory_archive"].run({"id": a}) == {"id": a, "archived": False}
    assert recalled(t, "quokka") == ["Ana's quokka is called Zanzibar"]
    assert (
        recalled(t, "quokka garage", include_archived=True)[0] == "The quokka sleeps in the garage"
    )
    only = t["memory_list"].run({"archived": "only"})["memories"]
    assert [x["id"] for x in only] == [a] and only[0]["archived"] is True
    receipt = t["memory_forget"].run({"about": "ana"})
    assert receipt["count"] == 1 and receipt["ids"] == [b["id"]] and receipt["token"]
    assert receipt["recoverable_until"].startswith("2026-01-08")  # the clock's start + 7 days
    assert recalled(t, "quokka Zanzibar") == []
    assert t["memory_undo"].run({"token": receipt["token"]}) == {"restored": 1}
    assert recalled(t, "Zanzibar") == ["Ana's quokka is called Zanzibar"]
    with pytest.raises(NotFoundError):
        t["memory_undo"].run({"token": receipt["token"]})  # used up
    conv = t["memory_forget"].run({"conversation_id": "memories"})
    assert set(conv["ids"]) == {a, b["id"]}


def test_auto_recall_with_the_local_embedder(
    data_dir: Path, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(data_dir, clock, embedder=local_embedder) as m:
        t = tools(m)
        mode = t["memory_recall"].schema()["properties"]["mode"]
        assert mode["default"] == "auto" and mode["enum"] == [
            "auto",
            "keyword",
            "semantic",
            "hybrid",
            "bm25",
        ]
        t["memory_grant"].run({"content": "The user is allergic to peanuts"})
        t["memory_grant"].run({"content": "The user's bike is a blue road bike"})
        out = t["memory_recall"].run({"query": "what food can't the user eat?", "limit": 1})
        assert out["mode"] == "auto" and out["embedder"] == local_embedder.model_id
        assert [r["content"] for r in out["results"]] == ["The user is allergic to peanuts"]
        assert "semantic" in out["results"][0]["ranks"]


# ---------------------------------------------------------------- scopes


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("other", [{"org_id": "o2"}, {"agent_id": "a2"}, {"org_id": "ACME"}])
def test_a_pinned_tool_refuses_another_tenant(
    mem: AgentMemory, name: str, other: dict[str, str]
) -> None:
    tool = tools(mem)[name]
    minimal = {
        "memory_grant": {"content": "planted"},
        "memory_remember": {"content": "planted"},
        "memory_fact": {"subject": "a", "predicate": "b", "object": "c"},
        "memory_recall": {"query": "secret"},
        "memory_list": {},
        "memory_context": {"conversation_id": "c1"},
        "memory_feedback": {"id": "x", "used": True},
        "memory_archive": {"id": "x"},
        "memory_forget": {"about": "x"},
        "memory_undo": {"token": "x"},
        "memory_extract": {},
    }[name]
    with pytest.raises(ScopeViolationError) as info:
        tool.run({**minimal, **other})
    assert info.value.code == "scope_violation" and info.value.hint
    assert not jsonschema.Draft202012Validator(tool.schema()).is_valid({**minimal, **other})
    assert mem.memories(archived="include") == []  # nothing was written anywhere
    assert mem.store.count() == 0


def test_an_unpinned_host_serves_each_named_scope_apart(data_dir: Path, clock: Clock) -> None:
    scopes = MemoryScopes(open_memory(data_dir, clock, org_id="default", agent_id="default"))
    try:
        t = tools(scopes)
        org = t["memory_grant"].schema()["properties"]["org_id"]
        assert "const" not in org and "(omitted: 'default')" in org["description"]
        t["memory_grant"].run({"content": "a note for the default scope"})
        x = t["memory_grant"].run({"content": "a note for x", "org_id": "x"})["id"]
        t["memory_grant"].run({"content": "a note for x/b", "org_id": "x", "agent_id": "b"})
        assert recalled(t, "note") == ["a note for the default scope"]
        assert recalled(t, "note", org_id="x") == ["a note for x"]
        assert recalled(t, "note", org_id="x", agent_id="b") == ["a note for x/b"]
        with pytest.raises(NotFoundError):
            t["memory_forget"].run({"id": x})  # x's id, asked of the default scope
        assert t["memory_forget"].run({"id": x, "org_id": "x"})["count"] == 1
    finally:
        scopes.close()
    for org, agent, left in [
        ("default", "default", ["a note for the default scope"]),
        ("x", "default", []),
        ("x", "b", ["a note for x/b"]),
    ]:
        with open_memory(data_dir, clock, org_id=org, agent_id=agent) as m:
            assert [n.content for n in m.memories()] == left


def test_scopes_pinned_to_another_scope_than_the_memory_are_refused(mem: AgentMemory) -> None:
    with pytest.raises(InvalidArgumentError, match="pinned"):
        MemoryScopes(mem, org_id="other")


def test_tools_built_one_by_one_match_the_set(mem: AgentMemory) -> None:
    one_by_one: list[AgentTool] = [
        AgentGrantTool(mem),
        AgentRememberTool(mem),
        AgentFactTool(mem),
        AgentRecallTool(mem),
        AgentListTool(mem),
        AgentContextTool(mem),
        AgentFeedbackTool(mem),
        AgentArchiveTool(mem),
        AgentForgetTool(mem),
        AgentUndoTool(mem),
        AgentExtractTool(mem),
    ]
    assert [t.definition() for t in one_by_one] == [t.definition() for t in agent_memory_tools(mem)]


def test_an_unpinned_host_refuses_names_open_would_refuse(data_dir: Path, clock: Clock) -> None:
    """A control character in a name would reach a shared namespace's (or a session's)
    own scope past its grants: refused, as AgentMemory.open refuses it."""
    scopes = MemoryScopes(open_memory(data_dir, clock, org_id="default", agent_id="default"))
    try:
        t = tools(scopes)
        append = AdoptingAppendTool(scopes)
        for name, args in [
            ("memory_grant", {"content": "planted", "agent_id": "\x1ens\x1eteam"}),
            ("memory_recall", {"query": "x", "agent_id": "a\x1esession\x1es1"}),
            ("memory_list", {"org_id": "o\n2"}),
        ]:
            with pytest.raises(InvalidArgumentError, match="control characters"):
                t[name].run(args)
        with pytest.raises(InvalidArgumentError, match="control characters"):
            append.run({"content": "planted", "agent_id": "\x1ens\x1eteam"})
        assert scopes.base.store.count() == 0  # nothing was written anywhere
    finally:
        scopes.close()


def test_memory_append_is_adopted_at_once(mem: AgentMemory) -> None:
    append, t = AdoptingAppendTool(mem), tools(mem)
    assert append.name == "memory_append"
    props = append.schema()["properties"]
    assert props["org_id"]["const"] == "acme" and props["agent_id"]["const"] == "a1"
    eid = append.run({"content": "Meeting moved to 3pm", "conversation_id": "c5"})["id"]
    assert recalled(t, "meeting") == ["Meeting moved to 3pm"]
    (m,) = t["memory_list"].run({"conversation_id": "c5"})["memories"]
    assert m["id"] == eid and m["type"] == "episodic"
    assert t["memory_forget"].run({"id": eid})["count"] == 1
    with pytest.raises(ScopeViolationError):
        append.run({"content": "planted", "org_id": "o2"})
