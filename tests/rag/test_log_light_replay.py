"""Opening a log decodes only the op and id of each record; reads and verify decode all.

Replay still authenticates every line (see test_log_corruption.py). These tests cover
what the light decoding changes: a record that is authentic but does not decode opens,
and is reported with its line and offset when it is read and by ``check_log``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.base.errors import CorruptStoreError, SchemaVersionError, TamperedRecordError
from agentzero_store.storage.keys import StoreKeys
from rag.framing import (
    Frame,
    LogCodec,
    encode_frame,
    record_aad,
)
from rag.log import DocumentLog
from rag.maintenance import check_log
from rag.payload import decode_entry, decode_head, encode_entry
from rag.records import DocumentRecord, Tombstone

from .conftest import line_spans

T = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _write(path: Path, keys: StoreKeys, n: int = 4) -> str:
    with DocumentLog.open(path, keys) as log:
        for i in range(n):
            log.upsert(f"doc-{i}", f"text {i}")
        return log.generation


def _sealed_line(keys: StoreKeys, generation: str, seq: int, payload: bytes) -> bytes:
    """A record line with a VALID checksum and tag: what a writer holding the key makes."""
    codec = LogCodec(keys)
    blob = codec._sealer.seal(payload, record_aad(keys.store_id, generation, seq))
    return encode_frame(Frame(seq, blob)) + b"\n"


def _replace_line(path: Path, lineno: int, line: bytes) -> int:
    """Put ``line`` at ``lineno`` (1-based); returns the line's byte offset."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines[lineno - 1] = line
    path.write_bytes(b"".join(lines))
    return line_spans(path)[lineno - 1][0]


def _assert_names(err: CorruptStoreError, path: Path, lineno: int, offset: int) -> None:
    assert (err.path, err.record, err.offset) == (str(path), lineno, offset), str(err)
    assert f"line {lineno}" in str(err)


def test_authentic_but_undecodable_record_is_reported_when_read(
    log_path: Path, keys: StoreKeys
) -> None:
    generation = _write(log_path, keys)
    # A correct head, then a payload decode_entry refuses (the date is not ISO 8601).
    payload = (
        b'{"v":1,"op":"upsert","id":"doc-1","text":"x","content_hash":"h",'
        b'"created_at":"yesterday","updated_at":"yesterday","title":null,'
        b'"source_path":null,"metadata":{}}'
    )
    offset = _replace_line(log_path, 3, _sealed_line(keys, generation, 2, payload))
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert "doc-1" in log and log.seq == 4  # open reads only the op and the id
        assert log.get("doc-0") is not None
        with pytest.raises(CorruptStoreError) as info:
            log.get("doc-1")
        _assert_names(info.value, log_path, 3, offset)
        assert "undecodable record" in str(info.value)
        with pytest.raises(CorruptStoreError):
            list(log.changes_since(0))  # the change feed reads it too
    check = check_log(log_path, keys)  # what `agentzero store verify` runs: full decode
    assert check.error is not None
    _assert_names(check.error, log_path, 3, offset)


def test_authentic_payload_that_is_not_json_after_its_head(log_path: Path, keys: StoreKeys) -> None:
    generation = _write(log_path, keys)
    payload = b'{"v":1,"op":"delete","id":"doc-2","deleted_at":'  # cut short
    offset = _replace_line(log_path, 4, _sealed_line(keys, generation, 3, payload))
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert "doc-2" not in log  # a tombstone, as its head says
    check = check_log(log_path, keys)
    assert check.error is not None
    _assert_names(check.error, log_path, 4, offset)
    assert "not JSON" in check.error.message


def test_payload_outside_the_fast_path_is_decoded_whole_on_open(
    log_path: Path, keys: StoreKeys
) -> None:
    generation = _write(log_path, keys)
    record = DocumentRecord("doc-1", "other order", "h", T, T)
    obj = json.loads(encode_entry(record))
    reordered = json.dumps(dict(reversed(list(obj.items())))).encode()  # id no longer third
    assert decode_head(reordered) is None
    _replace_line(log_path, 3, _sealed_line(keys, generation, 2, reordered))
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        got = log.get("doc-1")
        assert got is not None and got.text == "other order"
    # ... and when that whole decode fails, open names the line, as before.
    bad = json.dumps({"id": "doc-1", "v": 1, "op": "upsert"}).encode()
    offset = _replace_line(log_path, 3, _sealed_line(keys, generation, 2, bad))
    with pytest.raises(CorruptStoreError) as info:
        DocumentLog.open(log_path, keys, readonly=True)
    _assert_names(info.value, log_path, 3, offset)


