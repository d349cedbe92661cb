"""``split_record`` (the fast path of ``parse_frame`` and replay) accepts exactly the
record lines ``parse_frame`` accepts, and reads the same seq and blob from them."""

from __future__ import annotations

import base64
import zlib
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.storage.keys import StoreKeys
from rag.framing import DamagedLine, LogCodec, parse_frame, split_record
from rag.records import Tombstone

T = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _record_line(keys: StoreKeys, doc_id: str = "doc") -> bytes:
    return LogCodec(keys).record_line("0" * 32, 7, Tombstone(doc_id, T))[:-1]


def test_split_record_accepts_exactly_what_parse_frame_accepts(keys: StoreKeys) -> None:
    line = _record_line(keys)
    variants = [line, line + b" ", b" " + line, line.replace(b'"seq":7', b'"seq":07')]
    for pos in range(len(line)):
        for bit in (0x01, 0x20, 0x40):
            damaged = bytearray(line)
            damaged[pos] ^= bit
            variants.append(bytes(damaged))
    accepted = 0
    for v in variants:
        try:
            frame = parse_frame(v)
        except DamagedLine:
            assert split_record(v, len(v)) is None, v
            continue
        fast = split_record(v, len(v))
        if frame.is_header:
            assert fast is None
        else:
            accepted += 1
            assert fast == (frame.seq, frame.blob), v
    assert accepted == 1  # only the intact line (every bit flip breaks the CRC or format)
    # end= leaves a newline out without copying the line.
    assert split_record(line + b"\n", len(line)) == split_record(line, len(line))


def test_split_record_refuses_non_canonical_base64(keys: StoreKeys) -> None:
    # An id length whose blob needs padding, so the last character has spare bits.
    frame = next(
        f for n in (1, 2, 3) if len((f := parse_frame(_record_line(keys, "d" * n))).blob) % 3
    )
    ct = base64.b64encode(frame.blob)
    last = ct.rstrip(b"=")
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    bumped = alphabet[alphabet.index(last[-1:]) + 1 : alphabet.index(last[-1:]) + 2]
    odd = last[:-1] + bumped + ct[len(last) :]  # same bytes, other (non-canonical) encoding
    body = b'{"seq":7,"ct":"%s"}' % odd
    line = body[:-1] + b',"crc":"%08x"}' % zlib.crc32(body)
    assert split_record(line, len(line)) is None
    with pytest.raises(DamagedLine):
        parse_frame(line)


_EDIT_BYTES = st.sampled_from(list(b'{}":,=+/\\ \n0189AQZaz-_crcseqct'))


@settings(max_examples=500, deadline=None)
@given(
    doc_len=st.integers(1, 6),
    edits=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from("rid"), _EDIT_BYTES), max_size=3
    ),
)
def test_split_record_matches_parse_frame_on_edited_bodies(
    doc_len: int, edits: list[tuple[int, str, int]]
) -> None:
    # Edit the body, then fix the CRC (as a deliberate editor would), so the edits reach
    # the envelope and base64 checks instead of all failing on the checksum.
    line = LogCodec(FIXED_KEYS).record_line("0" * 32, 7, Tombstone("d" * doc_len, T))[:-1]
    body = bytearray(line[: line.rindex(b',"crc":"')] + b"}")
    for pos, kind, byte in edits:
        pos %= len(body) + 1
        if kind == "r" and pos < len(body):
            body[pos] = byte
        elif kind == "i":
            body.insert(pos, byte)
        elif kind == "d" and pos < len(body):
            del body[pos]
    edited = bytes(body[:-1]) + b',"crc":"%08x"}' % zlib.crc32(bytes(body))
    fast = split_record(edited, len(edited))
    try:
        frame = parse_frame(edited)
    except DamagedLine:
        assert fast is None
        return
    assert fast == (None if frame.is_header else (frame.seq, frame.blob))


FIXED_KEYS = StoreKeys(store_id="f" * 32, master=bytes(32))
