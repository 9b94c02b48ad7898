"""Is the decode compute factor GEMM efficiency? Check against a published GEMM profile.

Microsoft's Vidur simulator ships per-operation timings measured on the GPUs it models
(github.com/microsoft/vidur, ``data/profiling/compute/<gpu>/<model>/mlp.csv``: median
milliseconds of the QKV, up and down projections per number of tokens and tensor-parallel
degree, PyTorch bf16 GEMMs). This script turns one such file into achieved FLOP/s and bytes/s per
token count and sets them against the catalog's peak and achievable rates of the device, so
one can see where the GEMMs of a decode step at M sequences stand (docs/validation.md,
"TensorRT-LLM at maximum load"). The file is not shipped; pass the path of a clone's copy.

    python -m scripts.gemm_profile VIDUR/data/profiling/compute/h100/meta-llama/Llama-2-70b-hf/mlp.csv
        [--hardware h100-sxm] [--tp 1]
"""

from __future__ import annotations

import argparse

import pandas as pd

from grids import load_device

TOKENS = (1, 8, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 4096)
BYTES = 2.0  # bf16 weights and activations [B per element]


def table(path: str, hardware: str, tp: int) -> pd.DataFrame:
    raw = pd.read_csv(path)
    raw = raw[raw["num_tensor_parallel_workers"] == tp]
    dev = load_device(hardware)
    peak = dev.peak_flops["bf16"]  # [FLOP/s]
    bw = dev.tiers[0].bandwidth  # [B/s]
    rows = []
    for m, g in raw.groupby("num_tokens"):
        if m not in TOKENS:
            continue
        r = g.iloc[0]
        h = float(r["n_embd"])
        f = float(r["n_expanded_embd"]) / tp
        kv = h / float(r["n_head"]) * float(r["n_kv_head"])
        shapes = {"qkv": (h, (h + 2 * kv) / tp), "up": (h, 2 * f if r["use_gated_mlp"] else f),
                  "down": (f, h)}
        out = {"tokens": int(m)}
        for name, (k, n) in shapes.items():
            op = "attn_pre_proj" if name == "qkv" else f"mlp_{name}_proj"
            seconds = float(r[f"time_stats.{op}.median"]) * 1e-3  # [s]
            flops = 2.0 * m * k * n
            moved = BYTES * (k * n + m * k + m * n)
            out[f"{name} of peak FLOP/s"] = flops / seconds / peak
            out[f"{name} of peak B/s"] = moved / seconds / bw
        rows.append(out)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mlp_csv")
    ap.add_argument("--hardware", default="h100-sxm")
    ap.add_argument("--tp", type=int, default=1)
    args = ap.parse_args(argv)
    t = table(args.mlp_csv, args.hardware, args.tp)
    dev = load_device(args.hardware)
    print(f"{args.hardware} tp{args.tp}: catalog achievable compute {dev.efficiency.flops_efficiency}"
          f" of peak, bandwidth {dev.tiers[0].efficiency} of peak")
    cols = ["tokens"] + [c for c in t.columns if c != "tokens"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---:|" * len(cols))
    for _, r in t.iterrows():
        print("| " + " | ".join([f"{int(r['tokens'])}"] + [f"{r[c]:.2f}" for c in cols[1:]]) + " |")


if __name__ == "__main__":
    main()
