"""Filters on an item's JSON value, with the operators of LangGraph's stores.

A filter is a mapping of field → condition. A condition is a plain value (equal to it;
a dict without operators matches field by field, a list element by element) or a dict
of operators: ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``. Every condition
must hold. A field is a top-level key; a dotted name (``"a.b"``) that is not itself a key
is a path into nested objects. Ordering compares numbers with numbers and strings with
strings; anything else (a missing field, a string against a number) does not match. A
missing field equals null (so ``$ne`` matches it), as in LangGraph's stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base.errors import InvalidArgumentError

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_MISSING = object()


def check_filter(flt: Any) -> dict[str, Any] | None:
    """A filter as a dict (None or empty: no filter); a typed error for an unknown
    operator or a field that is not a string."""
    if flt is None:
        return None
    if not isinstance(flt, Mapping):
        raise InvalidArgumentError(
            f"a filter must be a mapping of field to condition, got {type(flt).__name__}",
            hint="e.g. {'kind': 'fact'} or {'score': {'$gte': 0.5}}",
        )
    for field, cond in flt.items():
        if not isinstance(field, str) or not field:
            raise InvalidArgumentError(f"filter fields must be non-empty strings, got {field!r}")
        _check_condition(cond)
    return dict(flt) or None


def _check_condition(cond: Any) -> None:
    if isinstance(cond, Mapping):
        ops = [k for k in cond if isinstance(k, str) and k.startswith("$")]
        for op in ops:
            if op not in OPERATORS:
                raise InvalidArgumentError(
                    f"unsupported filter operator {op!r}",
                    hint="use one of " + ", ".join(sorted(OPERATORS)),
                )
        if not ops:
            for v in cond.values():
                _check_condition(v)


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether the JSON object ``value`` satisfies every condition of ``flt``."""
    if not flt:
        return True
    return all(_compare(_field(value, f), cond) for f, cond in flt.items())


def _field(value: Mapping[str, Any], field: str) -> Any:
    if field in value:
        return value[field]
    if "." not in field:
        return _MISSING
    cur: Any = value
    for part in field.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _compare(got: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in cond):
            return all(_apply(got, op, arg) for op, arg in cond.items())
        if not isinstance(got, Mapping):
            return False
        return all(_compare(got.get(k, _MISSING), v) for k, v in cond.items())
    if isinstance(cond, list | tuple):
        return (
            isinstance(got, list | tuple)
            and len(got) == len(cond)
            and all(_compare(g, c) for g, c in zip(got, cond, strict=True))
        )
    return _equal(got, cond)


def _equal(a: Any, b: Any) -> bool:
    # A missing field equals null, as in LangGraph's stores (json_extract gives NULL).
    a = None if a is _MISSING else a
    # JSON has no bool/number overlap: True is not 1 (Python says it is).
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _apply(got: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return _equal(got, arg)
    if op == "$ne":
        return not _equal(got, arg)
    pair = _ordered(got, arg)
    if pair is None:
        return False
    a, b = pair
    if op == "$gt":
        return bool(a > b)
    if op == "$gte":
        return bool(a >= b)
    if op == "$lt":
        return bool(a < b)
    if op == "$lte":
        return bool(a <= b)
    raise InvalidArgumentError(f"unsupported filter operator {op!r}")


def _ordered(a: Any, b: Any) -> tuple[Any, Any] | None:
    def num(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    if num(a) and num(b):
        return a, b
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    return None


__all__ = ["OPERATORS", "check_filter", "matches"]
