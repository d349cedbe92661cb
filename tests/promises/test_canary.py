"""Zero plaintext at rest: unique canaries and their vectors never appear under the data dir.

Memories and documents carry single-word canaries (and their embeddings). After
checkpoints, index rebuilds and kill -9 crashes mid-write, every file under the data dir
is scanned for each canary as UTF-8, UTF-16-LE and base64 (all three alignments), and for
the float32 bytes of every vector. Log lines are captured too: they must carry no content.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import Credential, MemoryEntry, SqliteMemoryStore
from agentzero_store.ops import backup_store
from rag import DocInput, DocumentStore

from ..conftest import FAST, scan_for

KEY = bytes(range(1, 33))


def canary() -> str:
    return "canary" + secrets.token_hex(6)


def base64_forms(word: str) -> list[bytes]:
    """The base64 core of ``word`` at each of the three byte alignments it can start at."""
    out = []
    raw = word.encode()
    for pad in range(3):
        enc = base64.b64encode(b"\x00" * pad + raw)
        # Drop the characters that mix in neighbouring bytes at either end.
        start = (pad * 4 + 2) // 3 + 1
        out.append(enc[start : len(enc) - 4])
    return [b for b in out if len(b) >= 8]


def needles_for(words: list[str], vectors: np.ndarray) -> list[bytes]:
    needles: list[bytes] = []
    for w in words:
        needles += [w.encode(), w.encode("utf-16-le"), *base64_forms(w)]
    for v in np.asarray(vectors, dtype=np.float32):
        raw = v.tobytes()
        needles += [raw[:16], raw[len(raw) // 2 : len(raw) // 2 + 16]]
        # The normalised form is what a store keeps: scan for it as well.
        needles.append((v / np.linalg.norm(v)).astype(np.float32).tobytes()[:16])
    return needles


CHILD = r"""
import sys, secrets, numpy as np
from agentzero_store import MemoryEntry, SqliteMemoryStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from rag import DocInput, DocumentStore
cfg = StoreConfig(kdf=FAST_KDF_FOR_TESTS, checkpoint_every=5, bm25_terms=sys.argv[3])
key = bytes(range(1, 33))
mem = SqliteMemoryStore.open(sys.argv[1], key=key, config=cfg, hnsw=True)
docs = DocumentStore.open(sys.argv[1], key=key, config=cfg)
rng = np.random.default_rng(int(sys.argv[2]))
while True:
    w = "canary" + secrets.token_hex(6)
    v = rng.normal(size=384).astype("float32")
    mem.append_with_embedding(MemoryEntry(content=f"note {w}", org_id="o"), v)
    docs.ingest(w, f"document about {w}", title=w)
    sys.stdout.write(w + " " + v.tobytes().hex() + "\n")
    sys.stdout.flush()
"""


@pytest.mark.crash
@pytest.mark.parametrize("terms", ["blinded", "sealed"])  # both BM25 modes of the documents
def test_canaries_never_reach_disk(
    data_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, terms: str
) -> None:
    import rag.catalog

    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(rag.catalog, "MIN_NEW_RECORDS", 1)  # every close writes a catalog
    cfg = replace(FAST, bm25_terms=terms)
    rng = np.random.default_rng(7)
    words: list[str] = []
    vecs: list[np.ndarray] = []
    # 1. Memories (with vectors, HNSW on) and documents, past several checkpoints.
    mem = SqliteMemoryStore.open(data_dir, key=KEY, config=FAST, hnsw=True)
    docs = DocumentStore.open(data_dir, key=KEY, config=cfg)
    for i in range(250):
        w, d = canary(), canary()
        v = rng.normal(size=384).astype(np.float32)
        words += [w, d]
        vecs.append(v)
        mem.append_with_embedding(MemoryEntry(content=w, conversation_id=d, metadata={"k": w}), v)
        docs.ingest_many([DocInput(d, f"{d} and {w}", title=w, metadata={"m": d})])
        if i % 50 == 0:
            mem.delete(mem.recent(1)[0].id or "")
    assert mem.semantic_recall(vecs[3], 1)[0].entry.content == words[6]
    assert docs.query(words[9], 1)[0].id == words[9]
    docs.rebuild_index()
    mem.rebuild_index()
    mem.close()
    docs.close()
    # 2. kill -9 a writer mid-write a few times; it adds its own canaries.
    for run in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(data_dir), str(run), terms],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        child.stdout.readline()
        time.sleep(0.2 + 0.15 * run)
        os.kill(child.pid, signal.SIGKILL)
        out = child.stdout.read()
        child.wait()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and len(parts[1]) == 384 * 8:
                words.append(parts[0])
                vecs.append(np.frombuffer(bytes.fromhex(parts[1]), dtype=np.float32))
    # 3. Reopen (torn tails repaired, sidecars caught up), back up, and scan everything.
    with (
        SqliteMemoryStore.open(data_dir, key=KEY, config=FAST, hnsw=True) as mem,
        DocumentStore.open(data_dir, key=KEY, config=cfg) as docs,
    ):
        assert docs.query(words[-1], 1)[0].id == words[-1] or len(words) % 2
    assert (data_dir / "rag" / "index.jsonl.catalog").stat().st_size > 0  # scanned too
    backup = data_dir.parent / "backup"
    backup_store(data_dir, Credential.from_key(KEY), backup)
    assert (backup / "memory.db").stat().st_size > 0
    needles = needles_for(words, np.stack(vecs))
    hits = scan_for(data_dir, needles) + scan_for(backup, needles)
    assert hits == [], f"plaintext at rest: {hits[:5]}"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert not [w for w in words if w in logged]


def test_the_scan_finds_planted_canaries(tmp_path: Path) -> None:
    """Control: each encoding the scan looks for is really found when present."""
    w = canary()
    v = np.random.default_rng(1).normal(size=384).astype(np.float32)
    needles = needles_for([w], v[None, :])
    for i, blob in enumerate(
        [
            w.encode(),
            w.encode("utf-16-le"),
            base64.b64encode(b"x" + w.encode()),
            base64.b64encode(b"xy" + w.encode()),
            b"..." + v.tobytes(),
        ]
    ):
        (tmp_path / f"f{i}").write_bytes(b"prefix" + blob + b"suffix")
    found = {Path(f).name for f, _ in scan_for(tmp_path, needles)}
    assert found == {f"f{i}" for i in range(5)}
