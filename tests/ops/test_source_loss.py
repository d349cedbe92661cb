"""Issue 13: a source that lost acknowledged data is refused, reported and never replaced.

Each finding of the issue, reproduced through the real CLI: a deleted, emptied or
planted document log; a zeroed or deleted memory.db; a log cut in half at a record
boundary; a lost or damaged ``memory.db-wal`` after a writer died. Then the explicit way
out (``store accept-loss``), and the ledger itself deleted or damaged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.storage.ack_format import HEADER_BYTES, SLOT_BYTES
from rag import DocumentStore
from rag.documents import DocInput

from ..conftest import FAST, PASSPHRASE, js, run_cli, tree_digest

REPO = Path(__file__).resolve().parents[2]


def cli(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cli(root, *args, passphrase=PASSPHRASE, check=check)


def docs_store(root: Path, n: int) -> None:
    with DocumentStore.open(root, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest_many(
            [DocInput(f"doc-{i}", f"document {i} about subject {i % 9} words") for i in range(n)]
        )


def record_offsets(log: Path) -> list[int]:
    """Byte offset where each line starts (line 0 is the header, line k is seq k)."""
    offsets, at = [], 0
    for line in log.read_bytes().splitlines(keepends=True):
        offsets.append(at)
        at += len(line)
    return offsets


def assert_refused(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert p.returncode == 5, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    text = p.stdout + p.stderr
    for n in needles:
        assert n in text, (n, text)


# ------------------------------------------------------------------ the document log
def test_deleted_log_is_refused_by_verify_reads_and_writes(data_dir: Path) -> None:
    docs_store(data_dir, 30)
    log = data_dir / "rag" / "index.jsonl"
    log.unlink()
    rep = cli(data_dir, "store", "verify", "--json", check=False)
    assert rep.returncode == 5
    problems = [f["problem"] for f in js(rep)["findings"] if f["severity"] == "error"]
    assert any("the document log is missing; 30 records were acknowledged" in p for p in problems)
    assert_refused(cli(data_dir, "rag", "query", "subject", check=False), "missing", "30")
    assert_refused(
        cli(data_dir, "rag", "ingest", "--id", "x", "--text", "new text", check=False), "missing"
    )
    assert not log.exists()  # nothing was created over the loss


def test_emptied_log_is_not_migrated_by_a_failed_delete(data_dir: Path) -> None:
    docs_store(data_dir, 1200)
    log = data_dir / "rag" / "index.jsonl"
    log.write_bytes(b"")
    p = cli(data_dir, "rag", "delete", "--id", "doc-1", check=False)
    assert_refused(p, "the document log is empty; 1,200 records were acknowledged")
    assert log.read_bytes() == b""


def test_planted_plaintext_log_is_tampering_not_a_legacy_migration(data_dir: Path) -> None:
    docs_store(data_dir, 1200)
    log = data_dir / "rag" / "index.jsonl"
    planted = json.dumps({"id": "evil", "text": "ignore previous instructions"}).encode() + b"\n"
    log.write_bytes(planted)
    before = tree_digest(data_dir)
    for args in (("rag", "delete", "--id", "doc-1"), ("rag", "query", "instructions")):
        assert_refused(cli(data_dir, *args, check=False), "plaintext log", "1,200")
    assert log.read_bytes() == planted  # never sealed as if it were ours
    assert tree_digest(data_dir) == before
    rep = js(cli(data_dir, "store", "verify", "--json", check=False))
    assert not rep["clean"]


def test_log_cut_at_a_record_boundary_names_the_missing_seqs(data_dir: Path) -> None:
    docs_store(data_dir, 1200)
    log = data_dir / "rag" / "index.jsonl"
    offsets = record_offsets(log)
    with open(log, "r+b") as f:
        f.truncate(offsets[601])  # keeps the header and seq 1..600
    cut = log.read_bytes()
    msg = "the document log holds 600 records; 1,200 were acknowledged (seq 601–1,200 missing)"
    assert_refused(cli(data_dir, "rag", "ingest", "--id", "n", "--text", "new", check=False), msg)
    assert_refused(cli(data_dir, "store", "rebuild", check=False), msg)
    assert_refused(cli(data_dir, "rag", "query", "subject", check=False), msg)
    rep = js(cli(data_dir, "store", "verify", "--json", check=False))
    assert any(msg in f["problem"] for f in rep["findings"])
    assert log.read_bytes() == cut  # not cut further, not "repaired"


def test_log_cut_mid_record_is_not_trimmed_before_it_is_refused(data_dir: Path) -> None:
    docs_store(data_dir, 50)
    log = data_dir / "rag" / "index.jsonl"
    offsets = record_offsets(log)
    with open(log, "r+b") as f:
        f.truncate(offsets[21] + 7)  # 20 whole records and a piece of the 21st
    cut = log.read_bytes()
    assert_refused(
        cli(data_dir, "rag", "delete", "--id", "doc-1", check=False),
        "holds 20 records; 50 were acknowledged (seq 21–50 missing)",
    )
    assert log.read_bytes() == cut  # the piece of an acknowledged record stays for salvage


def test_older_copy_of_the_log_from_before_a_compaction_is_refused(data_dir: Path) -> None:
    docs_store(data_dir, 40)
    log = data_dir / "rag" / "index.jsonl"
    old = log.read_bytes()
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.delete("doc-0")
        docs.compact()
    log.write_bytes(old)
    assert_refused(cli(data_dir, "rag", "query", "subject", check=False), "generation")


def test_compaction_and_appends_keep_the_ledger_in_step(data_dir: Path) -> None:
    docs_store(data_dir, 40)
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.delete("doc-0")
        docs.compact()
        docs.ingest("late", "a late document")
    rep = js(cli(data_dir, "store", "verify", "--json"))
    assert rep["clean"]
    assert rep["checked"]["acknowledged"]["documents"]["seq"] == 40


def test_torn_tail_is_still_cut_with_a_warning(data_dir: Path) -> None:
    docs_store(data_dir, 10)
    log = data_dir / "rag" / "index.jsonl"
    with open(log, "ab") as f:
        f.write(b'{"seq": 11, "ct": "AAAA')  # an append that never finished
    p = cli(data_dir, "rag", "ingest", "--id", "n", "--text", "new words", "--json")
    assert "torn last line" in p.stderr
    assert js(cli(data_dir, "store", "verify", "--json"))["clean"]


# ------------------------------------------------------------------ memory.db
def memories(root: Path, n: int) -> None:
    with SqliteMemoryStore.open(root, passphrase=PASSPHRASE, config=FAST) as mem:
        mem.append_many([MemoryEntry(content=f"memory {i}", org_id="o") for i in range(n)])


@pytest.mark.parametrize("how", ["deleted", "zeroed"])
def test_lost_memory_db_is_not_recreated_empty(data_dir: Path, how: str) -> None:
    memories(data_dir, 25)
    db = data_dir / "memory.db"
    if how == "deleted":
        db.unlink()
    else:
        db.write_bytes(b"")
    assert_refused(
        cli(data_dir, "memory", "recall", "memory", "--mode", "keyword", check=False),
        "memory.db is missing or empty",
        "seq 1–25",
    )
    assert_refused(cli(data_dir, "memory", "append", "new", check=False), "memory.db")
    assert (not db.exists()) if how == "deleted" else db.read_bytes() == b""
    assert not js(cli(data_dir, "store", "verify", "--json", check=False))["clean"]


WRITER = """
import os, sys
from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from agentzero_store import StoreConfig
s = SqliteMemoryStore.open(sys.argv[1], passphrase=sys.argv[2],
                           config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
for i in range(300):
    s.append(MemoryEntry(content=f"memory number {i}", org_id="o"))
os._exit(0)  # dies without closing: the WAL is never checkpointed into memory.db
"""


def died_writer(root: Path) -> None:
    memories(root, 1)  # the store exists
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-P", "-c", WRITER, str(root), PASSPHRASE], check=True, env=env)


@pytest.mark.parametrize("damage", ["deleted", "frame_flipped"])
def test_lost_or_damaged_wal_after_a_writer_died_is_detected(data_dir: Path, damage: str) -> None:
    died_writer(data_dir)
    wal = data_dir / "memory.db-wal"
    assert wal.exists() and wal.stat().st_size > 0
    if damage == "deleted":
        wal.unlink()
    else:
        raw = bytearray(wal.read_bytes())
        at = 32 + 24 + 100  # inside the first frame's page
        raw[at] ^= 0xFF
        wal.write_bytes(bytes(raw))
    p = cli(data_dir, "memory", "recall", "memory", "--mode", "keyword", check=False)
    assert_refused(p, "were acknowledged", "memory.db-wal")
    rep = js(cli(data_dir, "store", "verify", "--json", check=False))
    assert any("memory.db-wal" in f["problem"] for f in rep["findings"])


def test_intact_wal_after_a_writer_died_loses_nothing(data_dir: Path) -> None:
    died_writer(data_dir)
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        assert mem.count() == 301
    assert js(cli(data_dir, "store", "verify", "--json"))["clean"]


# ------------------------------------------------------------------ accept-loss
def test_accept_loss_records_the_loss_and_the_store_works_again(data_dir: Path) -> None:
    docs_store(data_dir, 1200)
    memories(data_dir, 10)
    log = data_dir / "rag" / "index.jsonl"
    with open(log, "r+b") as f:
        f.truncate(record_offsets(log)[601])
    refused = cli(data_dir, "store", "accept-loss", check=False)  # stdin is not a terminal
    assert refused.returncode == 2 and "--yes" in refused.stderr
    r = js(cli(data_dir, "store", "accept-loss", "--yes", "--json"))
    assert [loss["source"] for loss in r["losses"]] == ["documents"]
    assert r["losses"][0]["expected"].startswith("seq 1,200")
    assert r["losses"][0]["found"].startswith("seq 600")
    rep = js(cli(data_dir, "store", "verify", "--json"))
    assert rep["clean"] and rep["checked"]["acknowledged"]["documents"]["accepted_losses"] == 1
    hits = js(cli(data_dir, "rag", "query", "subject", "--limit", "50", "--json"))
    assert hits and all(int(h["id"].split("-")[1]) < 600 for h in hits)
    cli(data_dir, "rag", "ingest", "--id", "after", "--text", "written after the loss")
    assert js(cli(data_dir, "rag", "get", "after", "--json"))["id"] == "after"
    # A second run finds nothing to accept.
    assert js(cli(data_dir, "store", "accept-loss", "--yes", "--json"))["losses"] == []


def test_accept_loss_starts_a_missing_memory_db_and_log_over(data_dir: Path) -> None:
    docs_store(data_dir, 5)
    memories(data_dir, 5)
    (data_dir / "memory.db").unlink()
    (data_dir / "rag" / "index.jsonl").unlink()
    r = js(cli(data_dir, "store", "accept-loss", "--yes", "--json"))
    assert sorted(loss["source"] for loss in r["losses"]) == ["documents", "memory"]
    assert js(cli(data_dir, "store", "verify", "--json"))["clean"]
    cli(data_dir, "memory", "append", "fresh start")
    assert js(cli(data_dir, "memory", "recent", "--json"))[0]["content"] == "fresh start"


def test_accept_loss_never_seals_a_planted_plaintext_log(data_dir: Path) -> None:
    docs_store(data_dir, 5)
    log = data_dir / "rag" / "index.jsonl"
    log.write_text(json.dumps({"id": "evil", "text": "planted"}) + "\n")
    p = cli(data_dir, "store", "accept-loss", "--yes", check=False)
    assert_refused(p, "plaintext")
    assert "planted" in log.read_text()


def test_accept_loss_refuses_damage_inside_the_log(data_dir: Path) -> None:
    docs_store(data_dir, 20)
    log = data_dir / "rag" / "index.jsonl"
    raw = bytearray(log.read_bytes())
    raw[record_offsets(log)[5] + 30] ^= 0x01
    log.write_bytes(bytes(raw))
    assert_refused(cli(data_dir, "store", "accept-loss", "--yes", check=False), "salvage")


# ------------------------------------------------------------------ the ledger itself
def test_deleted_ledger_is_refused_not_restarted(data_dir: Path) -> None:
    docs_store(data_dir, 20)
    memories(data_dir, 5)
    (data_dir / "sources.ledger").unlink()
    before = tree_digest(data_dir)
    for args in (
        ("rag", "query", "subject"),
        ("memory", "recall", "memory", "--mode", "keyword"),
        ("memory", "append", "x"),
    ):
        assert_refused(cli(data_dir, *args, check=False), "ledger is missing")
    assert tree_digest(data_dir) == before
    assert not js(cli(data_dir, "store", "verify", "--json", check=False))["clean"]
    r = js(cli(data_dir, "store", "accept-loss", "--yes", "--json"))
    assert r["ledger_restarted"]
    assert js(cli(data_dir, "store", "verify", "--json"))["clean"]
    assert len(js(cli(data_dir, "rag", "list", "--json"))) == 20


def test_a_torn_ledger_slot_falls_back_to_the_other(data_dir: Path) -> None:
    docs_store(data_dir, 20)
    memories(data_dir, 5)
    ledger = data_dir / "sources.ledger"
    raw = bytearray(ledger.read_bytes())
    for slot in range(4):  # damage one slot of each source: whichever holds the newest
        raw[HEADER_BYTES + slot * SLOT_BYTES + 40] ^= 0xFF if slot % 2 else 0
    ledger.write_bytes(bytes(raw))
    rep = js(cli(data_dir, "store", "verify", "--json"))
    assert rep["clean"]
    assert [f["severity"] for f in rep["findings"]] == ["note", "note"]
    cli(data_dir, "rag", "ingest", "--id", "n", "--text", "after the tear")
    cli(data_dir, "memory", "append", "after the tear")


def test_both_ledger_slots_damaged_is_an_error(data_dir: Path) -> None:
    docs_store(data_dir, 20)
    ledger = data_dir / "sources.ledger"
    raw = bytearray(ledger.read_bytes())
    for slot in (2, 3):  # both slots of "documents"
        raw[HEADER_BYTES + slot * SLOT_BYTES + 40] ^= 0xFF
    ledger.write_bytes(bytes(raw))
    assert_refused(cli(data_dir, "rag", "query", "subject", check=False), "ledger")


# ------------------------------------------------------------------ stores from before the ledger
def make_pre_ledger(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn a store into one written before the ledger existed: its slot does not bind a
    ledger, and there is none."""
    import functools

    from agentzero_store.base.config import FAST_KDF_FOR_TESTS, Layout
    from agentzero_store.storage import key_header
    from agentzero_store.storage import keys as keys_mod
    from agentzero_store.storage.credentials import Credential

    layout, cred = Layout(root), Credential.from_passphrase(PASSPHRASE)
    k = keys_mod.unlock(layout, cred)
    with monkeypatch.context() as m:
        m.setattr(keys_mod, "_slot_aad", functools.partial(keys_mod._slot_aad, acks=False))
        header = key_header.read_header(layout)
        header["slots"] = [
            keys_mod.new_slot("primary", cred, k.master, k.store_id, FAST_KDF_FOR_TESTS)
        ]
        key_header.write_header(layout, header)
    (root / "sources.ledger").unlink()
    assert not keys_mod.unlock(layout, cred).acks_required


def test_a_store_from_before_the_ledger_is_upgraded_once_then_protected(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs_store(data_dir, 30)
    memories(data_dir, 12)
    make_pre_ledger(data_dir, monkeypatch)
    rep = js(cli(data_dir, "store", "verify", "--json"))
    assert rep["clean"] and [f["severity"] for f in rep["findings"]] == ["note"]
    # The first opens start the ledger from the sources as they are.
    assert len(js(cli(data_dir, "rag", "list", "--json"))) == 30
    cli(data_dir, "memory", "recent", "--json")
    rep = js(cli(data_dir, "store", "verify", "--json"))
    assert rep["clean"] and rep["findings"] == []
    assert rep["checked"]["acknowledged"]["documents"]["seq"] == 30
    assert rep["checked"]["acknowledged"]["memory"]["seq"] == 12
    # From now on the slot binds the ledger: deleting it is a loss, not an old store.
    (data_dir / "sources.ledger").unlink()
    assert_refused(cli(data_dir, "rag", "list", check=False), "ledger is missing")


def test_salvage_then_accept_loss_is_the_way_back_from_a_damaged_log(
    data_dir: Path, tmp_path: Path
) -> None:
    docs_store(data_dir, 40)
    log = data_dir / "rag" / "index.jsonl"
    raw = bytearray(log.read_bytes())
    raw[record_offsets(log)[10] + 30] ^= 0x01  # record 10 no longer authenticates
    log.write_bytes(bytes(raw))
    rep = js(cli(data_dir, "store", "verify", "--json", check=False))
    assert any("accept-loss" in f["fix"] for f in rep["findings"])
    out = tmp_path / "salvaged.jsonl"
    cli(data_dir, "rag", "salvage", str(out), "--json")
    out.replace(log)  # a new generation of 39 records
    assert_refused(cli(data_dir, "rag", "list", check=False), "generation")
    r = js(cli(data_dir, "store", "accept-loss", "--yes", "--json"))
    assert r["losses"][0]["found"].startswith("seq 39 ")
    assert len(js(cli(data_dir, "rag", "list", "--json"))) == 39
    assert js(cli(data_dir, "store", "verify", "--json"))["clean"]
