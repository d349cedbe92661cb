"""Skills: named, tagged lists of steps an agent keeps (``skills.SkillStore``). The frozen
records, and the checks every skill passes before it is stored or written to a file.

A skill's name is its identity within an (org, agent) scope, compared by ``skill_key``
(NFKC, case-folded, spaces collapsed), so "Deploy app" and "deploy  APP" are one skill.
Names, steps and tags are single lines: that keeps the Markdown form (``skills.markdown``)
unambiguous, so export then import gives the same skills back.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...base.errors import InvalidArgumentError
from ...base.limits import check_text

MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 20_000
MAX_STEPS = 500
MAX_STEP_CHARS = 4_000
MAX_TAGS = 50
MAX_TAG_CHARS = 64


@dataclass(frozen=True)
class Skill:
    """One skill as stored. Equality compares the content (name, description, steps,
    tags), not when it was written."""

    name: str
    description: str
    steps: tuple[str, ...]
    tags: tuple[str, ...] = ()
    created_at: datetime | None = field(default=None, compare=False)
    updated_at: datetime | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "name": self.name,
            "description": self.description,
            "steps": list(self.steps),
            "tags": list(self.tags),
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }


@dataclass(frozen=True)
class SkillExport:
    """What ``export_markdown`` wrote: (skill name, file name) pairs in ``directory``."""

    directory: str
    files: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "directory": self.directory,
            "exported": len(self.files),
            "files": [{"name": n, "file": f} for n, f in self.files],
        }


@dataclass(frozen=True)
class SkillImport:
    """What ``import_markdown`` did: how many skills it created, changed, or found
    already identical, out of how many files."""

    directory: str
    files: int
    created: int
    updated: int
    unchanged: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def skill_key(name: str) -> str:
    """How skill names compare: NFKC, case-folded, runs of spaces as one."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def tag_key(tag: str) -> str:
    """How tags compare (as ``skill_key``)."""
    return skill_key(tag)


def _line(what: str, value: Any, most: int) -> str:
    """``value`` stripped, if it is a non-blank single line of at most ``most`` chars."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string, got a {type(value).__name__}")
    check_text(what, value)
    text = value.strip()
    if not text:
        raise InvalidArgumentError(f"{what} must not be blank")
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text):
        raise InvalidArgumentError(f"{what} must be one line (no line break or control character)")
    if len(text) > most:
        raise InvalidArgumentError(f"{what} is {len(text):,} characters; at most {most:,}")
    return text


def _list(what: str, value: Any) -> list[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidArgumentError(
            f"{what} must be a list of strings, got a {type(value).__name__}",
            hint=f'{what}=["...", "..."]',
        )
    return list(value)


def check_name(name: Any) -> str:
    """A skill name: a non-blank single line, stripped."""
    return _line("the skill name", name, MAX_NAME_CHARS)


def check_description(description: Any) -> str:
    """A description: any text (line breaks as ``\\n``, tabs allowed), stripped."""
    if not isinstance(description, str):
        raise InvalidArgumentError(
            f"the description must be a string, got a {type(description).__name__}"
        )
    check_text("the description", description)
    text = description.replace("\r\n", "\n").replace("\r", "\n").strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise InvalidArgumentError(
            f"the description is {len(text):,} characters; at most {MAX_DESCRIPTION_CHARS:,}"
        )
    bad = [c for c in text if unicodedata.category(c) == "Cc" and c not in "\n\t"]
    if bad:
        raise InvalidArgumentError(
            f"the description holds a control character (U+{ord(bad[0]):04X})"
        )
    return text


def check_step(number: int, step: Any) -> str:
    """Step ``number`` (1-based): a non-blank single line, stripped."""
    return _line(f"step {number}", step, MAX_STEP_CHARS)


def check_steps(steps: Any) -> tuple[str, ...]:
    """The steps: a non-empty list of steps (``check_step``)."""
    items = _list("steps", steps)
    if not items:
        raise InvalidArgumentError("a skill needs at least one step")
    if len(items) > MAX_STEPS:
        raise InvalidArgumentError(f"a skill has at most {MAX_STEPS} steps, got {len(items)}")
    return tuple(check_step(i, s) for i, s in enumerate(items, 1))


def check_tags(tags: Any) -> tuple[str, ...]:
    """The tags: single lines without commas, stripped; a repeat (compared by
    ``tag_key``) is dropped, the first spelling kept."""
    seen: dict[str, str] = {}
    for i, t in enumerate(_list("tags", tags), 1):
        tag = _line(f"tag {i}", t, MAX_TAG_CHARS)
        if "," in tag:
            raise InvalidArgumentError(f"tag {i} holds a comma; tags are separate list items")
        seen.setdefault(tag_key(tag), tag)
    if len(seen) > MAX_TAGS:
        raise InvalidArgumentError(f"a skill has at most {MAX_TAGS} tags, got {len(seen)}")
    return tuple(seen.values())


def check_skill(name: Any, description: Any, steps: Any, tags: Any = ()) -> Skill:
    """A valid, normalised ``Skill`` of these fields, or an ``InvalidArgumentError``
    naming the field (and the step or tag by number)."""
    return Skill(
        check_name(name), check_description(description), check_steps(steps), check_tags(tags)
    )


__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_STEPS",
    "MAX_STEP_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "Skill",
    "SkillExport",
    "SkillImport",
    "check_description",
    "check_name",
    "check_skill",
    "check_step",
    "check_steps",
    "check_tags",
    "skill_key",
    "tag_key",
]
