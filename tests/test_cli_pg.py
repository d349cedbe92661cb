"""The CLI on a PostgreSQL URL, through the real `agentzero` console script against a
real server (tests/pg_server.py): the memory store's commands work; commands that need a
data dir (the agent memory, documents, skills, keys, verify, ...) exit with a typed
error and a hint, never a traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import PASSPHRASE, child_env, js, run_agentzero


def run(
    url: str,
    *args: str,
    via: str = "flag",
    check: bool = True,
    passphrase: str = PASSPHRASE,
    extra: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``agentzero`` with the database URL given ``via`` --database-url, the env
    AGENTZERO_DATABASE_URL, or --data-dir."""
    env = {**child_env(), "COLUMNS": "250"}
    if passphrase:  # "": no passphrase in the environment (a key file instead)
        env["AGENTZERO_PASSPHRASE"] = passphrase
    where: list[str] = []
    if via == "flag":
        where = ["--database-url", url]
    elif via == "env":
        env["AGENTZERO_DATABASE_URL"] = url
    else:
        where = ["--data-dir", url]
    return run_agentzero([*extra, *where, *args], env=env, check=check)


def test_memory_store_commands_on_postgresql(pg_url: str) -> None:
    made = js(run(pg_url, "init", "--json"))
    assert made["created"] is True and made["data_dir"].startswith("postgresql://")
    again = run(pg_url, "init", check=False)
    assert again.returncode == 4 and "already exists" in again.stderr
    ids = []
    for text, conv, via in [
        ("the blue notebook is in the attic", "c1", "flag"),
        ("buy a green notebook for school", "c2", "env"),
        ("call the plumber on monday", "c1", "data-dir"),
    ]:
        p = run(
            pg_url, "memory", "append", text, "--conversation", conv, "--org", "o1",
            "--embedder", "none", "--json", via=via,
        )  # fmt: skip
        ids.append(js(p)["id"])
    hits = js(run(pg_url, "memory", "search", "notebook", "--mode", "keyword", "--json"))
    assert {h["id"] for h in hits} == {ids[0], ids[1]}
    scoped = js(
        run(pg_url, "memory", "search", "notebooks", "--mode", "keyword", "--conversation", "c2",
            "--json", via="env")
    )  # fmt: skip
    assert [h["id"] for h in scoped] == [ids[1]]
    assert [r["id"] for r in js(run(pg_url, "memory", "recent", "-n", "2", "--json"))] == [
        ids[2],
        ids[1],
    ]
    got = js(run(pg_url, "memory", "get", ids[0], "--json", via="data-dir"))
    assert got["content"].startswith("the blue")
    status = js(run(pg_url, "store", "status", "--json"))
    assert status["backend"] == "postgresql" and status["memories"] == 3
    assert status["scopes"] == [{"org_id": "o1", "agent_id": "default", "count": 3}]
    assert "PostgreSQL memory store" in run(pg_url, "store", "status").stdout
    assert js(run(pg_url, "memory", "delete", ids[2], "--json")) == {"deleted": ids[2]}
    missing = run(pg_url, "memory", "delete", ids[2], check=False)
    assert missing.returncode == 4 and "Traceback" not in missing.stderr
    assert js(run(pg_url, "memory", "delete", "--conversation", "c1", "--json")) == {"deleted": 1}
    assert js(run(pg_url, "memory", "gc", "--json")) == {"deleted": 0}
    human = run(pg_url, "memory", "recent").stdout
    assert "green notebook" in human and "attic" not in human


def test_import_on_postgresql(pg_url: str) -> None:
    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "memories.jsonl"
    run(pg_url, "init")
    r = js(run(pg_url, "memory", "import", str(fixtures), "--embedder", "none", "--json"))
    assert r["imported"] == 24
    assert js(run(pg_url, "store", "status", "--json"))["memories"] == 24


DATA_DIR_ONLY = [
    ("memory", "recall", "anything"),
    ("memory", "remember", "a fact"),
    ("memory", "forget", "--id", "x"),
    ("memory", "import-agentzero", "{fixture}"),
    ("namespace", "list"),
    ("skill", "list"),
    ("rag", "query", "anything"),
    ("store", "verify"),
    ("store", "rebuild"),
    ("store", "backup", "{tmp}/b"),
    ("store", "reembed", "--embedder", "none"),
    ("key", "rotate"),
    ("ui",),
    ("mcp",),
]


@pytest.mark.parametrize("args", DATA_DIR_ONLY, ids=lambda a: " ".join(a[:2]))
def test_commands_that_need_a_data_dir_refuse_a_url_with_a_typed_error(
    args: tuple[str, ...], pg_url: str, tmp_path: Path
) -> None:
    fixture = tmp_path / "agentzero.db"
    fixture.write_bytes(b"")
    argv = [a.format(tmp=tmp_path, fixture=fixture) for a in args]
    p = run(pg_url, *argv, check=False, via="env")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    assert "needs a data dir" in p.stderr and "hint:" in p.stderr
    assert f"agentzero {' '.join(args[:2]) if len(args) > 1 else args[0]}" in p.stderr
    j = run(pg_url, *argv, "--json", check=False) if args[0] not in ("ui", "mcp") else None
    if j is not None and j.stdout.strip():
        assert js(j)["error"] == "unsupported_by_backend" and j.returncode == 2


def test_errors_on_postgresql_are_typed_and_never_show_the_password(pg_url: str) -> None:
    run(pg_url, "init")
    wrong = run(pg_url, "memory", "recent", check=False, passphrase="not it")
    assert wrong.returncode == 3 and "Traceback" not in wrong.stderr
    assert "no row in the database was changed" in wrong.stderr
    keyring = run(pg_url, "init", "--keyring", check=False)
    assert keyring.returncode == 2 and "hint:" in keyring.stderr
    bad = run("postgresql://postgres:s3cretpw@127.0.0.1:1/nowhere", "memory", "recent", check=False)
    assert bad.returncode == 6 and "Traceback" not in bad.stderr
    assert "s3cretpw" not in bad.stderr + bad.stdout and "127.0.0.1:1/nowhere" in bad.stderr
    not_pg = run("mysql://x@y/z", "memory", "recent", check=False)
    assert not_pg.returncode == 2 and "postgresql://" in not_pg.stderr
    empty = pg_url.rsplit("/", 1)[0] + "/postgres"
    none = run(empty, "memory", "recent", check=False)
    assert none.returncode == 4 and "no memory store" in none.stderr


def test_init_with_a_new_key_file_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    key = tmp_path / "team.key"
    made = js(run(pg_url, "init", "--new-key-file", str(key), "--json", passphrase=""))
    assert made["created"] and key.stat().st_mode & 0o077 == 0
    with_key = ("--key-file", str(key))
    run(pg_url, "memory", "append", "keyed note", "--embedder", "none", extra=with_key,
        passphrase="")  # fmt: skip
    got = js(run(pg_url, "memory", "recent", "--json", extra=with_key, passphrase=""))
    assert [e["content"] for e in got] == ["keyed note"]
    again = run(pg_url, "init", "--new-key-file", str(tmp_path / "other.key"), check=False)
    assert again.returncode == 4 and not (tmp_path / "other.key").exists()
