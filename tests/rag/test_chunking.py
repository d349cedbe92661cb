"""Chunking: offsets into the original text, overlap, limits, determinism."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store.base.errors import InvalidArgumentError
from rag.chunking import DEFAULT_PARAMS, ChunkParams, chunk_text


def test_short_text_is_one_chunk() -> None:
    text = "  A short note.\n"
    [chunk] = chunk_text(text)
    assert (chunk.index, chunk.start, chunk.end, chunk.text) == (0, 2, 15, "A short note.")


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
def test_blank_text_has_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_long_text_overlaps_by_40_words() -> None:
    words = [f"w{i}" for i in range(500)]
    text = " ".join(words)
    chunks = chunk_text(text)
    assert [len(c.text.split()) for c in chunks] == [180, 180, 180, 80]
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.text.split()[-40:] == b.text.split()[:40]
    assert chunks[-1].text.split()[-1] == "w499"
    assert chunk_text(text) == chunks  # deterministic


def test_giant_word_is_cut_by_max_chars() -> None:
    text = "intro " + "x" * 3000 + " outro"
    chunks = chunk_text(text)
    assert all(len(c.text) <= DEFAULT_PARAMS.max_chars for c in chunks)
    assert chunks[0].text == "intro" and chunks[-1].text.endswith("x outro")
    assert sum(c.text.count("x") for c in chunks) >= 3000  # every piece is in some chunk


def test_params_are_validated_and_named() -> None:
    with pytest.raises(InvalidArgumentError):
        ChunkParams(max_words=10, overlap_words=10)
    with pytest.raises(InvalidArgumentError):
        ChunkParams(max_chars=0)
    assert DEFAULT_PARAMS.id == "words-v1:180/40/1200"


_texts = st.text(alphabet=st.sampled_from("ab \n\té語\u3000\x1c"), max_size=400)


@settings(max_examples=300, deadline=None)
@given(_texts, st.integers(1, 12), st.integers(0, 11), st.integers(1, 40))
def test_property_chunks_cover_text_within_limits(
    text: str, max_words: int, overlap: int, max_chars: int
) -> None:
    if overlap >= max_words:
        overlap = max_words - 1
    params = ChunkParams(max_words=max_words, overlap_words=overlap, max_chars=max_chars)
    chunks = chunk_text(text, params)
    covered = set()
    for i, c in enumerate(chunks):
        assert c.index == i and c.text == text[c.start : c.end] and c.text.strip() == c.text
        assert c.text and len(c.text) <= max_chars and len(c.text.split()) <= max_words
        covered.update(range(c.start, c.end))
    assert [c.start for c in chunks] == sorted({c.start for c in chunks})  # strictly forward
    assert all(a.end <= b.end for a, b in zip(chunks, chunks[1:], strict=False))
    # Every non-whitespace character is in some chunk; blank text gives none.
    assert {m.start() for m in re.finditer(r"\S", text)} <= covered
    assert bool(chunks) == bool(text.strip())
    assert chunk_text(text, params) == chunks


def _reference_chunks(text: str, params: ChunkParams) -> list[tuple[int, int, int, str]]:
    """The chunker before its fast paths (one loop step per word): outputs must match."""
    spans = [
        (s, min(s + params.max_chars, m.end()))
        for m in re.finditer(r"\S+", text)
        for s in range(m.start(), m.end(), params.max_chars)
    ]
    out: list[tuple[int, int, int, str]] = []
    i = 0
    while i < len(spans):
        first, j = spans[i][0], i + 1
        while (
            j < len(spans) and j - i < params.max_words and spans[j][1] - first <= params.max_chars
        ):
            j += 1
        out.append((len(out), first, spans[j - 1][1], text[first : spans[j - 1][1]]))
        if j == len(spans):
            break
        i = max(i + 1, j - min(params.overlap_words, (j - i) // 2))
    return out


@settings(max_examples=300, deadline=None)
@given(_texts, st.integers(1, 12), st.integers(0, 11), st.integers(1, 40))
def test_property_fast_paths_cut_like_the_word_loop(
    text: str, max_words: int, overlap: int, max_chars: int
) -> None:
    params = ChunkParams(
        max_words=max_words, overlap_words=min(overlap, max_words - 1), max_chars=max_chars
    )
    got = [(c.index, c.start, c.end, c.text) for c in chunk_text(text, params)]
    assert got == _reference_chunks(text, params)
