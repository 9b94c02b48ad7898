"""The two grids of the study and how they are run.

* The **catalog grid** (:func:`catalog_spec`): every catalog device with its vendor's serving stack
  (engine ``native``), the 15 models of the seeds' landscape, batch 1-1024, prompts of 128-131072
  tokens, bf16 and fp8, and ``parallelism = "auto"``: for every (device, model, precision) the
  layouts around the fewest devices that hold the weights (grids/auto_layouts.py), so a
  wafer-scale CS-3 is not forced onto 128 wafers and a Groq part gets the ~400 chips it needs.
  Seed 002's claims (sections 1-3 and 6 of the report) are read from it, each device at its best
  layout on a stated comparison basis.
* The **seed 004 grid** (:func:`seed004_spec`): the devices, models, batch sizes, precisions and
  layouts seed 004 measured, each device with the engine seed 004 used (vLLM on the GPUs,
  Cerebras' and SambaNova's own stacks on the dataflow systems), at the prompt and output
  lengths assumed for its data set (:data:`SEED004_PROMPT`, :data:`SEED004_OUTPUT`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import xarray as xr

import sweep
from grids.spec import DEFAULT_MODELS

from .claims import FIG8

#: generated tokens per request in the catalog grid (the default grid's setting)
CATALOG_OUTPUT = 256
#: largest replica the automatic layouts may use [devices]
MAX_DEVICES = 1024
#: seed 004's workload (MLSysChat1M / LMSYS-Chat-1M, first 1,000 conversations of 64-20,000
#: characters, the last assistant reply regenerated with its exact length; section III-B). The
#: seed gives no lengths; LMSYS-Chat-1M (Zheng et al., arXiv:2309.11998, Table 1) has on average
#: 2.0 turns per conversation, 69.5 tokens per user prompt and 214.5 per response. The output is
#: the final reply: 215 tokens. The prompt is the conversation before it: on average one earlier
#: exchange (69.5 + 214.5) and the last user prompt (69.5) = 354 tokens, plus ~40 tokens of the
#: Llama-3.1 chat template (system header, role markers): 400 tokens, rounded.
SEED004_PROMPT = 400
SEED004_OUTPUT = 215
WORKLOAD_RULE = ("LMSYS-Chat-1M (Zheng et al., arXiv:2309.11998, Table 1): 2.0 turns, 69.5 tokens "
                 "per prompt, 214.5 per response on average. Output = the regenerated final reply "
                 "= 215 tokens; prompt = the conversation before it = 69.5 + 214.5 + 69.5 = 354 "
                 "tokens plus ~40 chat-template tokens = 400 (rounded). Estimates: the seed used "
                 "the first 1,000 conversations of 64-20,000 characters, whose means may differ, "
                 "and the dataset paper counts tokens with another tokenizer than Llama-3's.")
#: spread of the output lengths (coefficient of variation) of seed 004's data set, for its
#: finite runs (docs/model.md section 13.7): LMSYS_CV_RULE says where it comes from
LMSYS_OUTPUT_CV = 1.0
#: the longest output of seed 004's data set [token]: its 20,000-character cap on a
#: conversation at ~4 characters per token (estimate)
LMSYS_OUTPUT_MAX = 5000.0
#: the other reading of the same quantiles, for the sensitivity (see LMSYS_CV_RULE)
LMSYS_OUTPUT_CV_ALT = 1.26
LMSYS_CV_RULE = (
    "LMSYS-Chat-1M's responses as Vidur (Agrawal et al., MLSys 2024) tabulates them "
    "(github.com/microsoft/vidur, vidur/config_optimizer/analyzer/dashboard/intro_page.py, "
    "workload LMSys-Chat-1M-4K, Llama-2 tokenizer): decode tokens mean 197, median 139, P90 484. "
    "A log-normal with that mean and median has coefficient of variation 1.00 "
    "(mean / median = sqrt(1 + cv^2)); one through the median and the P90 has 1.26. Estimates: "
    "Vidur counts every turn of a conversation, seed 004 regenerated the final reply of each of "
    "its first 1,000 conversations; no spread of that subset is published.")
#: seed 004's engine per device: vLLM on every GPU, the vendors' stacks on the dataflow parts
SEED004_ENGINE = {"a100-sxm-80g": "vllm", "h100-sxm": "vllm", "gh200": "vllm", "mi300x": "vllm",
                  "cs-3": "cerebras", "sn40l": "sambaflow"}
SEED004_MODELS = ["llama-3.1-8b", "qwen3-14b", "mistral-small-3.1-24b", "qwen3-32b",
                  "llama-3.3-nemotron-super-49b", "llama-3.3-70b", "qwen2.5-72b",
                  "llama-4-scout", "mixtral-8x22b", "qwen3-235b-a22b", "deepseek-r1"]
SEED004_LAYOUTS = ["tp1", "tp2", "tp4", "tp8", "tp16", "tp1-dp2", "tp1-dp4", "tp2-dp2", "ep4"]

QUICK_HARDWARE = [*FIG8, "a100-sxm-80g", "h100-sxm", "sn40l", "mtia-v2"]
QUICK_MODELS = ["llama-3.1-8b", "qwen3-14b", "llama-2-70b", "mixtral-8x7b"]


def catalog_spec(quick: bool = False) -> dict[str, Any]:
    """The catalog grid (module docstring); ``quick``: a handful of devices and models."""
    spec = {
        "name": "seeds study, catalog grid (python -m scripts.seeds)",
        "hardware": "all",
        "engine": ["native"],
        "model": list(DEFAULT_MODELS),
        "batch": [1, 4, 8, 32, 128, 1024],
        "context": [128, 1024, 8192, 32768, 131072],
        "output_len": CATALOG_OUTPUT,
        "precision": ["bf16", "fp8"],
        "parallelism": {"auto": True, "max_devices": MAX_DEVICES},
        "workload": {"prefill_chunk": 8192},
    }
    if quick:
        spec.update(name="seeds study, catalog grid, quick (tests)", hardware=list(QUICK_HARDWARE),
                    model=list(QUICK_MODELS), batch=[1, 8, 32, 128], context=[128, 1024, 32768])
    return spec


def seed004_spec() -> dict[str, Any]:
    """The seed 004 grid (module docstring); small, the same in quick and full mode."""
    return {
        "name": "seeds study, seed 004 grid (python -m scripts.seeds)",
        "hardware": list(SEED004_ENGINE),
        "engine": sorted(set(SEED004_ENGINE.values())),
        "model": list(SEED004_MODELS),
        "batch": {"from": 1, "to": 512, "scale": "log2"},
        "context": [SEED004_PROMPT],
        "output_len": SEED004_OUTPUT,
        "precision": ["bf16", "fp8", "w8a16"],
        "parallelism": list(SEED004_LAYOUTS),
        "workload": {"prefill_chunk": 8192},
    }


def with_own_engine(ds: xr.Dataset, engine_of: dict[str, str]) -> xr.Dataset:
    """Each device of ``ds`` with one engine (``engine_of[device]``): the ``engine`` dim removed,
    ``engine`` kept as a coordinate along ``hardware``."""
    parts = []
    for h in ds["hardware"].values:
        e = engine_of[str(h)]
        part = ds.sel(hardware=[h]).sel(engine=e, drop=True)
        parts.append(part.assign_coords(engine=("hardware", [e])))
    return xr.concat(parts, dim="hardware", combine_attrs="override")


@dataclass
class Grids:
    """The evaluated grids and how long they took [s]."""

    catalog: xr.Dataset
    seed004: xr.Dataset
    catalog_spec: dict[str, Any]
    seed004_spec: dict[str, Any]
    seconds: dict[str, float]


def run_grids(quick: bool = False) -> Grids:
    """Evaluate both grids in memory (the catalog grid with its single engine squeezed away)."""
    cat_spec, s4_spec = catalog_spec(quick), seed004_spec()
    t0 = time.perf_counter()
    cat = sweep.run(cat_spec, progress=False, max_memory="6 GiB")
    t1 = time.perf_counter()
    s4 = sweep.run(s4_spec, progress=False)
    t2 = time.perf_counter()
    cat = cat.squeeze("engine")
    s4 = with_own_engine(s4, SEED004_ENGINE)
    return Grids(cat, s4, cat_spec, s4_spec, {"catalog": t1 - t0, "seed004": t2 - t1})
