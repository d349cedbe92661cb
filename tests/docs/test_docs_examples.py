"""Every example in README.md and docs/ runs, as a reader would run it.

The Python blocks of a page run in order in one fresh interpreter (a later block may
continue an earlier one), the shell blocks of a page in one bash, each page in an empty
home directory, so ``~/agent-data`` is a new store and nothing of the developer's machine
is touched. A block is skipped only when the line before it says
``<!-- illustrative: why -->``, and no Python block may say so.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentzero_store.embed import onnx_cache

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)")
ILLUSTRATIVE = re.compile(r"^<!-- illustrative: .+ -->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    illustrative: bool


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, with their language and first line."""
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, lang = i, m.group(1)
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        before = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
        out.append(
            Block(
                page,
                start + 1,
                lang,
                "\n".join(body) + "\n",
                bool(ILLUSTRATIVE.match(before.strip())),
            )
        )
        i += 1
    return out


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTZERO_")}
    env.update(
        HOME=str(home),
        PYTHONPATH=str(ROOT),
        # The ONNX model is built once per user; a new home must not build it again.
        AGENTZERO_MODEL_CACHE=str(onnx_cache.default_cache_dir()),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        XDG_CONFIG_HOME=str(home / ".config"),
    )
    return env


def _pages_with(lang: set[str]) -> list[Path]:
    return [p for p in PAGES if any(b.lang in lang and not b.illustrative for b in blocks(p))]


def _run(cmd: list[str], home: Path, script: str) -> None:
    home.mkdir()
    proc = subprocess.run(
        cmd, input=script, cwd=home, env=_env(home), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"


def test_every_python_block_runs_nothing_is_marked_away() -> None:
    python = [b for p in PAGES for b in blocks(p) if b.lang == "python"]
    assert python, "no Python example found"
    hidden = [f"{b.page.name}:{b.line}" for b in python if b.illustrative]
    assert not hidden, f"Python examples marked illustrative: {hidden}"


@pytest.mark.parametrize("page", _pages_with({"python"}), ids=lambda p: p.name)
def test_python_examples_run(page: Path, tmp_path: Path) -> None:
    script = "".join(
        f"# {page.name}:{b.line}\n{b.text}" for b in blocks(page) if b.lang == "python"
    )
    _run([sys.executable, "-"], tmp_path / "home", script)


@pytest.mark.parametrize("page", _pages_with({"sh", "bash"}), ids=lambda p: p.name)
def test_shell_examples_run(page: Path, tmp_path: Path) -> None:
    script = "".join(
        f"# {page.name}:{b.line}\n{b.text}"
        for b in blocks(page)
        if b.lang in {"sh", "bash"} and not b.illustrative
    )
    _run(["bash", "-euo", "pipefail", "-s"], tmp_path / "home", script)


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_points_at_a_file() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken
