"""The default BM25 index: Tantivy on disk over blinded terms (issue 8).

Terms are Tantivy's en_stem terms under a keyed hash, so rankings equal a plain index's
while no file holds a word; the checkpoint is a tree of Tantivy files, each checked
against the authenticated manifest before Tantivy reads it; working indexes of dead
processes are cleaned up; switching modes rebuilds.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store import StoreIOError
from agentzero_store.sidecar.bm25 import SealedBm25Index
from agentzero_store.sidecar.bm25_blinded import BlindedBm25Index
from agentzero_store.sidecar.bm25_terms import BlindTerms, analyzer
from rag import DocInput, DocumentStore

from ..conftest import FAST, scan_for
from ..sidecar.test_sidecar_mechanism import FaultyIO

KEY = bytes(range(32))
TERM_KEY = bytes(range(100, 132))
SEALED = replace(FAST, bm25_terms="sealed")
WORDS = [
    *("boiler", "pressure", "valve", "radiator", "sourdough", "starter", "flour", "oven"),
    *("bake", "heating", "kettle", "garden", "tomato", "compost", "ledger", "invoice"),
    *("tax", "mortgage", "pension", "holiday"),
]


def corpus(n: int, seed: int = 0) -> list[tuple[int, str]]:
    import random

    rng = random.Random(seed)
    return [
        (i + 1, " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 15)))) for i in range(n)
    ]


def side(data_dir: Path) -> Path:
    return data_dir / "rag" / "index.jsonl.tantivy"


def trees(data_dir: Path) -> list[Path]:
    return sorted(side(data_dir).glob("*.tree"))


def blinded(term: str) -> str:
    digest = hashlib.blake2b(term.encode(), key=TERM_KEY, digest_size=8).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_blinded_terms_are_the_keyed_hashes_of_en_stem_terms(text: str) -> None:
    # Word-by-word analysis (what makes the cache possible) equals whole-text analysis.
    want = [blinded(t) for t in analyzer().analyze(text)]
    blind = BlindTerms(TERM_KEY)
    assert blind.terms(text) == want
    assert blind.terms(text) == want  # the cached path
    # A text holding the separator its batch analysis uses still comes out right.
    sep = f"{text} qzsep0x, QZSEP0X {text}"
    assert BlindTerms(TERM_KEY).terms(sep) == [blinded(t) for t in analyzer().analyze(sep)]
    assert BlindTerms(bytes(32)).terms(text) != want or not want  # the key matters


def test_blinded_and_sealed_indexes_rank_alike(tmp_path: Path) -> None:
    items = corpus(400)
    blinded = BlindedBm25Index(tmp_path / "b", TERM_KEY)
    blinded.reset()
    sealed = SealedBm25Index()
    for index in (blinded, sealed):
        index.insert(items)
    try:
        for q in ("boiler pressure", "Sourdough, STARTER!", "tax tax invoice", "ovens baking"):
            b, s = blinded.search(q, 20), sealed.search(q, 20)
            assert [k for k, _ in b] == [k for k, _ in s], q
            assert [round(x, 4) for _, x in b] == [round(x, 4) for _, x in s], q
        assert blinded.search("( [ ^ : ~ NOT", 5) == []  # user text is never query syntax
    finally:
        blinded.close()


def test_every_save_is_a_whole_commit_while_merges_run(tmp_path: Path) -> None:
    # Many small commits make Tantivy merge in its threads while checkpoints link files.
    live = BlindedBm25Index(tmp_path / "live", TERM_KEY)
    live.reset()
    items = corpus(1_500, seed=3)
    try:
        for n, b in enumerate(range(0, len(items), 50)):
            live.insert(items[b : b + 50])
            live.delete([k for k, _ in items[b : b + 5]])
            target = tmp_path / f"tree-{n}"
            target.mkdir()
            live.save(target)
            copy = BlindedBm25Index(tmp_path / f"copy-{n}", TERM_KEY)
            copy.open_saved(target)
            assert copy.count() == live.count()
            for q in ("boiler", "tax pension"):
                assert copy.search(q, 30) == live.search(q, 30)
            copy.close()
    finally:
        live.close()


def _segments(index: BlindedBm25Index) -> int:
    work = index._require_work()
    return len(json.loads((work / "meta.json").read_bytes())["segments"])


def test_a_merge_moves_no_answer_until_a_save_and_the_save_is_what_reopens(
    tmp_path: Path,
) -> None:
    # BM25 counts deleted documents until a merge drops them: the same documents score
    # differently before and after a merge. Tantivy's default searcher followed merges
    # on its own (a watcher thread), so answers changed with no write, and a save could
    # link the merged commit while the searcher still answered from the one before.
    live = BlindedBm25Index(tmp_path / "live", TERM_KEY)
    live.reset()
    items = corpus(400, seed=3)
    queries = ("boiler", "tax pension")
    try:
        for b in range(0, len(items), 50):  # 8 commits, 8 segments: Tantivy merges them
            live.insert(items[b : b + 50])
            live.delete([k for k, _ in items[b : b + 5]])
            before = [live.search(q, 30) for q in queries]  # commits
        deadline = time.monotonic() + 120  # only bounds a merge that never comes
        while _segments(live) == 8:
            assert time.monotonic() < deadline, "Tantivy never merged the 8 segments"
            time.sleep(0.02)
        # The merged commit is on disk. The searcher stays on ours, with no write: held
        # past twice the period of Tantivy's meta.json watcher (500 ms), which moved it.
        held_until = time.monotonic() + 1.2
        while time.monotonic() < held_until:
            assert [live.search(q, 30) for q in queries] == before
            time.sleep(0.05)
        # A save links the merged commit and moves the searcher onto it: reopened, the
        # checkpoint answers as the index does.
        target = tmp_path / "tree"
        target.mkdir()
        live.save(target)
        copy = BlindedBm25Index(tmp_path / "copy", TERM_KEY)
        copy.open_saved(target)
        try:
            assert len(json.loads((target / "meta.json").read_bytes())["segments"]) < 8
            after = [live.search(q, 30) for q in queries]
            assert [copy.search(q, 30) for q in queries] == after
            assert after != before  # the merge did change the statistics
            assert copy.count() == live.count() == 360
        finally:
            copy.close()
    finally:
        live.close()


def test_no_word_reaches_the_index_files(data_dir: Path) -> None:
    words = [f"zebra{i}quokka" for i in range(30)]
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        s.ingest_many([DocInput(w, f"{w} lives by the boiler", title=w) for w in words])
        assert s.query(words[7], 1)[0].id == words[7]
        assert trees(data_dir) and not list(side(data_dir).glob("*.sealed"))
        files = [p for p in side(data_dir).rglob("*") if p.is_file()]
        # The working index and the checkpoint both hold terms; neither holds a word.
        assert any(p.suffix == ".term" for p in files)
        needles = [w.encode() for w in words] + [b"boiler", b"live"]
        assert scan_for(side(data_dir), needles) == []


def _ingest(data_dir: Path, n: int = 300) -> list[str]:
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        s.ingest_many([DocInput(f"d{k}", text) for k, text in corpus(n)])
        return [h.id for h in s.query("boiler pressure valve", 10)]


def test_every_damaged_checkpoint_file_is_caught_before_tantivy(
    data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected = _ingest(data_dir)
    (tree,) = trees(data_dir)
    names = sorted(p.name for p in tree.iterdir())
    assert {"keys", "meta.json"} <= set(names) and ".managed.json" not in names
    damages = [(n, "flip") for n in names] + [
        (names[-1], "truncate"),
        (names[0], "remove"),
        ("extra", "add"),
        (".", "remove_tree"),
    ]
    for name, how in damages:
        copy = tmp_path / f"copy-{how}-{name}"
        shutil.copytree(data_dir, copy)
        (t,) = trees(copy)
        p = t / name
        if how == "flip":
            raw = bytearray(p.read_bytes())
            raw[len(raw) // 2] ^= 0x01
            p.write_bytes(bytes(raw))
        elif how == "truncate":
            p.write_bytes(p.read_bytes()[:-1])
        elif how == "remove":
            p.unlink()
        elif how == "add":
            p.write_bytes(b"x")
        else:
            shutil.rmtree(t)
        caplog.clear()
        with (
            caplog.at_level(logging.WARNING),
            DocumentStore.open(copy, key=KEY, config=FAST) as s,
        ):
            assert s.bm25.opened is not None and s.bm25.opened.rebuilt, (name, how)
            assert [h.id for h in s.query("boiler pressure valve", 10)] == expected
        assert "rebuilding the bm25 index" in caplog.text, (name, how)
        with DocumentStore.open(copy, key=KEY, config=FAST) as s:  # valid again
            assert s.bm25.opened is not None and s.bm25.opened.loaded
            assert [h.id for h in s.query("boiler pressure valve", 10)] == expected


def test_checkpoints_link_unchanged_files_instead_of_rewriting(data_dir: Path) -> None:
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        s.ingest_many([DocInput(f"a{k}", t) for k, t in corpus(200)])
        (first,) = trees(data_dir)
        before = {p.stat().st_ino for p in first.iterdir() if p.suffix == ".term"}
        s.ingest_many([DocInput(f"b{k}", t) for k, t in corpus(100, seed=1)])
        (second,) = trees(data_dir)  # the old tree is gone once the new manifest is in
        assert second != first
        after = {p.stat().st_ino for p in second.iterdir() if p.suffix == ".term"}
        assert before & after  # an unchanged segment is the same file, not a copy
        assert len(after) > len(before & after)  # plus the new segment


def test_fault_at_every_checkpoint_step_leaves_old_or_new(data_dir: Path) -> None:
    _ingest(data_dir, 120)
    fail_at, outcomes = 0, set()
    while True:
        fail_at += 1
        io = FaultyIO(fail_at=-1)
        s = DocumentStore.open(data_dir, key=KEY, config=FAST, io=io)
        old = s.bm25.covered_seq
        s.ingest_many([DocInput(f"f{fail_at}-{k}", t) for k, t in corpus(5, seed=fail_at)])
        new = s.bm25.applied_seq
        io.calls, io.fail_at = 0, fail_at
        with contextlib.suppress(StoreIOError):
            s.bm25.checkpoint()
        finished = io.calls < fail_at  # no step was left to fail
        s.indexes.close()  # as a crash would: no checkpoint on the way out
        s.log.close()
        with DocumentStore.open(data_dir, key=KEY, config=FAST) as again:
            report = again.bm25.opened
            assert report is not None and report.loaded, (fail_at, report)
            assert report.covered_seq in (old, new), fail_at
            assert again.bm25.index.count() == 120 + 5 * fail_at  # the rest replayed
        outcomes.add("new" if report.covered_seq == new else "old")
        assert len(trees(data_dir)) == 1, fail_at  # a torn tree never outlives an open
        if finished:
            break
    assert fail_at > 5  # a tree checkpoint has many steps: each one was tried
    assert outcomes == {"old", "new"}  # faults before the manifest kept the old, after: new


CHILD = r"""
import sys, time
from rag import DocInput, DocumentStore
from agentzero_store import StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
s = DocumentStore.open(sys.argv[1], key=bytes(range(32)),
                       config=StoreConfig(kdf=FAST_KDF_FOR_TESTS), readonly=True)
