"""The local embedder's onnxruntime backend: golden vectors, the model cache, cold CLI.

One real export runs (offline, in a fresh cache dir); the cache-damage tests then stub
the exporter with those checked bytes, so each case costs milliseconds, not an export.
No test here times anything: speed is measured by ``benchmarks/cold_start.py``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentzero_store import LocalEmbedder
from agentzero_store.base.errors import EmbedderError, InvalidArgumentError
from agentzero_store.embed import onnx_cache
from agentzero_store.embed.minilm import LOCAL_MAX_TOKENS, LOCAL_MODEL_SHA256, model_dir
from agentzero_store.embed.onnx_cache import CachePaths, load_or_build, read_cached
from agentzero_store.embed.onnx_export import Exported

from ..conftest import PASSPHRASE, child_env, run_cli
from ..support.embed_golden import GOLDEN_TEXTS, TOLERANCE, load_golden

CACHE_LOG = "agentzero_store.embed.onnx_cache"


@dataclass(frozen=True)
class Built:
    root: Path
    graph: Path  # what load_or_build returned
    data: bytes  # the same model as one ONNX file in memory, as the exporter returns it
    messages: list[str]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _no_network(*_: Any, **__: Any) -> Any:
    raise AssertionError("the local embedder tried to open a network connection")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """The real export into a fresh cache dir, with the network cut and hub env unset."""
    root = tmp_path_factory.mktemp("onnx-build")
    handler = _Records()
    logger = logging.getLogger(CACHE_LOG)
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with pytest.MonkeyPatch.context() as mp:
            for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
                mp.delenv(var, raising=False)  # offline must not depend on the caller's env
            mp.setattr(socket.socket, "connect", _no_network)
            mp.setattr(socket.socket, "connect_ex", _no_network)
            mp.setattr(socket, "create_connection", _no_network)
            mp.setattr(socket, "getaddrinfo", _no_network)
            graph = load_or_build(model_dir(), root)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert isinstance(graph, Path)
    import onnx  # reassemble the one-file form (loads the external weights too)

    yield Built(root, graph, onnx.load(str(graph)).SerializeToString(), handler.messages)


@pytest.fixture(scope="session")
def onnx_embedder(built: Built) -> LocalEmbedder:
    return LocalEmbedder(backend="onnx", cache_dir=built.root)


@pytest.fixture(scope="session")
def torch_embedder() -> LocalEmbedder:
    return LocalEmbedder(backend="torch")


# ------------------------------------------------------------------------- golden vectors
def test_onnx_reproduces_the_golden_vectors(onnx_embedder: LocalEmbedder) -> None:
    golden = load_golden()
    batch = onnx_embedder.embed(list(GOLDEN_TEXTS))
    assert onnx_embedder.last_backend == "onnx"
    assert batch.dtype == np.float32 and batch.shape == golden.shape
    assert float(np.abs(batch - golden).max()) < TOLERANCE
    for i, text in enumerate(GOLDEN_TEXTS):  # alone: no padding, another batch shape
        alone = onnx_embedder.embed([text])
        assert float(np.abs(alone[0] - golden[i]).max()) < TOLERANCE, repr(text)


def test_torch_still_reproduces_the_golden_vectors(torch_embedder: LocalEmbedder) -> None:
    golden = load_golden()
    got = torch_embedder.embed(list(GOLDEN_TEXTS))
    assert torch_embedder.last_backend == "torch"
    assert float(np.abs(got - golden).max()) < TOLERANCE


def test_backends_agree_on_a_bulk_batch(
    onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder
) -> None:
    rng = np.random.default_rng(7)
    words = [
        "memory",
        "store",
        "vector",
        "query",
        "encrypted",
        "local",
        "agent",
        "recall",
        "the",
        "of",
        "a",
        "to",
        "in",
    ]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 300)))) for _ in range(150)]
    a, b = onnx_embedder.embed(texts), torch_embedder.embed(texts)
    assert float(np.abs(a - b).max()) < TOLERANCE
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_auto_sends_small_batches_to_onnx_and_bulk_to_torch(built: Built) -> None:
    e = LocalEmbedder(cache_dir=built.root, bulk_threshold=4)
    e.embed(["one", "two"])
    assert e.last_backend == "onnx"
    e.embed(["t"] * 5)
    assert e.last_backend == "torch"


def test_truncation_is_counted_at_the_window_edge(onnx_embedder: LocalEmbedder) -> None:
    # "a " * 254 is [CLS] + 254 + [SEP] = exactly the window; one more word is cut.
    assert LOCAL_MAX_TOKENS == 256
    onnx_embedder.embed(["a " * 254, "short"])
    assert onnx_embedder.last_truncated == 0
    onnx_embedder.embed(["a " * 255, "short", "b " * 1000])
    assert onnx_embedder.last_truncated == 2


def test_empty_input_and_identity(onnx_embedder: LocalEmbedder) -> None:
    assert onnx_embedder.embed([]).shape == (0, 384)
    assert onnx_embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert onnx_embedder.dimension == 384


def test_backend_choice_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidArgumentError):
        LocalEmbedder(backend="cuda")  # type: ignore[arg-type]
    monkeypatch.setenv("AGENTZERO_LOCAL_BACKEND", "torch")
    assert LocalEmbedder().backend == "torch"
    assert LocalEmbedder(backend="onnx").backend == "onnx"  # the argument wins


# ----------------------------------------------------------------------------- the cache
def test_the_build_is_offline_logged_and_leaves_a_checked_cache(built: Built) -> None:
    paths = CachePaths(built.root)
    assert any("building" in m and "ONNX" in m for m in built.messages)
    manifest = json.loads(paths.manifest.read_text())
    assert built.graph == paths.graph
    for role, path in paths.files().items():
        assert manifest["files"][role]["size"] == path.stat().st_size
        assert path.stat().st_mode & 0o777 == 0o600
    assert paths.weights.stat().st_size > 80_000_000 > 1_000_000 > paths.graph.stat().st_size
    assert manifest["source_sha256"] == LOCAL_MODEL_SHA256
    assert manifest["max_abs_diff_vs_torch"] < TOLERANCE
    assert read_cached(paths) == paths.graph
    leftovers = [p.name for p in built.root.iterdir() if ".tmp-" in p.name]
    assert leftovers == []


class StubExport:
    """Stands in for the exporter: returns the real, checked bytes and counts calls."""

    def __init__(self, data: bytes, delay: float = 0.0) -> None:
        self.data, self.delay, self.calls = data, delay, 0

    def __call__(self, directory: Path) -> Exported:
        self.calls += 1
        time.sleep(self.delay)
        return Exported(self.data, 1e-7, "stub", self.delay)


@pytest.fixture
def cache(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[CachePaths, StubExport]:
    """A copy of the built cache and a stub exporter (no re-export per case)."""
    root = tmp_path / "cache"
    root.mkdir()
    src = CachePaths(built.root)
    for p in (src.graph, src.weights, src.manifest):
        shutil.copy2(p, root / p.name)
    stub = StubExport(built.data)
    monkeypatch.setattr(onnx_cache, "export_onnx", stub)
    return CachePaths(root), stub


def _flip_middle(p: Path) -> None:
    raw = bytearray(p.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    p.write_bytes(bytes(raw))


def _truncate_half(p: Path) -> None:
    with p.open("r+b") as f:
        f.truncate(p.stat().st_size // 2)


def _recipe_zero(p: Path) -> None:
    p.write_text(json.dumps({**json.loads(p.read_text()), "recipe": 0}))


def _no_weights_hash(p: Path) -> None:
    m = json.loads(p.read_text())
    del m["files"]["weights"]["sha256"]
    p.write_text(json.dumps(m))


DAMAGE: dict[str, tuple[str, Callable[[Path], object]]] = {
    "weights bit flip": ("weights", _flip_middle),
    "weights truncated": ("weights", _truncate_half),
    "weights empty": ("weights", lambda p: p.write_bytes(b"")),
    "weights missing": ("weights", lambda p: p.unlink()),
    "graph bit flip": ("graph", _flip_middle),
    "graph truncated": ("graph", _truncate_half),
    "graph missing": ("graph", lambda p: p.unlink()),
    "manifest garbage": ("manifest", lambda p: p.write_bytes(b"\x00garbage{")),
    "manifest truncated": ("manifest", lambda p: p.write_bytes(p.read_bytes()[:40])),
    "manifest not an object": ("manifest", lambda p: p.write_text("[1, 2]")),
    "manifest of another recipe": ("manifest", _recipe_zero),
    "manifest without a hash": ("manifest", _no_weights_hash),
    "manifest missing": ("manifest", lambda p: p.unlink()),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_cache_is_detected_and_rebuilt(
    case: str, cache: tuple[CachePaths, StubExport], caplog: pytest.LogCaptureFixture
) -> None:
    paths, stub = cache
    which, damage = DAMAGE[case]
    damage(getattr(paths, which))
    assert read_cached(paths) is None  # never loaded as it is
    with caplog.at_level(logging.DEBUG, logger=CACHE_LOG):
        got = load_or_build(model_dir(), paths.root)
    assert got == paths.graph and stub.calls == 1
    assert any("building" in r.getMessage() for r in caplog.records)
    assert read_cached(paths) == paths.graph  # healed: the next process just loads it
    load_or_build(model_dir(), paths.root)
    assert stub.calls == 1


def test_embedding_through_a_corrupt_cache_gives_the_golden_vectors(
    cache: tuple[CachePaths, StubExport],
) -> None:
    paths, stub = cache
    _flip_middle(paths.weights)
    e = LocalEmbedder(backend="onnx", cache_dir=paths.root)
    got = e.embed(list(GOLDEN_TEXTS[:4]))
    assert stub.calls == 1
    assert float(np.abs(got - load_golden()[:4]).max()) < TOLERANCE


def test_bytes_onnxruntime_rejects_are_rebuilt_once(
    cache: tuple[CachePaths, StubExport],
) -> None:
    paths, stub = cache
    junk = b"not an onnx model"  # vouched for by a forged manifest: hash and size match
    paths.graph.write_bytes(junk)
    manifest = json.loads(paths.manifest.read_text())
    manifest["files"]["graph"].update(size=len(junk), sha256=hashlib.sha256(junk).hexdigest())
    paths.manifest.write_text(json.dumps(manifest))
    e = LocalEmbedder(backend="onnx", cache_dir=paths.root)
    e.embed(["x"])
    assert stub.calls == 1 and e.last_backend == "onnx"
    assert read_cached(paths) == paths.graph


def test_crash_leftovers_are_cleaned_on_the_next_build(
    cache: tuple[CachePaths, StubExport],
) -> None:
    paths, stub = cache
    paths.weights.unlink()
    leftover = paths.root / f".{paths.weights.name}.tmp-999-deadbeef"
    leftover.write_bytes(b"half a model")
    load_or_build(model_dir(), paths.root)
    assert not leftover.exists() and stub.calls == 1


def test_an_unwritable_cache_still_embeds(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stub = StubExport(built.data)
    monkeypatch.setattr(onnx_cache, "export_onnx", stub)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger=CACHE_LOG):
        data = load_or_build(model_dir(), blocker / "cache")
    assert data == built.data and stub.calls == 1
    assert any("not writable" in r.getMessage() for r in caplog.records)


def test_concurrent_first_uses_build_once(cache: tuple[CachePaths, StubExport]) -> None:
    paths, stub = cache
    paths.manifest.unlink()
    stub.delay = 0.3  # long enough for the second caller to queue on the lock
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(load_or_build(model_dir(), paths.root)))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [paths.graph, paths.graph] and stub.calls == 1


def test_auto_falls_back_to_torch_when_onnx_cannot_be_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(directory: Path) -> Exported:
        raise EmbedderError("exporter refused (test)")

    monkeypatch.setattr(onnx_cache, "export_onnx", refuse)
    auto = LocalEmbedder(cache_dir=tmp_path / "empty")
    got = auto.embed([GOLDEN_TEXTS[0]])
    assert auto.last_backend == "torch"
    assert float(np.abs(got[0] - load_golden()[0]).max()) < TOLERANCE
    with pytest.raises(EmbedderError, match="refused"):
        LocalEmbedder(backend="onnx", cache_dir=tmp_path / "empty").embed(["x"])


def test_a_failing_split_is_a_typed_error_not_a_crash(
    cache: tuple[CachePaths, StubExport], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, _ = cache
    paths.manifest.unlink()

    def broken(data: bytes, location: str) -> tuple[bytes, bytes]:
        raise ValueError("protobuf says no (test)")

    monkeypatch.setattr(onnx_cache, "split_weights", broken)
    with pytest.raises(EmbedderError, match="splitting"):
        load_or_build(model_dir(), paths.root)


# ------------------------------------------------------------------------ the cold CLI
_PROBE = """
import runpy, sys
sys.argv = ["agentzero", *sys.argv[1:]]
try:
    runpy.run_module("agentzero_store", run_name="__main__")
