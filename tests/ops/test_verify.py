"""`verify`: clean on a healthy store; every kind of damage is a finding naming where."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agentzero_store.base.config import Layout
from agentzero_store.base.errors import WrongKeyError
from agentzero_store.ops import verify_store
from agentzero_store.ops.verify.report import FIX_REBUILD, FIX_RESTORE, FIX_SALVAGE
from agentzero_store.storage.credentials import Credential

from ..conftest import js, run_cli
from .conftest import CRED


def _flip(path: Path, offset: int) -> bytes:
    data = path.read_bytes()
    damaged = bytearray(data)
    damaged[offset] ^= random.Random(offset).randrange(1, 256)
    path.write_bytes(bytes(damaged))
    return data


def test_healthy_store_is_clean(populated: Path) -> None:
    report = verify_store(populated, CRED)
    assert report.clean and report.findings == []
    assert report.checked["document_log"] == {"records": 27, "live": 25}
    assert report.checked["memory_db"]["seq"] == 121
    sidecars = report.checked["sidecars"]
    assert sidecars["memory.hnsw"]["entries"] == 121
    assert sidecars["index.jsonl.tantivy"]["covered_seq"] == 27


def test_progress_is_told_after_each_check(populated: Path) -> None:
    steps: list[tuple[str, int, int]] = []
    report = verify_store(populated, CRED, progress=lambda *step: steps.append(step))
    assert report.clean
    stages = ["keys.json", "ledger", "memory.db", "memory.archive.db", "rag/index.jsonl"]
    sidecars = list(report.checked["sidecars"])
    assert [s for s, _, _ in steps] == stages + sidecars
    assert [d for _, d, _ in steps] == list(range(1, len(steps) + 1))
    assert len(sidecars) == 3 and {t for _, _, t in steps} == {8}  # the most there can be
    assert steps[-1][1] == steps[-1][2]  # the last step completes it


def test_wrong_credential_is_an_error_not_a_finding(populated: Path) -> None:
    with pytest.raises(WrongKeyError):
        verify_store(populated, Credential.from_passphrase("nope"))


def test_sqlcipher_page_tampering_at_200_offsets_is_detected(populated: Path) -> None:
    db = Layout(populated).memory_db
    assert (
        not db.with_name("memory.db-wal").exists()
        or db.with_name("memory.db-wal").stat().st_size == 0
    )
    size = db.stat().st_size
    rng = random.Random(2024)
    missed = []
    for offset in sorted(rng.sample(range(size), 200)):
        original = _flip(db, offset)
        try:
            report = verify_store(populated, CRED)
            mine = [f for f in report.findings if f.file == str(db)]
            if report.clean or not mine or any(f.fix != FIX_RESTORE for f in mine):
                missed.append(offset)
        finally:
            db.write_bytes(original)
            for extra in (db.with_name("memory.db-wal"), db.with_name("memory.db-shm")):
                extra.unlink(missing_ok=True)
    assert missed == [], f"{len(missed)} of 200 tampered offsets not detected: {missed[:10]}"
    assert verify_store(populated, CRED).clean


def test_tampered_page_is_named(populated: Path) -> None:
    db = Layout(populated).memory_db
    _flip(db, 4096 * 3 + 100)  # inside page 4
    report = verify_store(populated, CRED)
    assert not report.clean
    assert any(f.where == "page 4" for f in report.findings), report.findings


def test_document_record_damage_names_line_and_offset(populated: Path) -> None:
    log = Layout(populated).rag_log
    lines = log.read_bytes().splitlines(keepends=True)
    offset = sum(len(x) for x in lines[:4]) + 40  # inside line 5
    _flip(log, offset)
    report = verify_store(populated, CRED)
    (f,) = [f for f in report.findings if f.file == str(log)]
    assert f.where == f"line 5, byte {offset - 40}" and f.fix == FIX_SALVAGE
    assert not report.clean


def test_torn_tail_is_a_note_not_an_error(populated: Path) -> None:
    log = Layout(populated).rag_log
    with open(log, "ab") as fh:
        fh.write(b'{"seq":28,"ct":"abc')
    report = verify_store(populated, CRED)
    assert report.clean
    (note,) = report.findings
    assert note.severity == "note" and "torn" in note.problem


@pytest.mark.parametrize("target", ["manifest", "data"])
def test_damaged_sidecar_checkpoint_is_a_finding(populated: Path, target: str) -> None:
    d = Layout(populated).rag_tantivy
    # The default BM25 checkpoint is a tree of Tantivy files (blinded terms).
    path = d / "manifest.json" if target == "manifest" else next(d.glob("*.tree/*.term"))
    _flip(path, path.stat().st_size // 2)
    report = verify_store(populated, CRED)
    (f,) = report.findings
    assert f.file == str(d) and f.fix == FIX_REBUILD and not report.clean


def test_cli_verify_exit_codes(populated: Path) -> None:
    ok = run_cli(populated, "store", "verify", "--json", passphrase="correct horse battery staple")
    assert js(ok)["clean"] is True
    log = Layout(populated).rag_log
    _flip(log, log.stat().st_size - 30)
    bad = run_cli(
        populated,
        "store",
        "verify",
        "--json",
        check=False,
        passphrase="correct horse battery staple",
    )
    assert bad.returncode == 5 and js(bad)["findings"][0]["fix"] == FIX_SALVAGE
    human = run_cli(
        populated, "store", "verify", check=False, passphrase="correct horse battery staple"
    )
    assert human.returncode == 5 and "NOT clean" in human.stdout
