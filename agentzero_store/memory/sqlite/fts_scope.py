"""Scope tokens in the memory FTS5 index, so keyword recall scores only its scope's rows.

Joining every FTS5 match to its ``memory`` row to test the scope reads one encrypted page
per match and scores every match: an OR-query of a few mid-frequency words matches
thousands of rows at 100k (~40 ms). Instead each FTS5 row carries a second column,
``scope``, holding one token per scope field (``o…``, ``a…``, ``c…``), and the query ANDs
the wanted tokens in: FTS5 intersects posting lists and computes ``bm25()`` for the
scope's rows only (~1 ms), without reading ``memory`` at all.

A token is the field letter and the decimal digits of a BLAKE2b-64 hash of the value:
digits only, so the ``porter`` stemmer never rewrites it and ``unicode61`` never splits it,
whatever the value holds. The scope column has weight 0 in ``bm25()``, so ranking is the
same as over ``content`` alone. A hash collision could only add rows from another scope to
the candidates; the final rows are always re-checked in SQL (``recall.read_hits``),
so it can never leak them. Everything lives inside SQLCipher, like the content itself.
"""

from __future__ import annotations

import functools
import hashlib

from ...base.ranking import fts5_query
from ..records import Scope

SQL_FUNCTION = "az_scope_tokens"  # registered by schema.migrate: migrations call it
_LETTERS = {"org_id": "o", "agent_id": "a", "conversation_id": "c"}


@functools.lru_cache(maxsize=4_096)  # a batch repeats a few scopes: hash each once
def token(field: str, value: str) -> str:
    """The FTS5 token standing for ``field = value``."""
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=8, person=b"az-fts-scope").digest()
    return _LETTERS[field] + str(int.from_bytes(digest, "big"))


def scope_tokens(org_id: str, agent_id: str, conversation_id: str) -> str:
    """The ``scope`` column of one FTS5 row."""
    return " ".join(
        (
            token("org_id", org_id),
            token("agent_id", agent_id),
            token("conversation_id", conversation_id),
        )
    )


def match_expression(query_text: str, scope: Scope, *, owner_holds_all: bool = False) -> str | None:
    """``content : (words ORed) AND scope : token ...`` for the given scope fields; None if
    the query has no words.

    ``owner_holds_all``: the scope's (org, agent) owns every row of the index (see
    ``recall.owner_holds_all``), so their tokens would filter nothing and are left out.
    They are not free: ``bm25()`` walks every phrase of the query for each match, and a
    scope token matches every row, which made a 100k-row recall 2.6× slower (16 vs
    6 ms). Scores are the same either way (the scope column has weight 0).
    """
    words = fts5_query(query_text)
    if words is None:
        return None
    parts = [f"content : ({words})"]
    for field in _LETTERS:
        value = getattr(scope, field)
        if value is not None and not (owner_holds_all and field != "conversation_id"):
            parts.append(f'scope : "{token(field, value)}"')
    return " AND ".join(parts)


__all__ = ["SQL_FUNCTION", "match_expression", "scope_tokens", "token"]
