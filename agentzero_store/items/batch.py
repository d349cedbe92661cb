"""``ItemBatch``: the writes of one transaction on the item store.

Every write made through one batch commits together or not at all (one SQLite
transaction on ``memory.db``, under the data dir's writer role): a process killed in the
middle leaves the items as they were before the batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import InvalidArgumentError
from .records import (
    MAX_DIMS,
    Item,
    check_key,
    check_namespace,
    check_ttl,
    encode_value,
)
from .repository import ItemRepository, row_to_item

if TYPE_CHECKING:
    from ..memory.sqlite.tx import WriteTx


def check_vectors(vectors: Any) -> dict[str, np.ndarray] | None:
    """Field name → a finite, non-zero 1-D float vector; None or empty: no vectors."""
    if vectors is None:
        return None
    if not isinstance(vectors, Mapping):
        raise InvalidArgumentError(
            f"vectors must map a field name to a vector, got {type(vectors).__name__}"
        )
    out: dict[str, np.ndarray] = {}
    for field, vec in vectors.items():
        if not isinstance(field, str):
            raise InvalidArgumentError(f"vector field names must be strings, got {field!r}")
        try:
            arr = np.asarray(vec, dtype=np.float32)
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"the vector of {field!r} is not a list of numbers"
            ) from None
        if arr.ndim != 1 or not 0 < arr.shape[0] <= MAX_DIMS:
            raise InvalidArgumentError(
                f"the vector of {field!r} must be 1-D with 1..{MAX_DIMS} numbers, got shape "
                f"{arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidArgumentError(f"the vector of {field!r} holds NaN or infinity")
        out[field] = arr
    return out or None


class ItemBatch:
    """Writes (and reads that see them) inside one open transaction."""

    def __init__(self, repo: ItemRepository, tx: WriteTx, now_us: int) -> None:
        self._repo = repo
        self._tx = tx
        self._now = now_us

    def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        data: bytes | None = None,
        vectors: Mapping[str, Sequence[float]] | None = None,
        text: str | None = None,
        ttl: float | None = None,
        if_absent: bool = False,
    ) -> bool:
        """Store ``value`` (a JSON object) and ``data`` (bytes) at (namespace, key),
        replacing what was there (with ``if_absent``: only if nothing live is there).
        ``vectors``: field → vector for similarity search (the collection's dimension);
        ``text``: words for keyword search; ``ttl``: seconds until it expires. Returns
        whether it was written."""
        ns = check_namespace(namespace)
        k = check_key(key)
        value_json, blob = encode_value(value, data)
        vecs = check_vectors(vectors)
        if text is not None and not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
        return self._repo.upsert(
            self._tx,
            ns,
            k,
            value_json,
            blob,
            self._now,
            check_ttl(ttl),
            vectors=vecs,
            text=text,
            if_absent=if_absent,
        )

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        """Delete the item at (namespace, key); whether there was one."""
        return self._repo.delete(self._tx, check_namespace(namespace), check_key(key))

    def delete_under(self, prefix: Sequence[str], *, exact: bool = False) -> int:
        """Delete every item in ``prefix`` and (unless ``exact``) every namespace under
        it; how many."""
        ns = check_namespace(prefix, allow_empty=not exact, what="prefix")
        return self._repo.delete_under(self._tx, ns, exact=exact)

    def get(self, namespace: Sequence[str], key: str) -> Item | None:
        """The live item at (namespace, key) as this transaction sees it."""
        ns, k = check_namespace(namespace), check_key(key)
        rows = self._repo.get([(ns, k)], self._now, self._tx)
        return row_to_item(next(iter(rows.values()))) if rows else None


__all__ = ["ItemBatch", "check_vectors"]
