"""Choosing an embedder by name (the CLI's ``--embedder``, env ``AGENTZERO_EMBEDDER``)."""

from __future__ import annotations

import os

from ..base.errors import InvalidArgumentError
from .local import LocalEmbedder
from .vectors import Embedder


def embedder_from_env(name: str | None = None) -> Embedder | None:
    """The embedder named by ``name`` or env ``AGENTZERO_EMBEDDER``: local (default), api, none.

    ``api`` reads ``AGENTZERO_EMBED_URL``, ``AGENTZERO_EMBED_MODEL``,
    ``AGENTZERO_EMBED_API_KEY`` and optionally ``AGENTZERO_EMBED_DIMENSIONS``.
    """
    choice = (name or os.environ.get("AGENTZERO_EMBEDDER") or "local").lower()
    if choice == "none":
        return None
    if choice == "local":
        return LocalEmbedder()
    if choice == "api":
        from .api import ApiEmbedder  # lazily: httpx is imported only when it is used

        return ApiEmbedder()
    raise InvalidArgumentError(
        f"unknown embedder {choice!r}", hint="use local, api or none (AGENTZERO_EMBEDDER)"
    )


__all__ = ["embedder_from_env"]
