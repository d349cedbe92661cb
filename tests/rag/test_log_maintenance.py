"""compact, salvage and the migration of plaintext legacy logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentzero_store.base.errors import CorruptStoreError, StoreExistsError
from agentzero_store.storage.fileio import TMP_MARKER
from agentzero_store.storage.keys import StoreKeys
from rag.log import DocumentLog
from rag.records import StaleFeedError
from rag.salvage import salvage
from tests.conftest import scan_for, text_needles, tree_digest

from .conftest import file_state, line_spans, make_keys, state_of


def _build(path: Path, keys: StoreKeys) -> dict[str, str]:
    with DocumentLog.open(path, keys) as log:
        for i in range(6):
            log.upsert(f"d{i}", f"text {i} " * 20, metadata={"i": i})
        log.upsert("d1", "d1 again")
        log.delete("d2")
        return state_of(log)


# ------------------------------------------------------------------------------ compact


def test_compact_keeps_live_documents_as_a_new_generation(log_path: Path, keys: StoreKeys) -> None:
    model = _build(log_path, keys)
    with DocumentLog.open(log_path, keys) as log:
        before = {r.id: r for _, r in log.iter_live()}
        old_gen, old_size = log.generation, log_path.stat().st_size
        new_gen = log.compact()
        assert new_gen == log.generation != old_gen and log.header.origin == "compact"
        assert log.seq == len(model) == 5 and log_path.stat().st_size < old_size
        assert [c.op for c in log.changes_since(0)] == ["upsert"] * 5
        assert {r.id: r for _, r in log.iter_live()} == before  # timestamps, metadata kept
        log.upsert("d7", "appended after compaction")
        model["d7"] = "appended after compaction"
    with DocumentLog.open(log_path, keys) as log:
        assert state_of(log) == model and log.seq == 6 and log.generation == new_gen
    assert not [p for p in log_path.parent.iterdir() if TMP_MARKER in p.name]


def test_compaction_invalidates_running_feeds(log_path: Path, keys: StoreKeys) -> None:
    _build(log_path, keys)
    with DocumentLog.open(log_path, keys) as log:
        feed = log.changes_since(0)
        next(feed)
        log.compact()
        with pytest.raises(StaleFeedError):
            next(feed)
        with pytest.raises(StaleFeedError):
            log.changes_since(8)  # a sidecar's old position is past the new end


# ------------------------------------------------------------------------------ salvage


def test_salvage_skips_damage_and_never_touches_the_source(tmp_path: Path, keys: StoreKeys) -> None:
    src = tmp_path / "rag" / "index.jsonl"
    _build(src, keys)
    spans = line_spans(src)
    data = bytearray(src.read_bytes())
    data[spans[3][0] + 30] ^= 0x10  # line 4 = seq 3 (d2's upsert) damaged
    data += b'{"seq":9,"ct":"AAAA'  # and a torn tail
    src.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError):
        DocumentLog.open(src, keys)
    before = file_state(src)
    dst = tmp_path / "salvaged.jsonl"
    report = salvage(src, dst, keys)
    assert file_state(src) == before
    assert [(s.lineno, s.offset) for s in report.skipped] == [
        (4, spans[3][0]),
        (len(spans) + 1, len(src.read_bytes()) - len('{"seq":9,"ct":"AAAA')),
    ]
    assert "damaged" in report.skipped[0].reason and "torn" in report.skipped[1].reason
    assert report.missing_seqs == (3,) and report.recovered == 7 and not report.clean
    with DocumentLog.open(dst, keys) as log:
        assert log.header.origin == "salvage" and log.generation == report.generation
        assert log.seq == 7 and set(log.ids()) == {"d0", "d1", "d3", "d4", "d5"}
    with pytest.raises(StoreExistsError):
        salvage(src, dst, keys)


def test_salvage_restores_order_and_drops_foreign_lines(tmp_path: Path, keys: StoreKeys) -> None:
    src = tmp_path / "a" / "index.jsonl"
    model = _build(src, keys)
    other = tmp_path / "b" / "index.jsonl"
    _build(other, make_keys())
    lines = src.read_bytes().splitlines(keepends=True)
    lines[2], lines[3] = lines[3], lines[2]  # swapped
    lines.insert(5, other.read_bytes().splitlines(keepends=True)[5])  # foreign line, seq 5
    lines.insert(6, lines[6])  # a duplicate
    src.write_bytes(b"".join(lines))
    report = salvage(src, tmp_path / "out.jsonl", keys)
    reasons = [s.reason for s in report.skipped]
    assert len(reasons) == 2 and "authentication" in reasons[0] and "duplicate" in reasons[1]
    assert report.missing_seqs == () and report.live == len(model)
    with DocumentLog.open(tmp_path / "out.jsonl", keys) as log:
        assert state_of(log) == model


def test_salvage_with_damaged_header_uses_plaintext_generation(
    tmp_path: Path, keys: StoreKeys
) -> None:
    src = tmp_path / "index.jsonl"
    model = _build(src, keys)
    data = bytearray(src.read_bytes())
    data[100] ^= 0x01  # inside the header's ciphertext
    src.write_bytes(bytes(data))
    report = salvage(src, tmp_path / "out.jsonl", keys)
    assert report.skipped[0].lineno == 1 and report.recovered == 8
    with DocumentLog.open(tmp_path / "out.jsonl", keys) as log:
        assert state_of(log) == model


# ------------------------------------------------------------------------------ legacy


LEGACY = [
    {
        "id": "notes/a.md",
        "text": "Platypus venom contains defensin-like peptides.",
        "title": "Platypus facts",
        "metadata": {"lang": "en"},
    },
    {"id": "b", "text": "An old version of b that must not survive anywhere."},
    {
        "id": "c",
        "text": "Cassowaries can sprint at fifty kilometres per hour.",
        "source": "/home/bob/zoo/cassowary.txt",
        "embedding": [0.1, 0.2],
    },
    {
        "id": "b",
        "text": "Bristlecone pines live for nearly five millennia.",
        "created_at": "2020-05-01T00:00:00+00:00",
    },
]


def _write_legacy(path: Path, *, trailing_newline: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n".join(json.dumps(r) for r in LEGACY)
    path.write_text(body + ("\n" if trailing_newline else ""), encoding="utf-8")


def test_legacy_plaintext_log_is_sealed_on_open(tmp_path: Path, keys: StoreKeys) -> None:
    path = tmp_path / "rag" / "index.jsonl"
    _write_legacy(path)
    with DocumentLog.open(path, keys) as log:
        assert log.header.origin == "migrate" and log.seq == 3
        assert log.ids() == ["notes/a.md", "c", "b"]
        a, b, c = log.get("notes/a.md"), log.get("b"), log.get("c")
        assert a is not None and a.title == "Platypus facts" and a.metadata == {"lang": "en"}
        assert b is not None and b.text.startswith("Bristlecone") and b.created_at.year == 2020
        assert c is not None and c.source_path == "/home/bob/zoo/cassowary.txt"
        assert c.metadata == {"legacy_fields": {"embedding": [0.1, 0.2]}}
    needles = [
        b"Platypus",
        b"Cassowar",
        b"Bristlecone",
        b"must not survive",
        b"notes/a.md",
        b"/home/bob",
    ]
    for r in LEGACY:
        needles += text_needles(str(r["text"]))
    assert scan_for(tmp_path, needles) == []
    with DocumentLog.open(path, keys) as log:  # opens as a sealed log from now on
        assert log.header.origin == "migrate" and log.seq == 3


def test_legacy_log_with_bad_line_is_left_untouched(tmp_path: Path, keys: StoreKeys) -> None:
    path = tmp_path / "rag" / "index.jsonl"
    _write_legacy(path, trailing_newline=True)
    with path.open("a") as f:
        f.write("not json\n" + json.dumps({"id": "z", "text": "zz"}) + "\n")
    before = tree_digest(tmp_path)
    with pytest.raises(CorruptStoreError) as info:
        DocumentLog.open(path, keys)
    assert info.value.record == len(LEGACY) + 1
    after = tree_digest(tmp_path)
    after.pop("rag/index.jsonl.lock", None)
    assert after == before


def test_legacy_migration_can_be_refused(tmp_path: Path, keys: StoreKeys) -> None:
    path = tmp_path / "rag" / "index.jsonl"
    _write_legacy(path)
    before = file_state(path)
    for kw in ({"migrate_legacy": False}, {"readonly": True}):
        with pytest.raises(CorruptStoreError, match="plaintext legacy"):
            DocumentLog.open(path, keys, **kw)  # type: ignore[arg-type]
    assert file_state(path) == before


def test_empty_file_becomes_an_empty_log(log_path: Path, keys: StoreKeys) -> None:
    log_path.parent.mkdir(parents=True)
    log_path.write_bytes(b"")
    with DocumentLog.open(log_path, keys) as log:
        assert log.seq == 0
