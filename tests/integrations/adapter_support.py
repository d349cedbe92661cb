"""What the framework adapters' tests share: a plaintext canary scan of a data dir."""

from __future__ import annotations

import secrets
from pathlib import Path

from ..conftest import scan_for, text_needles
from ..test_canary import base64_forms


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
