"""The per-user cache of the exported ONNX model: checked on every load, rebuilt when bad.

Layout (``<cache>`` = env ``AGENTZERO_MODEL_CACHE``, else the platform's user cache dir
``…/agentzero/models``)::

    <stem>.onnx        the graph (~115 KB); its weights live in the next file
    <stem>.onnx.data   the weights (~90 MB, page-aligned: onnxruntime maps them)
    <stem>.json        the manifest: size and SHA-256 of both files, the weights they
                       came from, the export recipe
    .<stem>.lock       flock'd while a process checks and builds, so builds never race

Every file is written by ``atomic_write`` (weights, graph, then manifest: a crash leaves
files no manifest vouches for, never a manifest vouching for missing files). ``<stem>``
names the source weights' hash and the recipe (``all-MiniLM-L6-v2-<sha12>-r1``), so a new
recipe or other weights never reuse an old file. Every load hashes both files and
compares them with the manifest before onnxruntime opens them: a partial, truncated or
bit-flipped file, a missing or garbled manifest, or one from another recipe is logged
and rebuilt, never loaded and never fatal. A cache that cannot be written (read-only
home, full disk) costs a rebuild per process, with a warning, not an error.
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

from ..base.errors import EmbedderError, StoreIOError
from ..storage.fileio import atomic_write, cleanup_temp_files
from .minilm import LOCAL_MODEL_ID, LOCAL_MODEL_SHA256, sha256_file
from .onnx_export import EXPORT_RECIPE, OPSET, Exported, export_onnx, split_weights

log = logging.getLogger(__name__)

ENV_CACHE = "AGENTZERO_MODEL_CACHE"
MANIFEST_FORMAT = 1
STEM = f"all-MiniLM-L6-v2-{LOCAL_MODEL_SHA256[:12]}-r{EXPORT_RECIPE}"

# What ``load_or_build`` hands to onnxruntime: the checked graph file in the cache, or,
# when the cache cannot be written, the whole model in memory.
ModelSource = Path | bytes


def default_cache_dir() -> Path:
    """Env ``AGENTZERO_MODEL_CACHE``, else ``<platform user cache dir>/agentzero/models``."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentzero", appauthor=False)) / "models"


@dataclass(frozen=True)
class CachePaths:
    """Where the model's files, its manifest and the build lock live in one cache dir."""

    root: Path

    @property
    def graph(self) -> Path:
        """The ONNX graph, which names the weights file beside it."""
        return self.root / f"{STEM}.onnx"

    @property
    def weights(self) -> Path:
        """The weights (ONNX external data)."""
        return self.root / f"{STEM}.onnx.data"

    @property
    def manifest(self) -> Path:
        """The manifest (JSON) that vouches for the two files."""
        return self.root / f"{STEM}.json"

    @property
    def lock(self) -> Path:
        """Held (flock) while a process checks and builds."""
        return self.root / f".{STEM}.lock"

    def files(self) -> dict[str, Path]:
        """The manifest's name for each model file."""
        return {"graph": self.graph, "weights": self.weights}


def read_cached(paths: CachePaths) -> Path | None:
    """The graph file if the manifest vouches for both files; else None (logged why)."""
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
    entries = json.loads(raw)["files"]
    for role, path in paths.files().items():
        want = entries[role]
        try:
            size, digest = path.stat().st_size, sha256_file(path)
        except OSError as exc:
            log.warning("cannot read the cached ONNX %s %s (%s); rebuilding", role, path, exc)
            return None
        if size != want["size"] or digest != want["sha256"]:
            log.warning(
                "the cached ONNX %s %s is damaged (%d bytes, expected %d, or its hash "
                "differs); rebuilding",
                role,
                path,
                size,
                want["size"],
            )
            return None
    return paths.graph


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
    files = m.get("files")
    for role in ("graph", "weights"):
        entry = files.get(role) if isinstance(files, dict) else None
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("size"), int)
            and isinstance(entry.get("sha256"), str)
        ):
            return f"lacks the {role} file's size or hash"
    return ""


def load_or_build(
    directory: Path, cache_dir: Path | None = None, *, rebuild: bool = False
) -> ModelSource:
    """The checked ONNX model: the cached graph file, else exported (once) and cached.

    ``directory`` holds the packaged weights the model is exported from; ``cache_dir``
    defaults to ``default_cache_dir()``; ``rebuild`` ignores the cached files (used when
    onnxruntime rejected files the manifest vouched for). Returns the whole model as
    bytes only when the cache cannot be written. Raises ``EmbedderError`` only if the
    model cannot be exported at all; cache trouble is logged and worked around.
    """
    paths = CachePaths(cache_dir if cache_dir is not None else default_cache_dir())
    cached = None if rebuild else read_cached(paths)
    if cached is not None:
        return cached
    exported: Exported | None = None
    try:
        paths.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with _build_lock(paths.lock):
            # Another process may have built it while this one waited for the lock.
            cached = None if rebuild else read_cached(paths)
            if cached is not None:
                return cached
            cleanup_temp_files(paths.root)  # a crashed build's leftovers (we hold the lock)
            exported = _build(directory)
            _store(paths, exported)
            stored = read_cached(paths)
            if stored is None:  # the disk did not keep what was written
                raise StoreIOError(f"the ONNX model just written to {paths.root} reads back bad")
            return stored
    except (OSError, StoreIOError) as exc:  # the cache, not the export (EmbedderError)
        log.warning(
            "the ONNX model cache %s is not writable (%s); using a model built in memory, "
            "which every new process rebuilds (set %s to a writable dir)",
            paths.root,
            exc,
            ENV_CACHE,
        )
        return (exported or _build(directory)).data


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

    try:
        graph, weights = split_weights(exported.data, paths.weights.name)
    except Exception as exc:  # onnx's and protobuf's own error types
        raise EmbedderError(f"splitting the exported ONNX model failed: {exc}") from exc
    contents = {"graph": graph, "weights": weights}
    manifest = {
        "format": MANIFEST_FORMAT,
        "model_id": LOCAL_MODEL_ID,
        "source_sha256": LOCAL_MODEL_SHA256,
        "recipe": EXPORT_RECIPE,
        "opset": OPSET,
        "files": {
            role: {
                "name": paths.files()[role].name,
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            for role, data in contents.items()
        },
        "torch": exported.torch_version,
        "onnxruntime": str(onnxruntime.__version__),
        "max_abs_diff_vs_torch": exported.max_abs_diff,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    # Weights, graph, manifest: until the manifest lands nothing vouches for the files,
    # so a crash in between is a rebuild, never a half-written model that loads.
    atomic_write(paths.weights, weights, mode=0o600)
    atomic_write(paths.graph, graph, mode=0o600)
    atomic_write(paths.manifest, json.dumps(manifest, indent=2).encode() + b"\n", mode=0o600)
    log.info("cached the ONNX model in %s", paths.root)


@contextlib.contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # Blocking: a concurrent build takes seconds, after which its files are used.
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


__all__ = [
    "ENV_CACHE",
    "STEM",
    "CachePaths",
    "ModelSource",
    "default_cache_dir",
    "load_or_build",
    "read_cached",
]
