"""Time per call of one configuration, accel-sweep against the peers' own per-point calls, in one
process and one run (issue 24, item 1: "faster than every peer's per-point call").

The points are issue 24's: A100 and H100 x Llama-3.1-8B and 70B x batch 1, 16, 256 x context 128,
2,048, 8,192 (36 points, cycled; 256 generated tokens). Each path is timed over whole cycles of
them, in interleaved rounds; the figure is the minimum over rounds (load on a shared machine shows
as a floor, not as noise). Calls, per point:

- ``sweep.evaluate``, a dict of one row's values (tensor parallel over 1, 8, 2, 1 devices: the
  layouts of ``benchmarks/single_point.py``'s points cycled);
- ``sweep.evaluate_point``, the same values as keyword arguments;
- LLM-Viewer ``ModelAnalyzer.analyze(seqlen, batchsize)`` on an analyzer built once per model and
  device (built outside the timing, the favourable case for it; it has no tensor parallelism);
- llm-analysis ``LLMAnalysis.inference(batch_size_per_gpu, seq_len, num_tokens_to_generate)`` on an
  analysis object built once per model, device and tensor-parallel degree (also outside the
  timing). Its release 0.2.2 rejects Llama 3's shapes (it asserts that the FFN width is a
  multiple of the hidden size: 14,336 / 4,096 = 3.5), so it runs its own Llama-2-7B and 70B
  configurations, models of the same size and structure, with Llama 3.1's context window (its
  Llama-2 configurations stop at 4,096 tokens). It refuses a point whose KV cache does not fit
  (6 of the 36) with an AssertionError two thirds of the way through its code; such a call is
  timed like the others.

The peers are not dependencies of accel-sweep. To run them::

    pip install llm-analysis            # brings transformers 4.31, which LLM-Viewer needs too
    git clone https://github.com/hahnyuan/LLM-Viewer /tmp/LLM-Viewer
    PYTHONPATH=. python benchmarks/peers.py --llm-viewer /tmp/LLM-Viewer [--rounds 5]

A peer that cannot be imported is reported as such and the run goes on. Both peers read the
model shapes from this repository's copies of the models' ``config.json`` (grids/data/models).
Prints a Markdown table (docs/performance.md quotes it). Wall time is measured here and never
asserted in a test.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sweep

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"llama-3.1-8b": "Llama-3.1-8B", "llama-3.1-70b": "Llama-3.1-70B"}
#: our id -> (LLM-Viewer's hardware key, llm-analysis's GPU config name)
DEVICES = {"a100-sxm-80g": ("nvidia_A100_80G", "a100-sxm-80gb"),
           "h100-sxm": ("nvidia_H100_SXM", "h100-sxm-80gb")}
#: llm-analysis's own configurations of the same size (it rejects Llama 3's FFN width)
LLM_ANALYSIS_MODELS = {"llama-3.1-8b": "NousResearch_Llama-2-7b-hf",
                       "llama-3.1-70b": "upstage_Llama-2-70b-instruct-v2"}
TP = {"llama-3.1-8b": 1, "llama-3.1-70b": 8}
BATCHES = (1, 16, 256)
CONTEXTS = (128, 2048, 8192)
OUTPUT = 256

POINTS = [{"hardware": h, "model": m, "precision": "bf16", "parallelism": f"tp{TP[m]}",
           "batch": b, "context": s, "output_len": OUTPUT}
          for h, m, b, s in itertools.product(DEVICES, MODELS, BATCHES, CONTEXTS)]


def config_json(model: str) -> dict[str, Any]:
    return json.loads((ROOT / "grids" / "data" / "models" / f"{model}.json").read_text())


def llm_viewer_call(checkout: Path, workdir: Path) -> Callable[[dict[str, Any]], Any]:
    """LLM-Viewer's per-point call, its analyzers built beforehand (one per model and device)."""
    sys.path.insert(0, str(checkout))
    try:
        from model_analyzer import ModelAnalyzer  # type: ignore[import-not-found]
    except ImportError:
        sys.path.remove(str(checkout))
        raise

    analyzers = {}
    for m, name in MODELS.items():
        d = workdir / name  # LLM-Viewer finds its config module by the name in the model id
        d.mkdir(parents=True, exist_ok=True)
        cfg = {k: v for k, v in config_json(m).items() if k != "rope_scaling"}
        (d / "config.json").write_text(json.dumps(cfg))
        for h, (key, _) in DEVICES.items():
            with contextlib.redirect_stdout(io.StringIO()):
                analyzers[h, m] = ModelAnalyzer(str(d), key, config_file=None)

    def call(p: dict[str, Any]) -> Any:
        return analyzers[p["hardware"], p["model"]].analyze(p["context"], p["batch"])
    return call


