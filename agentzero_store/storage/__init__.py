"""Storage: how bytes reach the disk, and under which keys.

- ``credentials``: resolving the one credential (passphrase, raw key, key file);
- ``key_header``: the key header ``keys.json`` (format, checks, durable replacement);
- ``keys``: its slots, the master key they wrap, and the per-purpose subkeys;
- ``datadir``: opening a data dir, the first step of every store's open;
- ``crypto``: AES-256-GCM sealing;
- ``fileio``: the durable-file seam (atomic replace, fsync, fault injection);
- ``sqlcipher``: opening SQLCipher databases safely;
- ``lock``: one writer per data dir, naming its holder;
- ``acks``: the acknowledgement ledger; ``sources``: each source checked against it.

It knows nothing of what the stores keep in their files.
"""