except SystemExit as exc:
    code = exc.code or 0
else:
    code = 0
heavy = sorted(m for m in ("sentence_transformers", "transformers", "torch") if m in sys.modules)
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
sys.exit(code)
"""


def _cli_modules(data_dir: Path, *args: str) -> tuple[str, list[str]]:
    env = child_env()
    env["AGENTZERO_PASSPHRASE"] = PASSPHRASE
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    line = [s for s in p.stderr.splitlines() if s.startswith("HEAVY=")][-1]
    return p.stdout, [m for m in line.removeprefix("HEAVY=").split(",") if m]


def test_a_cold_semantic_query_never_imports_torch(data_dir: Path) -> None:
    # Warm the session's cache (env AGENTZERO_MODEL_CACHE, which the child inherits) so
    # the child measures the query path, not the one-time build.
    LocalEmbedder(backend="onnx").embed(["warm"])
    assert os.environ.get("AGENTZERO_MODEL_CACHE")
    run_cli(data_dir, "init", passphrase=PASSPHRASE)
    run_cli(data_dir, "memory", "append", "the cat sat on the mat", passphrase=PASSPHRASE)
    run_cli(
        data_dir,
        "rag",
        "ingest",
        "--id",
        "d1",
        "--text",
        "Paris is the capital of France",
        passphrase=PASSPHRASE,
    )
    out, heavy = _cli_modules(
        data_dir, "memory", "recall", "--mode", "semantic", "feline", "--json"
    )
    assert heavy == [] and "the cat" in json.loads(out)[0]["content"]
    out, heavy = _cli_modules(
        data_dir, "rag", "query", "--mode", "hybrid", "french capital", "--json"
    )
    assert heavy == [] and js_id(out) == "d1"


def js_id(stdout: str) -> str:
    hits = json.loads(stdout)
    return str(hits[0]["id"])
