"""`agentzero memory pin|unpin|context` and `agentzero namespace grant|revoke|list` through
the real console script (issue 17)."""

from __future__ import annotations

from pathlib import Path

from ..conftest import js
from ..conftest import run_cli as run

SCOPE = ("--org", "o1", "--agent", "a1")


def test_pin_and_context_through_the_cli(data_dir: Path) -> None:
    run(data_dir, "init")
    note = js(
        run(
            data_dir,
            "memory",
            "grant",
            "The user is vegetarian",
            *SCOPE,
            "--json",
            "--embedder",
            "none",
        )
    )
    pinned = js(run(data_dir, "memory", "pin", note["id"], *SCOPE, "--json"))
    assert pinned == {"pinned": [note["id"]]}
    run(
        data_dir,
        "memory",
        "append",
        "where shall we eat tonight?",
        "--conversation",
        "c1",
        "--org",
        "o1",
        "--agent",
        "a1",
        "--embedder",
        "none",
    )
    pack = js(
        run(
            data_dir,
            "memory",
            "context",
            "--conversation",
            "c1",
            "--max-tokens",
            "200",
            *SCOPE,
            "--json",
        )
    )
    assert [i["section"] for i in pack["items"]] == ["pinned", "hot"]
    assert pack["items"][0]["text"] == "The user is vegetarian"
    assert pack["tokens"] <= 200 and pack["text"].startswith("## Pinned")
    tiny = js(run(data_dir, "memory", "context", "-c", "c1", "--max-tokens", "3", *SCOPE, "--json"))
    assert tiny["tokens"] <= 3 and sum(tiny["left_out"].values()) >= 1
    human = run(data_dir, "memory", "context", "-c", "c1", *SCOPE)
    assert "## Recent turns" in human.stdout and "where shall we eat" in human.stdout
    assert js(run(data_dir, "memory", "unpin", note["id"], *SCOPE, "--json")) == {"pinned": []}


def test_namespaces_through_the_cli(data_dir: Path) -> None:
    run(data_dir, "init")
    g = js(
        run(data_dir, "namespace", "grant", "team", "b", "--org", "o1", "--agent", "a", "--json")
    )
    assert g == {"namespace": "team", "owner": "a", "members": ["b"]}
    listed = js(run(data_dir, "namespace", "list", "--org", "o1", "--agent", "b", "--json"))
    assert [(n["name"], n["role"]) for n in listed] == [("team", "member")]
    denied = run(
        data_dir, "namespace", "grant", "team", "c", "--org", "o1", "--agent", "b", check=False
    )
    assert denied.returncode == 3 and "owner" in denied.stderr
    js(run(data_dir, "namespace", "revoke", "team", "b", "--org", "o1", "--agent", "a", "--json"))
    assert js(run(data_dir, "namespace", "list", "--org", "o1", "--agent", "b", "--json")) == []
    stranger = run(data_dir, "namespace", "list", "--org", "o1", "--agent", "b")
    assert "no namespaces" in stranger.stdout
