"""`agentzero rag ...` through the real console script."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag import DocumentStore

from ..conftest import FAST, js
from ..conftest import run_cli as run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "docs"


def test_rag_round_trip(data_dir: Path, tmp_path: Path) -> None:
    run(data_dir, "init")
    rep = js(run(data_dir, "rag", "ingest", str(FIXTURES), "--embedder", "none", "--json"))
    assert rep == {"added": 4, "updated": 0, "unchanged": 0, "skipped": [], "failed": []}
    again = js(run(data_dir, "rag", "ingest", str(FIXTURES), "--embedder", "none", "--json"))
    assert again["unchanged"] == 4
    note = tmp_path / "note.md"
    note.write_text("# Reminder\nThe plumber fixes the leaking radiator valve on Thursday.\n")
    assert (
        js(run(data_dir, "rag", "ingest", "--file", str(note), "--embedder", "none", "--json"))[
            "id"
        ]
        == "note.md"
    )
    run(
        data_dir,
        "rag",
        "ingest",
        "--id",
        "memo",
        "--text",
        "Radiator bleed key is in the drawer",
        "--metadata",
        '{"tag": "home"}',
        "--embedder",
        "none",
    )
    hits = js(run(data_dir, "rag", "query", "radiator valve", "--limit", "3", "--json"))
    assert [h["id"] for h in hits][:2] == ["note.md", "memo"] or hits[0]["id"] == "note.md"
    assert all({"id", "score", "text", "start", "end"} <= set(h) for h in hits)
    memo = next(h for h in hits if h["id"] == "memo")
    assert memo["metadata"] == {"tag": "home"} and "bleed key" in memo["text"]
    assert "Lisbon" in run(data_dir, "rag", "get", "travel/lisbon.md").stdout
    ids = {d["id"] for d in js(run(data_dir, "rag", "list", "--json"))}
    assert ids == {
        "boiler-manual.md",
        "sourdough.txt",
        "travel/kyoto.md",
        "travel/lisbon.md",
        "note.md",
        "memo",
    }
    assert js(run(data_dir, "rag", "delete", "--id", "memo", "--json")) == {"deleted": "memo"}
    assert run(data_dir, "rag", "get", "memo", check=False).returncode == 4
    comp = js(run(data_dir, "rag", "compact", "--json"))
    assert comp["bytes_after"] < comp["bytes_before"]
    assert js(run(data_dir, "rag", "query", "radiator", "--json"))[0]["id"] == "note.md"
    status = js(run(data_dir, "store", "status", "--json"))
    bm25 = next(r for r in status if r["kind"] == "bm25")
    assert bm25["entries"] == 5 and bm25["source_seq"] == 5
    p = run(data_dir, "rag", "query", "x", "--mode", "fuzzy", check=False)
    assert p.returncode == 2 and "bm25" in p.stderr


def test_rag_salvage_reports_the_damage(data_dir: Path, tmp_path: Path) -> None:
    run(data_dir, "init")
    run(data_dir, "rag", "ingest", str(FIXTURES), "--embedder", "none")
    log = data_dir / "rag" / "index.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    damaged = bytearray(lines[2])
    damaged[20] ^= 0x01
    offset = sum(len(x) for x in lines[:2])
    log.write_bytes(b"".join(lines[:2]) + bytes(damaged) + b"".join(lines[3:]))
    p = run(data_dir, "rag", "query", "boiler", "--json", check=False)
    assert p.returncode == 5
    err = js(p)
    assert err["record"] == 3 and err["offset"] == offset and err["path"].endswith("index.jsonl")
    assert log.stat().st_size == sum(len(x) for x in lines)  # nothing cut, nothing dropped
    out = tmp_path / "salvaged.jsonl"
    rep = js(run(data_dir, "rag", "salvage", str(out), "--json"))
    assert rep["recovered"] == 3 and rep["skipped"][0]["offset"] == offset


CHILD = r"""
import sys
from rag import DocInput, DocumentStore
from agentzero_store import StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
s = DocumentStore.open(sys.argv[1], key=bytes(range(32)),
                       config=StoreConfig(kdf=FAST_KDF_FOR_TESTS, checkpoint_every=7))
i = 0
while True:
    docs = [DocInput(f"doc-{i + j}", f"kill nine document {i + j} word{(i + j) % 13}")
            for j in range(3)]
    s.ingest_many(docs)
    sys.stdout.write(" ".join(d.id for d in docs) + "\n")
    sys.stdout.flush()
    i += 3
"""


@pytest.mark.crash
@pytest.mark.parametrize("run_no", range(8))
def test_kill9_during_ingest_keeps_every_acknowledged_document(data_dir: Path, run_no: int) -> None:
    DocumentStore.open(data_dir, key=bytes(range(32)), config=FAST).close()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acked = child.stdout.readline().split()
    time.sleep(0.05 + 0.07 * run_no)
    os.kill(child.pid, signal.SIGKILL)
    rest = child.stdout.read()
    child.wait()
    acked += [
        i for line in rest.splitlines(keepends=True) if line.endswith("\n") for i in line.split()
    ]
    with DocumentStore.open(data_dir, key=bytes(range(32)), config=FAST) as s:
        assert [d for d in acked if s.get(d) is None] == []
        for d in acked[-3:]:
            n = int(d.split("-")[1])
            assert d in {h.id for h in s.query(f"document {n}", 50)}


def test_bm25_mode_from_the_environment(data_dir: Path) -> None:
    tantivy = data_dir / "rag" / "index.jsonl.tantivy"
    run(data_dir, "init")
    run(data_dir, "rag", "ingest", str(FIXTURES), "--embedder", "none")
    assert list(tantivy.glob("*.tree")) and not list(tantivy.glob("*.sealed"))  # the default
    sealed = {"AGENTZERO_BM25_TERMS": "sealed"}
    hits = js(run(data_dir, "rag", "query", "boiler pressure", "--json", env=sealed))
    assert hits[0]["id"] == "boiler-manual.md"
    assert list(tantivy.glob("*.sealed")) and not list(tantivy.glob("*.tree"))  # rebuilt
    bad = run(
        data_dir,
        "rag",
        "query",
        "boiler",
        "--json",
        check=False,
        env={"AGENTZERO_BM25_TERMS": "plain"},
    )
    err = js(bad)
    assert bad.returncode == 2 and err["error"] == "invalid_argument", bad
    assert "blinded, sealed" in err["message"] and "AGENTZERO_BM25_TERMS" in err["hint"]
