"""The item store's records and the checks on what goes in.

An item is (namespace, key) → a JSON object, and optionally a byte string beside it
(``data``: a serialized blob the caller owns, such as a LangGraph checkpoint). A
namespace is a tuple of strings; in SQL it is one text, each segment followed by the
unit separator (``\\x1f``), so "everything under a prefix" is one index range that
matches whole segments only.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..base.errors import InvalidArgumentError
from ..base.limits import MAX_METADATA_DEPTH, MAX_TTL_SECONDS

Namespace = tuple[str, ...]
JsonObject = dict[str, Any]

SEP = "\x1f"  # after every namespace segment; no segment may hold it
MAX_ITEM_BYTES = 256 * 1024 * 1024  # a value's JSON plus its data, per item
MAX_SEGMENTS = 64  # segments of one namespace
MAX_DIMS = 65_536  # dimensions of one vector
_TEXT_HINT = "use valid Unicode text without NUL or unit-separator (\\x1f) characters"


@dataclass(frozen=True)
class Item:
    """One stored item (a copy: changing it changes nothing stored)."""

    namespace: Namespace
    key: str
    value: JsonObject
    created_at: datetime
    updated_at: datetime
    data: bytes | None = None
    expires_at: datetime | None = None
    ttl_s: float | None = None  # the time to live a read refreshes, if any


@dataclass(frozen=True)
class ItemHit:
    """An item found by ``ItemStore.search``, with its similarity to the query vector
    (cosine of the item's best field) or None when it was not ranked by a vector."""

    item: Item
    score: float | None = None


# ---------------------------------------------------------------------- checks
def check_segment(seg: Any, what: str = "namespace") -> str:
    """One namespace segment (any string, even empty, without NUL or ``\\x1f``)."""
    if not isinstance(seg, str):
        raise InvalidArgumentError(
            f"{what} segments must be strings, got {type(seg).__name__} {seg!r}",
            hint="a namespace is a tuple of strings, e.g. ('users', 'alice')",
        )
    _check_text(seg, f"{what} segment")
    return seg


def check_namespace(ns: Any, *, allow_empty: bool = False, what: str = "namespace") -> Namespace:
    """A namespace: a tuple (or list) of strings, non-empty unless ``allow_empty``."""
    if type(ns) is tuple and all(type(s) is str for s in ns):
        # Memoized for plain tuples of str (hashable, immutable): every read and write
        # checks its namespace, mostly the same few; a refused one is never memoized.
        return _checked_tuple(ns, allow_empty, what)
    return _check_namespace(ns, allow_empty, what)


@functools.lru_cache(maxsize=1024)
def _checked_tuple(ns: tuple[str, ...], allow_empty: bool, what: str) -> Namespace:
    return _check_namespace(ns, allow_empty, what)


def _check_namespace(ns: Any, allow_empty: bool, what: str) -> Namespace:
    if isinstance(ns, str) or not isinstance(ns, Sequence):
        raise InvalidArgumentError(
            f"{what} must be a tuple of strings, got {type(ns).__name__}",
            hint="e.g. ('users', 'alice'); a single string is not a namespace",
        )
    out = tuple(check_segment(s, what) for s in ns)
    if not out and not allow_empty:
        raise InvalidArgumentError(
            f"{what} must not be empty", hint="give at least one segment, e.g. ('memories',)"
        )
    if len(out) > MAX_SEGMENTS:
        raise InvalidArgumentError(f"{what} has {len(out)} segments; the limit is {MAX_SEGMENTS}")
    return out


def check_key(key: Any) -> str:
    """An item key: a string without NUL or ``\\x1f``."""
    if not isinstance(key, str):
        raise InvalidArgumentError(
            f"an item key must be a string, got {type(key).__name__}", hint="use str keys"
        )
    _check_text(key, "item key")
    return key


def _check_text(s: str, what: str) -> None:
    if "\x00" in s or SEP in s:
        raise InvalidArgumentError(f"{what} holds NUL or \\x1f", hint=_TEXT_HINT)
    if s.isascii():  # the common case: no surrogate possible
        return
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{what} holds a lone surrogate", hint=_TEXT_HINT) from None


def check_ttl(ttl_s: Any) -> float | None:
    """A time to live in seconds (finite, > 0, at most 100 years), or None."""
    if ttl_s is None:
        return None
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float):
        raise InvalidArgumentError(f"ttl must be a number of seconds, got {ttl_s!r}")
    if not math.isfinite(ttl_s) or ttl_s <= 0 or ttl_s > MAX_TTL_SECONDS:
        raise InvalidArgumentError(
            f"ttl must be more than 0 and at most {MAX_TTL_SECONDS:,} seconds; got {ttl_s!r}",
            hint="give the time to live in seconds, or None for no expiry",
        )
    return float(ttl_s)


