"""Erase, proven on the bytes: after ``AgentMemory.erase`` the erased text and vectors are
nowhere under the data dir (issue 15).

Asking SQLCipher shows live rows only. This test reads what is on disk: every page of
memory.db and its WAL and of memory.archive.db, decrypted with their keys
(``tests.support.sqlcipher_pages``); the raw bytes of every file; and the HNSW checkpoint,
decrypted the way the sidecar itself reads it. Each scan is first shown to FIND what it
looks for (before the erase, or in a kept memory), so a scan that cannot see is caught.

Needles: text is searched as two halves overlapping by one byte as well as whole, so a
word that SQLite stored across two pages (an FTS5 leaf runs onto an overflow page) or
that FTS5 prefix-compressed against the term before it still leaves one half to find.
"""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agentzero_store import LocalEmbedder, Turn
from agentzero_store.base.config import Layout, StoreConfig
from agentzero_store.memory.sqlite.index import MAGIC as MEMORY_INDEX_MAGIC
from agentzero_store.memory.sqlite.index import MemoryIndex
from agentzero_store.sidecar.hnsw import HnswIndex
from agentzero_store.sidecar.manifest import CheckpointFiles, coverage, data_aad
from agentzero_store.storage.keys import StoreKeys
from agentzero_store.storage.sqlcipher import Database
from tests.conftest import FAST, scan_for
from tests.support.sqlcipher_pages import find_plaintext

from .conftest import Clock, open_memory

WORD = "zanzibarquokka"  # porter leaves it as it is (checked below against FTS5's vocabulary)
ENTITY = "Zedekiah"  # every erased memory is about them; no kept memory names them
DIM = 384  # all-MiniLM-L6-v2
BULK = 130  # kept memories written after the distinctive ones: > 100, so a checkpoint covers them


def halves(needle: bytes) -> list[bytes]:
    """``needle`` and two halves overlapping by one byte: wherever a page boundary cuts
    it, one half is whole on one side."""
    mid = len(needle) // 2
    return [needle, needle[: mid + 1], needle[mid:]]


def text_needles() -> list[bytes]:
    out: list[bytes] = []
    for word in (WORD, ENTITY, ENTITY.lower()):
        out += halves(word.encode())
    return sorted(set(out))


@dataclass
class Written:
    """What the scenario wrote: ids of the erased and kept memories, their vectors."""

    erased: dict[str, str]  # role (turn, fact, archived, forgotten) → id
    kept: str
    vectors: dict[str, bytes]  # id → float32 bytes as stored


def write_scenario(
    root: Path, clock: Clock, embedder: LocalEmbedder, bulk: int = BULK
) -> tuple[Written, StoreKeys]:
    """Four memories about ENTITY with WORD (a turn, a fact, an archived memory and a
    forgotten one), one kept memory, then ``bulk`` kept turns; the store is closed."""
    with open_memory(root, clock, embedder=embedder) as mem:
        turn = mem.add_turn("c1", "user", f"my pet {WORD} is called Pim", speaker=ENTITY)
        fact = mem.assert_fact(ENTITY, "owns", f"a {WORD}").id
        archived = mem.remember(f"{ENTITY} hides the {WORD} food in the shed", about=[ENTITY]).id
        forgotten = mem.remember(f"the {WORD} of {ENTITY} sees a vet on Fridays", about=[ENTITY])
        kept = mem.remember("the office plant needs water on Mondays").id
        mem.add_turns(
            "c-bulk",
            [
                Turn("user", f"note {i}: the tram to Belem leaves at {i % 24}:00")
                for i in range(bulk)
            ],
        )
        assert mem.archive(archived)
        db = mem.store.database
        vectors = {
            str(r[0]): bytes(r[1])
            for r in db.query(
                "SELECT m.id, v.embedding FROM memory m JOIN memory_vec v ON v.label = m.label"
            )
        }
        mem.forget(id=forgotten.id)
        undo = "SELECT vector FROM am_forgotten WHERE memory_id = ?"
        assert bytes(db.query(undo, (forgotten.id,))[0][0]) == vectors[forgotten.id]
        keys = mem.store.keys
    erased = {"turn": turn, "fact": fact, "archived": archived, "forgotten": forgotten.id}
    return Written(erased, kept, vectors), keys


