"""What ``verify`` reports: a ``Finding`` per problem (the file, where in it, what is
wrong, the command that fixes it), the ``VerifyReport`` holding them, and those commands."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ...storage.acks import FIX_LOSS

Severity = Literal["error", "note"]

FIX_RESTORE = "agentzero store restore BACKUP --data-dir NEW_DIR (then point agents at NEW_DIR)"
FIX_SALVAGE = (
    "agentzero rag salvage RECOVERED.jsonl, replace rag/index.jsonl with it, then "
    "agentzero store accept-loss --yes (records what salvage could not recover)"
)
FIX_REBUILD = "agentzero store rebuild"
FIX_ROTATE = "agentzero key rotate"
FIX_ACCEPT = FIX_LOSS
FIX_TIME = (
    "agentzero memory erase --id ID --yes --org ORG --agent AGENT (or restore a backup from "
    "before it was written)"
)
_PAGE = re.compile(r"page (\d+)")
Progress = Callable[[str, int, int], None]  # (what was just checked, done, total)


@dataclass(frozen=True)
class Finding:
    """One problem: which file, where in it, what is wrong, what fixes it."""

    file: str
    where: str | None
    problem: str
    fix: str
    severity: Severity = "error"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


@dataclass
class VerifyReport:
    """Every finding, and what was checked (counts, seqs) for the summary."""

    data_dir: str
    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, Any] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity == "error" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "data_dir": self.data_dir,
            "clean": self.clean,
            "checked": self.checked,
            "findings": [f.to_dict() for f in self.findings],
        }


def page_of(message: str) -> str | None:
    """``page 7`` when SQLite's message names a page, else None."""
    m = _PAGE.search(message)
    return f"page {m[1]}" if m else None


__all__ = [
    "FIX_ACCEPT",
    "FIX_REBUILD",
    "FIX_RESTORE",
    "FIX_ROTATE",
    "FIX_SALVAGE",
    "FIX_TIME",
    "Finding",
    "Progress",
    "Severity",
    "VerifyReport",
    "page_of",
]
