"""Extraction: what a speaker states about themselves in conversation turns, turned into
notes and subject–predicate–object facts (``protocol``), by offline rules (``rules``)
or any OpenAI-compatible chat endpoint (``llm``), written through ``remember`` /
``assert_fact`` with the turns as sources (``runner``)."""

from .llm import LLMExtractor
from .protocol import Extraction, Extractor, ExtractReport, FactCandidate, NoteCandidate
from .rules import RuleExtractor

__all__ = [
    "ExtractReport",
    "Extraction",
    "Extractor",
    "FactCandidate",
    "LLMExtractor",
    "NoteCandidate",
    "RuleExtractor",
]