@dataclass
class Checkpoint:
    """The HNSW checkpoint, decrypted: its plaintext and every element's vector as the
    graph holds it (hnswlib normalises on insert, so not always the stored bytes)."""

    plain: bytes
    rows: npt.NDArray[np.float32]  # one per element, deleted ones included

    def nearest(self, vector: bytes) -> tuple[float, bytes]:
        """The best cosine of ``vector`` with an element, and that element's bytes."""
        v = np.frombuffer(vector, np.float32)
        cos = self.rows @ (v / np.linalg.norm(v))
        best = int(np.argmax(cos))
        return float(cos[best]), self.rows[best].tobytes()


def read_checkpoint(root: Path, keys: StoreKeys) -> Checkpoint:
    """Decrypt the HNSW checkpoint the way the sidecar reads it (the manifest's MAC, each
    file's checksum and AES-GCM tag), check its own loader accepts it, and check no other
    sealed file is left in the directory (an older checkpoint would hold old vectors)."""
    directory = Layout(root).memory_hnsw
    files = CheckpointFiles(directory, keys.sidecar_key)
    m = files.read_manifest()
    seq, table = coverage(m)
    sealed = {p.name for p in directory.iterdir() if p.name.endswith(".sealed")}
    assert sealed == {f["file"] for f in table.values()}, "an old checkpoint file is left"
    _, plain = files.read_sealed(
        table, lambda name: data_aad(keys.store_id, "hnsw", seq, name), in_place=False
    )
    blob = plain["index"]
    MemoryIndex(HnswIndex(DIM)).load({"index": blob})  # what recall would load
    head = len(MEMORY_INDEX_MAGIC) + 8
    (glen,) = struct.unpack_from("<Q", blob, len(MEMORY_INDEX_MAGIC))
    state = HnswIndex(DIM).parse(memoryview(blob)[head : head + glen])
    _, rows = state.rows(DIM)
    assert len(rows) >= m["entries"]
    return Checkpoint(blob, np.array(rows))


def fts_index(root: Path, keys: StoreKeys) -> tuple[set[str], list[bytes]]:
    """memory.db's keyword index as FTS5 holds it: every term (its own vocabulary) and
    every block of its segments (``memory_fts_data``), read-only."""
    db = Database(
        Layout(root).memory_db,
        keys.sqlcipher_key,
        busy_timeout_ms=StoreConfig().busy_timeout_ms,
        readonly=True,
    )
    try:
        db.query("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'memory_fts', 'row')")
        terms = {str(r[0]) for r in db.query("SELECT term FROM temp.vocab")}
        blocks = [bytes(r[0]) for r in db.query("SELECT block FROM memory_fts_data")]
        return terms, blocks
    finally:
        db.close()


def plaintext_left(
    root: Path, keys: StoreKeys, needles: list[bytes]
) -> list[tuple[str, int, bytes]]:
    """Every needle readable in memory.db, the archive (each with its WAL, decrypted)."""
    layout = Layout(root)
    found = find_plaintext(layout.memory_db, keys.sqlcipher_key, needles)
    if layout.memory_archive.exists():
        found += find_plaintext(layout.memory_archive, keys.archive_key, needles)
    return found


