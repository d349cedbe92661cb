"""Torn tails are repaired; damage, tampering, swaps, copies and repeats fail closed."""

from __future__ import annotations

import base64
import json
import warnings
import zlib
from pathlib import Path

import pytest

from agentzero_store.base.errors import CorruptStoreError, SchemaVersionError, TamperedRecordError
from agentzero_store.storage.keys import StoreKeys
from rag.framing import Frame, encode_frame, parse_frame
from rag.log import DocumentLog, TornTailWarning
from tests.conftest import tree_digest

from .conftest import file_state, line_spans, make_keys, state_of

TEXTS = [f"document number {i} " + "lorem ipsum " * 8 for i in range(5)]


def _write_docs(path: Path, keys: StoreKeys, texts: list[str] = TEXTS) -> dict[str, str]:
    with DocumentLog.open(path, keys) as log:
        for i, t in enumerate(texts):
            log.upsert(f"doc-{i}", t)
    return {f"doc-{i}": t for i, t in enumerate(texts)}


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _expect_fail_closed(
    path: Path, keys: StoreKeys, lineno: int, cls: type[CorruptStoreError] = CorruptStoreError
) -> CorruptStoreError:
    """Open must raise ``cls`` naming ``lineno`` and its offset, changing no file."""
    before = tree_digest(path.parent)
    start = line_spans(path)[lineno - 1][0]
    with pytest.raises(cls) as info:
        DocumentLog.open(path, keys)
    err = info.value
    assert (err.path, err.record, err.offset) == (str(path), lineno, start), str(err)
    assert f"line {lineno}" in str(err) and "salvage" in err.hint
    assert tree_digest(path.parent) == before  # nothing shrunk, removed or added
    return err


def test_truncated_at_every_offset_inside_last_record(log_path: Path, keys: StoreKeys) -> None:
    model = _write_docs(log_path, keys)
    full = log_path.read_bytes()
    last_start, last_end = line_spans(log_path)[-1]
    expected = dict(list(model.items())[:-1])
    for cut in range(last_start, last_end):
        log_path.write_bytes(full[:cut])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            log = DocumentLog.open(log_path, keys)
        try:
            assert state_of(log) == expected and log.seq == len(TEXTS) - 1
            torn = [w for w in caught if issubclass(w.category, TornTailWarning)]
            assert len(torn) == (0 if cut == last_start else 1), cut
        finally:
            log.close()
        assert log_path.read_bytes() == full[:last_start]  # cut back to the last line end
    # After the repair the log appends normally.
    with DocumentLog.open(log_path, keys) as log:
        log.upsert("new", "after repair")
        assert log.seq == len(TEXTS)


def test_readonly_open_ignores_but_keeps_a_torn_tail(log_path: Path, keys: StoreKeys) -> None:
    model = _write_docs(log_path, keys)
    with log_path.open("ab") as f:
        f.write(b'{"seq":6,"ct":"AAA')
    before = file_state(log_path)
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        assert state_of(log) == model
    assert file_state(log_path) == before


def test_torn_tail_of_a_batch_keeps_complete_lines(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys)
    full = log_path.read_bytes()
    spans = line_spans(log_path)
    log_path.write_bytes(full[: spans[-2][0] + 10])  # last two lines lost, one partially
    with pytest.warns(TornTailWarning), DocumentLog.open(log_path, keys) as log:
        assert log.seq == len(TEXTS) - 2


def test_flipped_bits_before_the_tail_fail_closed(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys, [f"short {i}" for i in range(4)])
    full = log_path.read_bytes()
    spans = line_spans(log_path)
    for lineno, (start, end) in enumerate(spans[:-1], 1):  # header and every record but the last
        for pos in range(start, end):
            damaged = bytearray(full)
            damaged[pos] ^= 0x01
            log_path.write_bytes(bytes(damaged))
            _expect_fail_closed(log_path, keys, lineno)


def test_complete_last_line_with_bad_checksum_is_corruption(
    log_path: Path, keys: StoreKeys
) -> None:
    _write_docs(log_path, keys)
    start, end = line_spans(log_path)[-1]
    data = bytearray(log_path.read_bytes())
    data[start + 20] ^= 0x04  # inside the ciphertext; the newline is intact
    log_path.write_bytes(bytes(data))
    err = _expect_fail_closed(log_path, keys, len(TEXTS) + 1)
    assert "checksum" in str(err)


def _reframe(line: bytes, *, seq: int | None = None, flip_ct: bool = False) -> bytes:
    """Rewrite a record line with a VALID checksum (what a deliberate editor would do)."""
    frame = parse_frame(line.rstrip(b"\n"))
    blob = bytearray(frame.blob)
    if flip_ct:
        blob[-1] ^= 0x01
    return encode_frame(Frame(frame.seq if seq is None else seq, bytes(blob))) + b"\n"


