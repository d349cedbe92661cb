"""The page decrypter in ``sqlcipher_pages`` against real SQLCipher files.

If the helper misread the layout, an erase test built on it would pass by seeing nothing, so
these tests first show it sees what is there: every page's HMAC checks out, the decrypted
main file is a valid SQLite database for the stdlib ``sqlite3``, and a word just written is
found in a WAL frame and then in the main file, but never in the raw (encrypted) bytes.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlcipher3

from .sqlcipher_pages import RESERVE, decrypted_pages, find_plaintext

WORD = b"zanzibarquokka"


def _connect(path: Path, raw_key: bytes) -> Any:
    """Open like agentzero_store/storage/sqlcipher.py does: raw key, WAL, secure_delete."""
    conn = sqlcipher3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA cipher_log_level = NONE")
    conn.execute(f"PRAGMA key = \"x'{raw_key.hex()}'\"")
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.execute("PRAGMA secure_delete=ON")
    return conn


def _checkpoint(conn: Any) -> None:
    busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0


@pytest.fixture
def raw_key() -> bytes:
    return os.urandom(32)


@pytest.fixture
def db(tmp_path: Path, raw_key: bytes) -> Iterator[tuple[Path, Any]]:
    """A store with a table made and checkpointed; the connection stays open (WAL kept)."""
    path = tmp_path / "memory.db"
    conn = _connect(path, raw_key)
    with closing(conn):
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        _checkpoint(conn)
        yield path, conn


def _insert(conn: Any, n: int = 20) -> None:
    conn.executemany(
        "INSERT INTO t (body) VALUES (?)", [(f"row {i} says {WORD.decode()}",) for i in range(n)]
    )


def _main_pages(path: Path, raw_key: bytes) -> dict[int, bytes]:
    pages = {}
    for name, off, page in decrypted_pages(path, raw_key):
        if name == path.name:
            pages[off // len(page) + 1] = page
    return pages


def _btree_pages(pages: dict[int, bytes], root: int) -> set[int]:
    """The pages of one b-tree (overflow pages aside), walked from its root."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        pgno = todo.pop()
        seen.add(pgno)
        page = pages[pgno]
        h = 100 if pgno == 1 else 0
        kind = page[h]
        assert kind in (0x02, 0x05, 0x0A, 0x0D), f"page {pgno} is not a b-tree page"
        if kind in (0x02, 0x05):  # interior: 4-byte child at each cell, then the right-most
            count = int.from_bytes(page[h + 3 : h + 5], "big")
            todo.append(int.from_bytes(page[h + 8 : h + 12], "big"))
            for i in range(count):
                cell = int.from_bytes(page[h + 12 + 2 * i : h + 14 + 2 * i], "big")
                todo.append(int.from_bytes(page[cell : cell + 4], "big"))
    return seen


