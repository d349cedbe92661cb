"""AES-256-GCM sealing with enforced fresh 96-bit nonces and bound associated data.

One ``Sealer`` per subkey (the AESGCM object is reused: construction is the slow part).
A sealed blob is ``nonce (12 B) || ciphertext+tag``. ``open`` raises ``InvalidTag`` as a
typed ``TamperedRecordError`` supplied by the caller, who knows which file and record
failed (``InvalidTag`` itself has an empty message).
"""

from __future__ import annotations

import io
import secrets
from collections.abc import Sequence
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12
TAG_BYTES = 16
OVERHEAD = NONCE_BYTES + TAG_BYTES
CHUNK_BYTES = 4 << 20  # streaming reads: big enough to amortise calls, small enough for L3


class Hasher(Protocol):
    """What ``open_file`` feeds every byte of the file to (``hashlib.sha256()``)."""

    def update(self, data: memoryview | bytes, /) -> None: ...


class Sealer:
    """Seal and open byte strings with one 32-byte key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("AES-256-GCM needs a 32-byte key")
        self._aead = AESGCM(key)
        self._key = key  # for the streaming decryptor (open_file); never shown

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        """Encrypt and authenticate ``plaintext``, binding ``aad``; fresh random nonce."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plaintext, aad)

    def seal_many(
        self, plaintexts: Sequence[bytes], aads: Sequence[bytes]
    ) -> tuple[bytes, list[bytes]]:
        """``seal`` of each plaintext with its own AAD and its own fresh random nonce.

        Returns the nonces, concatenated (``NONCE_BYTES`` each), and the ciphertexts+tags:
        blob ``i`` (what ``seal`` would return) is
        ``nonces[NONCE_BYTES * i : NONCE_BYTES * (i + 1)] + cts[i]``. Every plaintext is
        still sealed and authenticated on its own; only the draw from the OS random
        source is batched: one ``getrandom`` system call for all the nonces instead of
        one per record, which cost as much as the encryption of a short record.
        """
        if len(plaintexts) != len(aads):
            raise ValueError("one associated data per plaintext")
        nonces = secrets.token_bytes(NONCE_BYTES * len(plaintexts))
        encrypt = self._aead.encrypt
        return nonces, [
            encrypt(nonces[i : i + NONCE_BYTES], p, a)
            for i, p, a in zip(range(0, len(nonces), NONCE_BYTES), plaintexts, aads, strict=True)
        ]

    def open(self, blob: bytes, aad: bytes) -> bytes:
        """Decrypt ``blob``; raises ``InvalidTag`` if it or ``aad`` was changed."""
        if len(blob) < OVERHEAD:
            raise InvalidTag()
        # memoryview slices: slicing ``blob`` itself would copy the whole ciphertext once
        # more (a 165 MiB checkpoint at 100k memories).
        view = memoryview(blob)
        return self._aead.decrypt(view[:NONCE_BYTES], view[NONCE_BYTES:], aad)

    def open_file(self, f: io.BufferedIOBase, size: int, aad: bytes, hasher: Hasher) -> bytearray:
        """``open`` of a sealed file of ``size`` bytes, streamed: read in chunks, each
        fed to ``hasher`` (whole file, in order) and decrypted into one preallocated
        buffer, so the ciphertext is never held whole and every byte is read from
        memory once while still in cache. Raises ``InvalidTag`` after the whole file
        when the tag fails; the caller must also check ``hasher`` before using the
        result (nothing is trusted until both passed)."""
        if size < OVERHEAD:
            raise InvalidTag()
        nonce = _read_exactly(f, NONCE_BYTES)
        f.seek(size - TAG_BYTES)
        tag = _read_exactly(f, TAG_BYTES)
        f.seek(NONCE_BYTES)
        n = size - OVERHEAD
        dec = Cipher(algorithms.AES(self._key), modes.GCM(nonce, tag)).decryptor()
        dec.authenticate_additional_data(aad)
        # update_into may write up to a block past its input: room for it, trimmed below.
        out = bytearray(n + 16)
        view, chunk = memoryview(out), memoryview(bytearray(min(CHUNK_BYTES, max(n, 1))))
        hasher.update(nonce)
        done = written = 0
        while done < n:
            got = f.readinto(chunk[: min(len(chunk), n - done)])
            if not got:
                raise InvalidTag()  # the file shrank while it was read
            done += got
            part = chunk[:got]
            hasher.update(part)
            written += dec.update_into(part, view[written : written + got + 16])
        hasher.update(tag)
        dec.finalize()  # raises InvalidTag: the buffer is dropped with the exception
        if written != n:
            raise InvalidTag()
        view.release()
        del out[n:]
        return out

    def __repr__(self) -> str:
        return "Sealer(<key hidden>)"


def _read_exactly(f: io.BufferedIOBase, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise InvalidTag()
    return data


__all__ = ["NONCE_BYTES", "OVERHEAD", "InvalidTag", "Sealer"]
