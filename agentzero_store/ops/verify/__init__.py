"""``agentzero store verify``: check every byte of a data dir that can be checked.

- ``keys.json`` parses and the credential opens it; no key rotation is half done;
- ``memory.db``: ``PRAGMA cipher_integrity_check`` (every page's HMAC) and ``PRAGMA
  integrity_check`` (b-trees, indexes, FTS), it belongs to this store, and every stored
  time is one a read can turn back into a datetime;
- ``memory.archive.db`` (when it exists or memory.db has archived memories): present,
  every page's HMAC, this store's, and holding the text of every memory memory.db marks
  archived with the digest memory.db recorded;
- ``rag/index.jsonl``: every sealed record authenticates and seqs run 1..N;
- every sidecar checkpoint: manifest MAC, each data file's checksum and AES-GCM tag,
  and that it belongs to its source (store id, log generation) and is not ahead of it.

Nothing is modified (SQLite may create its ``-wal``/``-shm`` files, as every reader
does). Each problem becomes a ``Finding`` naming the file, where in it, what is wrong and
the command that fixes it. ``error`` findings make the store unclean; ``note`` findings
are states the store heals by itself (a torn tail cut on the next write, an index
rebuilt on the next open).
"""

from .report import Finding, VerifyReport
from .store import verify_store

__all__ = ["Finding", "VerifyReport", "verify_store"]
