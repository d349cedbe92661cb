"""Consolidation: promote recurring episodes, merge near-duplicates, decay, archive and
expire (``consolidate.consolidate``), over deterministic near-duplicate detection
(``dedup``, ``jaccard_blocks``)."""