def llm_analysis_call() -> Callable[[dict[str, Any]], Any]:
    """llm-analysis's per-point call, its analysis objects built beforehand."""
    import logging

    from llm_analysis.analysis import LLMAnalysis  # type: ignore[import-not-found]
    from llm_analysis.config import (  # type: ignore[import-not-found]
        ParallelismConfig,
        get_dtype_config_by_name,
        get_gpu_config_by_name,
        get_model_config_by_name,
    )
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)
    dtype = get_dtype_config_by_name("w16a16e16")
    objs = {}
    for m, name in LLM_ANALYSIS_MODELS.items():
        model = dataclasses.replace(get_model_config_by_name(name),
                                    max_seq_len=config_json(m)["max_position_embeddings"])
        for h, (_, gpu) in DEVICES.items():
            objs[h, m] = LLMAnalysis(model, get_gpu_config_by_name(gpu), dtype,
                                     ParallelismConfig(tp_size=TP[m]))

    def call(p: dict[str, Any]) -> Any:
        try:
            return objs[p["hardware"], p["model"]].inference(
                batch_size_per_gpu=p["batch"], seq_len=p["context"],
                num_tokens_to_generate=OUTPUT)
        except AssertionError:  # its answer for a point that does not fit: timed as a call
            return None
    return call


def paths(llm_viewer: Path | None, workdir: Path) -> tuple[dict[str, Callable], dict[str, str]]:
    """The calls timed, and the peers that could not be loaded with the reason."""
    out: dict[str, Callable] = {
        "`sweep.evaluate`, a dict of one row's values": lambda p: sweep.evaluate(p),
        "`sweep.evaluate_point`": lambda p: sweep.evaluate_point(**p)}
    missing: dict[str, str] = {}
    if llm_viewer is None:
        missing["LLM-Viewer `analyze()`"] = "no --llm-viewer checkout given"
    else:
        try:
            out["LLM-Viewer `analyze()` (no tensor parallelism)"] = llm_viewer_call(
                llm_viewer, workdir)
        except Exception as exc:  # a peer's own import or config error: report it, go on
            missing["LLM-Viewer `analyze()`"] = f"{type(exc).__name__}: {exc}"
    try:
        out["llm-analysis `inference()` (Llama-2-7B / 70B)"] = llm_analysis_call()
    except Exception as exc:
        missing["llm-analysis `inference()`"] = f"{type(exc).__name__}: {exc}"
    return out, missing


def time_cycle(fn: Callable[[dict[str, Any]], Any], cycles: int) -> float:
    """Seconds per call over ``cycles`` passes through every point."""
    t0 = time.perf_counter()
    for _ in range(cycles):
        for p in POINTS:
            fn(p)
    return (time.perf_counter() - t0) / (cycles * len(POINTS))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm-viewer", type=Path, default=None,
                    help="a checkout of github.com/hahnyuan/LLM-Viewer")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cycles", type=int, default=10,
                    help="passes through the 36 points per path and round")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        calls, missing = paths(args.llm_viewer, Path(tmp))
        with contextlib.redirect_stdout(io.StringIO()):
            for fn in calls.values():  # warm: compile or load the kernels, fill the caches
                time_cycle(fn, 1)
            best = {name: float("inf") for name in calls}
            for _ in range(args.rounds):
                for name, fn in calls.items():
                    best[name] = min(best[name], time_cycle(fn, args.cycles))
    fastest_peer = min((t for n, t in best.items() if not n.startswith("`sweep")),
                       default=None)
    print(f"{len(POINTS)} points x {args.cycles} cycles, minimum of {args.rounds} rounds")
    print()
    print("| path | time per point | vs the fastest peer |")
    print("|---|---:|---:|")
    for name, t in best.items():
        ratio = f"{t / fastest_peer:.2f}x" if fastest_peer else "-"
        print(f"| {name} | {t * 1e6:,.1f} us | {ratio} |")
    for name, why in missing.items():
        print(f"| {name} | not measured: {why} | - |")


if __name__ == "__main__":
    main()
