"""The CLI on a PostgreSQL URL, through the real `agentzero` console script against a
real server (tests/support/pg_server.py): the memory store's commands work (the agent memory's:
tests/cli/test_cli_agent_memory.py runs them on both backends); commands that need a data
dir (documents, skills, verify, ...) exit with a
typed error and a hint, never a traceback. The key operations work on the database:
those that only rewrap a slot of the key header (change-passphrase, export-recovery) on
az_keys, and key rotate on every row."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agentzero_store.base.config import FAST_KDF_FOR_TESTS

from ..conftest import AGENTZERO, PASSPHRASE, child_env, js, run_agentzero, run_cli


def run(
    url: str,
    *args: str,
    via: str = "flag",
    check: bool = True,
    passphrase: str = PASSPHRASE,
    extra: tuple[str, ...] = (),
    more_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``agentzero`` with the database URL given ``via`` --database-url, the env
    AGENTZERO_DATABASE_URL, or --data-dir (and ``more_env`` in its environment)."""
    env = {**child_env(), "COLUMNS": "250", **(more_env or {})}
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
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "memories.jsonl"
    run(pg_url, "init")
    r = js(run(pg_url, "memory", "import", str(fixtures), "--embedder", "none", "--json"))
    assert r["imported"] == 24
    assert js(run(pg_url, "store", "status", "--json"))["memories"] == 24


