"""Decode on a weight-stationary layer pipeline: each layer on its own region of the device.

A numba scalar helper inlined into ``kernels.roofline.stage_point`` (docs/model.md section 7).
On a wafer-scale part (Cerebras WSE) every layer of a stage is laid out on its own region of the
device, with its weights in that region's SRAM and that region's share of the compute and of the
SRAM bandwidth. A token crosses the regions one after the other, so a decode step cannot use the
whole device's bandwidth on one layer at a time, as a GPU does: it is a pipeline of ``depth``
stages each holding ``1/depth`` of the device. With ``seqs`` sequences split into
``m = min(seqs, depth)`` micro-batches of ``ceil(seqs / m)`` sequences, a step takes
``max(m, depth) = depth`` region passes, and a region's pass over one micro-batch takes what the
whole device takes for that micro-batch over all the layers (a region has 1/depth of the
resources and 1/depth of the work): the weights once, the per-sequence reads and FLOPs for the
micro-batch's sequences.

Units: times [s]; counts are plain numbers.
"""

from __future__ import annotations

import math

from kernels.accelerate import scalar_jit


@scalar_jit
def layer_pipeline_times(t_comp, t_mem, t_weights, depth, seqs):
    """Compute and memory time [s] of one decode step of ``seqs`` sequences through a pipeline
    of ``depth`` layer regions, from the whole device's ``t_comp``, ``t_mem`` for those sequences,
    ``t_weights`` of which is reading the weights (the part that does not scale with sequences).

    ``m = min(seqs, depth)`` micro-batches, a fraction ``f = ceil(seqs/m) / seqs`` of the
    sequences each: ``(depth f t_comp, depth (t_weights + f (t_mem - t_weights)))``; unchanged for
    ``depth <= 1``  [model.md section 7].
    """
    if depth <= 1.0 or seqs <= 0.0:
        return t_comp, t_mem
    m = min(seqs, depth)
    f = math.ceil(seqs / m) / seqs
    return depth * f * t_comp, depth * (t_weights + f * (t_mem - t_weights))
