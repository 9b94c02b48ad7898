"""Build ``sweep/data/measurements/measurements.csv`` from the published measurements vendored in
``scripts/measurements/inputs/`` (``python -m scripts.measurements``; see docs/measurements.md).

One module per source: a converter from the raw rows of its transcription to tidy rows of the table
of ``sweep/data/measurements/schema.toml``. :data:`SOURCES` lists them in table order; each has
``KEY`` (the id prefix), ``FILE`` (its input), ``NAME``, ``RAW_ROWS`` (rows the input must have) and
``convert(path) -> Converted``; its rows come from the row builder of :mod:`.row_builder`.
:data:`STAGED` lists the sources of the staged table (``--staged``), in the same form.
"""

from __future__ import annotations

from scripts.measurements import (
    amd_mi300x,
    apex_plus,
    bench_serve,
    dstack,
    gb200_blogs,
    intel_gaudi,
    jetstream,
    neuron,
    optimum_neuron,
    rocm_vllm,
    seed004,
    splitwise,
    tpu_recipes,
    trtllm_v014,
    trtllm_v017,
    trtllm_v020,
    trtllm_v090,
    trtllm_v10,
)

SOURCES = (
    trtllm_v090,
    trtllm_v10,
    neuron,
    optimum_neuron,
    seed004,
    splitwise,
    apex_plus,
    trtllm_v014,
    trtllm_v017,
    trtllm_v020,
    rocm_vllm,
    amd_mi300x,
    dstack.Offline,
    dstack.Serving,
    intel_gaudi,
    jetstream,
    tpu_recipes,
    gb200_blogs.SGLang,
    gb200_blogs.VLLM,
)

#: transcribed and checked, built into their own table (``python -m scripts.measurements
#: --staged``, :data:`~scripts.measurements.common.STAGED_CSV`), not into the shipped one that
#: calibrates the model: what keeps them out is said in docs/measurements.md ("Staged sources")
STAGED = (
    bench_serve.GPUStack,
    bench_serve.VLLMProject,
)