DATA_DIR_ONLY = [
    ("memory", "import-agentzero", "{fixture}"),
    ("skill", "list"),
    ("rag", "query", "anything"),
    ("store", "verify"),
    ("store", "rebuild"),
    ("store", "backup", "{tmp}/b"),
    ("store", "reembed", "--embedder", "none"),
    ("ui",),
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
    j = run(pg_url, *argv, "--json", check=False) if args[0] != "ui" else None
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


NEW_PASSPHRASE = "a brand new passphrase for the team"


def az_keys(url: str) -> str:
    """The key header row of the store at ``url``, as stored."""
    import psycopg

    with psycopg.connect(url) as c:
        row = c.execute("SELECT header FROM az_keys").fetchone()
    assert row is not None
    return str(row[0])


def contents(url: str, **kw: Any) -> list[str]:
    """The memories the CLI shows with the credential in ``kw`` (newest first)."""
    return [e["content"] for e in js(run(url, "memory", "recent", "--json", **kw))]


def init_with_two_memories(url: str) -> list[str]:
    run(url, "init")
    for text in ("the spare key is under the mat", "water the plants on friday"):
        run(url, "memory", "append", text, "--embedder", "none")
    return contents(url)


def test_change_passphrase_on_postgresql(pg_url: str) -> None:
    before = init_with_two_memories(pg_url)
    header = az_keys(pg_url)
    new = {"AGENTZERO_NEW_PASSPHRASE": NEW_PASSPHRASE}
    wrong = run(pg_url, "key", "change-passphrase", check=False, passphrase="not it",
                more_env=new)  # fmt: skip
    assert wrong.returncode == 3 and "Traceback" not in wrong.stderr
    assert "no row in the database was changed" in wrong.stderr
    assert az_keys(pg_url) == header
    changed = js(run(pg_url, "key", "change-passphrase", "--json", via="env", more_env=new))
    assert changed["slot"] == "primary" and changed["slots"] == ["primary"]
    assert changed["data_dir"].startswith("postgresql://") and az_keys(pg_url) != header
    old = run(pg_url, "memory", "recent", check=False)
    assert old.returncode == 3 and "Traceback" not in old.stderr
    assert contents(pg_url, passphrase=NEW_PASSPHRASE) == before
    again = run(pg_url, "key", "change-passphrase", check=False, via="data-dir", more_env=new)
    assert again.returncode == 3 and az_keys(pg_url) != header


def test_export_recovery_on_postgresql(pg_url: str) -> None:
    before = init_with_two_memories(pg_url)
    header = az_keys(pg_url)
    wrong = run(pg_url, "key", "export-recovery", check=False, passphrase="not it")
    assert wrong.returncode == 3 and "no row in the database was changed" in wrong.stderr
    assert az_keys(pg_url) == header and wrong.stdout == ""
    got = js(run(pg_url, "key", "export-recovery", "--json", via="data-dir"))
    key = got["recovery_key"]
    assert len(key) == 64 and got["slots"] == ["primary", "recovery"]
    assert key not in az_keys(pg_url)
    with_key = {"AGENTZERO_DATA_KEY": key}
    assert contents(pg_url, passphrase="", more_env=with_key) == before
    assert contents(pg_url) == before  # the passphrase still opens it
    # The recovery key changes the passphrase of a store whose passphrase is lost.
    run(pg_url, "key", "change-passphrase", passphrase="",
        more_env={**with_key, "AGENTZERO_NEW_PASSPHRASE": NEW_PASSPHRASE})  # fmt: skip
    assert contents(pg_url, passphrase=NEW_PASSPHRASE) == before
    assert run(pg_url, "memory", "recent", check=False).returncode == 3
    newer = js(run(pg_url, "key", "export-recovery", "--json", passphrase=NEW_PASSPHRASE))
    assert newer["slots"] == ["primary", "recovery"]
    stale = run(pg_url, "memory", "recent", check=False, passphrase="", more_env=with_key)
    assert stale.returncode == 3  # the new recovery key replaced the old one


def test_a_key_change_waits_for_a_concurrent_one_and_keeps_its_slot(pg_url: str) -> None:
    """Two clients changing az_keys at once: the second reads the first one's header
    (the row is read FOR UPDATE), so neither loses the other's slot."""
    import psycopg

    from agentzero_store.storage.credentials import Credential
    from agentzero_store.storage.key_header import parse_header
    from agentzero_store.storage.keys import unlock_header, with_slot

    init_with_two_memories(pg_url)
    with psycopg.connect(pg_url) as held:  # one transaction, holding the row lock
        raw = held.execute("SELECT header FROM az_keys FOR UPDATE").fetchone()
        assert raw is not None
        header = parse_header(str(raw[0]).encode(), "az_keys")
        keys, _ = unlock_header(header, Credential.from_passphrase(PASSPHRASE), where="t", path="t")
        extra = Credential.from_passphrase("a third client's passphrase")
        mine = with_slot(header, keys, extra, slot_id="extra", kdf=FAST_KDF_FOR_TESTS)
        env = {**child_env(), "AGENTZERO_PASSPHRASE": PASSPHRASE}
        other = subprocess.Popen(
            [AGENTZERO, "--database-url", pg_url,
             "key", "export-recovery", "--json"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            waiting = (
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"
            )
            while held.execute(waiting).fetchone() != (1,):  # the other waits for this tx
                assert other.poll() is None, other.communicate()
                assert time.monotonic() < deadline, "the other client never waited"
                time.sleep(0.05)
            held.execute("UPDATE az_keys SET header = %s", (json.dumps(mine, sort_keys=True),))
        except BaseException:
            other.kill()
            raise
    out, errs = other.communicate(timeout=60)
    assert other.returncode == 0, errs
    assert json.loads(out)["slots"] == ["primary", "extra", "recovery"]
    final = parse_header(az_keys(pg_url).encode(), "az_keys")
    assert [s["id"] for s in final["slots"]] == ["primary", "extra", "recovery"]
    assert len(contents(pg_url, passphrase="a third client's passphrase")) == 2


def test_key_rotate_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    before = init_with_two_memories(pg_url)
    run(pg_url, "key", "export-recovery")  # a slot the rotation cannot rewrap
    header = az_keys(pg_url)
    wrong = run(pg_url, "key", "rotate", check=False, passphrase="not it")
    assert wrong.returncode == 3 and "Traceback" not in wrong.stderr
    assert "no row in the database was changed" in wrong.stderr and az_keys(pg_url) == header
    got = js(run(pg_url, "key", "rotate", "--json", via="env"))
    assert got["data_dir"].startswith("postgresql://") and got["memory_rekeyed"] is True
    assert got["slots_dropped"] == ["recovery"] and got["resumed"] is False
    assert got["resealed"]["az_memory"] == 2 and got["resealed"]["az_terms"] > 8
    assert got["recomputed"] == {}
    assert az_keys(pg_url) != header and contents(pg_url) == before
    # The same shape as on a data dir.
    data_dir = tmp_path / "data"
    run_cli(data_dir, "init")
    assert set(js(run_cli(data_dir, "key", "rotate", "--json"))) == set(got)
    human = run(pg_url, "key", "rotate", via="data-dir")
    assert "rotated the master key of postgresql://" in human.stdout
    assert "2 rows re-keyed in one transaction" in human.stdout and human.stderr == ""
    assert contents(pg_url) == before
    hits = js(run(pg_url, "memory", "search", "plants", "--mode", "keyword", "--json"))
    assert [h["content"] for h in hits] == ["water the plants on friday"]