def encode_value(value: Any, data: Any = None) -> tuple[str, bytes | None]:
    """The compact JSON of ``value`` (a JSON object: str keys, no NaN, nothing JSON cannot
    hold) and ``data`` (bytes or None), checked; a typed error names what is wrong."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(
            f"an item value must be a JSON object (a dict), got {type(value).__name__}",
            hint="wrap it, e.g. {'value': ...}; bytes go in data=",
        )
    if data is not None and not isinstance(data, bytes | bytearray | memoryview):
        raise InvalidArgumentError(f"item data must be bytes, got {type(data).__name__}")
    _check_shape(value, 1)
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except ValueError as exc:
        raise InvalidArgumentError(
            "the item value holds NaN or infinity, which JSON cannot represent",
            hint="store such numbers as strings, or leave them out",
        ) from exc
    except TypeError as exc:
        raise InvalidArgumentError(
            f"the item value is not JSON: {exc}",
            hint="values hold only dicts, lists, str, int, float, bool and None; "
            "serialize other objects first",
        ) from None
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            "the item value holds a lone surrogate", hint=_TEXT_HINT
        ) from None
    blob = bytes(data) if data is not None else None
    size += len(blob) if blob is not None else 0
    if size > MAX_ITEM_BYTES:
        raise InvalidArgumentError(
            f"the item is {size:,} bytes; the limit is {MAX_ITEM_BYTES:,} "
            "(agentzero_store.items.records.MAX_ITEM_BYTES)",
            hint="split it into several items",
        )
    return text, blob


def _check_shape(value: Any, depth: int) -> None:
    """Str keys at every level (json.dumps would turn an int key into a str silently, so
    the value read back would differ) and bounded nesting (deep nesting exhausts every
    JSON reader's recursion)."""
    if depth > MAX_METADATA_DEPTH:
        raise InvalidArgumentError(
            f"the item value is nested more than {MAX_METADATA_DEPTH} levels deep",
            hint="flatten the value",
        )
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidArgumentError(
                    f"item value keys must be strings, got {type(k).__name__} {k!r}",
                    hint="JSON object keys are strings",
                )
            if isinstance(v, Mapping | list | tuple):
                _check_shape(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            if isinstance(v, Mapping | list | tuple):
                _check_shape(v, depth + 1)


# ---------------------------------------------------------------------- namespaces in SQL
def ns_text(ns: Namespace) -> str:
    """The namespace as stored: each segment followed by ``SEP``."""
    return "".join(s + SEP for s in ns)


def ns_tuple(text: str) -> Namespace:
    """The inverse of ``ns_text``."""
    return tuple(text.split(SEP)[:-1])


def prefix_range(prefix: Namespace) -> tuple[str, str] | None:
    """[low, high) of the stored texts of ``prefix`` and every namespace under it (whole
    segments: ('a',) never matches ('ab',)), or None for the empty prefix (everything)."""
    if not prefix:
        return None
    low = ns_text(prefix)
    return low, low[:-1] + chr(ord(SEP) + 1)


__all__ = [
    "MAX_DIMS",
    "MAX_ITEM_BYTES",
    "Item",
    "ItemHit",
    "JsonObject",
    "Namespace",
    "check_key",
    "check_namespace",
    "check_segment",
    "check_ttl",
    "encode_value",
    "ns_text",
    "ns_tuple",
    "prefix_range",
]
