"""The on-disk line format of the document log: envelope, checksum, associated data.

A log file is JSON Lines. Line 1 is the header, every later line one record::

    {"format":"agentzero-doclog/1","gen":"<32 hex>","seq":0,"ct":"<b64>","crc":"<8 hex>"}
    {"seq":1,"ct":"<base64 of nonce || AES-256-GCM ciphertext+tag>","crc":"<8 hex>"}

Why only ``seq`` is in the clear: document ids are often file paths, titles and metadata
are user data, so the id, the operation (upsert/delete) and everything else are sealed.
The plaintext keeps just what is needed to check order and damage *before* decrypting:
``seq`` and a CRC-32 of every other byte of the line. The generation id of the header is
a random number, not user data; it is in the clear so ``salvage`` can still authenticate
records when the rest of the header is damaged. (Ciphertext length still reveals the
approximate size of each document; we do not pad.)

Associated data (AAD) binds each record to ``store id | generation | seq``. The doc id is
inside the authenticated plaintext, so it is bound as well. Hence a line copied from
another store, from an older generation of this log (before a compaction), or moved to
another position (swapped, duplicated, seq rewritten with a fixed-up CRC) fails
authentication.

The CRC tells *damage* from *tampering*: CRC bad = bytes damaged (disk, torn write);
CRC good but authentication fails = a deliberate edit, or a record from elsewhere.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from cryptography.exceptions import InvalidTag

from agentzero_store.base.errors import SchemaVersionError
from agentzero_store.storage.crypto import NONCE_BYTES, Sealer
from agentzero_store.storage.keys import StoreKeys

from .payload import decode_entry, decode_head, decode_header, encode_entry, encode_header
from .records import Entry, LogHeader, Op

_b64 = binascii.b2a_base64
_crc32 = zlib.crc32
assert NONCE_BYTES % 3 == 0  # record_lines encodes the nonces apart from the ciphertexts
_NONCE_B64 = NONCE_BYTES // 3 * 4
_SEAL_BATCH = 1_024  # records sealed per record_lines call when a whole log is written

FORMAT = "agentzero-doclog/1"
FORMAT_PREFIX = "agentzero-doclog/"
_CRC_RE = re.compile(rb'(\{.*),"crc":"([0-9a-f]{8})"\}', re.DOTALL)
_B64 = rb"([A-Za-z0-9+/]*={0,2})"
# The exact envelopes encode_frame writes (one encoding per line, nothing else fits).
_RECORD_BODY = re.compile(rb'\{"seq":([1-9][0-9]{0,17}),"ct":"' + _B64 + rb'"\}')
_HEADER_BODY = re.compile(
    rb'\{"format":"'
    + FORMAT.encode()
    + rb'","gen":"([0-9a-f]{32})","seq":0,"ct":"'
    + _B64
    + rb'"\}'
)
# The fast path of replay reads a record line as three parts: a short head, the base64
# (checked by a strict decode, not a regex: the regex was the slowest step) and the tail.
_RECORD_HEAD = re.compile(rb'\{"seq":([1-9][0-9]{0,17}),"ct":"')
_RECORD_TAIL = re.compile(rb'","crc":"([0-9a-f]{8})"\}')
_TAIL_BYTES = len(b'","crc":"12345678"}')


class DamagedLine(ValueError):
    """A line that is not a well-formed envelope or whose CRC does not match. Internal."""


def new_generation() -> str:
    """A fresh random generation id (128 bits, hex)."""
    return secrets.token_hex(16)


def record_aad(store_id: str, generation: str, seq: int) -> bytes:
    """Associated data of record ``seq``: binds the store, the log generation and the position."""
    return b"%s%d" % (_record_aad_prefix(store_id, generation), seq)


def _record_aad_prefix(store_id: str, generation: str) -> bytes:
    return f"{FORMAT}|record|{store_id}|{generation}|".encode()


def header_aad(store_id: str, generation: str) -> bytes:
    """Associated data of the header line."""
    return f"{FORMAT}|header|{store_id}|{generation}|0".encode()


@dataclass(frozen=True)
class Frame:
    """A parsed, CRC-checked envelope (not yet authenticated)."""

    seq: int
    blob: bytes
    generation: str | None = None  # set on the header line only

    @property
    def is_header(self) -> bool:
        """True for the header envelope (line 1)."""
        return self.generation is not None


def encode_frame(frame: Frame) -> bytes:
    """The line for ``frame``, without its newline: the body, then a CRC-32 of the body."""
    ct = base64.b64encode(frame.blob)
    if frame.generation is not None:
        body = b'{"format":"%s","gen":"%s","seq":0,"ct":"%s"}' % (
            FORMAT.encode(),
            frame.generation.encode("ascii"),
            ct,
        )
    else:
        body = b'{"seq":%d,"ct":"%s"}' % (frame.seq, ct)
    return body[:-1] + b',"crc":"%08x"}' % zlib.crc32(body)


def parse_frame(line: bytes) -> Frame:
    """Parse and CRC-check one line (without newline). Raises ``DamagedLine``.

    Only the exact bytes ``encode_frame`` writes are accepted, so there is one
    encoding per record and nothing else can hide in a line.
    """
    if (fast := split_record(line, len(line))) is not None:
        return Frame(seq=fast[0], blob=fast[1])
    # Anything else (a header, or a line that is damaged): the step-by-step checks below
    # accept the same record lines and name what is wrong with the others.
    m = _CRC_RE.fullmatch(line)
    if m is None:
        raise DamagedLine("not a log line")
    body = m[1] + b"}"
    if zlib.crc32(body) != int(m[2], 16):
        raise DamagedLine("checksum mismatch")
    if r := _RECORD_BODY.fullmatch(body):
        seq, generation, ct = int(r[1]), None, r[2]
    elif h := _HEADER_BODY.fullmatch(body):
        seq, generation, ct = 0, h[1].decode("ascii"), h[2]
    else:
        raise DamagedLine("malformed envelope")
    try:
        blob = base64.b64decode(ct, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DamagedLine(f"bad base64: {exc}") from None
    if base64.b64encode(blob) != ct:
        raise DamagedLine("non-canonical base64")
    return Frame(seq=seq, blob=blob, generation=generation)


def split_record(line: bytes, end: int) -> tuple[int, bytes] | None:
    """``(seq, blob)`` if ``line[:end]`` is exactly a record envelope ``encode_frame`` writes,
    with a matching CRC; None for anything else (``parse_frame`` then says what is wrong).

    The fast path of ``parse_frame`` and of replay: no regex over the base64, no
    ``Frame``, and ``end`` leaves a newline out without copying the line. It accepts
    exactly the record lines ``parse_frame`` accepts (``_RECORD_BODY`` + CRC + canonical
    base64) and returns the same seq and blob.
    """
    head = _RECORD_HEAD.match(line, 0, end)
    tail_at = end - _TAIL_BYTES  # where the closing quote of "ct" must be
    if head is None or head.end() > tail_at:
        return None
    tail = _RECORD_TAIL.fullmatch(line, tail_at, end)
    if tail is None:
        return None
    # The CRC covers the body: the line up to its crc field, closed with "}".
    if zlib.crc32(b"}", zlib.crc32(line[: tail_at + 1])) != int(tail[1], 16):
        return None
    ct = line[head.end() : tail_at]
    try:
        # strict: only the base64 alphabet, padding only at the end and exactly right.
        blob = binascii.a2b_base64(ct, strict_mode=True)
    except binascii.Error:
        return None
    # Canonical: the spare bits of the last character are zero (else another encoding of
    # the same bytes would pass). Only the last 4-character group can have spare bits.
    if blob and binascii.b2a_base64(blob[-(len(blob) % 3 or 3) :], newline=False) != ct[-4:]:
        return None
    return int(head[1]), blob


def check_format(line: bytes) -> None:
    """Raise ``SchemaVersionError`` if ``line`` is the header of a newer log format.

    Only a header whose checksum is intact counts: a bit flip in ``"agentzero-doclog/1"``
    is damage, not a new version. Later formats must keep the ``"crc"`` convention of
    the header line so that this reader can tell the two apart.
    """
    m = _CRC_RE.fullmatch(line)
    if m is None or zlib.crc32(m[1] + b"}") != int(m[2], 16):
        return
    try:
        fmt = json.loads(m[1] + b"}").get("format")
    except (ValueError, AttributeError):
        return
    if isinstance(fmt, str) and fmt != FORMAT and fmt.startswith(FORMAT_PREFIX):
        raise SchemaVersionError(f"document log format {fmt}; this version reads {FORMAT}")


def find_generation(line: bytes) -> str | None:
    """Best effort: the plaintext generation id of a (possibly damaged) header line."""
    m = re.search(rb'"gen":"([0-9a-f]{32})"', line)
    return m[1].decode("ascii") if m else None


class LogCodec:
    """Seals and opens the lines of one store's document logs."""

    def __init__(self, keys: StoreKeys) -> None:
        self.store_id = keys.store_id
        self._sealer = Sealer(keys.documents_key)

    def header_line(self, header: LogHeader) -> bytes:
        """A complete header line (with newline)."""
        blob = self._sealer.seal(
            encode_header(header), header_aad(self.store_id, header.generation)
        )
        return encode_frame(Frame(seq=0, blob=blob, generation=header.generation)) + b"\n"

    def record_line(self, generation: str, seq: int, entry: Entry) -> bytes:
        """A complete record line (with newline)."""
        return self.record_lines(generation, seq, [entry])[0]

    def record_lines(self, generation: str, first_seq: int, entries: list[Entry]) -> list[bytes]:
        """Complete record lines (with newline) of ``entries`` as seqs ``first_seq``, +1, ...

        Each record is sealed on its own (its own nonce and tag, an AAD naming its seq)
        and framed exactly as ``encode_frame`` does; only the per-batch work (the nonce
        draw, the AAD prefix) is done once.
        """
        # record_aad(store_id, generation, seq), with its constant part formatted once.
        prefix = _record_aad_prefix(self.store_id, generation)
        seqs = range(first_seq, first_seq + len(entries))
        nonces, cts = self._sealer.seal_many(
            [encode_entry(e) for e in entries], [b"%s%d" % (prefix, seq) for seq in seqs]
        )
        # A sealed blob is nonce || ct. Nonces are a multiple of 3 bytes, so base64 of the
        # blob is base64 of the nonce (no padding) followed by base64 of ct: the nonces
        # are encoded in one call for the whole batch.
        n64 = _b64(nonces, newline=False)
        lines = []
        for i, seq, ct in zip(range(0, len(n64), _NONCE_B64), seqs, cts, strict=True):
            # encode_frame's record envelope, inlined: body = head + b'"}', and the line
            # is the body with the CRC-32 of the body added as its last member.
            head = b'{"seq":%d,"ct":"%s%s' % (seq, n64[i : i + _NONCE_B64], _b64(ct, newline=False))
            lines.append(b'%s","crc":"%08x"}\n' % (head, _crc32(b'"}', _crc32(head))))
        return lines

    def open_header(self, frame: Frame) -> LogHeader:
        """Authenticate and decode a header. Raises ``InvalidTag`` / ``PayloadError``."""
        if frame.generation is None:
            raise InvalidTag()
        pt = self._sealer.open(frame.blob, header_aad(self.store_id, frame.generation))
        return decode_header(pt, frame.generation)

    def open_record(self, generation: str, frame: Frame) -> Entry:
        """Authenticate and decode a record. Raises ``InvalidTag`` / ``PayloadError``."""
        pt = self._sealer.open(frame.blob, record_aad(self.store_id, generation, frame.seq))
        return decode_entry(pt)

    def open_record_head(self, generation: str, line: bytes, seq: int) -> tuple[Op, str] | None:
        """Replay's light ``open_record``: ``(op, doc id)`` of the complete record line
        ``line`` (with its newline) if it is record ``seq``, well formed, CRC-intact and
        AUTHENTIC; None on anything else, and the caller reruns the strict checks
        (``parse_frame`` + ``open_record``) to name the problem.

        Authentication is never skipped: only the decoding is light (``decode_head``
        reads the op and the id, not the text, dates or vectors). ``decode_entry`` still
        checks the whole payload whenever the record is read.
        """
        parts = split_record(line, len(line) - 1)
        if parts is None or parts[0] != seq:
            return None
        try:
            pt = self._sealer.open(parts[1], record_aad(self.store_id, generation, seq))
        except InvalidTag:
            return None
        return decode_head(pt)

    def encode_log(self, header: LogHeader, entries: list[Entry]) -> bytes:
        """A whole log file: header, then ``entries`` as seqs 1..N (for atomic rewrites)."""
        parts = [self.header_line(header)]
        for i in range(0, len(entries), _SEAL_BATCH):  # bounded: payloads live per slice
            parts += self.record_lines(header.generation, i + 1, entries[i : i + _SEAL_BATCH])
        return b"".join(parts)


@dataclass(frozen=True)
class RawLine:
    """One line as found in the file: where it starts and whether a newline ended it."""

    lineno: int  # 1-based; the header is line 1
    offset: int  # byte offset of the line's first byte
    data: bytes  # without the newline
    complete: bool  # False only for a last line with no newline (a torn append)

    @property
    def end(self) -> int:
        """Offset just past this line (including its newline)."""
        return self.offset + len(self.data) + (1 if self.complete else 0)


def iter_raw_lines(f: BinaryIO) -> Iterator[RawLine]:
    """Stream the lines of an open file, tracking byte offsets."""
    offset = 0
    for lineno, raw in enumerate(f, 1):
        complete = raw.endswith(b"\n")
        data = raw[:-1] if complete else raw
        yield RawLine(lineno, offset, data, complete)
        offset += len(raw)
