"""The replay catalog: an open replays only the tail after it, and any doubt about it
(missing, corrupt, foreign, stale, or the covered bytes changed) means a full replay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentzero_store.base.errors import CorruptStoreError, TamperedRecordError
from agentzero_store.storage.keys import StoreKeys
from rag import catalog
from rag.catalog import catalog_path
from rag.framing import Frame, encode_frame, parse_frame
from rag.log import DocumentLog

from .conftest import line_spans, make_keys, state_of


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "MIN_NEW_RECORDS", 1)


def _fill(path: Path, keys: StoreKeys, start: int, n: int) -> None:
    with DocumentLog.open(path, keys) as log:
        for i in range(start, start + n):
            log.upsert(f"doc-{i % 7}", f"text {i}")
        if start == 0:
            log.delete("doc-3")


def _view(log: DocumentLog) -> tuple[object, ...]:
    prev = [log.previous_version(s) for s in range(1, log.seq + 1)]
    return log.seq, log.ids(), state_of(log), prev, log._slots


def _reference(path: Path, keys: StoreKeys) -> tuple[object, ...]:
    saved = catalog_path(path).read_bytes()
    catalog_path(path).unlink()
    with DocumentLog.open(path, keys, readonly=True) as log:
        assert log._covered == 0
        view = _view(log)
    catalog_path(path).write_bytes(saved)
    return view


def test_open_resumes_after_the_catalog(
    log_path: Path, keys: StoreKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(log_path, keys, 0, 12)
    assert catalog_path(log_path).exists()
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert log._covered == 13  # 12 upserts and a delete
        assert _view(log) == _reference(log_path, keys)
    _fill(log_path, keys, 100, 5)  # a read-write open that appends, then closes
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert log._covered == 18
    monkeypatch.setattr(catalog, "MIN_NEW_RECORDS", 1000)  # the catalog now lags behind
    with DocumentLog.open(log_path, keys) as log:
        log.upsert("late", "only in the tail")
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert log._covered == 18 and log.seq == 19
        assert log.get("late") is not None
        assert _view(log) == _reference(log_path, keys)


def test_readonly_opens_and_small_tails_write_no_catalog(
    log_path: Path, keys: StoreKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog, "MIN_NEW_RECORDS", 1000)
    _fill(log_path, keys, 0, 12)
    assert not catalog_path(log_path).exists()
    monkeypatch.setattr(catalog, "MIN_NEW_RECORDS", 1)
    with DocumentLog.open(log_path, keys, readonly=True):
        pass
    assert not catalog_path(log_path).exists()


@pytest.mark.parametrize(
    "damage",
    ["garbage", "flip", "empty", "other_store", "other_key", "older_generation", "other_log"],
)
def test_a_doubtful_catalog_means_a_full_replay(
    tmp_path: Path, log_path: Path, keys: StoreKeys, damage: str
) -> None:
    _fill(log_path, keys, 0, 12)
    cat = catalog_path(log_path)
    good = cat.read_bytes()
    if damage == "garbage":
        cat.write_bytes(b"not a catalog")
    elif damage == "flip":
        cat.write_bytes(good[:40] + bytes([good[40] ^ 1]) + good[41:])
    elif damage == "empty":
        cat.write_bytes(b"")
    elif damage in ("other_store", "other_key"):
        other = tmp_path / "other" / "index.jsonl"
        okeys = make_keys() if damage == "other_store" else StoreKeys(keys.store_id, b"\1" * 32)
        _fill(other, okeys, 0, 12)
        cat.write_bytes(catalog_path(other).read_bytes())
    elif damage == "older_generation":
        with DocumentLog.open(log_path, keys) as log:
            log.compact()  # writes a catalog of the new generation on close
        cat.write_bytes(good)  # put back the one of the old generation
    elif damage == "other_log":  # same store and key, a different log
        other = tmp_path / "other" / "index.jsonl"
        _fill(other, keys, 0, 12)
        cat.write_bytes(catalog_path(other).read_bytes())
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert log._covered == 0
        assert log.get("doc-1") is not None


def test_truncated_log_is_replayed_whole(log_path: Path, keys: StoreKeys) -> None:
    _fill(log_path, keys, 0, 12)
    spans = line_spans(log_path)
    data = log_path.read_bytes()
    log_path.write_bytes(data[: spans[6][1]])  # 6 records left, cut at a line end
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert log._covered == 0 and log.seq == 6


def test_rewritten_log_with_more_records_is_replayed_whole(log_path: Path, keys: StoreKeys) -> None:
    # Same generation and a covered prefix of the same length, other bytes: a restore
    # of another copy. The hash of the covered bytes tells them apart.
    _fill(log_path, keys, 0, 12)
    backup = log_path.with_name("backup.jsonl")
    shutil.copy(log_path, backup)
    _fill(log_path, keys, 100, 3)
    with DocumentLog.open(backup, keys) as log:  # the copy diverges: 3 other records
        for i in range(3):
            log.upsert(f"other-{i}", "x" * i)
    shutil.copy(backup, log_path)
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert log._covered == 0 and "other-2" in log


@pytest.mark.parametrize("lineno", [2, 5, 9])
def test_tampering_inside_the_covered_part_is_still_reported_on_open(
    log_path: Path, keys: StoreKeys, lineno: int
) -> None:
    _fill(log_path, keys, 0, 12)
    lines = log_path.read_bytes().splitlines(keepends=True)
    frame = parse_frame(lines[lineno - 1].rstrip(b"\n"))
    blob = bytearray(frame.blob)
    blob[-1] ^= 1
    lines[lineno - 1] = encode_frame(Frame(frame.seq, bytes(blob))) + b"\n"  # valid CRC
    log_path.write_bytes(b"".join(lines))
    start = line_spans(log_path)[lineno - 1][0]
    with pytest.raises(TamperedRecordError) as info:
        DocumentLog.open(log_path, keys, readonly=True)
    assert (info.value.record, info.value.offset) == (lineno, start)
    # A flipped bit (bad CRC) too.
    data = bytearray(log_path.read_bytes())
    data[start + 3] ^= 1
    log_path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError) as info2:
        DocumentLog.open(log_path, keys, readonly=True)
    assert (info2.value.record, info2.value.offset) == (lineno, start)
