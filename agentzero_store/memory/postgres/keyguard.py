"""Which master key a PostgreSQL memory store is under, and keeping stale clients out.

Many clients share one database, each holding the keys it unlocked when it opened. A
key rotation (``rotation``) re-seals every row under a new master key in one
transaction; a client still holding the old keys must then never write (a row sealed
under a key nobody can unwrap any more) nor read (the re-sealed rows do not open under
its keys, and its blinded lookups match nothing). So:

- ``az_meta`` holds a **key version** (``key_version``; no row: 0), bumped by the
  rotation in its transaction. A client reads it with the key header, in one statement
  (one snapshot: the header and the version it unlocked always belong together).
- Every **write transaction** takes ``pg_advisory_xact_lock_shared(KEY_LOCK)`` first
  and then reads the version: writers never wait for each other on it. The rotation
  takes ``pg_advisory_xact_lock(KEY_LOCK)`` (exclusive): it waits for the writers in
  flight, and holds new ones off until it commits. A writer that waited reads the
  version *after* the lock, in a statement of its own (READ COMMITTED: a new snapshot,
  taken once the lock's statement is done, which sees the rotation's commit); the two
  statements are pipelined, one round trip. Reading the version in the lock's statement
  would be wrong: that statement's snapshot predates the wait.
- **Reads** never wait and pay no extra round trip. A value that fails to open is
  checked against the version (the codecs call ``PgMemoryStore.check_key_version``): a
  rotated key raises ``KeyRotatedError``, not ``TamperedRecordError``. Lookups by a
  keyed hash (keyword terms, entity and fact keys) do not fail, they match nothing:
  for them every client ``LISTEN``s on ``CHANNEL`` and the rotation ``NOTIFY``s in its
  transaction. PostgreSQL delivers a notification at the commit (to a client inside a
  transaction, when that transaction ends), and psycopg hands it over while it reads
  the next response; each read checks for one once its statement (or transaction) is
  done, and confirms it against the version. What this cannot see: a read whose
  snapshot was taken in the microseconds between the rotation's commit and the
  server's signal to the listener (the next read sees it), and a connection pooler in
  transaction mode, which drops ``LISTEN`` (writes and opened values stay checked).

A stale client gets ``KeyRotatedError`` (reopen the store) and has changed nothing.
"""

from __future__ import annotations

from typing import Any

from ...base.errors import CorruptStoreError, KeyRotatedError

# pg_advisory_xact_lock key of the master key: shared by every write transaction,
# exclusive for a rotation. "az-keys!" (a one-key lock, like the schema lock's).
KEY_LOCK = 0x617A_2D6B_6579_7321
VERSION_KEY = "key_version"
CHANNEL = "az_key_rotated"  # NOTIFY'd by a rotation, LISTENed to by every client

_VERSION_SQL = f"SELECT value FROM az_meta WHERE key = '{VERSION_KEY}'"
_SHARE_SQL = f"SELECT pg_advisory_xact_lock_shared({KEY_LOCK})"


def _as_version(value: Any) -> int:
    return 0 if value is None else int(value)


def read_header(conn: Any) -> tuple[bytes, int]:
    """The key header's JSON bytes and the key version, from one snapshot."""
    row = conn.execute(
        f"SELECT k.header, ({_VERSION_SQL}) FROM az_keys k WHERE k.one = 1"
    ).fetchone()
    if row is None:
        raise CorruptStoreError("the az_keys table holds no key header", path="az_keys")
    return str(row[0]).encode("utf-8"), _as_version(row[1])


def listen(conn: Any) -> None:
    """Receive the rotations' notifications on ``conn`` (autocommit) from now on."""
    conn.execute(f"LISTEN {CHANNEL}")


def announce(conn: Any, version: int) -> None:
    """Notify every listening client, when the caller's transaction commits, that the
    key is now ``version``."""
    conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(version)))


def current(conn: Any) -> int:
    """The key version now (in the caller's transaction, if any)."""
    row = conn.execute(_VERSION_SQL).fetchone()
    return _as_version(row[0] if row is not None else None)


def stale(unlocked: int, found: int) -> KeyRotatedError:
    """The error of a client that unlocked version ``unlocked`` and found ``found``."""
    return KeyRotatedError(
        f"the store's master key was rotated after this handle opened it (key version "
        f"{unlocked}, now {found}): its keys are stale, so this call was refused and "
        "wrote nothing"
    )


def enter_write(conn: Any, unlocked: int) -> None:
    """At the start of a write transaction: share the key lock until it ends, then
    check that the master key is still the one this client unlocked
    (``KeyRotatedError`` otherwise: the caller's transaction rolls back)."""
    # Pipelined: one round trip. The server runs the two in order, and the second
    # statement's snapshot is taken when it starts, after the first got the lock.
    # (Measured here, per write: +0.16 ms pipelined, +0.11 ms as two round trips on a
    # loopback connection, +0.20 ms as one two-statement simple query, which cannot use
    # prepared statements; over a real network the round trip saved dominates.)
    with conn.pipeline():
        conn.execute(_SHARE_SQL)
        cur = conn.execute(_VERSION_SQL)
    row = cur.fetchone()
    found = _as_version(row[0] if row is not None else None)
    if found != unlocked:
        raise stale(unlocked, found)


def check(conn: Any, unlocked: int) -> None:
    """``KeyRotatedError`` if the key version is no longer ``unlocked``."""
    found = current(conn)
    if found != unlocked:
        raise stale(unlocked, found)


def lock_exclusive(conn: Any) -> None:
    """The rotation's lock, until its transaction ends: waits for every write
    transaction in flight, and new ones wait for it."""
    conn.execute(f"SELECT pg_advisory_xact_lock({KEY_LOCK})")


def bump(conn: Any, version: int) -> int:
    """Set the key version to ``version + 1`` in the caller's transaction (the
    rotation's, which holds the exclusive lock); the new version."""
    new = version + 1
    conn.execute(
        "INSERT INTO az_meta (key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (VERSION_KEY, str(new)),
    )
    return new


__all__ = [
    "CHANNEL",
    "KEY_LOCK",
    "VERSION_KEY",
    "announce",
    "bump",
    "check",
    "current",
    "enter_write",
    "listen",
    "lock_exclusive",
    "read_header",
    "stale",
]
