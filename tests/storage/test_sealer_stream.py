"""Sealer.open_file: the streamed open of a sealed checkpoint file must accept exactly
what Sealer.open accepts, hash every byte of the file, and refuse any damage."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

from agentzero_store.storage import crypto
from agentzero_store.storage.crypto import InvalidTag, Sealer

KEY = bytes(range(32))
AAD = b"sidecar|test"


def _open(blob: bytes, aad: bytes = AAD) -> tuple[bytearray, str]:
    h = hashlib.sha256()
    plain = Sealer(KEY).open_file(io.BufferedReader(io.BytesIO(blob)), len(blob), aad, h)
    return plain, h.hexdigest()


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 4096, 3 * 1024 + 5])
def test_round_trip_and_hash_of_the_whole_file(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crypto, "CHUNK_BYTES", 1024)  # several chunks, a short last one
    plain = os.urandom(size)
    blob = Sealer(KEY).seal(plain, AAD)
    got, digest = _open(blob)
    assert bytes(got) == plain == Sealer(KEY).open(blob, AAD)
    assert digest == hashlib.sha256(blob).hexdigest()


@pytest.mark.parametrize("offset", [0, 5, 12, 600, -16, -1])
def test_any_flipped_byte_fails(offset: int) -> None:
    blob = bytearray(Sealer(KEY).seal(os.urandom(2_000), AAD))
    blob[offset] ^= 0x01
    with pytest.raises(InvalidTag):
        _open(bytes(blob))


def test_wrong_aad_truncation_and_short_files_fail() -> None:
    blob = Sealer(KEY).seal(os.urandom(100), AAD)
    with pytest.raises(InvalidTag):
        _open(blob, b"other")
    with pytest.raises(InvalidTag):
        _open(blob[:-1])
    with pytest.raises(InvalidTag):
        _open(blob[:20])
