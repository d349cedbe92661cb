"""Skills as human-readable Markdown files, one per skill, and back.

The format (``FORMAT``), written and read by this module only::

    ---
    format: agentzero-skill/1
    name: Deploy the web app
    tags: deploy, web
    ---

    Deploys the web app to staging, then to production.

    ## Steps

    1. Run the tests.
    2. Build the image.

The front matter is ``key: value`` lines (``format`` optional, ``name`` required,
``tags`` comma-separated, optional; any other key is an error, so a typo is not silently
dropped). The description is everything between the front matter and the LAST
``## Steps`` line (so a description may hold such a line itself); after it, every
non-blank line is a numbered step (``1.`` or ``1)``; the numbers are not checked). Names,
steps and tags are single lines (``skills.records``), so ``parse(render(s)) == s``.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...base.errors import InvalidArgumentError
from .records import (
    Skill,
    check_description,
    check_name,
    check_step,
    check_steps,
    check_tags,
    skill_key,
)

T = TypeVar("T")

FORMAT = "agentzero-skill/1"
STEPS_HEADING = "## Steps"
MAX_FILE_BYTES = 1 << 20  # a skill file larger than this is refused on import
_STEP = re.compile(r"^\s*\d{1,6}[.)]\s+(.*\S)\s*$")
_STEM_MAX = 60
# Names Windows reserves for devices, whatever the extension: "con.md" cannot be created.
_RESERVED = {"con", "prn", "aux", "nul"} | {f"{p}{i}" for p in ("com", "lpt") for i in range(10)}


class SkillParseError(Exception):
    """A problem in a skill file at ``line`` (1-based; 0 for the file as a whole)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def render(skill: Skill) -> str:
    """The Markdown file of ``skill``."""
    lines = ["---", f"format: {FORMAT}", f"name: {skill.name}", f"tags: {', '.join(skill.tags)}"]
    lines += ["---", ""]
    if skill.description:
        lines += [skill.description, ""]
    lines += [STEPS_HEADING, ""]
    lines += [f"{i}. {step}" for i, step in enumerate(skill.steps, 1)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Fields:
    name: str | None = None
    name_line: int = 0
    tags: tuple[str, ...] = ()
    tags_line: int = 0
    body_start: int = 0  # index of the first line after the front matter


def _front_matter(lines: Sequence[str]) -> _Fields:
    if not lines or lines[0].strip() != "---":
        raise SkillParseError(1, "a skill file starts with a '---' line (front matter)")
    name: str | None = None
    name_line = tags_line = 0
    tags: tuple[str, ...] = ()
    for i in range(1, len(lines)):
        line = lines[i]
        if line.strip() == "---":
            if name is None:
                raise SkillParseError(i + 1, "the front matter has no 'name:'")
            return _Fields(name, name_line, tags, tags_line, i + 1)
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if not sep:
            raise SkillParseError(i + 1, "expected 'key: value' in the front matter")
        if key == "format":
            if value.strip() != FORMAT:
                raise SkillParseError(i + 1, f"unknown format {value.strip()!r}; expected {FORMAT}")
        elif key == "name":
            name, name_line = value.strip(), i + 1
        elif key == "tags":
            tags = tuple(t.strip() for t in value.split(",") if t.strip())
            tags_line = i + 1
        else:
            raise SkillParseError(
                i + 1, f"unknown front matter key {key[:40]!r} (known: format, name, tags)"
            )
    raise SkillParseError(len(lines), "the front matter is not closed by a '---' line")


def parse(text: str) -> Skill:
    """The skill of a Markdown file's text, or a ``SkillParseError`` with its line."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fields = _front_matter(lines)
    heading = max(
        (i for i in range(fields.body_start, len(lines)) if lines[i].rstrip() == STEPS_HEADING),
        default=None,
    )
    if heading is None:
        raise SkillParseError(len(lines), f"no '{STEPS_HEADING}' heading")
    name = _checked(fields.name_line, check_name, fields.name)
    tags = _checked(fields.tags_line, check_tags, list(fields.tags))
    body = "\n".join(lines[fields.body_start : heading])
    description = _checked(fields.body_start + 1, check_description, body)
    steps: list[str] = []
    for i in range(heading + 1, len(lines)):
        if not lines[i].strip():
            continue
        m = _STEP.match(lines[i])
        if m is None:
            raise SkillParseError(i + 1, "expected a numbered step like '1. Do this'")
        steps.append(_checked(i + 1, functools.partial(check_step, len(steps) + 1), m.group(1)))
    return Skill(name, description, _checked(heading + 1, check_steps, steps), tags)


def _checked(line: int, check: Callable[[Any], T], value: Any) -> T:
    """``check(value)``, its error as a ``SkillParseError`` at ``line``."""
    try:
        return check(value)
    except InvalidArgumentError as exc:
        raise SkillParseError(line, exc.message) from None


def file_names(skills: Sequence[Skill]) -> list[str]:
    """A safe, distinct file name for each skill (in order): ASCII letters, digits and
    dashes from its name, lower case, at most 60 characters, ``.md``; a name with no
    such character gets a short hash of its key; a collision (case-insensitively, as
    on macOS and Windows) gets ``-2``, ``-3``...; Windows device names get ``-skill``.
    Never a path: no separator, no dot-dot, no leading dot."""
    used: set[str] = set()
    out: list[str] = []
    for s in skills:
        stem = _stem(s.name)
        name, n = stem, 1
        while name in used:
            n += 1
            name = f"{stem}-{n}"
        used.add(name)
        out.append(f"{name}.md")
    return out


def _stem(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    stem = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:_STEM_MAX].strip("-")
    if not stem:
        stem = "skill-" + hashlib.sha256(skill_key(name).encode()).hexdigest()[:10]
    if stem in _RESERVED:
        stem += "-skill"
    return stem


__all__ = ["FORMAT", "MAX_FILE_BYTES", "SkillParseError", "file_names", "parse", "render"]
