"""The item store: sealed JSON items by (namespace, key), in a data dir's ``memory.db``.

- ``store``: ``ItemStore``, the facade (open, put, get, scan, search, namespaces, batch);
- ``batch``: ``ItemBatch``, the writes of one transaction;
- ``records``: ``Item``, ``ItemHit`` and the checks on namespaces, keys and values;
- ``filters``: filters on a value's fields (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
  ``$lte``);
- ``search`` / ``vector_cache``: ranked search (exact cosine over the collection's
  vectors, kept in RAM between writes; hybrid fusion) and its pages;
- ``namespaces``: listing namespaces (prefix/suffix conditions, wildcard, depth);
- ``repository`` / ``schema``: every SQL statement; the tables and their migrations.

A layer beside the agent memory: it builds on the memory store's ``transaction()`` and
``database`` and nothing above. The framework adapters (``integrations/``) build on it.
"""

from .batch import ItemBatch
from .namespaces import NamespaceMatch
from .records import MAX_ITEM_BYTES, Item, ItemHit, Namespace
from .store import ItemStore, Ranking

__all__ = [
    "MAX_ITEM_BYTES",
    "Item",
    "ItemBatch",
    "ItemHit",
    "ItemStore",
    "Namespace",
    "NamespaceMatch",
    "Ranking",
]
