"""Decrypt a SQLCipher 4 database and its -wal page by page, without SQLCipher (test helper).

A test that claims "this text is erased" has to look at the bytes on disk, and those bytes are
encrypted: asking SQLCipher only shows live rows, never free pages, stale WAL frames or the
slack inside a b-tree page. This module reads the files itself with ``cryptography`` so such a
test can say that a plaintext appears nowhere at all.

The layout, as checked against sqlcipher3 (SQLCipher 4 defaults, a raw key ``x'<64 hex>'``):

* the encryption key is the raw 32-byte key itself (no PBKDF2 for it);
* the HMAC key is PBKDF2-HMAC-SHA512(password=raw key, salt=file salt XOR 0x3a per byte,
  iterations=2, length=32); the file salt is the first 16 bytes of the main file;
* every page of ``page_size`` (4096) bytes ends in an 80-byte reserve: a 16-byte IV, then a
  64-byte HMAC-SHA512. The data before the reserve is AES-256-CBC ciphertext (no padding);
* the HMAC covers ciphertext || IV || page number as a little-endian uint32;
* page 1 begins with the 16-byte salt in the clear, so its ciphertext (and its HMAC input)
  starts at byte 16. The same holds for page 1 inside a WAL frame: it carries the salt too;
* the -wal file is a 32-byte header, then frames of a 24-byte header (page number as a
  big-endian uint32 first) and one page encrypted exactly as in the main file.

Every page's HMAC is checked before it is decrypted, so a wrong key or a misparse raises
AssertionError naming the file and offset instead of yielding garbage.

Limits: a needle split across two pages (a long value running onto an overflow page) is not
found in the decrypted pages, so use needles shorter than a row's payload; the raw scan looks
at whole files. Only the main file and its -wal hold page images (the -shm holds page numbers
and checksums only); the -shm and a rollback -journal, if present, are scanned raw.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

SALT_SIZE = 16
IV_SIZE = 16
HMAC_SIZE = 64
RESERVE = IV_SIZE + HMAC_SIZE  # SQLCipher 4's default reserve per page: 80 bytes
HMAC_SALT_MASK = 0x3A
FAST_KDF_ITER = 2
SQLITE_HEADER = b"SQLite format 3\x00"
WAL_HEADER_SIZE = 32
WAL_FRAME_HEADER_SIZE = 24
WAL_MAGICS = (0x377F0682, 0x377F0683)


def _hmac_key(raw_key: bytes, salt: bytes) -> bytes:
    hmac_salt = bytes(b ^ HMAC_SALT_MASK for b in salt)
    return hashlib.pbkdf2_hmac("sha512", raw_key, hmac_salt, FAST_KDF_ITER, len(raw_key))


def _decrypt_page(
    image: bytes,
    pgno: int,
    raw_key: bytes,
    hmac_key: bytes,
    page_size: int,
    where: str,
) -> bytes:
    """One encrypted page image -> the plain SQLite page (page 1 gets its header back)."""
    assert len(image) == page_size, f"{where}: short page ({len(image)} of {page_size} bytes)"
    assert pgno >= 1, f"{where}: page number {pgno}"
    start = SALT_SIZE if pgno == 1 else 0
    end = page_size - RESERVE
    ciphertext = image[start:end]
    iv = image[end : end + IV_SIZE]
    mac = image[end + IV_SIZE :]
    want = hmac.new(hmac_key, ciphertext + iv + struct.pack("<I", pgno), hashlib.sha512).digest()
    assert hmac.compare_digest(mac, want), (
        f"{where}: HMAC mismatch on page {pgno} (wrong key, wrong page size or misparse)"
    )
    decryptor = Cipher(algorithms.AES(raw_key), modes.CBC(iv)).decryptor()
    plain = decryptor.update(ciphertext) + decryptor.finalize()
    if pgno == 1:
        # Bytes 16-17 of the header are the page size (big-endian, 1 meaning 65536).
        (stored,) = struct.unpack(">H", plain[:2])
        stored_size = 65536 if stored == 1 else stored
        assert stored_size == page_size, (
            f"{where}: page 1 says page size {stored_size}, expected {page_size}"
        )
        plain = SQLITE_HEADER + plain
    # The reserve stays (as zeros) so the page keeps its size and cell offsets.
    return plain + bytes(RESERVE)


def _salt(main: bytes, wal: bytes, page_size: int, path: Path) -> bytes:
    if len(main) >= SALT_SIZE:
        return main[:SALT_SIZE]
    # A main file not yet written: page 1 in the WAL carries the salt as well.
    frame_size = WAL_FRAME_HEADER_SIZE + page_size
    for off in range(WAL_HEADER_SIZE, len(wal) - frame_size + 1, frame_size):
        if struct.unpack(">I", wal[off : off + 4])[0] == 1:
            page = off + WAL_FRAME_HEADER_SIZE
            return wal[page : page + SALT_SIZE]
    raise AssertionError(f"{path.name}: no salt (main file empty and no page 1 in the WAL)")


def decrypted_pages(
    path: Path, raw_key: bytes, page_size: int = 4096
) -> Iterator[tuple[str, int, bytes]]:
    """Yield (file name, byte offset, plaintext page) for every page of the database and WAL.

    The offset is where the encrypted page image starts in that file (in the -wal, just past
    its frame header). Every WAL frame present is yielded, stale ones from before a restart
    included. All-zero regions (never written, so nothing to hide) are skipped.
    """
    path = Path(path)
    assert len(raw_key) == 32, f"raw key must be 32 bytes, got {len(raw_key)}"
    assert page_size > RESERVE + SALT_SIZE and page_size % 16 == 0, f"page size {page_size}"
    main = path.read_bytes()
    wal_path = path.with_name(path.name + "-wal")
    wal = wal_path.read_bytes() if wal_path.exists() else b""
    hmac_key = _hmac_key(raw_key, _salt(main, wal, page_size, path))
    zero_page = bytes(page_size)

    assert len(main) % page_size == 0, (
        f"{path.name}: size {len(main)} is not a multiple of the page size {page_size}"
    )
    for off in range(0, len(main), page_size):
        image = main[off : off + page_size]
        if image == zero_page:
            continue
        where = f"{path.name} at offset {off}"
        yield (
            path.name,
            off,
            _decrypt_page(image, off // page_size + 1, raw_key, hmac_key, page_size, where),
        )

    if not wal:
        return
    assert len(wal) >= WAL_HEADER_SIZE, f"{wal_path.name}: {len(wal)} bytes, no WAL header"
    magic, _version, wal_page_size = struct.unpack(">III", wal[:12])
    assert magic in WAL_MAGICS, f"{wal_path.name} at offset 0: bad WAL magic {magic:#x}"
    assert wal_page_size == page_size, (
        f"{wal_path.name} at offset 8: WAL page size {wal_page_size}, expected {page_size}"
    )
    frame_size = WAL_FRAME_HEADER_SIZE + page_size
    assert (len(wal) - WAL_HEADER_SIZE) % frame_size == 0, (
        f"{wal_path.name}: {len(wal) - WAL_HEADER_SIZE} bytes after the header are not whole "
        f"frames of {frame_size} bytes"
    )
    zero_frame = bytes(frame_size)
    for off in range(WAL_HEADER_SIZE, len(wal), frame_size):
        if wal[off : off + frame_size] == zero_frame:
            continue
        (pgno,) = struct.unpack(">I", wal[off : off + 4])
        page_off = off + WAL_FRAME_HEADER_SIZE
        where = f"{wal_path.name} at offset {page_off} (frame at {off})"
        image = wal[page_off : page_off + page_size]
        yield (
            wal_path.name,
            page_off,
            _decrypt_page(image, pgno, raw_key, hmac_key, page_size, where),
        )


def _occurrences(data: bytes, needle: bytes) -> Iterator[int]:
    at = data.find(needle)
    while at != -1:
        yield at
        at = data.find(needle, at + 1)


def find_plaintext(
    path: Path, raw_key: bytes, needles: Iterable[bytes], page_size: int = 4096
) -> list[tuple[str, int, bytes]]:
    """Every (file, offset, needle) where a needle is readable on disk.

    Decrypted pages report the page's offset (as decrypted_pages gives it), once per page
    and needle. The undecrypted bytes of the main file, -wal, -shm and -journal are searched
    too, each occurrence reported as ("<file name>:raw", its offset in the file, needle).
    """
    path = Path(path)
    wanted = [bytes(n) for n in needles]
    assert wanted and all(wanted), "needles must be non-empty byte strings"
    found: list[tuple[str, int, bytes]] = []
    for name, off, page in decrypted_pages(path, raw_key, page_size):
        found.extend((name, off, n) for n in wanted if n in page)
    for suffix in ("", "-wal", "-shm", "-journal"):
        file = path.with_name(path.name + suffix)
        if not file.exists():
            continue
        data = file.read_bytes()
        for n in wanted:
            found.extend((f"{file.name}:raw", at, n) for at in _occurrences(data, n))
    return found
