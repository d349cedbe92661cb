"""Shared fixtures: fast-KDF configs, fresh data dirs, the real local embedder."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentzero_store import LocalEmbedder, SqliteMemoryStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS

# The session's PostgreSQL server (started on first use) and a fresh database per test.
from .support.pg_server import pg_url, postgres  # noqa: F401

PASSPHRASE = "correct horse battery staple"
FAST = StoreConfig(kdf=FAST_KDF_FOR_TESTS)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``-n N --dist loadgroup`` (``make test``) tests are spread one by one over
    the workers, except that a test using a fixture of ours that outlives one test joins
    its module's group (``xdist_group``), so the fixture (a 10k-vector store, a
    crash-loop reference run, a real ONNX export) is built once, on one worker, not once
    per worker: a class-, module- or package-scoped one, or a session-scoped one that a
    test module defines. (A conftest's session fixtures, the PostgreSQL server and the
    embedder, are each worker's own.)"""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        shared = any(
            d.baseid  # "" is a plugin's
            and (
                d.scope in ("class", "module", "package")
                or (d.scope == "session" and d.baseid.endswith(".py"))
            )
            for defs in info.name2fixturedefs.values()
            for d in defs
        )
        if shared and not any(item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


@pytest.fixture(autouse=True)
def _no_credential_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests pass credentials explicitly; a developer's env must not leak in."""
    for var in (
        "AGENTZERO_PASSPHRASE",
        "AGENTZERO_DATA_KEY",
        "AGENTZERO_KEY_FILE",
        "AGENTZERO_DATA_DIR",
        "AGENTZERO_EMBEDDER",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh ONNX model cache per test session (env ``AGENTZERO_MODEL_CACHE``, which CLI
    subprocesses inherit): tests neither rely on nor fill the developer's user cache. It is
    built on first use, so sessions that never embed pay nothing. Parallel workers
    (xdist) share one, in the run's base temp dir: the cache's build lock makes the first
    worker export the model and the others wait for it and use its files."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Each worker's basetemp is <run's basetemp>/popen-gwN: its parent is the run's.
        path = tmp_path_factory.getbasetemp().parent / "model-cache"
        path.mkdir(exist_ok=True)
    else:
        path = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENTZERO_MODEL_CACHE", str(path))
        yield path


@pytest.fixture(scope="session", autouse=True)
def _state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh user state dir per test session (env ``AGENTZERO_STATE_DIR``, inherited by
    CLI subprocesses): the backups tests take are never noted in the developer's."""
    path = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENTZERO_STATE_DIR", str(path))
        yield path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(data_dir: Path) -> Iterator[SqliteMemoryStore]:
    s = SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    yield s
    s.close()


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The real all-MiniLM-L6-v2, loaded once per test session (offline)."""
    e = LocalEmbedder()
    e.embed(["warm up"])
    return e


def rand_vectors(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path → digest), plus modes."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(root))] = (
                hashlib.sha256(p.read_bytes()).hexdigest() + f":{st.st_mode:o}:{st.st_size}"
            )
        elif p.is_dir():
            out[str(p.relative_to(root)) + "/"] = "dir"
    return out


def scan_for(root: Path, needles: list[bytes]) -> list[tuple[str, bytes]]:
    """Every (file, needle) pair where a needle occurs in a file's raw bytes under ``root``."""
    hits = []
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            hits += [(str(p), n) for n in needles if n in data]
    return hits


def scan_paths(paths: list[Path], needles: list[bytes]) -> list[tuple[str, bytes]]:
    """``scan_for`` over each of ``paths``: a directory's files, or a file itself."""
    hits: list[tuple[str, bytes]] = []
    for p in paths:
        if p.is_dir():
            hits += scan_for(p, needles)
        elif p.is_file():
            data = p.read_bytes()
            hits += [(str(p), n) for n in needles if n in data]
    return hits


def text_needles(text: str) -> list[bytes]:
    """A text as UTF-8 and UTF-16-LE bytes."""
    return [text.encode("utf-8"), text.encode("utf-16-le")]


AGENTZERO = str(Path(sys.executable).parent / "agentzero")  # the real console script


def child_env() -> dict[str, str]:
    """This environment without ``AGENTZERO_*`` settings, but for the session's model
    cache and state dir."""
    keep = ("AGENTZERO_MODEL_CACHE", "AGENTZERO_STATE_DIR")
    return {k: v for k, v in os.environ.items() if not k.startswith("AGENTZERO_") or k in keep}


def run_agentzero(
    argv: list[str], *, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run the real ``agentzero ARGV`` in a subprocess with ``env``; with ``check``, a
    non-zero exit fails the test showing both streams."""
    p = subprocess.run(
        [AGENTZERO, *argv],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def run_cli(
    data_dir: Path | str,
    *args: str,
    passphrase: str = "pw",
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``agentzero --data-dir DIR ARGS`` in a subprocess with a clean environment
    (``data_dir`` may be a PostgreSQL URL: ``--data-dir postgresql://...``)."""
    e = child_env()
    e["AGENTZERO_PASSPHRASE"] = passphrase
    e["COLUMNS"] = "250"  # rich wraps tables to the terminal width
    e.update(env or {})
    return run_agentzero(["--data-dir", str(data_dir), *args], env=e, check=check)


def js(p: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a CLI call printed."""
    return json.loads(p.stdout)
