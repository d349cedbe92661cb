"""AES-256-GCM sealing with enforced fresh 96-bit nonces and bound associated data.

One ``Sealer`` per subkey (the AESGCM object is reused: construction is the slow part).
A sealed blob is ``nonce (12 B) || ciphertext+tag``. ``open`` raises ``InvalidTag`` as a
typed ``TamperedRecordError`` supplied by the caller, who knows which file and record
failed (``InvalidTag`` itself has an empty message).
"""

from __future__ import annotations

import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12
TAG_BYTES = 16
OVERHEAD = NONCE_BYTES + TAG_BYTES


class Sealer:
    """Seal and open byte strings with one 32-byte key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("AES-256-GCM needs a 32-byte key")
        self._aead = AESGCM(key)

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        """Encrypt and authenticate ``plaintext``, binding ``aad``; fresh random nonce."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plaintext, aad)

    def open(self, blob: bytes, aad: bytes) -> bytes:
        """Decrypt ``blob``; raises ``InvalidTag`` if it or ``aad`` was changed."""
        if len(blob) < OVERHEAD:
            raise InvalidTag()
        # memoryview slices: slicing ``blob`` itself would copy the whole ciphertext once
        # more (a 165 MiB checkpoint at 100k memories).
        view = memoryview(blob)
        return self._aead.decrypt(view[:NONCE_BYTES], view[NONCE_BYTES:], aad)

    def open_into(self, blob: bytes | bytearray, aad: bytes) -> bytearray:
        """``open`` into a new ``bytearray``: ~4× faster than ``open`` for large blobs
        (no intermediate copy; 0.1 s instead of 0.4 s for 165 MiB here). Nothing of the
        plaintext escapes if the tag fails: the buffer is dropped before raising."""
        if len(blob) < OVERHEAD:
            raise InvalidTag()
        view = memoryview(blob)
        out = bytearray(len(blob) - OVERHEAD)
        self._aead.decrypt_into(view[:NONCE_BYTES], view[NONCE_BYTES:], aad, out)
        return out

    def __repr__(self) -> str:
        return "Sealer(<key hidden>)"


__all__ = ["OVERHEAD", "InvalidTag", "Sealer"]
