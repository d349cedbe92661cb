"""The terms BM25 indexes and queries: one analyzer for both, plain or blinded.

The analyzer is Tantivy's ``en_stem`` (simple tokenizer, tokens over 40 bytes dropped,
lowercase, Snowball English stemmer), run by Tantivy itself, so a plain index and a
blinded one see exactly the same terms.

*Blinded* terms replace each stem with a keyed hash (BLAKE2b-64 under a per-store
subkey, 11 base64url characters), so an index on disk holds term statistics (how many
documents hold a term, how often, how long each chunk is) but never a word. Hashes are
cached per whitespace-separated word of the input: the analyzer never lets a term span
whitespace, so analysing word by word yields the same terms as analysing the whole text,
and a word seen before costs one dict lookup; a new word's terms are looked up in a
cache of hashes per term (words like "cells," and "(cell" share one).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

from ..base.ranking import keyword_text

ANALYZER = "en_stem"
BLIND_HASH = "blake2b-64-b64url"
MAX_TOKEN_BYTES = 40  # en_stem drops longer tokens
CACHE_WORDS = 500_000  # words whose blinded terms are cached (~100 B each)
_SEP = "qzsep0x"  # a one-term word between the words analysed in one call


def analyzer() -> Any:
    """Tantivy's ``en_stem`` pipeline, callable from Python (``.analyze(text)``)."""
    return (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(Filter.lowercase())
        .filter(Filter.stemmer("english"))
        .build()
    )


def whitespace_analyzer() -> Any:
    """The analyzer of a blinded field: its terms are already analysed and hashed."""
    return TextAnalyzerBuilder(Tokenizer.whitespace()).build()


class PlainTerms:
    """The ``en_stem`` terms of a text, as words (what a plain index holds)."""

    def __init__(self) -> None:
        self._analyzer = analyzer()

    def terms(self, text: str) -> list[str]:
        """The analysed terms of ``text``, in order (repeats kept)."""
        out: list[str] = self._analyzer.analyze(text)
        return out

    def query_terms(self, text: str) -> list[str]:
        """The terms a query for ``text`` searches: its stop words left out
        (``base.ranking.keyword_words``); the index keeps every word."""
        return self.terms(keyword_text(text))


class BlindTerms:
    """The ``en_stem`` terms of a text, each replaced by its keyed hash."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the blinding key must be at least 16 bytes")
        self._key = key
        self._analyzer = analyzer()
        self._words: dict[str, str] = {}  # input word -> its blinded terms, space-joined
        self._hashes: dict[str, str] = {}  # term -> its hash (many words share a stem)

    def __repr__(self) -> str:
        return f"BlindTerms(<key hidden>, {len(self._words)} words cached)"

    def _hash(self, term: str) -> str:
        digest = hashlib.blake2b(term.encode(), key=self._key, digest_size=8).digest()
        blinded = base64.urlsafe_b64encode(digest)[:11].decode()  # 64 bits, no padding
        self._hashes[term] = blinded
        return blinded

    def _learn(self, words: list[str]) -> None:
        """Cache the blinded terms of each of ``words``: one analyzer call for all."""
        if len(self._words) + len(words) > CACHE_WORDS:
            self._words.clear()  # bounded: a huge vocabulary re-hashes, never grows RAM
            self._hashes.clear()
        hashes = self._hashes
        # Terms are alphanumeric: a newline marks where one word's terms end.
        parts = [
            "\n" if t == _SEP else hashes[t] if t in hashes else self._hash(t)
            for t in self._analyzer.analyze(f" {_SEP} ".join(words))
        ]
        groups = " ".join(parts).split("\n")
        if len(groups) != len(words):  # a word held the separator itself: one by one
            groups = [" ".join(map(self._hash, self._analyzer.analyze(w))) for w in words]
        self._words.update(zip(words, map(str.strip, groups), strict=True))

    def text(self, text: str) -> str:
        """``text`` as space-separated blinded terms (what a blinded field indexes)."""
        words = text.split()
        try:
            return " ".join(map(self._words.__getitem__, words))
        except KeyError:  # words not seen yet: learn them all at once, then look up
            self._learn(list(set(words).difference(self._words)))
            return " ".join(map(self._words.__getitem__, words))

    def terms(self, text: str) -> list[str]:
        """The blinded terms of ``text``, in order (repeats kept)."""
        return self.text(text).split()

    def query_terms(self, text: str) -> list[str]:
        """The blinded terms a query for ``text`` searches: its stop words left out
        (``base.ranking.keyword_words``); the index keeps every word."""
        return self.terms(keyword_text(text))