def test_erase_leaves_no_text_and_no_vector_on_disk(
    data_dir: Path, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    w, keys = write_scenario(data_dir, clock, local_embedder)
    layout = Layout(data_dir)
    needles = text_needles()
    erased_vectors = {mid: w.vectors[mid] for mid in w.erased.values()}
    kept_vector = w.vectors[w.kept]

    # ---- positive controls: with the store closed, every scan finds what it looks for
    terms, blocks = fts_index(data_dir, keys)
    assert {WORD, ENTITY.lower()} <= terms  # porter leaves both as they are
    assert any(h in b for b in blocks for h in halves(WORD.encode()))  # as stored on pages
    found = {n for _, _, n in find_plaintext(layout.memory_db, keys.sqlcipher_key, needles)}
    assert found >= {WORD.encode(), ENTITY.encode(), ENTITY.lower().encode()}
    found = {n for _, _, n in find_plaintext(layout.memory_archive, keys.archive_key, needles)}
    assert WORD.encode() in found  # the archived memory's text
    ckpt = read_checkpoint(data_dir, keys)
    # The checkpoint covers every erased memory (the forgotten one as a deleted element);
    # the vector bytes as the graph holds them are what must go.
    in_graph = {}
    for mid, v in [*erased_vectors.items(), (w.kept, kept_vector)]:
        cos, as_held = ckpt.nearest(v)
        assert cos > 0.9999 and as_held in ckpt.plain, mid
        in_graph[mid] = as_held
    vec_needles = [h for v in [*erased_vectors.values(), kept_vector] for h in halves(v)]
    found = {n for _, _, n in find_plaintext(layout.memory_db, keys.sqlcipher_key, vec_needles)}
    assert all(v in found for v in erased_vectors.values())  # memory_vec, the undo area

    # ---- erase; right after it, with the store still open (its WALs as a crash would
    # leave them), no page holds the text
    with open_memory(data_dir, clock, embedder=local_embedder) as mem:
        report = mem.erase(about=ENTITY.lower())
        assert set(report.ids) == set(w.erased.values()) and not report.pending
        assert mem.get(w.kept) is not None
        assert plaintext_left(data_dir, keys, needles) == []
        assert mem.store.database.query("SELECT count(*) FROM am_purge")[0][0] == 0

    # ---- closed: nothing of the erased memories is left anywhere
    assert plaintext_left(data_dir, keys, needles) == []
    assert scan_for(data_dir, needles) == []  # every file under the data dir, raw
    terms, blocks = fts_index(data_dir, keys)
    assert not {t for t in terms if "quokka" in t or "zedek" in t or "zanzibar" in t}
    assert not any(n in b for b in blocks for n in needles)
    ckpt = read_checkpoint(data_dir, keys)
    assert in_graph[w.kept] in ckpt.plain  # the scan can see a vector...
    for mid in erased_vectors:
        assert not any(h in ckpt.plain for h in halves(in_graph[mid])), f"{mid} in the graph"
        assert ckpt.nearest(erased_vectors[mid])[0] < 0.999, f"{mid}: a near copy in the graph"
    left = find_plaintext(layout.memory_db, keys.sqlcipher_key, vec_needles)
    assert {n for _, _, n in left} == set(halves(kept_vector))  # ...and only the kept one


@pytest.mark.parametrize("read", ["memory.db", "memory.archive.db"])
def test_erase_beside_a_reader_stays_pending_until_the_old_pages_can_go(
    data_dir: Path, clock: Clock, local_embedder: LocalEmbedder, read: str
) -> None:
    """Another connection reading a snapshot from before the erase (another process:
    a recall, a backup) keeps SQLite from writing the erased pages back and emptying
    the WAL. The erase must not record its purge as done then: it reports ``pending``,
    and ``close`` (or, after a crash, the next open) finishes it."""
    w, keys = write_scenario(data_dir, clock, local_embedder, bulk=3)
    needles = text_needles()
    key = keys.archive_key if read == "memory.archive.db" else keys.sqlcipher_key
    quick = StoreConfig(kdf=FAST.kdf, busy_timeout_ms=100)  # how long erase waits for it
    mem = open_memory(data_dir, clock, embedder=local_embedder, config=quick)
    try:
        reader = Database(data_dir / read, key, busy_timeout_ms=100, readonly=True)
        reader.conn.execute("BEGIN")
        reader.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # its snapshot
        report = mem.erase(about=ENTITY.lower())
        assert set(report.ids) == set(w.erased.values())
        assert report.pending and report.to_dict()["pending"] is True
        assert mem.get(w.erased["turn"]) is None  # gone from every row and index at once
        assert plaintext_left(data_dir, keys, needles) != []  # why it is pending
        assert mem.store.database.query("SELECT count(*) FROM am_purge")[0][0] == 4
        reader.conn.execute("COMMIT")
        reader.close()
        # A crash now: the files as they are on disk.
        shutil.copytree(data_dir, data_dir.parent / "crashed")
    finally:
        mem.close()  # the reader is gone: close finishes the erase
    assert plaintext_left(data_dir, keys, needles) == []
    assert scan_for(data_dir, needles) == []
    crashed = data_dir.parent / "crashed"
    assert plaintext_left(crashed, keys, needles) != []
    with open_memory(crashed, clock, embedder=local_embedder) as again:  # open finishes it
        assert again.store.database.query("SELECT count(*) FROM am_purge")[0][0] == 0
        assert plaintext_left(crashed, keys, needles) == []
    assert scan_for(crashed, needles) == []