@pytest.mark.parametrize("lineno", [2, 4, 6])  # first, middle and LAST record
def test_valid_checksum_but_modified_ciphertext_is_tampering(
    log_path: Path, keys: StoreKeys, lineno: int
) -> None:
    _write_docs(log_path, keys)
    lines = _lines(log_path)
    lines[lineno - 1] = _reframe(lines[lineno - 1], flip_ct=True)
    log_path.write_bytes(b"".join(lines))
    _expect_fail_closed(log_path, keys, lineno, TamperedRecordError)


def test_swapped_lines_are_detected(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys)
    lines = _lines(log_path)
    lines[2], lines[3] = lines[3], lines[2]
    log_path.write_bytes(b"".join(lines))
    err = _expect_fail_closed(log_path, keys, 3)
    assert "expected seq 2, found seq 3" in str(err)
    # Also with the seqs rewritten to fit and the checksums fixed: AAD binds the seq.
    lines[2], lines[3] = _reframe(lines[2], seq=2), _reframe(lines[3], seq=3)
    log_path.write_bytes(b"".join(lines))
    _expect_fail_closed(log_path, keys, 3, TamperedRecordError)


def test_line_copied_from_another_store_is_detected(tmp_path: Path, keys: StoreKeys) -> None:
    mine, theirs = tmp_path / "a" / "index.jsonl", tmp_path / "b" / "index.jsonl"
    _write_docs(mine, keys)
    _write_docs(theirs, make_keys())
    lines = _lines(mine)
    lines[2] = _lines(theirs)[2]  # same seq, valid checksum, other store's key and id
    mine.write_bytes(b"".join(lines))
    _expect_fail_closed(mine, keys, 3, TamperedRecordError)
    # Another store's header is refused too.
    lines = _lines(theirs)
    mine.write_bytes(lines[0] + b"".join(_lines(mine)[1:]))
    _expect_fail_closed(mine, keys, 1, TamperedRecordError)


def test_line_from_an_older_generation_is_detected(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys)
    old = _lines(log_path)
    with DocumentLog.open(log_path, keys) as log:
        log.compact()  # same store and key, new generation, same seqs 1..5
    lines = _lines(log_path)
    lines[2] = old[2]
    log_path.write_bytes(b"".join(lines))
    _expect_fail_closed(log_path, keys, 3, TamperedRecordError)


def test_duplicated_and_missing_lines_are_detected(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys)
    good = _lines(log_path)
    log_path.write_bytes(b"".join(good[:3] + [good[2]] + good[3:]))
    err = _expect_fail_closed(log_path, keys, 4)
    assert "expected seq 3, found seq 2" in str(err)
    log_path.write_bytes(b"".join(good + [good[-1]]))  # the last line repeated
    _expect_fail_closed(log_path, keys, len(good) + 1)
    log_path.write_bytes(b"".join(good[:2] + good[3:]))  # a gap
    _expect_fail_closed(log_path, keys, 3)


def test_damaged_header_and_newer_format(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys)
    lines = _lines(log_path)
    log_path.write_bytes(lines[0][:-1])  # header without its newline: never torn, damaged
    _expect_fail_closed(log_path, keys, 1)
    body = json.dumps({"format": "agentzero-doclog/2", "seq": 0}).encode()
    newer = body[:-1] + b',"crc":"%08x"}\n' % zlib.crc32(body)
    log_path.write_bytes(newer + b"".join(lines[1:]))
    with pytest.raises(SchemaVersionError):
        DocumentLog.open(log_path, keys)


def test_wrong_key_fails_closed(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys)
    other = StoreKeys(store_id=keys.store_id, master=b"\x00" * 32)
    _expect_fail_closed(log_path, other, 1, TamperedRecordError)


def test_damage_after_open_is_caught_on_read(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys)
    with DocumentLog.open(log_path, keys, readonly=True) as log:
        lines = _lines(log_path)
        lines[2] = _reframe(lines[2], flip_ct=True)
        log_path.write_bytes(b"".join(lines))  # same inode: the open log sees it
        with pytest.raises(TamperedRecordError):
            log.get("doc-1")


def test_ciphertext_is_base64_of_nonce_and_tag(log_path: Path, keys: StoreKeys) -> None:
    _write_docs(log_path, keys, ["x"])
    rec = json.loads(_lines(log_path)[1])
    assert set(rec) == {"seq", "ct", "crc"}  # no id, op or metadata in the clear
    assert len(base64.b64decode(rec["ct"])) > 12 + 16