def test_newer_payload_version_still_refuses_to_open(log_path: Path, keys: StoreKeys) -> None:
    generation = _write(log_path, keys)
    payload = b'{"v":2,"op":"upsert","id":"doc-1","future":true}'
    _replace_line(log_path, 3, _sealed_line(keys, generation, 2, payload))
    with pytest.raises(SchemaVersionError):
        DocumentLog.open(log_path, keys, readonly=True)


def test_repeated_id_key_is_reported_when_read(log_path: Path, keys: StoreKeys) -> None:
    # json.loads keeps the LAST "id", the light decoder the first: the read path catches
    # the disagreement instead of returning another document's record.
    generation = _write(log_path, keys)
    payload = encode_entry(DocumentRecord("doc-1", "t", "h", T, T))[:-1] + b',"id":"doc-9"}'
    offset = _replace_line(log_path, 3, _sealed_line(keys, generation, 2, payload))
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        with pytest.raises(TamperedRecordError) as info:
            log.get("doc-1")
        _assert_names(info.value, log_path, 3, offset)


def test_repeated_op_key_is_reported_when_read(log_path: Path, keys: StoreKeys) -> None:
    generation = _write(log_path, keys)
    head = b'{"v":1,"op":"upsert","id":"doc-1",'
    payload = head + b'"op":"delete","deleted_at":"2024-05-01T12:00:00+00:00"}'
    assert isinstance(decode_entry(payload), Tombstone)
    offset = _replace_line(log_path, 3, _sealed_line(keys, generation, 2, payload))
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert "doc-1" in log
        with pytest.raises(TamperedRecordError) as info:
            log.get("doc-1")
        _assert_names(info.value, log_path, 3, offset)


@pytest.mark.parametrize(
    "doc_id", ['a"quote', "back\\slash", "new\nline", "tab\t", "école/€", "\U0001f600", "x\x7f"]
)
def test_ids_that_need_escapes_replay_exactly(log_path: Path, keys: StoreKeys, doc_id: str) -> None:
    with DocumentLog.open(log_path, keys) as log:
        log.upsert(doc_id, "text")
        log.upsert("plain", "text")
        log.delete(doc_id)
        log.upsert(doc_id, "again")
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert log.ids() == ["plain", doc_id]
        got = log.get(doc_id)
        assert got is not None and got.text == "again"


ids = st.text(min_size=1, max_size=20)


@settings(max_examples=300, deadline=None)
@given(doc_id=ids, upsert=st.booleans())
def test_decode_head_agrees_with_decode_entry(doc_id: str, upsert: bool) -> None:
    entry = DocumentRecord(doc_id, "t", "h", T, T) if upsert else Tombstone(doc_id, T)
    try:
        payload = encode_entry(entry)
    except UnicodeEncodeError:
        return  # a lone surrogate: the writer cannot store it at all
    head = decode_head(payload)
    full = decode_entry(payload)
    if head is not None:
        assert head == ("upsert" if upsert else "delete", full.id)
    if "\\" not in json.dumps(doc_id, ensure_ascii=False):
        assert head is not None  # ids without escapes take the fast path


def test_compact_reports_an_undecodable_record_it_would_drop(
    log_path: Path, keys: StoreKeys
) -> None:
    generation = _write(log_path, keys)
    with DocumentLog.open(log_path, keys) as log:
        log.upsert("doc-1", "newer")  # seq 5: the record at seq 2 is no longer live
    payload = b'{"v":1,"op":"upsert","id":"doc-1","text":'  # authentic, not JSON
    offset = _replace_line(log_path, 3, _sealed_line(keys, generation, 2, payload))
    before = log_path.read_bytes()
    with DocumentLog.open(log_path, keys) as log:
        with pytest.raises(CorruptStoreError) as info:
            log.compact()
        _assert_names(info.value, log_path, 3, offset)
    assert log_path.read_bytes() == before


def test_store_verify_reports_an_undecodable_record(tmp_path: Path) -> None:
    # `agentzero store verify` must keep decoding every record, not replay's light view.
    from agentzero_store import StoreConfig
    from agentzero_store.base.config import FAST_KDF_FOR_TESTS
    from agentzero_store.ops import verify_store
    from agentzero_store.storage.credentials import Credential
    from agentzero_store.storage.datadir import open_data_dir

    root, raw_key = tmp_path / "store", bytes(range(32))
    layout, keys = open_data_dir(root, key=raw_key, kdf=StoreConfig(kdf=FAST_KDF_FOR_TESTS).kdf)
    generation = _write(layout.rag_log, keys)
    payload = b'{"v":1,"op":"upsert","id":"doc-1","text":"x"}'  # keys missing
    offset = _replace_line(layout.rag_log, 3, _sealed_line(keys, generation, 2, payload))
    report = verify_store(root, Credential.from_key(raw_key))
    assert not report.clean
    (finding,) = [f for f in report.findings if f.file == str(layout.rag_log)]
    assert finding.where == f"line 3, byte {offset}"
