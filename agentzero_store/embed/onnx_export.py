"""Building the ONNX file from the packaged weights, once, with torch (no download).

The graph is exactly what sentence-transformers runs for this model: the BERT encoder,
mean pooling over the attention mask (sum / clamp(count, 1e-9)) and L2 normalisation
(``F.normalize``, eps 1e-12). It takes ``input_ids``, ``attention_mask`` and
``token_type_ids`` (int64, batch × tokens, both axes dynamic) and returns ``embedding``
(float32, batch × 384).

The exporter is torch's TorchScript one (``dynamo=False``): it needs the ``onnx``
package to serialise, but not ``onnxscript``. The attention is exported in its eager
form: the SDPA path chooses branches from the example's shapes while tracing. Every
export is checked before it is returned: the ONNX graph, run by onnxruntime on probe
batches of other sizes and lengths than the traced example, must give the torch
model's vectors within ``EXPORT_TOLERANCE``; otherwise the export is refused.
"""

from __future__ import annotations

import io
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import EmbedderError
from .minilm import LOCAL_MODEL_DIM, force_offline, verify_weights
from .onnx_backend import INPUT_NAMES, OUTPUT_NAME, new_session
from .tokens import TextTokenizer

log = logging.getLogger(__name__)

# Bump when the exported graph changes (inputs, pooling, opset): old cache files are
# then rebuilt instead of reused.
EXPORT_RECIPE = 1
OPSET = 17
EXPORT_TOLERANCE = 1e-5
_EXTERNAL_MIN_BYTES = 1024  # tensors at least this large go to the weights file
_PAGE = 4096  # their offsets are page-aligned so onnxruntime can map them

# The traced example has padding (a mask with zeros) so the mask path is recorded; the
# probes then differ in batch size and length from it, and from each other.
_TRACE_TEXTS = ("a short one", "a somewhat longer sentence that needs no padding at all")
_PROBES = (
    ("one text alone",),
    (
        "",
        "Ünïcödé — 東京 🙂 text",
        "the quick brown fox jumps over the lazy dog " * 70,  # past the 256-token window
    ),
)


@dataclass(frozen=True)
class Exported:
    """A checked ONNX model: its bytes and its largest difference from torch on the probes."""

    data: bytes
    max_abs_diff: float
    torch_version: str
    seconds: float


def export_onnx(directory: Path) -> Exported:
    """Export the model in ``directory`` to ONNX bytes and check them against torch.

    Raises ``EmbedderError`` if torch or the exporter is unavailable, or if the exported
    graph does not reproduce the torch vectors.
    """
    verify_weights(directory)
    start = time.monotonic()
    force_offline()
    try:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no bar on stderr
    except Exception as exc:
        raise EmbedderError(
            f"building the ONNX model needs torch and transformers: {exc}",
            hint="install the pinned torch and sentence-transformers (constraints.txt)",
        ) from exc
    tokenizer = TextTokenizer(directory)
    try:
        encoder = AutoModel.from_pretrained(
            str(directory), local_files_only=True, attn_implementation="eager"
        ).eval()
        model = _pooled_module(torch, encoder)
        data = _export(torch, model, tokenizer)
        session = new_session(data)  # the runtime's options, so its numerics are checked
        worst = max(_max_diff(torch, model, tokenizer, session, list(t)) for t in _PROBES)
    except EmbedderError:
        raise
    except Exception as exc:  # the exporter's and onnxruntime's many error types
        raise EmbedderError(f"exporting the local model to ONNX failed: {exc}") from exc
    if not worst <= EXPORT_TOLERANCE:  # written so that NaN fails too
        raise EmbedderError(
            f"the exported ONNX model differs from torch by {worst:.2e} "
            f"(allowed {EXPORT_TOLERANCE:.0e}); refusing it"
        )
    return Exported(data, float(worst), str(torch.__version__), time.monotonic() - start)


def split_weights(data: bytes, location: str) -> tuple[bytes, bytes]:
    """Split an ONNX model into its graph and a weights file named ``location``.

    onnxruntime maps external weights from the file (offsets page-aligned) instead of
    parsing and copying 90 MB out of the protobuf: session creation takes about half the
    time. The graph refers to ``location`` relative to its own directory.
    """
    import onnx
    from onnx.external_data_helper import set_external_data

    model = onnx.load_model_from_string(data)
    blob = bytearray()
    for tensor in model.graph.initializer:
        raw = tensor.raw_data
        if len(raw) < _EXTERNAL_MIN_BYTES:
            continue  # small tensors stay inline
        blob += b"\0" * (-len(blob) % _PAGE)
        set_external_data(tensor, location=location, offset=len(blob), length=len(raw))
        blob += raw
        tensor.ClearField("raw_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
    return model.SerializeToString(), bytes(blob)


def _pooled_module(torch: Any, encoder: Any) -> Any:
    """The encoder followed by sentence-transformers' mean pooling and normalisation."""

    class MeanPooled(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            tokens = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(tokens.dtype)
            summed = (tokens * weights).sum(dim=1)
            counts = weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(summed / counts, p=2, dim=1)

    return MeanPooled().eval()


def _inputs(torch: Any, tokenizer: TextTokenizer, texts: list[str]) -> tuple[Any, Any, Any]:
    ids, mask = tokenizer.pad(tokenizer.encode(texts).ids)
    t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
    return t_ids, t_mask, torch.zeros_like(t_ids)


def _export(torch: Any, model: Any, tokenizer: TextTokenizer) -> bytes:
    dynamic = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    dynamic[OUTPUT_NAME] = {0: "batch"}
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        # TracerWarnings about Python booleans in the attention code: each was checked to
        # be constant for this model (no causal mask, no KV cache); the probes confirm.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            _inputs(torch, tokenizer, list(_TRACE_TEXTS)),
            buf,
            dynamo=False,
            opset_version=OPSET,
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes=dynamic,
        )
    return buf.getvalue()


def _max_diff(
    torch: Any, model: Any, tokenizer: TextTokenizer, session: Any, texts: list[str]
) -> float:
    inputs = _inputs(torch, tokenizer, texts)
    with torch.no_grad():
        expected = model(*inputs).numpy()
    got = session.run(
        [OUTPUT_NAME], dict(zip(INPUT_NAMES, (t.numpy() for t in inputs), strict=True))
    )
    out = np.asarray(got[0])
    if out.shape != (len(texts), LOCAL_MODEL_DIM):
        raise EmbedderError(f"the exported ONNX model returned shape {out.shape}")
    return float(np.max(np.abs(out - expected)))


__all__ = [
    "EXPORT_RECIPE",
    "EXPORT_TOLERANCE",
    "OPSET",
    "Exported",
    "export_onnx",
    "split_weights",
]
