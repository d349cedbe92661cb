"""Sidecars: the one source → sidecar mechanism and one adapter per index library.

- ``mechanism``: ``Sidecar``, which opens, replays, checkpoints and rebuilds any index;
- ``checkpoints``: what a checkpoint holds, and how it is written, loaded and verified;
- ``failures``: which failures mean "rebuild the index", and which are the caller's;
- ``types``: the protocols a source and an index adapter implement, and the reports;
- ``manifest``: the files on disk (manifest, MAC, sealed data files), verified first;
- ``hnsw``: hnswlib behind ``HnswIndex``;
- ``bm25``: Tantivy in RAM with sealed checkpoints; ``bm25_blinded``: Tantivy on disk
  over blinded terms; ``bm25_terms``: the one analyzer for both, plain or blinded.

Nothing here knows which store a source belongs to: the stores hand a ``Source`` in.
"""
