"""One point in any serving mode, in three stages by the axes each quantity depends on
[model.md sections 2, 13].

The Cartesian kernel computes each stage once per distinct value of its axes while the point-list
kernel chains them per point: :func:`stage_static` (platform, model, batch, precision, layout),
:func:`stage_prompt` (+ prompt length), :func:`stage_point` (+ output length). The serving mode
(``kernels.params.MODE_*``) decides what a stage holds: a static batch's decode step and prefill
(:mod:`kernels.static`), or, under continuous batching, only the replica's geometry (the
scheduler's steady state needs the lengths, :mod:`kernels.serving`).
"""

from __future__ import annotations

from kernels.accelerate import scalar_jit
from kernels.params import MODE_RATE, MODE_STATIC
from kernels.roofline import (
    M_CTX,
    R_CONTEXT,
    X_GW,
    stage_geometry,
    store_infeasible,
)
from kernels.serving import continuous_point
from kernels.static import Prompt, static_batch, static_point, static_prompt


@scalar_jit
def stage_static(hw, md, px, batch, pr, ly, mode):
    """The geometry of one compatible (platform, model, precision, layout) and, for a static
    batch, the batch's decode step (for continuous batching the batch's own, unused)."""
    geo = stage_geometry(hw, md, pr, ly, px[X_GW])
    return static_batch(geo, hw, md, px, pr, ly, batch if mode == MODE_STATIC else 1.0)


@scalar_jit
def stage_prompt(st, hw, md, px, pr, ly, batch, context, mode):
    """A static batch's prefill (for continuous batching a stand-in of the same type, unused:
    the scheduler's iterations need the output length too)."""
    if mode == MODE_STATIC:
        return static_prompt(st, hw, md, px, pr, ly, batch, context)
    return Prompt(0.0, 0.0, st.dec, 0.0, 0.0, 1.0)


@scalar_jit
def stage_point(st, pt, hw, md, px, pr, ly, rows, batch, context, output_len, mode, out, j):
    """Every metric of one compatible point, stored in ``out[:, j]``. ``hw`` ... ``ly`` are the
    table rows as tuples (the static batch's physics, inlined here); ``rows`` the same rows as
    pointers (:func:`kernels.accelerate.row_pointer`, in the order hw, md, px, pr, ly), which
    the scheduler's called functions take instead: one argument each instead of one per
    field."""
    if context + output_len > md[M_CTX]:
        store_infeasible(out, j, R_CONTEXT)
        return
    if mode == MODE_STATIC:
        static_point(st, pt, hw, md, px, pr, ly, batch, context, output_len, out, j)
    else:
        continuous_point(st.geo, rows[0], rows[1], rows[2], rows[3], rows[4], batch, context,
                         output_len, mode == MODE_RATE, out, j)

