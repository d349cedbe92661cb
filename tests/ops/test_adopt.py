"""`agentzero init` adopts an older AgentZero data dir: its plaintext rag/index.jsonl is
sealed under a new key, nothing of it is left in the clear, and a kill -9 at any instant
leaves either the untouched plaintext log (init again adopts it) or the finished store."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentzero_store.base.config import Layout
from agentzero_store.base.errors import StoreExistsError
from agentzero_store.ops import verify_store
from agentzero_store.ops.create import init_store
from agentzero_store.storage.acks import SourceLossError
from agentzero_store.storage.credentials import Credential
from agentzero_store.storage.datadir import create_data_dir, open_data_dir
from rag import DocumentStore
from rag.log import DocumentLog
from rag.migrate import log_kind

from ..conftest import FAST, PASSPHRASE, js, run_cli, scan_for, text_needles, tree_digest

REPO = Path(__file__).resolve().parents[2]

LEGACY = [
    {"id": "notes/boiler.md", "text": "The boiler pressure should sit near 1.5 bar.",
     "title": "Boiler", "metadata": {"tags": ["home"]}},
    {"id": "b", "text": "An old version of b that must not survive anywhere."},
    {"id": "c", "text": "Cassowaries can sprint at fifty kilometres per hour.",
     "source": "/home/ana/zoo/cassowary.txt"},
    {"id": "b", "text": "Bristlecone pines live for nearly five millennia."},
]  # fmt: skip


def write_legacy(root: Path, records: list[dict[str, object]]) -> Path:
    log = Layout(root).rag_log
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return log


def needles(records: list[dict[str, object]]) -> list[bytes]:
    out = [b"/home/ana", b"notes/boiler.md"]
    for r in records:
        out += text_needles(str(r["text"]))
    return out


def test_init_adopts_a_plaintext_log_through_the_real_cli(data_dir: Path) -> None:
    write_legacy(data_dir, LEGACY)
    r = js(run_cli(data_dir, "init", "--json", passphrase=PASSPHRASE))
    assert r["created"] is True and r["adopted_documents"] == 3 and r["resumed"] is False
    # No plaintext anywhere: not in the sealed log, no .bak, no temp file, no index.
    assert scan_for(data_dir, needles(LEGACY)) == []
    names = {str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file()}
    assert names <= {
        "keys.json", "sources.ledger", "writer.lock", "memory.db", "memory.db-wal",
        "memory.db-shm", "rag/index.jsonl", "rag/index.jsonl.lock",
    }, names  # fmt: skip
    doc = js(run_cli(data_dir, "rag", "get", "notes/boiler.md", "--json", passphrase=PASSPHRASE))
    assert doc["text"] == LEGACY[0]["text"] and doc["title"] == "Boiler"
    b = js(run_cli(data_dir, "rag", "get", "b", "--json", passphrase=PASSPHRASE))
    assert b["text"].startswith("Bristlecone")  # the last line of an id wins
    hits = js(
        run_cli(
            data_dir,
            *("rag", "query", "cassowary sprint", "--mode", "bm25", "--json"),
            passphrase=PASSPHRASE,
        )
    )
    assert hits[0]["id"] == "c"
    assert js(run_cli(data_dir, "store", "verify", "--json", passphrase=PASSPHRASE))["clean"]
    # Adopted once: init again is "a store already exists", and changes nothing.
    before = tree_digest(data_dir)
    p = run_cli(data_dir, "init", "--json", passphrase=PASSPHRASE, check=False)
    assert p.returncode == 4 and js(p)["error"] == "store_exists"
    assert tree_digest(data_dir) == before


def test_a_bad_legacy_line_is_refused_before_anything_is_written(data_dir: Path) -> None:
    log = write_legacy(data_dir, LEGACY)
    with log.open("a") as f:
        f.write("not json\n")
    before = tree_digest(data_dir)
    p = run_cli(data_dir, "init", "--json", passphrase=PASSPHRASE, check=False)
    assert p.returncode == 5, p.stderr
    err = js(p)
    assert err["record"] == len(LEGACY) + 1 and "not a document" in err["message"]
    assert tree_digest(data_dir) == before  # no keys.json, no ledger, nothing


def test_an_agentzero_memory_db_is_not_adopted_in_place(data_dir: Path) -> None:
    write_legacy(data_dir, LEGACY)
    with sqlite3.connect(data_dir / "memory.db") as db:
        db.execute("CREATE TABLE memory (role TEXT, content TEXT)")
    before = tree_digest(data_dir)
    p = run_cli(data_dir, "init", "--json", passphrase=PASSPHRASE, check=False)
    assert p.returncode == 4
    err = js(p)
    assert "plain SQLite" in err["message"] and "import-agentzero" in err["hint"]
    assert tree_digest(data_dir) == before


def test_a_plaintext_log_where_a_sealed_one_was_is_never_adopted(data_dir: Path) -> None:
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("d1", "a sealed document")
    planted = Layout(data_dir).rag_log
    planted.write_text(json.dumps({"id": "x", "text": "planted"}) + "\n")
    before = tree_digest(data_dir)
    with pytest.raises(SourceLossError, match="plaintext log is where the sealed document log was"):
        init_store(data_dir, passphrase=PASSPHRASE, config=FAST, prompt=False)
    assert tree_digest(data_dir) == before
    assert log_kind(planted) == "plaintext"


def test_init_finishes_an_adoption_interrupted_after_keys_json(data_dir: Path) -> None:
    log = write_legacy(data_dir, LEGACY)
    original = log.read_bytes()
    # The state a crash leaves between writing keys.json and sealing the log.
    create_data_dir(Layout(data_dir), Credential.from_passphrase(PASSPHRASE), kdf=FAST.kdf,
                    adopt_log=True)  # fmt: skip
    assert log.read_bytes() == original
    r = init_store(data_dir, passphrase=PASSPHRASE, config=FAST, prompt=False)
    assert r.resumed and not r.created and r.adopted_documents == 3
    assert scan_for(data_dir, needles(LEGACY)) == []
    with pytest.raises(StoreExistsError):
        init_store(data_dir, passphrase=PASSPHRASE, config=FAST, prompt=False)


# ----------------------------------------------------------------------------- kill -9

CHILD = """
import sys
from pathlib import Path
from agentzero_store.ops import verify_store
from agentzero_store.ops.create import init_store
from tests.conftest import FAST, PASSPHRASE
print("READY", flush=True)
r = init_store(Path(sys.argv[1]), passphrase=PASSPHRASE, config=FAST, prompt=False)
print("DONE", r.adopted_documents, flush=True)
"""


def _big_legacy(n: int) -> list[dict[str, object]]:
    rng = random.Random(7)
    return [
        {"id": f"doc-{i}", "text": f"legacy document {i} " + " ".join(
            f"w{rng.randrange(5000)}" for _ in range(60))}
        for i in range(n)
    ]  # fmt: skip


def _adopt_in_child(root: Path, delay: float | None) -> bool:
    """Run the adoption in a child; SIGKILL it ``delay`` s after it is ready (None: let it
    finish). True if it finished before the kill."""
    child = subprocess.Popen(
        [sys.executable, "-P", "-c", CHILD, str(root)],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert child.stdout is not None and child.stderr is not None
    if child.stdout.readline() != "READY\n":
        child.wait()
        raise RuntimeError(child.stderr.read())
    if delay is not None:
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
    out = child.stdout.read()
    child.wait()
    if delay is None and child.returncode != 0:
        raise RuntimeError(child.stderr.read())
    return "DONE" in out


@pytest.mark.crash
def test_kill_9_during_adoption_loses_nothing_and_init_again_finishes(tmp_path: Path) -> None:
    records = _big_legacy(6000)
    sample = [r for i, r in enumerate(records) if i % 500 == 0]
    # How long one adoption takes here (from "ready"): the kills are spread over it.
    t0 = time.monotonic()
    assert _adopt_in_child(_fresh(tmp_path / "timing", records), None)
    span = time.monotonic() - t0
    for k in range(12):
        root = _fresh(tmp_path / f"kill-{k}", records)
        original = Layout(root).rag_log.read_bytes()
        finished = _adopt_in_child(root, span * k / 10)
        layout = Layout(root)
        kind = log_kind(layout.rag_log)
        # Never a half state: the plaintext log byte for byte, or the sealed one.
        assert kind in ("plaintext", "sealed"), kind
        if kind == "plaintext":
            assert layout.rag_log.read_bytes() == original
        if not finished:
            if kind == "sealed":
                assert layout.keys.exists()
            else:
                # init again (same credential) adopts the untouched log.
                r = init_store(root, passphrase=PASSPHRASE, config=FAST, prompt=False)
                assert r.adopted_documents == len(records)
        report = verify_store(root, Credential.from_passphrase(PASSPHRASE))
        assert report.clean, report.findings
        _, keys = open_data_dir(root, passphrase=PASSPHRASE, create=False)
        with DocumentLog.open(layout.rag_log, keys, readonly=True) as doclog:
            assert len(doclog) == len(records)
            for r in sample:
                got = doclog.get(str(r["id"]))
                assert got is not None and got.text == r["text"]
        assert scan_for(root, needles(sample)) == [], k


def _fresh(root: Path, records: list[dict[str, object]]) -> Path:
    write_legacy(root, records)
    return root


def test_documentlog_reports_how_many_it_sealed(tmp_path: Path) -> None:
    from rag.maintenance import legacy_documents

    log = write_legacy(tmp_path / "d", LEGACY)
    assert legacy_documents(log) == 3
    keys = create_data_dir(Layout(tmp_path / "d"), Credential.from_passphrase("p"),
                           kdf=FAST.kdf, adopt_log=True)[0]  # fmt: skip
    with DocumentLog.open(log, keys) as doclog:
        assert doclog.migrated == 3 and len(doclog) == 3
    with DocumentLog.open(log, keys) as doclog:
        assert doclog.migrated is None
