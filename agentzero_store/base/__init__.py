"""The bottom layer: what every other layer shares, and nothing else.

- ``errors``: the rooted exception hierarchy (each error with a stable code and a hint);
- ``config``: ``StoreConfig``, ``KdfParams`` and ``Layout`` (the data dir's paths);
- ``limits``: the caps on every argument, and their checks;
- ``ranking``: exact top-k, FTS5 queries and RRF fusion, for every recall path.

It imports nothing of the package above it.
"""
