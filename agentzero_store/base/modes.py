"""Search modes: one vocabulary for every search of every surface (the library, the CLI,
the agent tools, the MCP server, the browser inspector).

- ``keyword``: BM25 over the query's words (``bm25``, the document store's old name, is
  an alias);
- ``semantic``: by meaning (needs an embedder);
- ``hybrid``: both, fused with RRF;
- ``auto``, the default of every search: the best the store can do. The agent memory
  fuses every signal it has (meaning, words, neighbouring turns, entities, ...); a memory
  store or a document store searches ``hybrid`` with an embedder and ``keyword`` without.
"""

from __future__ import annotations

from typing import Literal

from .errors import InvalidArgumentError

Mode = Literal["auto", "keyword", "semantic", "hybrid", "bm25"]
"""A mode as a caller may name it (aliases included)."""

MODES: tuple[str, ...] = ("auto", "keyword", "semantic", "hybrid")
ALIASES: dict[str, str] = {"bm25": "keyword"}
ACCEPTED: tuple[str, ...] = (*MODES, *ALIASES)
"""Every name a mode argument takes (``MODES`` and the aliases)."""


def search_mode(mode: str | None) -> str:
    """The canonical name of ``mode`` (one of ``MODES``): None is ``auto``, an alias is
    what it stands for; anything else is an ``InvalidArgumentError``."""
    if mode is None:
        return "auto"
    name = ALIASES.get(mode, mode) if isinstance(mode, str) else mode
    if name not in MODES:
        raise InvalidArgumentError(
            f"mode must be one of {', '.join(MODES)} (bm25 is keyword); got {mode!r}",
            hint="auto picks the best the store can do",
        )
    return name


def plain_mode(mode: str | None, *, has_embedder: bool) -> str:
    """``search_mode`` for a store with one ranking per mode (a memory or document
    store): ``auto`` is ``hybrid`` with an embedder, ``keyword`` without one."""
    name = search_mode(mode)
    if name == "auto":
        return "hybrid" if has_embedder else "keyword"
    return name


__all__ = ["ACCEPTED", "ALIASES", "MODES", "Mode", "plain_mode", "search_mode"]
