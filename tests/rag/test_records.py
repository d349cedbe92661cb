"""The fast paths of record encoding write the same bytes as the general ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.keys import StoreKeys
from rag.framing import Frame, LogCodec, encode_frame, parse_frame
from rag.records import (
    PAYLOAD_VERSION,
    DocumentRecord,
    _dumps,
    content_hash,
    decode_entry,
    encode_entry,
)

_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=60)
_when = st.datetimes(
    min_value=datetime(1970, 1, 2), timezones=st.sampled_from([UTC, timezone(timedelta(hours=5))])
)


@settings(max_examples=300)
@given(_text.filter(bool), _text, st.none() | _text, st.none() | _text, _when, _when)
def test_fast_upsert_payload_matches_the_dict_encoding(
    doc_id: str, text: str, title: str | None, source: str | None, c: datetime, u: datetime
) -> None:
    r = DocumentRecord(doc_id, text, content_hash(text), c, u, title, source)
    general = _dumps({"v": PAYLOAD_VERSION, "op": "upsert", **r.to_dict()})
    assert encode_entry(r) == general
    assert decode_entry(general) == r


@given(st.integers(1, 10**17), _text)
def test_record_line_is_the_encode_frame_envelope(seq: int, text: str) -> None:
    codec = LogCodec(StoreKeys(store_id="s" * 32, master=bytes(32)))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    line = codec.record_line("g" * 32, seq, DocumentRecord("d", text, "h", now, now))
    assert line.endswith(b"\n")
    frame = parse_frame(line[:-1])
    assert frame.seq == seq and encode_frame(frame) + b"\n" == line
    assert encode_frame(Frame(seq=seq, blob=frame.blob)) + b"\n" == line
