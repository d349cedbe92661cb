"""Recall of the agent memory: candidates, filters and fusion (``search``), the ranking
signals of mode ``auto`` (``signals``, ``when``) and the lists that tell nothing apart on
a query (``flat_lists``)."""

from .search import SIGNALS, Recaller

__all__ = ["SIGNALS", "Recaller"]
