"""The per-user cache of the exported ONNX model: checked on every load, rebuilt when bad.

Layout (``<cache>`` = env ``AGENTZERO_MODEL_CACHE``, else the platform's user cache dir
``…/agentzero/models``)::

    <stem>.onnx   the exported model (~90 MB), written by ``atomic_write``
    <stem>.json   its manifest: the model's SHA-256 and size, the weights it came from,
                  the export recipe; written after the model, also atomically
    .<stem>.lock  flock'd while a process checks and builds, so two builds never race

``<stem>`` names the source weights' hash and the recipe (``all-MiniLM-L6-v2-<sha12>-r1``),
so a new recipe or other weights never reuse an old file. Every load reads the model
once, hashes those very bytes and compares them with the manifest before onnxruntime
sees them: a partial, truncated or bit-flipped file, a missing or garbled manifest, or
a manifest from another recipe is logged and rebuilt, never loaded and never fatal.
A cache that cannot be written (read-only home, full disk) costs a rebuild per process,
with a warning, not an error.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.errors import StoreIOError
from ..storage.fileio import atomic_write, cleanup_temp_files
from .minilm import LOCAL_MODEL_ID, LOCAL_MODEL_SHA256
from .onnx_export import EXPORT_RECIPE, OPSET, Exported, export_onnx

log = logging.getLogger(__name__)

ENV_CACHE = "AGENTZERO_MODEL_CACHE"
MANIFEST_FORMAT = 1
STEM = f"all-MiniLM-L6-v2-{LOCAL_MODEL_SHA256[:12]}-r{EXPORT_RECIPE}"


def default_cache_dir() -> Path:
    """Env ``AGENTZERO_MODEL_CACHE``, else ``<platform user cache dir>/agentzero/models``."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentzero", appauthor=False)) / "models"


@dataclass(frozen=True)
class CachePaths:
    """Where the model, its manifest and the build lock live in one cache dir."""

    root: Path

    @property
    def model(self) -> Path:
        """The ONNX file."""
        return self.root / f"{STEM}.onnx"

    @property
    def manifest(self) -> Path:
        """The manifest (JSON) that vouches for the ONNX file."""
        return self.root / f"{STEM}.json"

    @property
    def lock(self) -> Path:
        """Held (flock) while a process checks and builds."""
        return self.root / f".{STEM}.lock"


def read_cached(paths: CachePaths) -> bytes | None:
    """The cached model's bytes if the manifest vouches for them; else None (logged why)."""
    try:
        raw = paths.manifest.read_bytes()
    except FileNotFoundError:
        log.debug("no cached ONNX model in %s", paths.root)
        return None
    except OSError as exc:
        log.warning("cannot read the ONNX model manifest %s (%s); rebuilding", paths.manifest, exc)
        return None
    problem = _manifest_problem(raw)
    if problem:
        log.warning("the ONNX model manifest %s %s; rebuilding", paths.manifest, problem)
        return None
    manifest = json.loads(raw)
    try:
        data = paths.model.read_bytes()
    except OSError as exc:
        log.warning("cannot read the cached ONNX model %s (%s); rebuilding", paths.model, exc)
        return None
    if len(data) != manifest["size"] or hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        log.warning(
            "the cached ONNX model %s is damaged (%d bytes, expected %d, or its hash "
            "differs); rebuilding",
            paths.model,
            len(data),
            manifest["size"],
        )
        return None
    return data


def _manifest_problem(raw: bytes) -> str:
    """Why a manifest cannot vouch for this version's model ('' if it can)."""
    try:
        m: Any = json.loads(raw)
    except ValueError:
        return "is not valid JSON"
    if not isinstance(m, dict):
        return "is not a JSON object"
    expected = {
        "format": MANIFEST_FORMAT,
        "source_sha256": LOCAL_MODEL_SHA256,
        "recipe": EXPORT_RECIPE,
        "opset": OPSET,
    }
    for key, want in expected.items():
        if m.get(key) != want:
            return f"has {key}={m.get(key)!r}, this version needs {want!r}"
    if not isinstance(m.get("size"), int) or not isinstance(m.get("sha256"), str):
        return "lacks the model's size or hash"
    return ""


def load_or_build(
    directory: Path, cache_dir: Path | None = None, *, rebuild: bool = False
) -> bytes:
    """The checked ONNX model bytes: from the cache, else exported (once) and cached.

    ``directory`` holds the packaged weights the model is exported from; ``cache_dir``
    defaults to ``default_cache_dir()``; ``rebuild`` ignores the cached file (used when
    onnxruntime rejected bytes the manifest vouched for). Raises ``EmbedderError`` only
    if the model cannot be exported at all; cache trouble is logged and worked around.
    """
    paths = CachePaths(cache_dir if cache_dir is not None else default_cache_dir())
    data = None if rebuild else read_cached(paths)
    if data is not None:
        return data
    try:
        paths.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with _build_lock(paths.lock):
            # Another process may have built it while this one waited for the lock.
            data = None if rebuild else read_cached(paths)
            if data is not None:
                return data
            cleanup_temp_files(paths.root)  # a crashed build's leftovers (we hold the lock)
            exported = _build(directory)
            data = exported.data
            _store(paths, exported)
            return data
    except (OSError, StoreIOError) as exc:  # the cache, not the export (EmbedderError)
        log.warning(
            "the ONNX model cache %s is not writable (%s); using a model built in memory, "
            "which every new process rebuilds (set %s to a writable dir)",
            paths.root,
            exc,
            ENV_CACHE,
        )
        return data if data is not None else _build(directory).data


def _build(directory: Path) -> Exported:
    log.warning(
        "building the local embedding model's ONNX file from the packaged weights "
        "(once per user; takes several seconds)"
    )
    exported = export_onnx(directory)
    log.info(
        "built the ONNX model in %.1f s; it matches torch within %.1e",
        exported.seconds,
        exported.max_abs_diff,
    )
    return exported


def _store(paths: CachePaths, exported: Exported) -> None:
    import onnxruntime

    data = exported.data
    manifest = {
        "format": MANIFEST_FORMAT,
        "model_id": LOCAL_MODEL_ID,
        "source_sha256": LOCAL_MODEL_SHA256,
        "recipe": EXPORT_RECIPE,
        "opset": OPSET,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "torch": exported.torch_version,
        "max_abs_diff_vs_torch": exported.max_abs_diff,
        "onnxruntime": str(onnxruntime.__version__),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    # Model first, manifest second: a crash between the two leaves a model no manifest
    # vouches for (rebuilt next time), never a manifest vouching for a missing model.
    atomic_write(paths.model, data, mode=0o600)
    atomic_write(paths.manifest, json.dumps(manifest, indent=2).encode() + b"\n", mode=0o600)
    log.info("cached the ONNX model in %s", paths.model)


@contextlib.contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # Blocking: a concurrent build takes seconds, after which its file is used.
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


__all__ = [
    "ENV_CACHE",
    "STEM",
    "CachePaths",
    "default_cache_dir",
    "load_or_build",
    "read_cached",
]