s.query("boiler", 1)
print("ready", flush=True)
time.sleep(60)
"""


def test_working_index_of_a_killed_process_is_removed(data_dir: Path) -> None:
    _ingest(data_dir, 50)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        (theirs,) = side(data_dir).glob("work-*.lock")
        with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
            assert len(list(side(data_dir).glob("work-*.lock"))) == 2
            assert theirs.exists()  # a live process keeps its working index
            s.ingest("new", "boiler notes")
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert theirs.exists() and theirs.with_suffix("").is_dir()  # a crash leaves them
        with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
            assert not theirs.exists() and not theirs.with_suffix("").exists()
            assert s.query("boiler", 60)
        assert not list(side(data_dir).glob("work-*"))  # closed: nothing left behind
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
        child.wait()


def test_switching_modes_rebuilds_and_removes_the_other_layout(data_dir: Path) -> None:
    expected = _ingest(data_dir, 100)
    with DocumentStore.open(data_dir, key=KEY, config=SEALED) as s:
        assert [h.id for h in s.query("boiler pressure valve", 10)] == expected
    assert list(side(data_dir).glob("*.sealed")) and not trees(data_dir)
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        assert [h.id for h in s.query("boiler pressure valve", 10)] == expected
    assert trees(data_dir) and not list(side(data_dir).glob("*.sealed"))


def test_unknown_mode_is_a_clear_error(data_dir: Path) -> None:
    from agentzero_store import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="blinded, sealed"):
        DocumentStore.open(data_dir, key=KEY, config=replace(FAST, bm25_terms="plain"))


def test_a_file_system_without_hard_links_copies_instead(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "hard links not supported here")

    monkeypatch.setattr(os, "link", no_links)
    expected = _ingest(data_dir, 150)
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        assert s.bm25.opened is not None and s.bm25.opened.loaded  # no rebuild
        assert [h.id for h in s.query("boiler pressure valve", 10)] == expected
        s.ingest_many([DocInput(f"x{k}", t) for k, t in corpus(120, seed=9)])
        assert s.bm25.covered_seq == 270  # checkpointed again, by copying
        (tree,) = trees(data_dir)
        segment_files = [p for p in tree.iterdir() if p.name not in ("keys", "meta.json")]
        # With hard links these would also be the working index's files (2 links each).
        assert segment_files and all(p.stat().st_nlink == 1 for p in segment_files)
    with DocumentStore.open(data_dir, key=KEY, config=FAST) as s:
        assert s.bm25.opened is not None and s.bm25.opened.loaded
        assert s.bm25.index.count() == 270
