"""``SkillStore``: an agent's skills (named, tagged lists of steps), stored encrypted in
``memory.db`` and scoped to the memory's (org, agent) scope — on a namespace handle the
namespace's shared skills, on a session handle the session's — and read through the
memory's gate (``namespaces.ScopeGate``), so a revoke holds on every call; exported to
and imported from human-readable Markdown files (``skills.markdown``).

Plaintext never lands under the data dir: ``export_markdown`` refuses a directory inside
it. An import is all or nothing: every file is read and checked first, and one problem
anywhere (each named by file and line) means nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from ...base.errors import (
    InvalidArgumentError,
    NotFoundError,
    SkillFileError,
    UnsupportedByBackendError,
)
from ...memory.sqlite.store import SqliteMemoryStore
from ...storage.fileio import atomic_write, translate_os_errors
from ..memory import AgentMemory
from .markdown import MAX_FILE_BYTES, SkillParseError, file_names, parse, render
from .records import (
    Skill,
    SkillExport,
    SkillImport,
    check_name,
    check_skill,
    skill_key,
    tag_key,
)
from .repository import SqliteSkillRepository

Progress = Callable[[int, int], None]  # (files done, files in all)
_SHOWN_PROBLEMS = 20  # problems spelled out in an import error's message (all in .problems)


class SkillStore:
    """The skills of one agent memory's scope (see the module)."""

    def __init__(self, mem: AgentMemory, *, _own_memory: bool = False) -> None:
        if not isinstance(mem, AgentMemory):
            raise InvalidArgumentError(
                f"SkillStore needs an AgentMemory, got {type(mem).__name__}",
                hint="AgentMemory.open(data_dir, ...), or SkillStore.open(data_dir, ...)",
            )
        if not isinstance(mem.store, SqliteMemoryStore):
            raise UnsupportedByBackendError(
                "skills are not on PostgreSQL yet: they need a data dir",
                hint="open the SkillStore on a data dir (AgentMemory.open(data_dir, ...))",
            )
        self._mem = mem
        self._own = _own_memory
        scope = mem.gate.scope()  # the handle's scope, not the acting agent's own
        # Name-mangled: reached only through ``repo``, which checks the grant first.
        self.__skills = SqliteSkillRepository(mem.store, str(scope.org_id), str(scope.agent_id))
        self.__skills.migrate()

    @classmethod
    def open(cls, data_dir: Path | str, **open_kwargs: Any) -> SkillStore:
        """Open ``AgentMemory.open(data_dir, **open_kwargs)`` (credentials, ``org_id``,
        ``agent_id`` ...) and its skills; ``close`` closes that memory."""
        mem = AgentMemory.open(data_dir, **open_kwargs)
        try:
            return cls(mem, _own_memory=True)
        except BaseException:
            mem.close()
            raise

    @property
    def memory(self) -> AgentMemory:
        """The agent memory the skills belong to."""
        return self._mem

    @property
    def repo(self) -> SqliteSkillRepository:
        """The skills' repository, once the memory's gate has checked the grant (on a
        namespace handle: a revoke holds from the next call on)."""
        self._mem.gate.check()
        return self.__skills

    def close(self) -> None:
        """Close the memory if ``open`` opened it."""
        if self._own:
            self._mem.close()

    def __enter__(self) -> SkillStore:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ one skill
    def save(
        self,
        name: str,
        description: str,
        steps: Sequence[str],
        tags: Sequence[str] = (),
    ) -> Skill:
        """Create the skill ``name``, or replace the one with that name (compared
        case-insensitively; it takes the new spelling and keeps its creation time).
        ``steps`` and ``tags`` are lists of single-line strings. Saving an identical
        skill writes nothing. Returns the skill as stored."""
        skill = check_skill(name, description, steps, tags)
        with self.repo.transaction() as tx:
            self.repo.upsert(tx, skill, self._mem.now_us())
        return self.load(skill.name)

    def load(self, name: str) -> Skill:
        """The skill named ``name`` (case-insensitively), else a ``NotFoundError``."""
        found = self.repo.get(check_name(name))
        if found is None:
            raise NotFoundError(
                f"no skill named {name.strip()!r} in this scope",
                hint="`agentzero skill list` shows the skills of an --org and --agent",
            )
        return found

    def delete(self, name: str) -> None:
        """Delete the skill named ``name`` (else a ``NotFoundError``). Its bytes are zeroed
        in memory.db's pages (secure_delete) and the WAL is emptied, unless another
        connection is reading an older snapshot (then a later checkpoint does it)."""
        check_name(name)
        with self.repo.transaction() as tx:
            gone = self.repo.delete(tx, name)
        if not gone:
            raise NotFoundError(f"no skill named {name.strip()!r} in this scope")
        self.repo.empty_wal()

    # ------------------------------------------------------------------ many
    def find_by_tag(self, tag: str) -> list[Skill]:
        """The skills tagged ``tag`` (case-insensitively), by name."""
        if not isinstance(tag, str) or not tag_key(tag):
            raise InvalidArgumentError("tag must be a non-blank string")
        return self.repo.by_tag(tag)

    # ------------------------------------------------------------------ Markdown
    def export_markdown(
        self, directory: Path | str, *, overwrite: bool = False, progress: Progress | None = None
    ) -> SkillExport:
        """Write every skill as one Markdown file in ``directory`` (created if missing).

        Refuses a directory inside the data dir (no plaintext under it), and, unless
        ``overwrite``, a directory where any of the files already exists (checked before
        anything is written). Each file is written atomically, mode 0600: these files
        are plaintext."""
        target = Path(directory).expanduser()
        root = Path(self._mem.store.data_dir).resolve()
        where = target.resolve()
        if where == root or root in where.parents:
            raise InvalidArgumentError(
                f"{target} is inside the data dir {root}: skills are exported as plaintext",
                hint="export to a directory outside the data dir",
            )
        skills = self.list()
        names = file_names(skills)
        if target.exists() and not target.is_dir():
            raise InvalidArgumentError(f"{target} is not a directory")
        with translate_os_errors("creating", target):
            target.mkdir(parents=True, exist_ok=True, mode=0o700)
        taken = [n for n in names if (target / n).exists() or (target / n).is_symlink()]
        if taken and not overwrite:
            raise InvalidArgumentError(
                f"{len(taken)} of the {len(names)} files already exist in {target} "
                f"(e.g. {taken[0]}); nothing was written",
                hint="choose an empty directory, or overwrite (CLI: --overwrite)",
            )
        for i, (skill, name) in enumerate(zip(skills, names, strict=True), 1):
            # atomic_write renames over the name: a symlink there is replaced, not followed.
            atomic_write(target / name, render(skill).encode("utf-8"), mode=0o600)
            if progress is not None:
                progress(i, len(skills))
        return SkillExport(
            str(target), tuple((s.name, n) for s, n in zip(skills, names, strict=True))
        )

    def import_markdown(
        self, directory: Path | str, *, progress: Progress | None = None
    ) -> SkillImport:
        """Save the skill of every ``*.md`` file in ``directory`` (not its subfolders),
        all in one transaction, or none: if any file is malformed (or two files name one
        skill) a ``SkillFileError`` lists every problem as ``file:line: what``."""
        source = Path(directory).expanduser()
        if not source.is_dir():
            raise NotFoundError(f"{source} is not a directory")
        with translate_os_errors("listing", source):
            files = sorted(p for p in source.iterdir() if p.suffix.lower() == ".md")
        skills: list[Skill] = []
        problems: list[str] = []
        first: dict[str, Path] = {}
        for i, path in enumerate(files, 1):
            try:
                skill = parse(_read(path))
            except SkillParseError as exc:
                problems.append(f"{path}:{exc.line}: {exc.message}" if exc.line else exc.message)
            else:
                key = skill_key(skill.name)
                if key in first:
                    problems.append(f"{path}: skill {skill.name!r} is also in {first[key]}")
                else:
                    first[key] = path
                    skills.append(skill)
            if progress is not None:
                progress(i, len(files))
        if problems:
            shown = "\n".join(problems[:_SHOWN_PROBLEMS])
            more = len(problems) - _SHOWN_PROBLEMS
            raise SkillFileError(
                f"{len(problems)} problem(s) in the skill files of {source}; nothing was "
                f"imported:\n{shown}" + (f"\n... and {more} more" if more > 0 else ""),
                problems,
            )
        counts = {"created": 0, "updated": 0, "unchanged": 0}
        if skills:
            now_us = self._mem.now_us()
            with self.repo.transaction() as tx:
                for skill in skills:
                    counts[self.repo.upsert(tx, skill, now_us)] += 1
        return SkillImport(str(source), len(files), **counts)

    # Last in the class: below it, ``list`` in an annotation would name this method.
    def list(self) -> list[Skill]:
        """Every skill of the scope, by name (case-insensitively)."""
        return self.repo.all()


def _read(path: Path) -> str:
    """A skill file's text, or a ``SkillParseError`` (line 0: the whole file)."""
    try:
        if not path.is_file():
            raise SkillParseError(0, f"{path}: not a regular file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SkillParseError(0, f"{path}: larger than {MAX_FILE_BYTES:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise SkillParseError(0, f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillParseError(0, f"{path}: not UTF-8 text (byte {exc.start})") from None


__all__ = ["SkillStore"]
