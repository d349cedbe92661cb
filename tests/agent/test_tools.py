"""Agent tools against real stores: schemas, validation errors, pinned scopes, results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentzero_store import (
    InvalidArgumentError,
    LocalEmbedder,
    MemoryEntry,
    NoEmbedderError,
    SqliteMemoryStore,
)
from agentzero_store.tools import (
    AgentTool,
    MemoryAppendTool,
    MemoryForgetTool,
    RagDeleteTool,
    RagIngestTool,
    RagQueryTool,
    ScopeViolationError,
    SemanticRecallTool,
)
from rag.store import DocumentStore

from ..conftest import FAST, PASSPHRASE

MEMORIES = [
    ("o1", "a1", "c1", "I am allergic to peanuts"),
    ("o1", "a1", "c1", "My favourite colour is teal"),
    ("o1", "a1", "c2", "The quarterly report is due on Friday"),
    ("o1", "a2", "c3", "The user's cat is called Miso"),
    ("o2", "a1", "c9", "Acme's secret launch code is zebra-42"),
    ("o2", "a1", "c9", "I am allergic to shellfish"),
]


def _filled(data_dir: Path, embedder: LocalEmbedder) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, embedder=embedder
    ) as s:
        s.append_many(
            [
                MemoryEntry(content=t, org_id=o, agent_id=a, conversation_id=c)
                for o, a, c, t in MEMORIES
            ]
        )
        yield s


@pytest.fixture
def mem(data_dir: Path, local_embedder: LocalEmbedder) -> Iterator[SqliteMemoryStore]:
    """A fresh store for tests that write."""
    yield from _filled(data_dir, local_embedder)


@pytest.fixture(scope="module")
def ro(
    tmp_path_factory: pytest.TempPathFactory, local_embedder: LocalEmbedder
) -> Iterator[SqliteMemoryStore]:
    """One store shared by the tests that only read."""
    yield from _filled(tmp_path_factory.mktemp("ro") / "data", local_embedder)


def contents(result: dict[str, Any]) -> list[str]:
    return [r["content"] for r in result["results"]]


# ---------------------------------------------------------------- schema


def test_recall_schema_is_valid_json_schema(ro: SqliteMemoryStore) -> None:
    tool = SemanticRecallTool(ro)
    schema = tool.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert tool.name == "memory_recall" and len(tool.description) > 100
    assert schema["required"] == ["query"] and schema["additionalProperties"] is False
    props = schema["properties"]
    assert set(props) == {"query", "limit", "mode", "org_id", "agent_id", "conversation_id"}
    assert props["mode"]["default"] == "auto"
    assert props["mode"]["enum"] == ["auto", "keyword", "semantic", "hybrid", "bm25"]
    assert props["limit"] == {
        "type": "integer",
        "description": props["limit"]["description"],
        "default": 5,
        "minimum": 1,
        "maximum": 50,
    }
    assert tool.definition()["input_schema"] == schema


BAD_CALLS: list[tuple[Any, str]] = [
    ({}, "query is required"),
    ({"query": ""}, "must not be empty"),
    ({"query": "x", "k": 3}, "unknown argument(s) 'k'"),
    ({"query": "x", "limit": 0}, "at least 1"),
    ({"query": "x", "limit": 51}, "at most 50"),
    ({"query": "x", "limit": "5"}, "must be a JSON integer, got string"),
    ({"query": "x", "limit": True}, "must be a JSON integer, got boolean"),
    ({"query": "x", "limit": 2.5}, "must be a JSON integer, got number"),
    ({"query": "x", "mode": "fuzzy"}, "one of auto, keyword, semantic, hybrid, bm25"),
    ({"query": 42}, "must be a JSON string"),
    ({"query": "x", "org_id": ["o1"]}, "got array"),
    ("not json", "not JSON"),
    ([1, 2], "must be a JSON object"),
]


@pytest.mark.parametrize(("args", "message"), BAD_CALLS)
def test_recall_refuses_bad_input_with_a_hint(
    ro: SqliteMemoryStore, args: Any, message: str
) -> None:
    tool = SemanticRecallTool(ro)
    with pytest.raises(InvalidArgumentError) as info:
        tool.run(args)
    assert message in info.value.message
    assert info.value.hint, "every validation error carries a hint"
    assert info.value.to_dict()["error"] == "invalid_argument"
    if isinstance(args, dict):  # the published schema refuses the same inputs
        assert not jsonschema.Draft202012Validator(tool.schema()).is_valid(args)


def test_schema_accepts_what_the_tool_accepts(ro: SqliteMemoryStore) -> None:
    tool = SemanticRecallTool(ro, org_id="o1")
    good = {"query": "peanuts", "limit": 3, "mode": "keyword", "org_id": "o1"}
    jsonschema.validate(good, tool.schema())
    assert tool.run(good)["results"]


# ---------------------------------------------------------------- recall


def test_semantic_recall_returns_json_results(ro: SqliteMemoryStore) -> None:
    out = SemanticRecallTool(ro).run(
        {"query": "what food can't I eat?", "limit": 2, "mode": "semantic"}
    )
    json.dumps(out)  # JSON-ready as is
    assert out["mode"] == "semantic" and out["embedder"] == ro.embedder.model_id  # type: ignore[union-attr]
    top = out["results"][0]
    assert set(top) == {"id", "role", "content", "created_at", "conversation_id", "score", "ranks"}
    assert "allergic" in top["content"] and top["ranks"] == {"semantic": 1}
    assert ro.get(top["id"]) is not None


def test_modes_and_scope_arguments(ro: SqliteMemoryStore) -> None:
    tool = SemanticRecallTool(ro)
    kw = tool.run('{"query": "allergic", "mode": "keyword", "org_id": "o2"}')
    assert contents(kw) == ["I am allergic to shellfish"] and kw["embedder"] is None
    assert kw["results"][0]["ranks"] == {"keyword": 1}
    hy = tool.run({"query": "allergic peanuts", "mode": "hybrid", "conversation_id": "c1"})
    assert contents(hy)[0] == "I am allergic to peanuts"
    assert set(hy["results"][0]["ranks"]) == {"semantic", "keyword"}
    assert {r["conversation_id"] for r in hy["results"]} == {"c1"}


def test_semantic_without_embedder_is_a_typed_error(data_dir: Path) -> None:
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as s:
        s.append(MemoryEntry(content="hello there"))
        with pytest.raises(NoEmbedderError) as info:
            s.recall("hello", mode="semantic")
        assert info.value.hint
        with pytest.raises(InvalidArgumentError) as bad:
            SemanticRecallTool(s).run({"query": "hello", "mode": "semantic"})
        assert "embedder" in bad.value.hint
        # auto, the default, is keyword without an embedder
        auto = SemanticRecallTool(s).run({"query": "hello"})
        assert contents(auto) == ["hello there"] and auto["embedder"] is None
        assert contents(SemanticRecallTool(s).run({"query": "hello", "mode": "keyword"}))


# ---------------------------------------------------------------- pinned scope


def test_pinned_tool_reads_only_its_tenant(ro: SqliteMemoryStore) -> None:
    tool = SemanticRecallTool(ro, org_id="o1", agent_id="a1")
    props = tool.schema()["properties"]
    assert props["org_id"]["const"] == "o1" and props["agent_id"]["const"] == "a1"
    # Everything the tool can see, whatever the query: only o1/a1.
    seen = tool.run({"query": "allergic secret launch code cat", "limit": 50, "mode": "hybrid"})
    assert seen["results"] and all(
        ro.get(r["id"]).org_id == "o1" and ro.get(r["id"]).agent_id == "a1"  # type: ignore[union-attr]
        for r in seen["results"]
    )
    assert "zebra-42" not in json.dumps(seen) and "Miso" not in json.dumps(seen)
    assert tool.run({"query": "peanuts", "org_id": "o1", "agent_id": "a1"})["results"]


@pytest.mark.parametrize("args", [{"org_id": "o2"}, {"agent_id": "a2"}, {"org_id": "O1"}])
def test_pinned_tool_refuses_another_tenant(ro: SqliteMemoryStore, args: dict[str, str]) -> None:
    tool = SemanticRecallTool(ro, org_id="o1", agent_id="a1")
    with pytest.raises(ScopeViolationError) as info:
        tool.run({"query": "secret launch code", "mode": "keyword", **args})
    assert info.value.code == "scope_violation" and "pinned" in info.value.message
    assert "zebra" not in str(info.value)
    assert not jsonschema.Draft202012Validator(tool.schema()).is_valid({"query": "q", **args})


def test_append_is_pinned_and_marked_as_from_a_tool(mem: SqliteMemoryStore) -> None:
    tool = MemoryAppendTool(mem, org_id="o1", agent_id="a1")
    jsonschema.Draft202012Validator.check_schema(tool.schema())
    eid = tool.run(
        {
            "content": "Meeting moved to 3pm",
            "conversation_id": "c5",
            "metadata": {"tag": "calendar"},
            "expires_in_seconds": 3600,
        }
    )["id"]
    e = mem.get(eid)
    assert e is not None and (e.org_id, e.agent_id, e.conversation_id) == ("o1", "a1", "c5")
    assert e.source == "tool" and e.metadata == {"tag": "calendar"} and e.expires_at is not None
    assert e.embedding_model == mem.embedder.model_id  # type: ignore[union-attr]
    with pytest.raises(ScopeViolationError):
        tool.run({"content": "plant this in o2", "org_id": "o2"})
    assert mem.count(org_id="o2") == 2
    with pytest.raises(InvalidArgumentError, match="kind must be one of"):
        tool.run({"content": "x", "kind": "rumour"})


def test_forget_never_leaves_the_pinned_scope(mem: SqliteMemoryStore) -> None:
    tool = MemoryForgetTool(mem, org_id="o1", agent_id="a1")
    other = mem.recent(1, org_id="o2")[0]
    # Another tenant's id looks exactly like an unknown id: nothing deleted, nothing told.
    assert tool.run({"id": other.id}) == {"deleted": 0}
    assert tool.run({"id": "no-such-id"}) == {"deleted": 0}
    assert mem.get(other.id) is not None  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="at least one of"):
        tool.run({})
    with pytest.raises(ScopeViolationError):
        tool.run({"all_in_scope": True, "org_id": "o2"})
    own = mem.recent(1, org_id="o1", agent_id="a1", conversation_id="c2")[0]
    assert tool.run({"id": own.id}) == {"deleted": 1}
    assert tool.run({"conversation_id": "c1"}) == {"deleted": 2}
    before = {"o1/a2": mem.count(org_id="o1", agent_id="a2"), "o2": mem.count(org_id="o2")}
    assert tool.run({"all_in_scope": True}) == {"deleted": 0}  # o1/a1 is empty now
    after = {"o1/a2": mem.count(org_id="o1", agent_id="a2"), "o2": mem.count(org_id="o2")}
    assert before == after == {"o1/a2": 1, "o2": 2}


# ---------------------------------------------------------------- documents


def test_document_tools_on_a_real_document_store(
    data_dir: Path, local_embedder: LocalEmbedder
) -> None:
    with DocumentStore.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, embedder=local_embedder
    ) as docs:
        ingest, query, delete = RagIngestTool(docs), RagQueryTool(docs), RagDeleteTool(docs)
        tools: list[AgentTool] = [ingest, query, delete]
        for t in tools:
            jsonschema.Draft202012Validator.check_schema(t.schema())
        assert query.schema()["properties"]["mode"]["default"] == "auto"
        r = ingest.run(
            {
                "id": "tea",
                "title": "Brewing tea",
                "text": "Green tea is brewed at 80 degrees for two minutes.",
            }
        )
        assert r["changed"] is True and r["chunks"] == 1
        ingest.run({"id": "bike", "text": "Inflate road bike tyres to 6 bar before a ride."})
        assert (
            ingest.run({"id": "bike", "text": "Inflate road bike tyres to 6 bar before a ride."})[
                "changed"
            ]
            is False
        )
        hits = query.run({"query": "how hot should the water be for green tea?"})
        assert hits["results"][0]["id"] == "tea" and hits["mode"] == "hybrid"  # auto ran hybrid
        assert set(hits["results"][0]["ranks"]) == {"keyword", "semantic"}
        assert hits["embedder"] == local_embedder.model_id
        kw = query.run({"query": "tyres", "mode": "bm25", "limit": 1})
        assert [h["id"] for h in kw["results"]] == ["bike"] and kw["embedder"] is None
        assert kw["mode"] == "keyword"  # bm25: the old name of keyword
        with pytest.raises(InvalidArgumentError, match="unknown argument"):
            query.run({"query": "tea", "org_id": "o1"})
        assert delete.run({"id": "tea"}) == {"id": "tea", "deleted": True}
        assert delete.run({"id": "tea"}) == {"id": "tea", "deleted": False}
        assert [h["id"] for h in query.run({"query": "green tea"})["results"]] == ["bike"]


def test_rag_query_without_embedder_offers_keyword_only(data_dir: Path) -> None:
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("d1", "Sourdough needs a lively starter.")
        tool = RagQueryTool(docs)
        mode = tool.schema()["properties"]["mode"]
        assert mode["enum"] == ["auto", "keyword", "bm25"] and mode["default"] == "auto"
        with pytest.raises(InvalidArgumentError) as info:
            tool.run({"query": "bread", "mode": "semantic"})
        assert "embedder" in info.value.hint
        assert tool.run({"query": "sourdough starter"})["results"][0]["id"] == "d1"
