"""``agentzero store status`` and ``agentzero store rebuild`` through the real console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentzero_store import SqliteMemoryStore, generate_key_file
from agentzero_store.sidecar.manifest import MANIFEST
from tests.conftest import child_env
from tests.support.hnsw import FAST, fill

AGENTZERO = str(Path(sys.executable).parent / "agentzero")


def run(data: Path, key_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env()
    env["COLUMNS"] = "250"
    return subprocess.run(
        [AGENTZERO, "--data-dir", str(data), "--key-file", str(key_file), "store", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def js(p: subprocess.CompletedProcess[str]) -> Any:
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_status_and_rebuild(tmp_path: Path) -> None:
    data, key_file = tmp_path / "data", tmp_path / "key"
    cred = generate_key_file(key_file)
    with SqliteMemoryStore.open(data, key=cred.secret, config=FAST, hnsw=True) as s:
        fill(s, 0, 150)
        seq = s.source_seq()

    (st,) = js(run(data, key_file, "status", "--json"))
    assert st["kind"] == "hnsw" and st["entries"] == 150 and st["dimension"] == 384
    assert st["covered_seq"] == st["source_seq"] == seq and st["behind"] == 0
    assert st["size_bytes"] > 150 * 384 * 4 and st["last_checkpoint"]

    human = run(data, key_file, "status")
    assert human.returncode == 0 and "150" in human.stdout and "memory.hnsw" in human.stdout

    m = json.loads((data / "memory.hnsw" / MANIFEST).read_text())
    before = [f["file"] for f in m["files"].values()]
    out = js(run(data, key_file, "rebuild", "--index", "hnsw", "--json"))
    assert out["rebuilt"] == ["hnsw"] and out["indexes"][0]["entries"] == 150
    m = json.loads((data / "memory.hnsw" / MANIFEST).read_text())
    assert [f["file"] for f in m["files"].values()] != before  # a fresh checkpoint

    bad = run(data, key_file, "rebuild", "--index", "nope", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"] == "invalid_argument"


def test_status_of_a_store_without_vectors(tmp_path: Path) -> None:
    data, key_file = tmp_path / "data", tmp_path / "key"
    cred = generate_key_file(key_file)
    SqliteMemoryStore.open(data, key=cred.secret, config=FAST).close()
    assert js(run(data, key_file, "status", "--json")) == []
