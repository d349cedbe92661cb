"""The agent memory's commands (`agentzero memory grant|remember|fact|facts|recall|list|
feedback|archive|restore|forget|undo|erase|consolidate`) through the real console script,
on a data dir and on PostgreSQL (``--data-dir postgresql://...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..conftest import js, tree_digest
from ..conftest import run_cli as run

SCOPE = ("--org", "o1", "--agent", "a1")
NO_EMBEDDER = ("--embedder", "none")
MEMORY_KEYS = {
    "sources",
    "id",
    "type",
    "content",
    "role",
    "conversation_id",
    "speaker",
    "created_at",
    "expires_at",
    "confidence",
    "importance",
    "salience",
    "stability_days",
    "difficulty",
    "last_review",
    "access_count",
    "archived",
    "about",
    "metadata",
    "kind",
}


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, data_dir: Path) -> Path | str:
    """A data dir, or a fresh PostgreSQL database: the same commands on both."""
    return data_dir if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


def mem(data_dir: Path | str, *args: str, check: bool = True) -> Any:
    """`agentzero memory ARGS --org o1 --agent a1 --json`, parsed."""
    p = run(data_dir, "memory", *args, *SCOPE, "--json", check=check)
    return js(p) if check else p


def test_every_verb_with_its_json(where: Path | str) -> None:
    run(where, "init")
    g = mem(where, "grant", "The user is vegetarian", "--about", "user", *NO_EMBEDDER)
    assert g == {"id": g["id"], "status": "created", "superseded": []}
    again = mem(where, "grant", "the user is  VEGETARIAN", "--about", "user", *NO_EMBEDDER)
    assert again == {"id": g["id"], "status": "duplicate", "superseded": []}
    oslo = mem(
        where,
        "remember",
        "The user travels to Oslo this week",
        "--type",
        "episodic",
        "--about",
        "Oslo",
        "--confidence",
        "0.7",
        "--ttl",
        "7d",
        *NO_EMBEDDER,
    )["id"]
    porto = mem(where, "fact", "Ana", "lives_in", "Porto", *NO_EMBEDDER)["id"]
    lisbon = mem(where, "fact", "Ana", "lives_in", "Lisbon", *NO_EMBEDDER)
    assert lisbon["status"] == "created" and lisbon["superseded"] == [porto]
    speaks = ("fact", "Ana", "speaks", "English", "--multi-valued", *NO_EMBEDDER)
    assert mem(where, *speaks)["superseded"] == []

    # facts: now, and the whole history
    assert [f["object"] for f in mem(where, "facts", "--subject", "ana")] == [
        "Lisbon",
        "English",
    ]
    history = mem(where, "facts", "--predicate", "lives_in", "--history")
    assert [(f["object"], f["superseded_by"]) for f in history] == [
        ("Porto", lisbon["id"]),
        ("Lisbon", None),
    ]

    # recall: keyword without an embedder; filters; explain; as_of
    hits = mem(where, "recall", "where does Ana live", "--explain", *NO_EMBEDDER)
    assert hits[0]["id"] == lisbon["id"] and set(hits[0]) == MEMORY_KEYS | {
        "score",
        "ranks",
        "explain",
    }
    assert hits[0]["explain"]["keyword"]["rank"] == 1
    only = mem(where, "recall", "user", "--type", "episodic", *NO_EMBEDDER)
    assert [h["id"] for h in only] == [oslo]
    about = mem(where, "recall", "user", "--about", "user", "--mode", "keyword")
    assert [h["id"] for h in about] == [g["id"]]
    then = history[0]["valid_from"]
    past = mem(where, "recall", "Ana lives", "--as-of", then, *NO_EMBEDDER)
    assert [h["content"] for h in past] == ["Ana lives in Porto"]

    # list: newest first, filtered, paged
    listed = mem(where, "list")
    assert [m["content"] for m in listed] == [
        "Ana speaks English",
        "Ana lives in Lisbon",
        "The user travels to Oslo this week",
        "The user is vegetarian",
    ]
    assert set(listed[0]) == MEMORY_KEYS
    page = mem(where, "list", "--type", "semantic", "--limit", "1", "--offset", "1")
    assert [m["id"] for m in page] == [lisbon["id"]]
    assert (
        mem(where, "list", "--conversation", "memories", "--kind", "granted")[-1]["id"] == g["id"]
    )
    assert mem(where, "list", "--kind", "recalled") == []

    # archive, restore, feedback
    assert mem(where, "archive", oslo) == {"id": oslo, "archived": True}
    assert mem(where, "archive", oslo) == {"id": oslo, "archived": False}
    assert [m["id"] for m in mem(where, "list", "--archived")] == [oslo]
    assert len(mem(where, "list", "--include-archived")) == 4
    assert oslo not in [m["id"] for m in mem(where, "list")]
    archived = mem(where, "recall", "Oslo", "--include-archived", *NO_EMBEDDER)
    assert archived[0]["archived"] is True and "Oslo" in archived[0]["content"]
    assert mem(where, "restore", oslo) == {"id": oslo, "restored": True}
    fb = mem(where, "feedback", g["id"], "--used")
    assert fb["id"] == g["id"] and set(fb) == MEMORY_KEYS

    # forget (undoable), undo, erase (needs --yes)
    receipt = mem(where, "forget", "--about", "ana")
    assert receipt["count"] == 3 and set(receipt) == {
        "token",
        "count",
        "recoverable_until",
        "ids",
        "derived",
    }
    assert mem(where, "recall", "Ana", *NO_EMBEDDER) == []
    assert mem(where, "undo", receipt["token"]) == {"restored": 3}
    back = [h["id"] for h in mem(where, "recall", "Ana lives", *NO_EMBEDDER)]
    assert back[0] == lisbon["id"] and porto not in back  # a superseded fact stays history
    refused = mem(where, "erase", "--id", oslo, check=False)
    assert refused.returncode == 2 and js(refused)["error"] == "invalid_argument"
    assert "--yes" in js(refused)["message"] and "forget" in js(refused)["hint"]
    assert mem(where, "erase", "--id", oslo, "--yes") == {
        "count": 1,
        "ids": [oslo],
        "pending": False,
        "derived": [],
    }
    assert mem(where, "recall", "Oslo", "--include-archived", *NO_EMBEDDER) == []

    # consolidate
    dry = mem(where, "consolidate", "--dry-run")
    assert dry["dry_run"] is True and set(dry) == {
        "promoted",
        "linked",
        "decayed",
        "archived",
        "merged",
        "expired",
        "purged",
        "core_promoted",
        "core_demoted",
        "warm_evicted",
        "dry_run",
    }
    assert mem(where, "consolidate")["dry_run"] is False

    # every command works on one agent: another sees nothing
    other = ("--org", "o1", "--agent", "a2", "--json")
    assert js(run(where, "memory", "list", *other)) == []
    assert js(run(where, "memory", "recall", "Ana user", *other, *NO_EMBEDDER)) == []
    p = run(where, "memory", "archive", g["id"], *other, check=False)
    assert p.returncode == 4 and js(p)["error"] == "not_found"


def test_human_output(where: Path | str) -> None:
    run(where, "init")
    p = run(where, "memory", "grant", "Bo likes green tea", "--about", "Bo", *NO_EMBEDDER)
    assert p.stdout.startswith("remembered ")
    p = run(where, "memory", "grant", "Bo likes green tea", *NO_EMBEDDER)
    assert p.stdout.startswith("already remembered: ")
    listed = run(where, "memory", "list").stdout.splitlines()
    assert listed[0].split("\t") == [
        "created",
        "type",
        "conversation",
        "confidence",
        "id",
        "content",
    ]
    assert listed[1].endswith("\tBo likes green tea")
    assert "Bo likes green tea" in run(where, "memory", "recall", "green tea", *NO_EMBEDDER).stdout
    forgot = run(where, "memory", "forget", "--about", "bo").stdout
    assert forgot.startswith("forgot 1 memory; until ")
    token = forgot.split("agentzero memory undo ")[1].strip()
    assert run(where, "memory", "undo", token).stdout == "restored 1 memory\n"
    nothing = run(where, "memory", "forget", "--conversation", "none-such").stdout
    assert nothing == "nothing matched; nothing was forgotten\n"
    assert run(where, "memory", "facts").stdout == "no facts\n"
    assert run(where, "memory", "consolidate").stdout.startswith("consolidation did: ")


def test_errors_are_typed_with_hints_and_exit_codes(data_dir: Path) -> None:
    p = run(data_dir, "memory", "list", "--json", check=False)
    assert p.returncode == 4 and js(p)["error"] == "store_not_found" and js(p)["hint"]
    run(data_dir, "init")
    mid = mem(data_dir, "grant", "a note", *NO_EMBEDDER)["id"]
    before = tree_digest(data_dir)
    p = run(data_dir, "memory", "grant", "x", "--json", *NO_EMBEDDER, passphrase="no", check=False)
    assert p.returncode == 3 and js(p)["error"] == "wrong_key" and js(p)["hint"]
    assert tree_digest(data_dir) == before  # a wrong credential changes no byte
    # auto without an embedder is keyword search (as for every store), never an error
    assert mem(data_dir, "recall", "note", "--mode", "auto", *NO_EMBEDDER)[0]["id"] == mid
    cases: list[tuple[tuple[str, ...], int, str, str]] = [
        (("archive", "nope"), 4, "not_found", "no memory 'nope'"),
        (("undo", "not-a-token"), 4, "not_found", "no forget with this token"),
        (("feedback", "nope", "--unused"), 4, "not_found", "no memory 'nope'"),
        (("forget",), 2, "invalid_argument", "exactly one of --id, --conversation or --about"),
        (("forget", "--id", mid, "--about", "x"), 2, "invalid_argument", "exactly one of"),
        (("erase", "--yes"), 2, "invalid_argument", "exactly one of"),
        (("recall", "x", "--as-of", "2025-06-01T12:00:00"), 2, "invalid_argument", "--as-of"),
        (("recall", "x", "--mode", "fuzzy"), 2, "invalid_argument", "mode must be one of auto"),
        (("recall", "x", "--type", "dream"), 2, "invalid_argument", "types must be"),
        (("recall", "x", "--mode", "semantic", *NO_EMBEDDER), 2, "no_embedder", ""),
        (("remember", "x", "--ttl", "soon", *NO_EMBEDDER), 2, "invalid_argument", "--ttl"),
        (("remember", "x", "--type", "dream", *NO_EMBEDDER), 2, "invalid_argument", "types"),
        (
            ("fact", "a", "b", "c", "--confidence", "2", *NO_EMBEDDER),
            2,
            "invalid_argument",
            "0 to 1",
        ),
        (("list", "--kind", "rumour"), 2, "invalid_argument", "kind must be one of"),
        (("list", "--archived", "--include-archived"), 2, "invalid_argument", "not both"),
    ]
    for args, code, error, message in cases:
        p = mem(data_dir, *args, check=False)
        assert p.returncode == code, (args, p.stdout, p.stderr)
        assert js(p)["error"] == error and message in js(p)["message"], args
        assert "Traceback" not in p.stderr
    p = run(data_dir, "memory", "forget", check=False)  # human form: message and hint
    assert p.returncode == 2 and "error:" in p.stderr and "hint:" in p.stderr
    p = run(data_dir, "memory", "feedback", mid, check=False)  # --used or --unused
    assert p.returncode == 2 and "--used" in p.stderr


def test_the_store_commands_beside_them(data_dir: Path) -> None:
    """`memory search` and `memory delete` keep the memory store's old recall and
    scope delete (the names `recall` and `forget` went to the agent memory)."""
    run(data_dir, "init")
    a = js(run(data_dir, "memory", "append", "kettle one", "--org", "o1", *NO_EMBEDDER, "--json"))
    run(data_dir, "memory", "append", "kettle two", "--org", "o2", *NO_EMBEDDER)
    hits = js(run(data_dir, "memory", "search", "kettle", "--mode", "keyword", "--json"))
    assert {h["content"] for h in hits} == {"kettle one", "kettle two"}
    p = run(data_dir, "memory", "delete", a["id"], "--org", "o1", "--json", check=False)
    assert p.returncode == 2 and "not both" in js(p)["message"]
    p = run(data_dir, "memory", "delete", "--json", check=False)
    assert p.returncode == 2 and js(p)["hint"] == "nothing is deleted without an explicit target"
    assert js(run(data_dir, "memory", "delete", "--org", "o2", "--json")) == {"deleted": 1}
    assert js(run(data_dir, "memory", "delete", a["id"], "--json")) == {"deleted": a["id"]}
    assert js(run(data_dir, "memory", "recent", "--json")) == []


def test_consolidation_progress_names_each_step(monkeypatch: Any) -> None:
    """The bar `memory consolidate` shows on a terminal follows consolidate's callback."""
    import io

    from rich.console import Console

    from agentzero_store.cli import agent_output
    from agentzero_store.cli.common import STATE

    screen = io.StringIO()
    monkeypatch.setattr(agent_output, "err", Console(file=screen, force_terminal=True, width=100))
    monkeypatch.setattr(STATE, "json", False)
    with agent_output.steps("consolidating") as tell:
        for n, step in enumerate(["expire", "promote", "merge", "decay", "archive"], 1):
            tell(step, n, 5)
    shown = screen.getvalue()
    assert "consolidating: archive" in shown and "5/5" in shown
    screen.truncate(0)
    monkeypatch.setattr(STATE, "json", True)  # --json: nothing but the JSON
    with agent_output.steps("consolidating") as tell:
        tell("expire", 1, 5)
    assert screen.getvalue() == ""
