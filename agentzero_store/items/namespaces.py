"""Listing namespaces: match conditions with a ``"*"`` wildcard segment, a depth cut,
sorting and paging (the semantics of LangGraph's ``list_namespaces``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from ..base.errors import InvalidArgumentError
from .records import Namespace, check_segment

NamespaceMatch = tuple[Literal["prefix", "suffix"], Sequence[str]]
WILDCARD = "*"


def _check(match: Sequence[NamespaceMatch]) -> list[tuple[str, Namespace]]:
    out = []
    for cond in match:
        if (
            not isinstance(cond, tuple | list)
            or len(cond) != 2
            or cond[0] not in ("prefix", "suffix")
        ):
            raise InvalidArgumentError(
                f"a namespace match is ('prefix' | 'suffix', segments), got {cond!r}"
            )
        segs = cond[1]
        if isinstance(segs, str) or not isinstance(segs, Sequence):
            raise InvalidArgumentError("a namespace match's segments must be a tuple of strings")
        out.append((str(cond[0]), tuple(check_segment(s) for s in segs)))
    return out


def _fits(kind: str, path: Namespace, ns: Namespace) -> bool:
    if len(ns) < len(path):
        return False
    part = ns[: len(path)] if kind == "prefix" else ns[len(ns) - len(path) :]
    return all(p in (WILDCARD, s) for p, s in zip(path, part, strict=True))


def list_namespaces(
    under: Callable[[Namespace], list[Namespace]],
    match: Sequence[NamespaceMatch],
    *,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[Namespace]:
    """The namespaces ``under(prefix)`` gives for the literal head of the first prefix
    condition, kept if they satisfy every condition, cut to ``max_depth``, deduplicated,
    sorted, then paged."""
    conds = _check(match)
    if max_depth is not None and (
        isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1
    ):
        raise InvalidArgumentError(f"max_depth must be a positive integer, got {max_depth!r}")
    head: Namespace = ()
    for kind, path in conds:
        if kind == "prefix":
            literal = path[: path.index(WILDCARD)] if WILDCARD in path else path
            if len(literal) > len(head):
                head = literal
    found = {ns for ns in under(head) if all(_fits(k, p, ns) for k, p in conds)}
    if max_depth is not None:
        found = {ns[:max_depth] for ns in found}
    return sorted(found)[offset : offset + limit]


__all__ = ["NamespaceMatch", "WILDCARD", "list_namespaces"]
