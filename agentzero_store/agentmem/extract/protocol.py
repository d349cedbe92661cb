"""The extractor protocol and its records: candidate notes and facts, each naming the
turns it came from (``sources``) and how sure the extractor is (``confidence``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..records import Fact, Memory


@dataclass(frozen=True)
class FactCandidate:
    """A (subject, predicate, object) a turn states. ``negated``: the turn says it no
    longer holds ("I no longer eat meat"): a current fact with this object is retracted,
    nothing is asserted. ``single_valued``: a new object supersedes the old one."""

    subject: str
    predicate: str
    object: str
    sources: tuple[str, ...]
    confidence: float = 0.8
    single_valued: bool = True
    negated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "sources": list(self.sources),
            "confidence": self.confidence,
            "single_valued": self.single_valued,
            "negated": self.negated,
        }


@dataclass(frozen=True)
class NoteCandidate:
    """A semantic note a turn states (a plan with its date, a past that is no fact now)."""

    text: str
    about: tuple[str, ...]
    sources: tuple[str, ...]
    confidence: float = 0.8

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "text": self.text,
            "about": list(self.about),
            "sources": list(self.sources),
            "confidence": self.confidence,
        }


@dataclass(frozen=True)
class Extraction:
    """What an extractor found in some turns."""

    facts: tuple[FactCandidate, ...] = ()
    notes: tuple[NoteCandidate, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Turns conversation turns into candidate facts and notes. ``known``: the facts
    already believed about the speakers of ``turns`` (so a model can say what changed)."""

    def extract(self, turns: Sequence[Memory], known: Sequence[Fact]) -> Extraction:
        """The candidates ``turns`` state, each naming its source turn ids."""
        ...


@dataclass
class ExtractReport:
    """What ``AgentMemory.extract`` did (or, ``dry_run``, would do): the turns read, the
    candidates written (``created``, ``superseded``), skipped (``duplicate``, ``stale``:
    a newer belief already replaced it) and ``dropped`` (invalid)."""

    turns: int = 0
    dry_run: bool = False
    facts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "turns": self.turns,
            "dry_run": self.dry_run,
            "facts": self.facts,
            "notes": self.notes,
            "dropped": self.dropped,
        }
