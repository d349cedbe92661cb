"""`agentzero memory extract` (issue 32) through the real entry point, on both backends:
--dry-run writes nothing, then the facts land with their turns as sources."""

from __future__ import annotations

from pathlib import Path

from ..conftest import run_cli as run
from .test_cli_agent_memory import NO_EMBEDDER, SCOPE, mem, where  # noqa: F401 - fixture


def test_extract_dry_run_then_write(where: Path | str) -> None:  # noqa: F811
    run(where, "init")
    run(where, "memory", "append", "I moved to Oslo last year.", "--conversation", "c1", *SCOPE)
    run(where, "memory", "append", "Where do you live?", "--conversation", "c1", *SCOPE)
    dry = mem(where, "extract", "--conversation", "c1", "--dry-run")
    assert dry["dry_run"] and dry["turns"] == 2
    assert [(f["subject"], f["predicate"], f["object"], f["status"]) for f in dry["facts"]] == [
        ("user", "lives_in", "Oslo", "new")
    ]
    assert mem(where, "facts", "--subject", "user") == []
    done = mem(where, "extract")
    (fact,) = done["facts"]
    assert fact["status"] == "created" and len(fact["sources"]) == 1
    assert [f["object"] for f in mem(where, "facts", "--subject", "user")] == ["Oslo"]
    again = mem(where, "extract")
    assert [f["status"] for f in again["facts"]] == ["duplicate"]
    # explain says where the fact came from: the turn it was extracted from
    hits = mem(where, "recall", "where does the user live", "--explain", *NO_EMBEDDER)
    found = next(h for h in hits if h["id"] == fact["id"])
    assert found["sources"] == fact["sources"]
    table = run(
        where, "memory", "recall", "where does the user live", "--explain", *NO_EMBEDDER, *SCOPE
    ).stdout
    assert f"from {fact['sources'][0]}" in table
    human = run(where, "memory", "extract", "--dry-run", *SCOPE).stdout
    assert "user lives_in Oslo" in human
    bad = run(where, "memory", "extract", "--llm-url", "http://x", *SCOPE, check=False)
    assert bad.returncode == 2
