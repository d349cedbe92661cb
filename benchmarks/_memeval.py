"""What the conversational-memory benchmarks share (``locomo.py``, ``longmemeval.py``):
the disk cache of vectors, the query-vector cache that keeps embedding out of the timed
recall, the rankers under test (our recall modes, the ablation of mode ``auto``), and the
markdown helpers.

Vectors are cached outside the repo (``$XDG_CACHE_HOME/agentzero-bench/``, else
``~/.cache/agentzero-bench/``), keyed by the data files' SHA-256 and the model, so a
re-run loads no model. Each text is stored under its SHA-256 (long chat turns would make
a fixed-width text column of gigabytes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _harness import median, pct  # noqa: E402

from agentzero_store import AgentMemory  # noqa: E402
from agentzero_store.agentmem.recall import SIGNALS  # noqa: E402
from agentzero_store.embed.local import LOCAL_MODEL_SHA256  # noqa: E402
from agentzero_store.embed.vectors import Embedder, Vector  # noqa: E402

K = 10
CACHE_VERSION = 2  # bump when the cached texts or their layout change (2: keyed by SHA-256)


# ----------------------------------------------------------------------------- vectors
def cache_dir() -> Path:
    """Where vectors are cached: outside the repo, in the user's cache directory."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentzero-bench"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def text_key(text: str) -> str:
    """The cache's key of a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class Lookup(Protocol):
    def get(self, text: str) -> Vector | None: ...


@dataclass
class VectorFile:
    """Text -> vector for some data files and one model, kept in an ``.npz`` outside the
    repo. Missing texts are embedded and merged in; the file is rewritten atomically."""

    path: Path
    vectors: dict[str, Vector] = field(default_factory=dict)  # text_key -> vector
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_data(
        cls, data_files: Sequence[Path], model_id: str, directory: Path, prefix: str
    ) -> VectorFile:
        digests = "\n".join(sha256_of(p) for p in data_files)
        key = hashlib.sha256(
            f"{digests}\n{model_id}\n{LOCAL_MODEL_SHA256}\n{CACHE_VERSION}".encode()
        ).hexdigest()[:24]
        vf = cls(directory / f"{prefix}-{key}.npz")
        if vf.path.exists():
            try:
                with np.load(vf.path, allow_pickle=False) as z:
                    keys = [str(t) for t in z["keys"]]
                    matrix = z["vectors"].astype(np.float32)
                    vf.meta = json.loads(str(z["meta"]))
                vf.vectors = dict(zip(keys, matrix, strict=True))
            except (OSError, ValueError, KeyError) as exc:  # a torn or stale file: rebuild
                print(f"{prefix}: ignoring unreadable cache {vf.path}: {exc}", file=sys.stderr)
        return vf

    def get(self, text: str) -> Vector | None:
        return self.vectors.get(text_key(text))

    def __getitem__(self, text: str) -> Vector:
        return self.vectors[text_key(text)]

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and text_key(text) in self.vectors

    def matrix(self, texts: Sequence[str]) -> Vector:
        """The vectors of ``texts`` as one (n, d) matrix."""
        return np.stack([self[t] for t in texts]).astype(np.float32, copy=False)

    def add(self, texts: Sequence[str], matrix: Vector) -> None:
        self.vectors.update(zip((text_key(t) for t in texts), matrix, strict=True))

    def ensure(
        self,
        texts: Iterable[str],
        embedder: Embedder,
        what: str,
        log: Callable[[str], None],
        *,
        batch: int = 4096,
    ) -> None:
        """Embed the texts not cached yet (in batches, saving after each, so an
        interrupted run keeps its work) and record the time taken."""
        missing = [t for t in dict.fromkeys(texts) if t not in self]
        if not missing:
            return
        log(f"embedding {len(missing):,} {what} (cache miss)")
        t0 = time.perf_counter()
        for i in range(0, len(missing), batch):
            part = missing[i : i + batch]
            self.add(part, embedder.embed(part))
            if len(missing) > batch:
                log(f"  {min(i + batch, len(missing)):,}/{len(missing):,} {what}")
                self.save()
        seconds = time.perf_counter() - t0
        self.meta[f"embed_{what}"] = {
            "n": len(missing),
            "seconds": round(seconds, 2),
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        np.savez(
            tmp,
            keys=np.array(keys, dtype=np.str_),
            vectors=np.stack([self.vectors[k] for k in keys]).astype(np.float32),
            meta=np.array(json.dumps(self.meta)),
        )
        os.replace(tmp, self.path)


class QueryVectorCache:
    """An ``Embedder`` for the store that serves precomputed query vectors, so a timed
    ``recall`` does not include embedding its query. A text it does not hold is embedded
    by the wrapped embedder and counted in ``misses`` (the benchmark reports it; 0 means
    every timed recall was embedding-free)."""

    def __init__(self, inner: Embedder, vectors: Lookup) -> None:
        self._inner = inner
        self._vectors = vectors
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        out = []
        for t in texts:
            v = self._vectors.get(t)
            if v is None:
                self.misses += 1
                v = self._inner.embed([t])[0]
            out.append(v)
        return np.stack(out).astype(np.float32, copy=False)


def single_query_embedding(
    embedder: Embedder, questions: Sequence[str], n: int = 50
) -> dict[str, float]:
    """What the excluded part costs: p50/p95 ms of embedding one question at a time."""
    for q in questions[:5]:  # load and warm the model
        embedder.embed([q])
    lat = []
    for q in questions[:n]:
        t0 = time.perf_counter()
        embedder.embed([q])
        lat.append(time.perf_counter() - t0)
    return {"n": len(lat), "p50_ms": median(lat) * 1e3, "p95_ms": pct(lat, 95) * 1e3}


# ----------------------------------------------------------------------------- rankers
RankFn = Callable[[AgentMemory, str, Vector], list[str]]


@dataclass(frozen=True)
class Ranker:
    """A ranking under test: ``rank(mem, question, qvec)`` returns memory ids, best first
    (at most ``K``). ``qvec`` is the question's cached vector, for rankers that take one."""

    name: str
    rank: RankFn
    reference: tuple[float, str] | None = None  # raw-library anchor, if the README has one


