"""The fast paths of record encoding write the same bytes as the general ones."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.storage.crypto import NONCE_BYTES, InvalidTag, Sealer
from agentzero_store.storage.keys import StoreKeys
from rag.framing import Frame, LogCodec, encode_frame, parse_frame
from rag.payload import PAYLOAD_VERSION, _dumps, decode_entry, encode_entry
from rag.records import DocumentRecord, Entry, LogHeader, Tombstone, Upsert, content_hash

_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=60)
_when = st.datetimes(
    min_value=datetime(1970, 1, 2), timezones=st.sampled_from([UTC, timezone(timedelta(hours=5))])
)


@settings(max_examples=300, deadline=None)
@given(_text.filter(bool), _text, st.none() | _text, st.none() | _text, _when, _when)
def test_fast_upsert_payload_matches_the_dict_encoding(
    doc_id: str, text: str, title: str | None, source: str | None, c: datetime, u: datetime
) -> None:
    r = DocumentRecord(doc_id, text, content_hash(text), c, u, title, source)
    general = _dumps({"v": PAYLOAD_VERSION, "op": "upsert", **r.to_dict()})
    assert encode_entry(r) == general
    assert decode_entry(general) == r


@settings(deadline=None)
@given(st.integers(1, 10**17), _text)
def test_record_line_is_the_encode_frame_envelope(seq: int, text: str) -> None:
    codec = LogCodec(StoreKeys(store_id="s" * 32, master=bytes(32)))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    line = codec.record_line("g" * 32, seq, DocumentRecord("d", text, "h", now, now))
    assert line.endswith(b"\n")
    frame = parse_frame(line[:-1])
    assert frame.seq == seq and encode_frame(frame) + b"\n" == line
    assert encode_frame(Frame(seq=seq, blob=frame.blob)) + b"\n" == line


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(_text.filter(bool), _text, st.none() | _text, st.booleans()),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 10**15),
)
def test_record_lines_seal_each_record_like_record_line(
    rows: list[tuple[str, str, str | None, bool]], first: int
) -> None:
    # A batch of lines is a batch of record_line lines: the encode_frame envelope, one
    # nonce per record, and each record opens alone with the AAD of its own seq only.
    codec = LogCodec(StoreKeys(store_id="s" * 32, master=bytes(32)))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    entries: list[Entry] = [
        Tombstone(i, now) if dead else DocumentRecord(i, t, content_hash(t), now, now, title)
        for i, t, title, dead in rows
    ]
    lines = codec.record_lines("g" * 32, first, entries)
    assert len(lines) == len(entries)
    nonces = set()
    for seq, (line, entry) in enumerate(zip(lines, entries, strict=True), first):
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        frame = parse_frame(line[:-1])
        assert frame.seq == seq and encode_frame(frame) + b"\n" == line
        assert codec.open_record("g" * 32, frame) == entry
        with pytest.raises(InvalidTag):
            codec.open_record("g" * 32, Frame(seq=seq + 1, blob=frame.blob))
        nonces.add(frame.blob[:NONCE_BYTES])
    assert len(nonces) == len(lines)


def test_seal_many_blobs_are_seal_blobs() -> None:
    sealer = Sealer(bytes(range(32)))
    plain = [b"", b"a", os.urandom(1_000)]
    aads = [b"x", b"y", b"z"]
    nonces, cts = sealer.seal_many(plain, aads)
    assert len(nonces) == NONCE_BYTES * len(plain) and len(cts) == len(plain)
    for i, (p, a, ct) in enumerate(zip(plain, aads, cts, strict=True)):
        blob = nonces[NONCE_BYTES * i : NONCE_BYTES * (i + 1)] + ct
        assert sealer.open(blob, a) == p
        with pytest.raises(InvalidTag):
            sealer.open(blob, aads[i - 1])
    with pytest.raises(ValueError):
        sealer.seal_many([b"a"], [])


@settings(deadline=None)
@given(_text.filter(bool), _text, st.none() | _text, st.none() | _text, _when, _when)
def test_record_of_upsert_is_the_constructed_record(
    doc_id: str, text: str, title: str | None, source: str | None, c: datetime, u: datetime
) -> None:
    op = Upsert(doc_id, text, title=title, source_path=source, metadata={"k": [1]})
    made = DocumentRecord(doc_id, text, "h", c, u, title, source, {"k": [1]})
    got = DocumentRecord.of_upsert(op, "h", c, u)
    assert got == made and type(got) is DocumentRecord and got.__dict__ == made.__dict__
    assert encode_entry(got) == encode_entry(made)
    with pytest.raises(AttributeError):
        got.text = "changed"  # type: ignore[misc]


def test_encode_log_numbers_records_across_seal_batches() -> None:
    codec = LogCodec(StoreKeys(store_id="s" * 32, master=bytes(32)))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    header = LogHeader("0a" * 16, now, "compact")
    entries: list[Entry] = [Tombstone(f"d{i}", now) for i in range(2_050)]  # > 2 slices
    lines = codec.encode_log(header, entries).splitlines()
    assert len(lines) == 1 + len(entries)
    assert codec.open_header(parse_frame(lines[0])) == header
    for seq, (line, entry) in enumerate(zip(lines[1:], entries, strict=True), 1):
        frame = parse_frame(line)
        assert frame.seq == seq and codec.open_record("0a" * 16, frame) == entry
