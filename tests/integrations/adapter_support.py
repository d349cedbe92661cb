"""What the framework adapters' tests share: a plaintext canary scan of a data dir."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..conftest import child_env, scan_for, text_needles
from ..promises.test_canary import base64_forms


def canary(prefix: str = "canary") -> str:
    """A word nothing else spells."""
    return prefix + secrets.token_hex(6)


def plaintext_hits(data_dir: Path, words: list[str]) -> list[tuple[str, bytes]]:
    """Every (file, needle) where one of ``words`` occurs under ``data_dir`` as UTF-8,
    UTF-16-LE or base64 (at each alignment)."""
    needles: list[bytes] = []
    for w in words:
        needles += [*text_needles(w), *base64_forms(w)]
    return scan_for(data_dir, needles)


def files_of(data_dir: Path) -> dict[str, bytes]:
    """Every file under ``data_dir`` and its bytes (to prove nothing changed)."""
    return {str(p): p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file()}


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, data_dir: Path) -> dict[str, Any]:
    """Run ``examples/<name>`` on ``data_dir`` in a fresh process (as a user would) and
    return the JSON it prints."""
    p = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(data_dir)],
        capture_output=True,
        text=True,
        env={**child_env(), "PYTHONWARNINGS": "error::DeprecationWarning:__main__"},
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert p.returncode == 0, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}"
    out: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    return out


def strings_in(value: Any, *, keys: bool = True, shortest: int = 6) -> set[str]:
    """Every string of a JSON value (and its object keys) at least ``shortest`` long."""
    found: set[str] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            found.add(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
            if keys:
                found.update(v)
        elif isinstance(v, list):
            stack.extend(v)
    return {s for s in found if len(s) >= shortest}
