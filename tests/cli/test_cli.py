"""The CLI through the real `agentzero` console script, in subprocesses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ..conftest import AGENTZERO, child_env, js, tree_digest
from ..conftest import run_cli as run


def test_memory_round_trip(data_dir: Path) -> None:
    assert js(run(data_dir, "init", "--json"))["created"] is True
    ids = []
    for text, conv in [
        ("the blue notebook is in the attic", "c1"),
        ("buy a green notebook for school", "c2"),
        ("call the plumber on monday", "c1"),
    ]:
        ids.append(
            js(
                run(
                    data_dir,
                    "memory",
                    "append",
                    text,
                    "--conversation",
                    conv,
                    "--org",
                    "o1",
                    "--embedder",
                    "none",
                    "--json",
                )
            )["id"]
        )
    hits = js(run(data_dir, "memory", "search", "notebook", "--mode", "keyword", "--json"))
    assert {h["id"] for h in hits} == {ids[0], ids[1]}
    assert all("score" in h and h["ranks"]["keyword"] >= 1 for h in hits)
    scoped = js(
        run(
            data_dir,
            "memory",
            "search",
            "notebook",
            "--mode",
            "keyword",
            "--conversation",
            "c2",
            "--json",
        )
    )
    assert [h["id"] for h in scoped] == [ids[1]]
    recent = js(run(data_dir, "memory", "recent", "--limit", "2", "--json"))
    assert [r["id"] for r in recent] == [ids[2], ids[1]]
    assert js(run(data_dir, "memory", "get", ids[0], "--json"))["content"].startswith("the blue")
    assert js(run(data_dir, "memory", "delete", "--conversation", "c1", "--json")) == {"deleted": 2}
    assert js(run(data_dir, "memory", "gc", "--json")) == {"deleted": 0}
    human = run(data_dir, "memory", "recent").stdout
    assert "green notebook" in human and "attic" not in human


def test_import_and_semantic_recall_with_local_model(data_dir: Path) -> None:
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "memories.jsonl"
    run(data_dir, "init")
    assert js(run(data_dir, "memory", "import", str(fixtures), "--json"))["imported"] == 24
    hits = js(
        run(
            data_dir,
            "memory",
            "search",
            "what food am I allergic to",
            "--mode",
            "hybrid",
            "--org",
            "acme",
            "--limit",
            "2",
            "--json",
        )
    )
    assert "peanut" in hits[0]["content"]
    assert all(h["org_id"] == "acme" for h in hits)


def test_errors_are_typed_with_hints_and_exit_codes(data_dir: Path) -> None:
    p = run(data_dir, "memory", "recent", check=False)
    assert p.returncode == 4 and "agentzero init" in p.stderr  # no store yet
    run(data_dir, "init")
    run(data_dir, "memory", "append", "x", "--embedder", "none")
    before = tree_digest(data_dir)
    p = run(data_dir, "memory", "recent", "--json", passphrase="wrong", check=False)
    assert p.returncode == 3
    assert js(p)["error"] == "wrong_key" and js(p)["hint"]
    assert "Traceback" not in p.stderr
    assert tree_digest(data_dir) == before
    p = run(data_dir, "init", check=False)
    assert p.returncode == 4 and "already exists" in p.stderr
    p = run(data_dir, "memory", "get", "nope", "--json", check=False)
    assert p.returncode == 4 and js(p)["error"] == "not_found"
    p = run(
        data_dir, "memory", "append", "y", "--metadata", "{bad", "--embedder", "none", check=False
    )
    assert p.returncode == 2 and "metadata" in p.stderr
    p = run(data_dir, "memory", "forget", check=False)
    assert p.returncode == 2


def test_key_file_credential(tmp_path: Path, data_dir: Path) -> None:
    kf = tmp_path / "store.key"
    run(data_dir, "init", "--new-key-file", str(kf), passphrase="")
    assert kf.stat().st_mode & 0o777 == 0o600
    p = subprocess.run(
        [
            AGENTZERO,
            "--data-dir",
            str(data_dir),
            "--key-file",
            str(kf),
            "memory",
            "append",
            "via key file",
            "--embedder",
            "none",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
    )
    assert p.returncode == 0, p.stderr
    p = run(data_dir, "memory", "recent", passphrase="not-the-key", check=False)
    assert p.returncode == 3 and "key, not a passphrase" in p.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["memory", "--help"],
        ["memory", "recall", "--help"],
        ["memory", "search", "--help"],
    ],
)
def test_help(data_dir: Path, args: list[str]) -> None:
    assert "Usage" in run(data_dir, *args).stdout
