"""Split document text into overlapping chunks sized for the embedder's 256-token window.

Word-based approximation (no tokenizer import: ``sentence_transformers`` costs seconds).
all-MiniLM-L6-v2 reads at most 256 word pieces, two of them [CLS]/[SEP]; English prose
averages ~1.3 word pieces per word, so 180 words (~235 pieces) fit with headroom, where
200 would often be cut. A character cap bounds chunks of long "words" (URLs, code,
identifiers, CJK runs without spaces) that tokenise into many pieces each. Neighbouring
chunks share ``overlap_words`` words so a sentence cut at a boundary is whole in one.

Deterministic: the same text and params give the same chunks. Each chunk records the
``[start, end)`` character offsets of its text in the original string
(``text[start:end] == chunk.text``), starting and ending on non-whitespace. Text with no
non-whitespace gives no chunks; any other text gives at least one, never an empty one.
A derived index should store ``ChunkParams.id`` and rebuild when it changes.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from agentzero_store.base.errors import InvalidArgumentError

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ChunkParams:
    """How text is cut. Every default is here, with its unit."""

    max_words: int = 180  # words per chunk (~235 MiniLM word pieces)
    overlap_words: int = 40  # words repeated at the start of the next chunk
    max_chars: int = 1_200  # characters per chunk, from its first to its last character

    def __post_init__(self) -> None:
        if self.max_words < 1 or self.max_chars < 1:
            raise InvalidArgumentError("max_words and max_chars must be at least 1")
        if not 0 <= self.overlap_words < self.max_words:
            raise InvalidArgumentError("overlap_words must be in [0, max_words)")

    @property
    def id(self) -> str:
        """A stable name of these parameters (store it in a sidecar manifest)."""
        return f"words-v1:{self.max_words}/{self.overlap_words}/{self.max_chars}"


DEFAULT_PARAMS = ChunkParams()


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: ``text == document[start:end]``."""

    index: int  # 0-based position within the document
    start: int  # character offset of the first character
    end: int  # character offset just past the last character
    text: str


_SPAN = re.compile(r"\S(?:.*\S)?", re.DOTALL)  # first to last non-whitespace character


@functools.cache
def _more_words(max_words: int) -> re.Pattern[str]:
    # Matches (at a word's start) only if at least max_words + 1 words follow. \S+ and \s+
    # are disjoint, so a failed match gives up in linear time.
    return re.compile(rf"(?:\S+\s+){{{max_words}}}\S")


@functools.cache
def _long_word(max_chars: int) -> re.Pattern[str]:
    return re.compile(rf"\S{{{max_chars + 1}}}")


def _word_spans(text: str, max_chars: int) -> list[tuple[int, int]]:
    if len(text) <= max_chars or _long_word(max_chars).search(text) is None:
        # Fast path (nearly every text): no word needs cutting, so the spans are the
        # regex's own, collected without a Python loop body per word.
        return [m.span() for m in _WORD.finditer(text)]
    spans: list[tuple[int, int]] = []
    for m in _WORD.finditer(text):
        start, end = m.span()
        # A "word" longer than a whole chunk is cut into pieces that each fit.
        for s in range(start, end, max_chars):
            spans.append((s, min(s + max_chars, end)))
    return spans


def chunk_text(text: str, params: ChunkParams = DEFAULT_PARAMS) -> list[Chunk]:
    """Cut ``text`` into overlapping chunks (see the module docstring for the guarantees)."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text must be a string")
    if len(text) <= params.max_chars:
        if text and not text[0].isspace() and not text[-1].isspace():
            first, end = 0, len(text)  # (str.isspace is what \s and \S of re test)
        elif (span := _SPAN.search(text)) is not None:
            first, end = span.span()
        else:
            return []  # no word at all
        # n words take at least 2n - 1 characters, so a span shorter than
        # 2 * max_words + 1 cannot hold more than max_words words: no need to count.
        if end - first <= 2 * params.max_words or (
            _more_words(params.max_words).match(text, first) is None
        ):
            # The whole text fits one chunk (no more than max_words words, no more than
            # max_chars characters): what the loop below would cut, without its steps.
            return [Chunk(0, first, end, text[first:end])]
    words = _word_spans(text, params.max_chars)
    chunks: list[Chunk] = []
    i = 0
    while i < len(words):
        first = words[i][0]
        j = i + 1  # always take one word: pieces are at most max_chars long
        while (
            j < len(words) and j - i < params.max_words and words[j][1] - first <= params.max_chars
        ):
            j += 1
        end = words[j - 1][1]
        chunks.append(Chunk(len(chunks), first, end, text[first:end]))
        if j == len(words):
            break
        # Overlap, but never more than half the chunk (a chunk cut short by max_chars
        # would otherwise advance by a single word per step) and always move forward.
        overlap = min(params.overlap_words, (j - i) // 2)
        i = max(i + 1, j - overlap)
    return chunks
