"""Shared by the LangGraph adapter tests: a raw key, and a deterministic embedder (the
point: offline tests with scores that can be checked)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

KEY = bytes(range(1, 33))
DIMS = 8


def fake_embed(texts: Sequence[str]) -> list[list[float]]:
    """A bag of hashed words, normalised: texts that share words are similar (a fake
    embedder, named so: tests need no model and must be exact)."""
    out = []
    for text in texts:
        vec = [0.0] * DIMS
        for word in text.lower().split():
            h = hashlib.sha256(word.strip(".,!?").encode()).digest()
            vec[h[0] % DIMS] += 1.0 + h[1] / 255
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out
