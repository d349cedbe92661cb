"""Running the exported model with onnxruntime: token ids in, normalised vectors out.

onnxruntime and ``tokenizers`` import in a fraction of a second, where
sentence-transformers (transformers, torch) takes several: this is the backend that
makes a cold ``recall`` fast. Pooling and normalisation are inside the graph
(``onnx_export``), so a batch's output is the finished vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import EmbedderError
from .minilm import LOCAL_MODEL_DIM
from .tokens import TextTokenizer, length_batches
from .vectors import Vector

# The graph's interface, which ``onnx_export`` produces: int64 batch × tokens in,
# float32 batch × 384 out.
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "embedding"


def new_session(model: Path | bytes, *, threads: int = 0) -> Any:
    """An onnxruntime CPU session over an ONNX file or bytes (``threads`` 0: one per core).

    A file's external weights are found beside it and mapped, not copied.
    """
    try:
        import onnxruntime as ort
    except Exception as exc:
        raise EmbedderError(
            f"onnxruntime is not available: {exc}",
            hint="install the pinned onnxruntime (constraints.txt)",
        ) from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3  # errors only: no optimiser chatter on stderr
    try:
        source = str(model) if isinstance(model, Path) else model
        return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise EmbedderError(f"onnxruntime could not load the ONNX model: {exc}") from exc


class OnnxMiniLM:
    """all-MiniLM-L6-v2 as one onnxruntime session (thread-safe: ``run`` may be shared)."""

    def __init__(self, model: Path | bytes, tokenizer: TextTokenizer, *, threads: int = 0) -> None:
        self._session = new_session(model, threads=threads)
        self._tokenizer = tokenizer

    def embed_ids(self, ids: Sequence[Sequence[int]], batch_size: int) -> Vector:
        """Vectors for tokenized texts, in their order; batched by similar length."""
        out = np.empty((len(ids), LOCAL_MODEL_DIM), dtype=np.float32)
        for batch in length_batches(ids, batch_size):
            input_ids, mask = self._tokenizer.pad([ids[i] for i in batch])
            feed = dict(zip(INPUT_NAMES, (input_ids, mask, np.zeros_like(input_ids)), strict=True))
            try:
                (vectors,) = self._session.run([OUTPUT_NAME], feed)
            except Exception as exc:  # onnxruntime's own error types
                raise EmbedderError(f"the ONNX model failed to embed: {exc}") from exc
            out[batch] = vectors
        return out


__all__ = ["INPUT_NAMES", "OUTPUT_NAME", "OnnxMiniLM", "new_session"]
