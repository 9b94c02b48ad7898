"""What every serving mode shares after its own timing: the capacity rule, the decode step's
diagnostics and the stored metrics  [model.md sections 9-11]."""

from __future__ import annotations

import math

from kernels.accelerate import scalar_jit
from kernels.params import HW
from kernels.roofline import (
    H_BCAP,
    H_CEN,
    H_CFIX,
    H_HC,
    H_HOSTP,
    H_JIT,
    H_OVI,
    L_DP,
    L_EP,
    L_OFF,
    L_PP,
    L_SPILL,
    L_TP,
    O_AI,
    O_BOUND,
    O_CONC,
    O_COV,
    O_CPM,
    O_E2E,
    O_FITS,
    O_HOSTF,
    O_MAXC,
    O_MBU,
    O_MEM,
    O_MFU,
    O_MIND,
    O_PWR,
    O_SPWR,
    O_THR,
    O_THRD,
    O_TPD,
    O_TPJ,
    O_TPJS,
    O_TPOT,
    O_TTFT,
    O_TTHR,
    O_WHY,
)

H_KVFREE = HW["kv_free_fraction"]


@scalar_jit
def max_sequences(geo, hw, ly, per_seq, act_dev):
    """The most sequences a replica runs at once: the engine's batch cap, and whole sequences of
    ``per_seq`` bytes each on the busiest rank in the device memory left after the weights and
    ``act_dev`` bytes of activations, of which an engine whose memory fraction applies to the
    free memory gives the KV cache its share ``kv_free_fraction`` (with ``spill``, the host
    tier's too)  [model.md section 11]. May be below 1 (not even one sequence fits)."""
    avail = geo.dev_cap - geo.weights_dev * (1.0 - ly[L_OFF]) - act_dev
    if avail > 0.0:
        avail *= hw[H_KVFREE]
    if ly[L_SPILL] > 0.5:
        avail += hw[H_HC] - geo.host_bytes
    if avail <= 0.0:
        return 0.0
    return min(hw[H_BCAP], ly[L_EP] * math.floor(avail / per_seq))


@scalar_jit
def decode_bound(hw, t_comp, t_mem, top, ts, td, th, d, rounds, t_ovh, t_stage, flops, traffic):
    """``bound`` and ``latency_cov`` of a decode step (pass ``d`` of :func:`pass_fixed`; ``top``
    its busy time, :func:`kernels.roofline.busy_time`)  [model.md section 10]."""
    # the whole communication time competes with the busy time: when it is overlapped, the longer
    # of the two sets the step; when it is not, the larger part is still the binding one
    comm = d.t_comm + d.t_hops / rounds
    overheads = t_ovh + hw[H_OVI] / rounds
    if top >= comm and top >= overheads:
        if t_comp >= t_mem:
            bound = 0.0
        elif ts >= td and ts >= th:
            bound = 1.0
        elif td >= th:
            bound = 2.0
        else:
            bound = 3.0
    elif comm >= overheads:
        bound = 4.0
    else:
        bound = 5.0
    # latency variance: device jitter and EP load imbalance, eq. (12)
    t_imb = d.t_a2a
    if t_comp >= t_mem:
        t_imb += t_comp * d.flops_exp / flops
    else:
        t_imb += t_mem * d.experts_read / traffic
    cov_ep = d.r_imb * t_imb / t_stage
    return bound, math.sqrt(hw[H_JIT] * hw[H_JIT] + cov_ep * cov_ep)


@scalar_jit
def store_metrics(out, j, hw, ly, ttft, tpot, e2e, requests, power_dev, output_len, context,
                  mem_dev, host_total, bound, ai, mfu, mbu, cov, min_dev, max_conc, conc):
    """Store a feasible point: latencies [s], ``requests`` completed per second per replica,
    ``power_dev`` the mean accelerator power of a device [W]; throughput, energy and cost follow
    (section 9)."""
    devices = ly[L_TP] * ly[L_PP] * ly[L_EP] * ly[L_DP]
    throughput = ly[L_DP] * requests * output_len
    power = devices * power_dev
    system_power = power + devices * hw[H_HOSTP]
    rate = devices * hw[H_CFIX] + hw[H_CEN] * system_power  # [USD/s]
    out[O_TTFT, j] = ttft
    out[O_TPOT, j] = tpot
    out[O_E2E, j] = e2e
    out[O_THR, j] = throughput
    out[O_TTHR, j] = ly[L_DP] * requests * (context + output_len)
    out[O_THRD, j] = throughput / devices
    out[O_TPJ, j] = throughput / power
    out[O_TPJS, j] = throughput / system_power
    out[O_PWR, j] = power
    out[O_SPWR, j] = system_power
    out[O_CPM, j] = 1e6 * rate / throughput
    out[O_TPD, j] = throughput / rate
    out[O_MEM, j] = mem_dev
    out[O_HOSTF, j] = host_total / mem_dev
    out[O_FITS, j] = 1.0
    out[O_WHY, j] = 0.0
    out[O_BOUND, j] = bound
    out[O_AI, j] = ai
    out[O_MFU, j] = mfu
    out[O_MBU, j] = mbu
    out[O_COV, j] = cov
    out[O_MIND, j] = min_dev
    out[O_MAXC, j] = max_conc
    out[O_CONC, j] = conc