def test_decrypted_main_file_is_a_plain_sqlite_database(
    db: tuple[Path, Any], raw_key: bytes, tmp_path: Path
) -> None:
    path, conn = db
    _insert(conn)
    _checkpoint(conn)
    pages = _main_pages(path, raw_key)
    assert sorted(pages) == list(range(1, path.stat().st_size // 4096 + 1))
    first = pages[1]
    assert first.startswith(b"SQLite format 3\x00")
    assert first[16:18] == (4096).to_bytes(2, "big")
    assert first[20] == RESERVE  # SQLCipher's 80 reserved bytes, recorded in the header
    plain = tmp_path / "plain.db"
    plain.write_bytes(b"".join(pages[n] for n in sorted(pages)))
    with closing(sqlite3.connect(plain)) as check:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert check.execute("SELECT count(*) FROM t WHERE body LIKE '%quokka'").fetchone() == (20,)


def test_word_is_found_in_a_wal_frame_before_checkpoint(
    db: tuple[Path, Any], raw_key: bytes
) -> None:
    path, conn = db
    _insert(conn)
    hits = find_plaintext(path, raw_key, [WORD])
    assert hits
    assert {name for name, _off, _n in hits} == {"memory.db-wal"}
    for _name, off, _n in hits:  # page images sit after the 32-byte header and a frame header
        assert (off - 32 - 24) % (24 + 4096) == 0


def test_after_checkpoint_word_is_in_the_main_file_and_never_raw(
    db: tuple[Path, Any], raw_key: bytes
) -> None:
    path, conn = db
    _insert(conn)
    _checkpoint(conn)
    assert Path(f"{path}-wal").stat().st_size == 0
    hits = find_plaintext(path, raw_key, [WORD, WORD[:8]])
    assert {name for name, _off, _n in hits} == {"memory.db"}
    assert {n for _name, _off, n in hits} == {WORD, WORD[:8]}


def test_raw_bytes_are_searched(db: tuple[Path, Any], raw_key: bytes) -> None:
    path, _conn = db
    salt = path.read_bytes()[:16]  # page 1's salt is the one part stored in the clear
    assert (f"{path.name}:raw", 0, salt) in find_plaintext(path, raw_key, [salt])


def test_wrong_key_fails_loudly(db: tuple[Path, Any], raw_key: bytes) -> None:
    path, conn = db
    _insert(conn)
    wrong = bytes([raw_key[0] ^ 1]) + raw_key[1:]
    with pytest.raises(AssertionError, match=r"memory\.db at offset 0: HMAC mismatch"):
        list(decrypted_pages(path, wrong))
    with pytest.raises(AssertionError, match="HMAC mismatch"):
        find_plaintext(path, wrong, [WORD])


def test_damaged_wal_frame_is_named(db: tuple[Path, Any], raw_key: bytes, tmp_path: Path) -> None:
    path, conn = db
    _insert(conn)
    copy = tmp_path / "copy.db"
    copy.write_bytes(path.read_bytes())
    wal = bytearray(Path(f"{path}-wal").read_bytes())
    wal[32 + 24 + 100] ^= 0x01  # one bit of the first frame's ciphertext
    Path(f"{copy}-wal").write_bytes(bytes(wal))
    with pytest.raises(AssertionError, match=r"copy\.db-wal at offset 56 \(frame at 32\)"):
        list(decrypted_pages(copy, raw_key))


def test_wrong_page_size_fails_loudly(db: tuple[Path, Any], raw_key: bytes) -> None:
    path, conn = db
    _insert(conn)
    _checkpoint(conn)
    with pytest.raises(AssertionError):
        list(decrypted_pages(path, raw_key, page_size=1024))


def test_delete_with_secure_delete_leaves_no_trace_after_checkpoint(
    db: tuple[Path, Any], raw_key: bytes
) -> None:
    path, conn = db
    _insert(conn, 200)  # several pages, so the delete also frees pages
    _checkpoint(conn)
    _insert(conn, 5)  # these only ever reach the WAL
    conn.execute("DELETE FROM t")
    # Committed, yet still on disk: the main file is not rewritten yet and the WAL keeps
    # the frames that carried the inserts.
    names = {name for name, _off, _n in find_plaintext(path, raw_key, [WORD])}
    assert names == {"memory.db", "memory.db-wal"}
    _checkpoint(conn)
    assert find_plaintext(path, raw_key, [WORD, b"quokka"]) == []


def test_fts5_contentless_delete_keeps_the_token_until_optimize(
    db: tuple[Path, Any], raw_key: bytes
) -> None:
    """Finding: DELETE on a contentless_delete=1 FTS5 table writes a tombstone.

    Even with the 'secure-delete' option, the deleted row's tokens stay in its segment in
    ``f_data`` (the row no longer matches, but the term is readable on disk) until a merge
    rewrites the segment; 'optimize' does, and secure_delete zeroes the old pages.
    """
    path, conn = db
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body, content='', contentless_delete=1)")
    conn.execute("INSERT INTO f(f, rank) VALUES('secure-delete', 1)")
    conn.execute("INSERT INTO f(rowid, body) VALUES (1, 'alpha beta gamma')")
    conn.execute("INSERT INTO f(rowid, body) VALUES (2, ?)", (f"hello {WORD.decode()} world",))
    conn.execute("INSERT INTO f(rowid, body) VALUES (3, 'delta epsilon')")

    def f_data_hits() -> tuple[list[tuple[str, int, bytes]], set[int]]:
        _checkpoint(conn)
        hits = find_plaintext(path, raw_key, [WORD])
        root = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'f_data'").fetchone()
        return hits, _btree_pages(_main_pages(path, raw_key), root[0])

    hits, f_data = f_data_hits()
    assert hits and all(off // 4096 + 1 in f_data for _name, off, _n in hits)

    conn.execute("DELETE FROM f WHERE rowid = 2")
    assert conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (WORD.decode(),)).fetchall() == []
    hits, f_data = f_data_hits()
    assert hits, "the token is expected to survive the delete (a tombstone, not an erase)"
    assert all(name == "memory.db" and off // 4096 + 1 in f_data for name, off, _n in hits)

    conn.execute("INSERT INTO f(f) VALUES('optimize')")
    hits, _f_data = f_data_hits()
    assert hits == []
    assert conn.execute("SELECT rowid FROM f WHERE f MATCH 'alpha'").fetchall() == [(1,)]