def recall_mode(mode: str, weights: Mapping[str, float] | None = None) -> RankFn:
    """``AgentMemory.recall`` in one of its modes (it embeds through the cache), with
    ``weights`` overriding some of the auto signals' weights."""

    def rank(mem: AgentMemory, question: str, qvec: Vector) -> list[str]:
        hits = mem.recall(question, k=K, mode=mode, weights=weights)  # type: ignore[arg-type]
        return [h.id for h in hits]

    return rank


def store_hybrid(mem: AgentMemory, question: str, qvec: Vector) -> list[str]:
    """The memory store's own ``hybrid_recall`` (below the agent layer), same scope."""
    hits = mem.store.hybrid_recall(question, qvec, K, org_id=mem.org_id, agent_id=mem.agent_id)
    return [h.id for h in hits]


MODES = ("keyword", "semantic", "hybrid", "auto")
# The ablation of mode auto (--ablation): each signal alone (its weight 1, every other 0;
# the candidates still come from the semantic and keyword stages), and the fusion without
# it. Rankers that share a store share its access log: every recall's logged accesses
# feed the activation signal of the rankers after it (only-activation is not one
# ranker's own history).
ABLATION = [f"{how}-{s}" for s in SIGNALS for how in ("only", "without")]


def rankers(reference: Mapping[str, tuple[float, str]] | None = None) -> dict[str, Ranker]:
    """Every ranker by name: the modes, ``store-hybrid``, and per signal ``only-X``,
    ``without-X`` and ``with-X`` (the fusion with X at weight 0.3, for the signals that
    are off by default). ``reference``: a raw-library figure per mode, if known."""
    ref = reference or {}
    out = {m: Ranker(m, recall_mode(m), ref.get(m)) for m in MODES}
    out["store-hybrid"] = Ranker("store-hybrid", store_hybrid, ref.get("hybrid"))
    for s in SIGNALS:
        only = {o: 1.0 if o == s else 0.0 for o in SIGNALS}
        out[f"only-{s}"] = Ranker(f"only-{s}", recall_mode("auto", only))
        out[f"without-{s}"] = Ranker(f"without-{s}", recall_mode("auto", {s: 0.0}))
        out[f"with-{s}"] = Ranker(f"with-{s}", recall_mode("auto", {s: 0.3}))
    return out


def chosen_modes(
    spec: str, ablation: bool, known: Mapping[str, object]
) -> tuple[list[str], list[str]]:
    """The ``--modes`` names (plus the ablation's with ``--ablation``), and the unknown ones."""
    names = [m.strip() for m in spec.split(",") if m.strip()]
    if ablation:
        names += [m for m in ABLATION if m not in names]
    return names, [m for m in names if m not in known]


def common_args(
    ap: argparse.ArgumentParser,
    known: Mapping[str, object],
    default_modes: Sequence[str],
    quick_help: str,
) -> None:
    """The options both benchmarks take: --modes, --ablation, --json, --quick, --tmp,
    --cache-dir."""
    ap.add_argument(
        "--modes",
        default=",".join(default_modes),
        help=f"comma-separated ranking modes: {', '.join(known)}",
    )
    ap.add_argument(
        "--ablation",
        action="store_true",
        help="also each auto signal alone and the fusion without it (only-X, without-X)",
    )
    ap.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--tmp", type=Path, default=None, help="parent of the scratch store")
    ap.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help=f"where vectors are cached (default {cache_dir()}); never inside the repo",
    )


def cache_dir_checked(arg: Path | None) -> Path:
    """``--cache-dir`` or the default; a ValueError if it lies inside the repo (the
    vectors derive from the data, which never goes into the repo)."""
    vector_dir = arg or cache_dir()
    if vector_dir.resolve().is_relative_to(REPO):
        raise ValueError(
            f"--cache-dir {vector_dir} is inside the repo; the vectors derive from the data"
        )
    return vector_dir


def stderr_log() -> Callable[[str], None]:
    """A progress logger to stderr, with seconds since it was made."""
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {msg}", file=sys.stderr, flush=True)

    return log


def md_row(cells: Iterable[str]) -> str:
    """One markdown table row."""
    return "| " + " | ".join(cells) + " |"


def md_head(head: Sequence[str]) -> list[str]:
    """A markdown table's header and rule."""
    return [md_row(head), "|" + "---|" * len(head)]
