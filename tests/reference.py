"""Independent plain-Python reference of the performance model, written from ``docs/model.md`` only.

Nothing here is shared with ``kernels.roofline`` / ``kernels.grid``: it reads the same tables (the
array contract of :mod:`kernels.params`) but evaluates each point with scalar Python floats and
:mod:`math`, one function per section of the specification. Comments name the section and the
equation number of ``docs/model.md`` (v2: platforms = hardware x engine).

:func:`reference_point` evaluates one point from dicts (field name -> value) and returns
``{metric name: float}``; :func:`reference_grid` has the signature of ``kernels.evaluate_grid`` and
loops over the Cartesian grid one point at a time (the per-point Python baseline);
:func:`reference_points` mirrors ``kernels.evaluate_points`` (including its serving modes; the
continuous modes of section 13 are in ``tests/reference_serving.py``).

With ``diagnostics=True``, :func:`reference_point` also returns the intermediate quantities and
flags that say whether a discrete decision sits within a relative 1e-9 of its threshold, where an
equivalent but different order of floating-point operations may legitimately flip it:
``near_fit_edge`` (fits, codes 9-10), ``near_bound_tie`` (bound), ``near_cov_tie`` (the branch of
latency_cov), ``near_min_devices`` (the ceiling of (14)) and ``near_stage_step`` (the ceiling that
sets the busiest pipeline stage's layers ``L_s``, on which every metric depends).

Readings of the page where its text admits more than one (reported to the kernel's author, so
that the page can say which is meant; the kernel agrees with each):

* a segment that does not fit the device tiers fills what is left of them and only its excess goes
  to the host tier (section 4); without ``spill`` (code 9) that excess still counts in the host
  bytes of ``host_fraction``, which then says how much of the point did not fit;
* the host tier's time has no segment factor ``g_seg`` (section 4 writes it without one);
* a speculative round ``t_dec(k_s + 1)`` is a decode step on ``k_s + 1`` tokens per sequence:
  besides the FLOPs and the activation traffic that section 7 names, the collectives' and hops'
  payloads, the EP assignments (``phi``) and the experts they touch (``u``) scale too;
* "the decode step" of sections 9 and 10 is ``t_dec(1)``: its FLOPs, traffic, ``t_comp``,
  ``t_mem``, ``t_peak``, stage pass and communication give ``arithmetic_intensity``, ``mfu``,
  ``mbu``, ``bound`` and ``latency_cov`` (the decode power's activity is a speculative round's
  over ``tau``, section 9);
* the bytes a device sends (section 9's link energy) are each all-reduce's bandwidth term for the
  algorithm that runs, the all-to-alls' bytes and one hop of the micro-batch's activations when
  ``pp > 1`` (the power section names "bytes sent over the interconnect");
* "expert bytes / all bytes" of section 10 is the "experts" traffic entry of section 7,
  ``(1 - off) W_exp u``, over every byte of the step, host traffic included.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from kernels.params import (
    HW_FIELDS,
    LAYOUT_FIELDS,
    METRICS,
    MODEL_FIELDS,
    PRECISION_FIELDS,
    PX_FIELDS,
)

N_TIERS = 3
NAN = float("nan")
_EDGE = 1e-9          # relative distance to a threshold below which a decision is "near a tie"

BOUND_COMPUTE, BOUND_SRAM, BOUND_DRAM, BOUND_HOST, BOUND_INTERCONNECT, BOUND_OVERHEAD = range(6)
(FEASIBLE, ENGINE_UNSUPPORTED, NO_COMPUTE_DTYPE, TP_HEADS, EP_EXPERTS, PP_LAYERS, NO_HOST_TIER,
 BATCH_CAP, CONTEXT_WINDOW, MEMORY, HOST_CAPACITY, SATURATED) = range(12)
MODE_STATIC, MODE_CONTINUOUS, MODE_RATE = 0.0, 1.0, 2.0


def _near(a: float, b: float) -> bool:
    scale = max(abs(a), abs(b))
    return scale > 0 and abs(a - b) <= _EDGE * scale


def _near_integer(x: float) -> bool:
    """``x`` is within a relative 1e-9 of an integer (a ceiling or floor of it is a coin toss)."""
    return abs(x - round(x)) <= _EDGE * max(abs(x), 1.0)


# --------------------------------------------------------------------------------------- section 2
def structural_reason(hw: dict, md: dict, px: dict, ly: dict, batch: float, context: float,
                      output_len: float) -> int:
    """Section 2, codes 1-6 and 8 (code 7 is no longer produced: section 11): the first rule (in
    table order) that the point breaks, else 0.

    Codes 9 and 10 need the placement of section 4 (:func:`place`)."""
    tp, pp, ep = ly["tp"], ly["pp"], ly["ep"]
    n_exp = md["n_experts"]
    if hw["supported"] == 0:
        return ENGINE_UNSUPPORTED
    if px["peak"] == 0:
        return NO_COMPUTE_DTYPE
    if math.fmod(md["n_heads"], tp) != 0 and hw["pads_heads"] == 0:
        return TP_HEADS
    if ep > 1 and (n_exp == 0 or math.fmod(n_exp, ep) != 0):
        return EP_EXPERTS
    if pp > md["n_layers"]:
        return PP_LAYERS
    if (ly["offload"] > 0 or ly["spill"] != 0) and hw["host_capacity"] == 0:
        return NO_HOST_TIER
    if context + output_len > md["max_context"]:
        return CONTEXT_WINDOW
    return FEASIBLE


def is_compatible(hw: dict, md: dict, px: dict, ly: dict) -> bool:
    """Section 2, codes 1-6: the platform, precision and layout can take the model at all
    (the workload rules 7-8 and the capacity rules 9-10 aside)."""
    return structural_reason(hw, md, px, ly, 1.0, 0.0, 0.0) in (FEASIBLE, BATCH_CAP,
                                                                 CONTEXT_WINDOW)


# --------------------------------------------------------------------------------------- section 3
def head_padding(hw: dict, md: dict, ly: dict) -> float:
    """Section 3, head padding: ``a_pad = ceil(H/tp) tp / H`` when tp does not divide H."""
    h, tp = md["n_heads"], ly["tp"]
    if math.fmod(h, tp) != 0 and hw["pads_heads"] != 0:
        return math.ceil(h / tp) * tp / h
    return 1.0


def window_len(md: dict, x: float) -> float:
    """Section 3 (3): ``w(x) = x`` when ``W = 0``, else ``min(x, W)`` (sliding and chunked)."""
    w = md["window"]
    return x if w == 0 else min(x, w)


def kv_elems(md: dict, x: float) -> float:
    """Section 3 (3): per-sequence KV elements at length ``x``."""
    return md["kv_elems_full"] * x + md["kv_elems_window"] * window_len(md, x)


def kv_shard_fraction(md: dict, tp: float) -> float:
    """Section 3 (3): ``f_kv``."""
    n_kv = md["n_kv_heads"]
    if md["kv_tp_shardable"] != 0 and n_kv > 0:
        return math.ceil(n_kv / tp) / n_kv
    return 1.0


def kv_reads(hw: dict, md: dict, tp: float) -> float:
    """Section 3 (3b): how many times decode attention reads each KV head on a device: 1 for a
    GQA-aware kernel (or MLA's unsharded latent), else the device's query heads over its KV
    heads."""
    n_kv = md["n_kv_heads"]
    if hw["gqa_aware"] != 0 or md["kv_tp_shardable"] == 0 or n_kv <= 0:
        return 1.0
    return max(1.0, math.ceil(md["n_heads"] / tp) / math.ceil(n_kv / tp))


def chunk_keys(w: float, n: float) -> float:
    """Section 7: ``F(n) = q W (W+1)/2 + r (r+1)/2`` with ``n = q W + r``: the keys attended by
    the first ``n`` tokens of a sequence under chunked attention of window ``W``."""
    q = math.floor(n / w)
    r = n - q * w
    return q * w * (w + 1) / 2 + r * (r + 1) / 2


def sram_only(hw: dict) -> bool:
    """Section 3 (4): every placement tier with capacity is SRAM (the prompt streams through)."""
    return all(hw[f"tier{i}_kind"] == 0 for i in range(N_TIERS) if hw[f"tier{i}_capacity"] > 0)


def act_row(hw: dict, md: dict, pr: dict) -> float:
    """Section 3 (4): on an SRAM-only part, one sequence's activation row over every layer of the
    replica, streamed with it (0 elsewhere: a pass's activations are counted once)."""
    return md["act_elems"] / md["n_layers"] * pr["act_bytes"] if sram_only(hw) else 0.0


def sizes(hw: dict, md: dict, pr: dict, ly: dict, batch: float, context: float,
          output_len: float, inflight: bool) -> dict:
    """Section 3: head padding, the busiest pipeline stage, sequences per rank and the bytes per
    device of the dense weights (1), expert weights (1), KV cache (3) and activations (4)."""
    tp, pp, ep = ly["tp"], ly["pp"], ly["ep"]
    wb, ab, kvb, eb = pr["weight_bytes"], pr["act_bytes"], pr["kv_bytes"], pr["embed_bytes"]
    n_layers, l_moe, n_exp = md["n_layers"], md["n_moe_layers"], md["n_experts"]
    p_head, p_emb, p_exp = md["params_head"], md["params_embed_only"], md["params_expert"]
    near = False

    # head padding
    a_pad = head_padding(hw, md, ly)
    p_lin = md["params_linear"] + (a_pad - 1) * md["params_attention"]
    # (1) the attention projections a -attn16 scheme keeps at 16 bits: their bytes and FLOPs
    d_awb = pr["attn_weight_bytes"] - wb
    p_att16 = a_pad * md["params_attention"] if d_awb > 0 else 0.0
    w_lin = wb * p_lin + d_awb * a_pad * md["params_attention"]

    # pipeline stages (rule P)
    if pp == 1:
        l_s = n_layers
        w_ends = eb * (p_head + p_emb)
        w_read = eb * p_head
    else:
        w_layer = (w_lin + wb * l_moe * (n_exp / ep) * p_exp) / n_layers  # per device
        h = eb * p_head / w_layer
        e = eb * p_emb / w_layer
        x = (n_layers + h + e) / pp
        near = near or (h + e > 0 and _near_integer(x))
        l_s = min(n_layers, math.ceil(x))
        w_end = max(0.0, max(eb * p_head, eb * p_emb) - l_s * w_layer)
        w_ends = w_read = w_end
    sf = l_s / n_layers
    lm_s = l_moe * sf

    # (1) weights per device
    w_dense = (w_lin * sf + w_ends) / tp
    r_dense = (w_lin * sf + w_read) / tp
    w_exp = lm_s * (n_exp / ep) * wb * p_exp / tp

    # (2) whole sequences
    m = min(batch, pp)
    b_m = math.ceil(batch / m)
    g_m = math.ceil(b_m / ep)
    g = math.ceil(batch / ep)

    # (3) KV cache per device, sized at the static (S + O) or in-flight (S + O/2) length
    x_cap = context + output_len / 2 if inflight else context + output_len
    f_kv = kv_shard_fraction(md, tp)
    kv_dev = g * kv_elems(md, x_cap) * kvb * f_kv * sf

    # (4) activations per device: a chunk's worth, or on SRAM-only parts the streamed prompt's
    # one row per sequence
    t_c = g if sram_only(hw) else min(g * context, hw["prefill_chunk"])
    a_dev = (t_c * (md["act_elems"] / n_layers) * ab + g * md["vocab_size"] * 4) / tp

    return {"a_pad": a_pad, "p_lin": p_lin, "p_att16": p_att16, "l_s": l_s, "sf": sf, "lm_s": lm_s,
            "w_read": w_read, "w_dense": w_dense, "r_dense": r_dense, "w_exp": w_exp,
            "m": m, "b_m": b_m, "g_m": g_m, "g": g, "x_cap": x_cap, "f_kv": f_kv,
            "kv": kv_dev, "act": a_dev,
            "memory": w_dense + w_exp + kv_dev + a_dev, "near_stage_step": near}


def min_devices(hw: dict, md: dict, pr: dict, batch: float, context: float,
                x_cap: float) -> tuple[float, bool]:
    """Section 3 (14): the whole replica over the usable device memory (host tier excluded), and
    whether the quotient is within 1e-9 of an integer (where the ceiling is a coin toss)."""
    wb, ab, kvb, eb = pr["weight_bytes"], pr["act_bytes"], pr["kv_bytes"], pr["embed_bytes"]
    replica = (wb * md["params_linear"] + (pr["attn_weight_bytes"] - wb) * md["params_attention"]
               + eb * (md["params_head"] + md["params_embed_only"])
               + wb * md["n_moe_layers"] * md["n_experts"] * md["params_expert"]
               + batch * kv_elems(md, x_cap) * kvb
               + (batch if sram_only(hw) else min(batch * context, hw["prefill_chunk"]))
               * (md["act_elems"] / md["n_layers"]) * ab
               + batch * md["vocab_size"] * 4)
    usable = hw["capacity_fraction"] * sum(hw[f"tier{i}_capacity"] for i in range(N_TIERS))
    return float(math.ceil(replica / usable)), _near_integer(replica / usable)


def max_sequences(hw: dict, md: dict, pr: dict, ly: dict, sz: dict, x: float,
                  act_no_logits: float) -> float:
    """Section 11: ``B_fit = min(B_cap, ep floor(A / s_seq))``, the most sequences at length ``x``
    a replica holds at once beside the weights and ``act_no_logits`` bytes of activations (``A``
    the memory left, times the engine's ``kv_free_fraction``, plus the host tier's with spill)."""
    off = ly["offload"]
    usable = hw["capacity_fraction"] * sum(hw[f"tier{i}_capacity"] for i in range(N_TIERS))
    avail = usable - (1 - off) * (sz["w_dense"] + sz["w_exp"]) - act_no_logits
    if avail > 0:  # an engine whose memory fraction is of the free memory: the KV cache's share
        avail *= hw["kv_free_fraction"]
    if ly["spill"] != 0:
        avail += hw["host_capacity"] - off * (sz["w_dense"] + sz["w_exp"])
    if avail <= 0:
        return 0.0
    s_seq = (kv_elems(md, x) * pr["kv_bytes"] * kv_shard_fraction(md, ly["tp"]) * sz["sf"]
             + (md["vocab_size"] * 4 + act_row(hw, md, pr)) / ly["tp"])
    return min(hw["max_batch"], ly["ep"] * math.floor(avail / s_seq))


# --------------------------------------------------------------------------------------- section 4
SEGMENTS = ("dense", "exp", "rest", "kv", "act")   # placement order of section 4


def place(hw: dict, sz: dict, ly: dict) -> dict:
    """Section 4: place the five resident segments fastest tier first; spill or refuse the
    excess; the offloaded share lives in the host tier. Returns, per segment, its bytes per device
    tier and in the host tier, the host bytes, ``host_fraction`` and the reason code (0, 9, 10)."""
    off = ly["offload"]
    f_cap = hw["capacity_fraction"]
    free = [f_cap * hw[f"tier{i}_capacity"] for i in range(N_TIERS)]
    size = {
        "dense": (1 - off) * sz["r_dense"],
        "exp": (1 - off) * sz["w_exp"],
        "rest": (1 - off) * (sz["w_dense"] - sz["r_dense"]),
        "kv": sz["kv"],
        "act": sz["act"],
    }
    placed = {}
    spilled = 0.0
    reason = FEASIBLE
    for name in SEGMENTS:
        remaining = size[name]
        parts = [0.0] * N_TIERS
        for i in range(N_TIERS):
            take = min(remaining, free[i])
            if take > 0:
                parts[i] = take
                free[i] -= take
                remaining -= take
        in_host = 0.0
        if remaining > 0:
            # the excess spills (with ``spill``), or the point does not fit: then the excess still
            # counts as host bytes, so that host_fraction says how much did not fit
            in_host = remaining
            spilled += remaining
            if ly["spill"] == 0 and reason == FEASIBLE:
                reason = MEMORY
        placed[name] = (parts, in_host, size[name])
    offloaded = off * (sz["w_dense"] + sz["w_exp"])
    host_bytes = offloaded + spilled
    if reason == FEASIBLE and host_bytes > hw["host_capacity"]:
        reason = HOST_CAPACITY
    # decisions a rounding error could flip: the resident bytes against the device tiers, the
    # host bytes against the host tier
    resident = sum(size.values())
    usable = f_cap * sum(hw[f"tier{i}_capacity"] for i in range(N_TIERS))
    near = _near(resident, usable) or _near(host_bytes, hw["host_capacity"])
    return {"segments": placed, "host_bytes": host_bytes,
            "host_fraction": host_bytes / sz["memory"], "reason": reason, "near_edge": near}


def memory_time(hw: dict, px: dict, placement: dict, traffic: dict, host_traffic: float) -> dict:
    """Section 4 (8): spread each segment's traffic over the tiers in proportion to the bytes of
    it each holds; ``t_mem`` at achievable bandwidth (x segment factor), ``t_peak`` at peak."""
    g_seg = {"dense": px["weight_factor"], "exp": px["weight_factor"],
             "rest": px["weight_factor"], "kv": px["kv_factor"], "act": 1.0}
    t_mem = t_peak = t_weights = t_kv = 0.0
    kinds = {"sram": 0.0, "dram": 0.0, "host": 0.0}
    moved = {"sram": 0.0, "dram": 0.0, "host": 0.0}   # bytes per tier kind (section 9)
    host = host_traffic
    total = host_traffic
    for name, t in traffic.items():
        parts, in_host, size = placement["segments"][name]
        total += t
        if t == 0 or size <= 0:
            continue
        for i in range(N_TIERS):
            if parts[i] == 0:
                continue
            bytes_i = t * parts[i] / size
            bw = hw[f"tier{i}_bandwidth"]
            dt = bytes_i / (bw * hw[f"tier{i}_efficiency"] * g_seg[name])
            t_mem += dt
            t_peak += bytes_i / bw
            if name in ("dense", "exp"):
                t_weights += dt   # the weights' device-tier time (section 7, layer pipeline)
            elif name == "kv":
                t_kv += dt   # the KV cache's time (section 5, the attention phase)
            kind = "sram" if hw[f"tier{i}_kind"] == 0 else "dram"
            kinds[kind] += dt
            moved[kind] += bytes_i
        host += t * in_host / size
        if name == "kv":   # spilled KV is read over the host link in the attention phase
            t_kv += t * in_host / size / (hw["host_bandwidth"] * hw["host_efficiency"])
    if host > 0:
        dt = host / (hw["host_bandwidth"] * hw["host_efficiency"])
        t_mem += dt
        t_peak += host / hw["host_bandwidth"]
        kinds["host"] += dt
        moved["host"] = host
    return {"t_mem": t_mem, "t_peak": t_peak, "kinds": kinds, "traffic": total, "moved": moved,
            "t_weights": t_weights, "t_kv": t_kv}


# --------------------------------------------------------------------------------------- section 5
def level(hw: dict, n: float) -> tuple[str, float, float, float]:
    """Section 5: (name, bandwidth, per-step latency, direct links ``p``) of the innermost level
    holding ``n`` contiguous devices; only the scale-up domain has direct links."""
    if n <= hw["package_size"] and hw["package_size"] > 1:
        return "package", hw["package_bandwidth"], hw["package_latency"], 0.0
    if n <= hw["domain_size"]:
        return "domain", hw["link_bandwidth"], hw["link_latency"], hw["peer_links"]
    return "scaleout", hw["scaleout_bandwidth"], hw["scaleout_latency"], 0.0


def usable_bandwidth(hw: dict, bw: float, p: float, n: float) -> float:
    """Section 5: ``B_n = e_l bw min(n-1, p)/p``, or ``e_l bw`` on a switched fabric (p = 0)."""
    share = 1.0 if p == 0 else min(n - 1, p) / p
    return hw["link_efficiency"] * bw * share


def directly_connected(hw: dict, name: str, p: float) -> bool:
    """Section 5: a package, a switched scale-up domain or a full mesh (p >= n_dom - 1)."""
    return name == "package" or (name == "domain" and (p == 0 or p >= hw["domain_size"] - 1))


def _torus_block(n: float, dims: int) -> list[float]:
    """Section 5: the extents of an n-device block of a ``dims``-dimensional torus, as even as
    possible: log2(n) bits dealt to the dimensions one at a time (a fractional last bit)."""
    bits = [0.0] * dims
    left, i = math.log2(n), 0
    while left > 0:
        take = min(1.0, left)
        bits[i % dims] += take
        left -= take
        i += 1
    return [2.0 ** b for b in bits]


def allreduce(hw: dict, m: float, n: float) -> float:
    """(9): the all-reduce of ``m`` bytes over ``n`` devices the engine runs."""
    return allreduce_run(hw, m, n)[0]


def allreduce_run(hw: dict, m: float, n: float) -> tuple[float, float]:
    """(9) and section 9: (time, bytes one device sends) of the all-reduce the engine runs; the
    bytes are the algorithm's bandwidth term (ring and two-shot ``2 (n-1)/n m``, tree ``2 m``,
    one-shot ``(n-1) m``, in-switch ``(n+1)/n m``)."""
    if n == 1:
        return 0.0, 0.0
    name, bw, a, p = level(hw, n)
    b_n = usable_bandwidth(hw, bw, p, n)
    s = math.ceil(math.log2(n))
    o = hw["collective_overhead"]
    if name == "domain" and not directly_connected(hw, name, p):  # a torus: a ring per dimension
        dims = max(1, math.floor(p / 2))
        extents = _torus_block(n, dims)
        steps = 2 * sum(e - 1 for e in extents)
    else:
        steps = 2 * (n - 1)
    ring = 2 * (n - 1) / n * m
    library = [(o + steps * a + ring / b_n, ring)]                                # ring
    if name == "scaleout":
        library.append((o + 2 * s * a + 2 * m / b_n, 2 * m))                     # tree
    if (name == "domain" and p == 0 and hw["switch_efficiency"] > 0
            and hw["in_switch_overhead"] != math.inf):
        up = (n + 1) / n * m
        library.append((hw["in_switch_overhead"] + 2 * a
                        + up / (hw["switch_efficiency"] * bw), up))               # in-switch
    best = min(library, key=lambda c: c[0])   # the first of equal times, as the kernel keeps
    if (directly_connected(hw, name, p) and n <= hw["custom_ar_max_group"]
            and m <= hw["custom_ar_max_bytes"]):
        b_c = hw["custom_ar_efficiency"] * b_n
        one = (hw["custom_ar_overhead"] + s * a + (n - 1) * m / b_c, (n - 1) * m)
        two = (hw["custom_ar_overhead"] + 2 * s * a + ring / b_c, ring)
        if hw["fastest_collective"] == 1:
            return min((best, one, two), key=lambda c: c[0])
        limit = math.inf if n <= 2 else (hw["oneshot_max_bytes"] if n <= 4
                                         else hw["oneshot_max_bytes_large"])
        return one if m < limit else two
    return best


def alltoall(hw: dict, m: float, span: float, ep: float) -> float:
    """(10): ``ep`` ranks of a group spanning ``span`` devices, ``m`` bytes sent per device."""
    name, bw, a, p = level(hw, span)
    rounds = 1 if (name == "scaleout" or directly_connected(hw, name, p)) else ep - 1
    return hw["collective_overhead"] + rounds * a + m / usable_bandwidth(hw, bw, p, ep)


def collectives(hw: dict, md: dict, pr: dict, ly: dict, sz: dict, g_pass: float,
                phi: float, b_pass: float, passes: float = 1.0) -> dict:
    """(10) per stage pass: ``2 L_s`` all-reduces over ``tp`` and, under EP, ``2 Lm_s``
    all-to-alls over ``tp ep`` devices; ``g_pass`` is g' (sequences, or tokens for prefill) of
    the busiest rank, ``b_pass`` those of the whole micro-batch. The busiest rank sends its own
    tokens' assignments and receives ``phi`` times its share of all of them: the larger sets the
    all-to-all. A prefill in ``passes`` chunks runs every collective once per chunk on its share
    of the tokens (section 8): the bytes add up, the per-call costs and latencies are paid per
    chunk. ``link_bytes``: what the device sends (section 9), its all-reduces' and all-to-alls'
    bytes and one hop of the micro-batch's activations when ``pp > 1``."""
    tp, ep = ly["tp"], ly["ep"]
    cb = max(hw["comm_bytes"], pr["act_bytes"])  # cb' = max(cb, ab)
    d = md["d_model"]
    t_one, sent_one = allreduce_run(hw, g_pass * d * cb / passes, tp)
    t_ar = 2 * sz["l_s"] * passes * t_one
    sent = 2 * sz["l_s"] * passes * sent_one
    if ly["pp"] > 1:
        sent += g_pass * d * cb
    t_a2a = 0.0
    if ep > 1:
        k = md["experts_per_token"]
        n_a2a = max(g_pass * k, phi * b_pass * k / ep) * (ep - 1) / ep * d * cb / tp
        t_a2a = 2 * sz["lm_s"] * passes * alltoall(hw, n_a2a / passes, tp * ep, ep)
        sent += 2 * sz["lm_s"] * n_a2a
    return {"t_ar": t_ar, "t_a2a": t_a2a, "t_comm": t_ar + t_a2a, "link_bytes": sent}


def hops_leaving(pp: float, s: int, n: int) -> int:
    """(11) ``N_n = floor((pp - 1) / (n / gcd(s, n)))``: hops that leave an ``n``-device block."""
    return math.floor((pp - 1) / (n / math.gcd(s, n)))


def hop(hw: dict, name: str, nb: float) -> float:
    """(11) one hop of ``nb`` bytes on a level: ``o + a + nb / B_2``."""
    bw, a, p = {"package": (hw["package_bandwidth"], hw["package_latency"], 0.0),
                "domain": (hw["link_bandwidth"], hw["link_latency"], hw["peer_links"]),
                "scaleout": (hw["scaleout_bandwidth"], hw["scaleout_latency"], 0.0)}[name]
    return hw["collective_overhead"] + a + nb / usable_bandwidth(hw, bw, p, 2)


def pipeline_hops(hw: dict, md: dict, pr: dict, ly: dict, g_pass: float) -> float:
    """(11) ``T_hop``: the ``pp - 1`` hops of ``g' d cb'`` bytes, each on the level it crosses."""
    pp = ly["pp"]
    if pp == 1:
        return 0.0
    cb = max(hw["comm_bytes"], pr["act_bytes"])  # cb' = max(cb, ab)
    nb = g_pass * md["d_model"] * cb
    s = int(ly["tp"] * ly["ep"])
    n_pkg, n_dom = int(hw["package_size"]), int(hw["domain_size"])
    n_out = hops_leaving(pp, s, n_dom)
    if n_pkg > 1:
        n_up = hops_leaving(pp, s, n_pkg) - n_out
        n_pk = (pp - 1) - n_out - n_up
    else:
        n_up = (pp - 1) - n_out
        n_pk = 0
    return (n_out * hop(hw, "scaleout", nb) + n_up * hop(hw, "domain", nb)
            + n_pk * hop(hw, "package", nb))


def stage_pass(hw: dict, busy: float, t_comm: float, t_ovh: float) -> float:
    """Section 5: ``t_s = T + t_comm - ov min(t_comm, T) + t_ovh``, ``T`` the busy time."""
    return busy + t_comm - hw["comm_overlap"] * min(t_comm, busy) + t_ovh


# --------------------------------------------------------------------------------------- section 6
def ep_imbalance(n: float, ep: float) -> tuple[float, float]:
    """(12) ``phi`` (busiest rank's load over the mean) and ``r`` (its relative spread) for ``n``
    token-to-expert assignments over ``ep`` ranks."""
    if ep == 1:
        return 1.0, 0.0
    mean = n / ep
    sigma = math.sqrt(n * (1 / ep) * (1 - 1 / ep))
    ln_ep = math.log(ep)
    e_max = max(mean + sigma * math.sqrt(2 * ln_ep), math.ceil(mean))  # whole assignments
    phi = min(e_max / mean, ep)
    std_max = sigma * math.pi / math.sqrt(12 * ln_ep)
    return phi, std_max / (phi * mean)


def rank_experts_touched(md: dict, t: float, ep: float, phi: float) -> float:
    """Section 6: fraction of the busiest rank's ``E/ep`` experts touched when ``t`` tokens are
    routed and the rank receives ``phi t k / ep`` assignments, each to one of its experts
    uniformly; ``u(t)`` of (7) without expert parallelism."""
    if ep == 1:
        return experts_touched(md, t)
    if md["n_experts"] == 0 or t == 0:
        return 0.0
    per_rank = md["n_experts"] / ep
    if per_rank == 1:
        return 1.0
    return 1.0 - (1.0 - 1.0 / per_rank) ** (phi * t * md["experts_per_token"] / ep)


def experts_touched(md: dict, t: float) -> float:
    """(7) ``u(T) = 1 - (1 - k/E)^T``: fraction of the routed experts touched by ``T`` tokens."""
    n_exp, k = md["n_experts"], md["experts_per_token"]
    if n_exp == 0:
        return 0.0
    if k >= n_exp:
        return 1.0
    return 1.0 - (1.0 - k / n_exp) ** t


# --------------------------------------------------------------------------------------- section 7
def mean_window_len(md: dict, context: float, output_len: float) -> float:
    """Section 7: mean attended length ``c_w`` of a windowed layer over the generation."""
    w, c = md["window"], context + output_len / 2
    if w == 0:
        return c
    if md["window_chunked"] != 0:
        return (chunk_keys(w, context + output_len) - chunk_keys(w, context)) / output_len
    return min(c, w)


def layer_pipeline(hw: dict, sz: dict, t_comp: float, mem: dict, seqs: float) -> tuple:
    """Section 7: on a device with ``spatial_layers`` a decode pass of ``seqs`` sequences crosses
    the stage's ``l_s`` regions of ``1/l_s`` of the device each, in ``min(seqs, l_s)``
    micro-batches of ``ceil(seqs / m)`` sequences; a region pass reads the weights once and a
    micro-batch's share of everything else, ``l_s`` region passes per step."""
    depth = sz["l_s"]
    if not hw["spatial_layers"] or depth <= 1 or seqs <= 0:
        return t_comp, mem
    f = math.ceil(seqs / min(seqs, depth)) / seqs
    t_w = mem["t_weights"]
    return depth * f * t_comp, {**mem, "t_mem": depth * (t_w + f * (mem["t_mem"] - t_w))}


def busy(hw: dict, sz: dict, t_comp: float, t_attn: float, mem: dict,
         seqs: float) -> tuple[float, dict, float]:
    """Section 5: the busy time ``T`` of a pass whose attention (``t_attn`` of the compute time
    ``t_comp``; the KV cache's ``t_kv`` of the memory time) runs between the GEMMs, each phase its
    own roofline: ``T = max(t_attn, t_kv) + max(t_comp - t_attn, t_mem - t_kv)``. A decode pass
    of ``seqs`` > 0 sequences on a device with ``spatial_layers`` runs the layer pipeline of
    section 7 first: the attention phase, per sequence, scales like the other per-sequence work.
    Returns (t_comp, mem, T)."""
    # the attention phase through the same pipeline: per-sequence work only, no weights
    t_attn, attn = layer_pipeline(hw, sz, t_attn, {"t_mem": mem["t_kv"], "t_weights": 0.0}, seqs)
    t_kv = attn["t_mem"]
    t_comp, mem = layer_pipeline(hw, sz, t_comp, mem, seqs)
    return t_comp, mem, max(t_attn, t_kv) + max(t_comp - t_attn, mem["t_mem"] - t_kv)


def _phase_times(hw: dict, md: dict, pr: dict, px: dict, ly: dict, sz: dict, placement: dict, *,
                 flops: float, attn_flops: float, expert_flops: float, eta: float,
                 traffic: dict, host: float, expert_bytes: float, g_pass: float, b_pass: float,
                 phi: float, t_ovh: float, passes: float = 1.0, decode_seqs: float = 0.0,
                 a16_flops: float = 0.0, a16_ratio: float = 1.0) -> dict:
    """One stage pass of the busiest stage on one micro-batch: compute, memory (section 4),
    collectives (10), the busy time and overlap rule of section 5 and the hops (11).
    ``attn_flops`` of the ``flops`` are attention's, ``a16_flops`` the attention projections'
    that run at the 16-bit rate, ``a16_ratio`` times slower (sections 7-8); ``decode_seqs`` > 0: a
    decode pass of that many sequences (the layer pipeline of section 7 applies)."""
    t_comp = t_flops = (flops + a16_flops * (a16_ratio - 1)) / (px["peak"] * eta)
    mem = memory_time(hw, px, placement, traffic, host)
    t_comp, mem, t_busy = busy(hw, sz, t_comp, attn_flops / (px["peak"] * eta), mem,
                               decode_seqs)
    comm = collectives(hw, md, pr, ly, sz, g_pass, phi, b_pass, passes)
    t_s = stage_pass(hw, t_busy, comm["t_comm"], t_ovh)
    return {"flops": flops, "expert_flops": expert_flops, "t_comp": t_comp, "t_s": t_s,
            "t_flops": t_flops, "busy": t_busy, "t_ovh": t_ovh,
            "t_hop": pipeline_hops(hw, md, pr, ly, g_pass), "expert_bytes": expert_bytes, **mem,
            **comm}


def decode_step(hw, md, pr, px, ly, sz, placement, context, output_len, tokens: float) -> dict:
    """Section 7: one decode step of the whole pipeline, ``t_dec(tokens)``, on ``tokens`` tokens
    per sequence (1; ``k_s + 1`` for a speculative round). A round is a step on ``tokens`` times
    as many tokens: FLOPs, activation traffic, the collectives' and hops' payloads, the EP
    assignments and the experts they touch scale; weights and KV are read once."""
    tp, ep, off = ly["tp"], ly["ep"], ly["offload"]
    m, b_m, g_m = sz["m"], sz["b_m"], sz["g_m"]
    sf, lm_s = sz["sf"], sz["lm_s"]
    # (6) mean attended lengths
    c = context + output_len / 2
    c_w = mean_window_len(md, context, output_len)
    # (12), (7) the busiest EP rank and the experts it touches (n = b_m k assignments per token)
    n = tokens * b_m * md["experts_per_token"]
    phi, r = ep_imbalance(n, ep)
    u = rank_experts_touched(md, tokens * b_m, ep, phi)
    # FLOPs per device
    dense = tokens * 2 * g_m * (sz["p_lin"] * sf + sz["w_read"] / pr["embed_bytes"]) / tp
    expert = 2 * (n / ep) * phi * md["params_expert"] * lm_s / tp
    attention = (tokens * g_m
                 * (md["attn_flops_full_decode"] * c + md["attn_flops_window_decode"] * c_w)
                 * sf * sz["a_pad"] / tp)
    flops = dense + expert + attention
    # traffic per device (weights and KV read once per round, activations per token)
    kv_mean = md["kv_elems_full"] * c + md["kv_elems_window"] * c_w
    traffic = {
        "dense": (1 - off) * sz["r_dense"],
        "exp": (1 - off) * sz["w_exp"] * u,
        "kv": g_m * kv_mean * pr["kv_bytes"] * sz["f_kv"] * sf * kv_reads(hw, md, tp),
        "act": tokens * 2 * g_m * md["act_elems"] * sf * pr["act_bytes"] / tp,
    }
    host = off * (sz["r_dense"] + sz["w_exp"] * u)
    ph = _phase_times(hw, md, pr, px, ly, sz, placement, flops=flops, attn_flops=attention,
                      expert_flops=expert, eta=px["eff_decode"], traffic=traffic,
                      host=host, expert_bytes=traffic["exp"], g_pass=tokens * g_m,
                      b_pass=tokens * b_m, phi=phi, decode_seqs=g_m,
                      t_ovh=sz["l_s"] * hw["layer_overhead"],
                      a16_flops=tokens * 2 * g_m * sz["p_att16"] * sf / tp,
                      a16_ratio=px["attn16_ratio_decode"])
    # one step: every micro-batch through the busiest stage, one token through every hop, one
    # host iteration
    ph["time"] = max(m, ly["pp"]) * ph["t_s"] + ph["t_hop"] + hw["iteration_overhead"]
    ph.update(phi=phi, r=r, u=u, c=c, c_w=c_w)
    return ph


def activity(ph: dict) -> dict:
    """What one stage pass does (sections 9-10): FLOPs, time at peak bandwidth, bytes per tier
    kind and over the links."""
    return {"flops": ph["flops"], "t_flops": ph["t_flops"], "t_peak": ph["t_peak"],
            "link": ph["link_bytes"], **ph["moved"]}


def speculative(hw: dict, step) -> tuple[float, dict, dict]:
    """Section 7, speculative decoding: ``TPOT = (t_dec(k_s+1) + k_s c_d t_dec(1)) / tau``,
    ``tau = (1 - alpha^(k_s+1)) / (1 - alpha)`` (``k_s + 1`` at ``alpha = 1``); without it
    ``TPOT = t_dec(1)``. ``step(tokens)`` evaluates ``t_dec``. Returns TPOT, the decode step
    ``t_dec(1)`` (which sets the diagnostics of section 10) and the activity per generated token
    (:func:`activity`: a round's over ``tau``, the draft steps at ``c_d`` of a target step), which
    sets section 9's power and section 10's ``mfu`` and ``mbu``."""
    k_s = hw["spec_tokens"]
    if k_s == 0:
        one = step(1.0)
        return one["time"], one, activity(one)
    alpha = hw["spec_acceptance"]
    # the geometric sum 1 + alpha + ... + alpha^k_s, which the page writes in closed form
    tau = sum(alpha ** i for i in range(int(k_s) + 1))
    verify, one = step(k_s + 1), step(1.0)
    c_d = hw["spec_draft_cost"]
    tpot = (verify["time"] + k_s * c_d * one["time"]) / tau
    a_v, a_1 = activity(verify), activity(one)
    per_token = {k: (a_v[k] + k_s * c_d * a_1[k]) / tau for k in a_v}
    return tpot, one, per_token


# --------------------------------------------------------------------------------------- section 8
def pairs_window(md: dict, s: float) -> float:
    """(5) causal (query, key) pairs of a windowed layer over a prompt of ``s`` tokens."""
    w = md["window"]
    if w == 0 or s <= w:
        return s * (s + 1) / 2
    if md["window_chunked"] != 0:
        return chunk_keys(w, s)
    return w * (w + 1) / 2 + (s - w) * w


def prefill(hw, md, pr, px, ly, sz, placement, context) -> dict:
    """Section 8: the prompt of the busiest rank's micro-batch, in ``n_ch`` chunked passes."""
    tp, ep, off, s = ly["tp"], ly["ep"], ly["offload"], context
    m, b_m, g_m = sz["m"], sz["b_m"], sz["g_m"]
    sf, lm_s = sz["sf"], sz["lm_s"]
    n_ch = max(1, math.ceil(g_m * s / hw["prefill_chunk"]))  # one pass when chunk = inf
    n = b_m * s * md["experts_per_token"]
    phi, _ = ep_imbalance(n, ep)
    u = rank_experts_touched(md, b_m * s, ep, phi)
    dense = 2 * g_m * (s * sz["p_lin"] * sf + sz["w_read"] / pr["embed_bytes"]) / tp
    expert = 2 * (n / ep) * phi * md["params_expert"] * lm_s / tp
    attention = (g_m * (md["attn_flops_full_prefill"] * s * (s + 1) / 2
                        + md["attn_flops_window_prefill"] * pairs_window(md, s))
                 * sf * sz["a_pad"] / tp)
    traffic = {
        "dense": n_ch * (1 - off) * sz["r_dense"],
        "exp": n_ch * (1 - off) * sz["w_exp"] * u,
        "kv": g_m * kv_elems(md, s) * pr["kv_bytes"] * sz["f_kv"] * sf,
        "act": 2 * g_m * s * md["act_elems"] * sf * pr["act_bytes"] / tp,
    }
    host = n_ch * off * (sz["r_dense"] + sz["w_exp"] * u)
    ph = _phase_times(hw, md, pr, px, ly, sz, placement, flops=dense + expert + attention,
                      attn_flops=attention, expert_flops=expert, eta=px["eff_prefill"],
                      traffic=traffic, host=host, expert_bytes=traffic["exp"], g_pass=g_m * s,
                      b_pass=b_m * s, phi=phi,
                      t_ovh=n_ch * sz["l_s"] * hw["layer_overhead"], passes=n_ch,
                      a16_flops=2 * g_m * s * sz["p_att16"] * sf / tp,
                      a16_ratio=px["attn16_ratio_prefill"])
    ph["time"] = ((m + ly["pp"] - 1) * ph["t_s"] + ph["t_hop"] + n_ch * hw["iteration_overhead"]
                  + hw["request_overhead"])
    ph.update(n_ch=n_ch, phi=phi, u=u)
    return ph


# ----------------------------------------------------------------------------------- section 9-10
def pass_energy(hw: dict, act: dict) -> float:
    """Section 9: the energy of a pass's activity (:func:`activity`): the compute units at
    ``tdp - idle`` while its FLOPs run at the engine's rate, bytes per tier kind and over the
    links at their energies per byte."""
    return (act["t_flops"] * max(hw["tdp"] - hw["idle"], 0.0) + act["sram"] * hw["energy_sram"]
            + act["dram"] * hw["energy_dram"] + act["host"] * hw["energy_host"]
            + act["link"] * hw["energy_link"])


def phase_power(hw: dict, energy: float, t_phase: float) -> float:
    """Section 9: ``P = min(tdp, idle + energy / T_ph)``."""
    return min(hw["tdp"], hw["idle"] + energy / t_phase)


def bound(dec: dict, m: float, pp: float, t_iter: float) -> tuple[int, bool]:
    """Section 10: the resource limiting the decode step, and whether the call is a near tie."""
    steps = max(m, pp)
    comm = dec["t_comm"] + dec["t_hop"] / steps   # all of it: overlapped, the longer one binds
    ovh = dec["t_ovh"] + t_iter / steps
    t_comp, t_mem = dec["t_comp"], dec["t_mem"]
    top = dec["busy"]
    near = _near(top, comm) or _near(top, ovh)
    if top >= comm and top >= ovh:
        near = near or _near(t_comp, t_mem)
        if t_comp >= t_mem:
            return BOUND_COMPUTE, near
        times = [dec["kinds"]["sram"], dec["kinds"]["dram"], dec["kinds"]["host"]]
        best = max(times)   # index() takes the first, i.e. the faster tier, on a tie
        near = near or sum(_near(t, best) for t in times) > 1
        return BOUND_SRAM + times.index(best), near
    near = near or _near(comm, ovh)
    return (BOUND_INTERCONNECT if comm >= ovh else BOUND_OVERHEAD), near


def latency_cov(hw: dict, dec: dict) -> tuple[float, bool]:
    """Section 10: ``sqrt(j^2 + (r t_imb / t_s)^2)``; the flag says ``t_comp ~ t_mem``."""
    if dec["t_comp"] >= dec["t_mem"]:
        share = dec["t_comp"] * dec["expert_flops"] / dec["flops"] if dec["flops"] > 0 else 0.0
    else:
        share = dec["t_mem"] * dec["expert_bytes"] / dec["traffic"] if dec["traffic"] > 0 else 0.0
    t_imb = dec["t_a2a"] + share
    cov = math.sqrt(hw["jitter"] ** 2 + (dec["r"] * t_imb / dec["t_s"]) ** 2)
    return cov, dec["r"] > 0 and _near(dec["t_comp"], dec["t_mem"])


# ------------------------------------------------------------------------------------ the point
def reference_point(hw: dict, md: dict, px: dict, batch, context, output_len, pr: dict, ly: dict,
                    mode: float = MODE_STATIC, *, diagnostics: bool = False,
                    rate_concurrency: float | None = None) -> dict:
    """Every metric of ``docs/model.md`` at one point, as ``{metric name: float}``.

    ``hw``: a platform row (HW_FIELDS), ``px``: its row for the precision (PX_FIELDS), ``md``,
    ``pr``, ``ly``: model, precision and layout rows; ``batch`` [sequences; requests/s at a
    rate], ``context`` and ``output_len`` [tokens]; ``mode``: static batch (sections 7-11) or
    continuous batching at a concurrency or a rate (section 13, ``tests/reference_serving.py``).
    """
    if mode != MODE_STATIC:
        from tests.reference_serving import continuous_point

        return continuous_point(hw, md, px, batch, context, output_len, pr, ly,
                                mode == MODE_RATE, diagnostics=diagnostics,
                                rate_concurrency=rate_concurrency)
    return static_point(hw, md, px, batch, context, output_len, pr, ly, diagnostics=diagnostics)


def static_point(hw: dict, md: dict, px: dict, batch, context, output_len, pr: dict, ly: dict,
                 *, diagnostics: bool = False) -> dict:
    """Section 11: a static batch, in waves of what fits at once when it does not."""
    batch, context, output_len = float(batch), float(context), float(output_len)
    res = static_batch_point(hw, md, px, batch, context, output_len, pr, ly,
                             diagnostics=diagnostics)
    if res["infeasible_reason"] not in (FEASIBLE, MEMORY, HOST_CAPACITY):
        return res
    sz = sizes(hw, md, pr, ly, batch, context, output_len, False)
    act_no_logits = sz["act"] - sz["g"] * (md["vocab_size"] * 4 + act_row(hw, md, pr)) / ly["tp"]
    b_fit = max_sequences(hw, md, pr, ly, sz, context + output_len, act_no_logits)
    if batch <= b_fit or b_fit < 1:
        res["max_concurrency"] = max(b_fit, 0.0)
        res["concurrency"] = batch if res["fits"] == 1.0 else NAN
        return res
    n_w = math.ceil(batch / b_fit)
    b_w = float(math.ceil(batch / n_w))
    wave = static_batch_point(hw, md, px, b_w, context, output_len, pr, ly,
                              diagnostics=diagnostics)
    if wave["fits"] != 1.0:
        wave["min_devices"] = res["min_devices"]
        wave["max_concurrency"] = b_fit
        return wave
    out = dict(wave)
    wait = (n_w - 1) / 2 * wave["e2e_latency"]
    scale = batch / (n_w * b_w)  # the waves' sequences per second over one wave's
    out.update(ttft=wave["ttft"] + wait, e2e_latency=wave["e2e_latency"] + wait,
               min_devices=res["min_devices"], max_concurrency=b_fit, concurrency=b_w)
    for k in ("throughput", "total_throughput", "throughput_per_device", "tokens_per_joule",
              "tokens_per_joule_system", "tokens_per_dollar"):
        out[k] = wave[k] * scale
    out["cost_per_mtok"] = wave["cost_per_mtok"] / scale
    return out


def static_batch_point(hw: dict, md: dict, px: dict, batch, context, output_len, pr: dict,
                       ly: dict, *, diagnostics: bool = False) -> dict:
    """Sections 2-10: one static batch of ``batch`` sequences at once."""
    batch, context, output_len = float(batch), float(context), float(output_len)
    out = dict.fromkeys(METRICS, NAN)
    out.update(fits=0.0, bound=-1.0)
    extra = {"near_fit_edge": False, "near_bound_tie": False, "near_cov_tie": False,
             "near_min_devices": False, "near_stage_step": False}

    def done(res: dict) -> dict:
        return {**res, **extra} if diagnostics else res

    # section 2, codes 1-8: every metric NaN
    reason = structural_reason(hw, md, px, ly, batch, context, output_len)
    if reason != FEASIBLE:
        out["infeasible_reason"] = float(reason)
        return done(out)

    # section 3 and (14)
    sz = sizes(hw, md, pr, ly, batch, context, output_len, False)
    out["memory_per_device"] = sz["memory"]
    out["min_devices"], extra["near_min_devices"] = min_devices(hw, md, pr, batch, context,
                                                                 sz["x_cap"])
    extra["near_stage_step"] = sz["near_stage_step"]
    # section 4, codes 9-10: memory_per_device, min_devices and host_fraction keep their values
    placement = place(hw, sz, ly)
    out["host_fraction"] = placement["host_fraction"]
    extra["near_fit_edge"] = placement["near_edge"]
    if placement["reason"] != FEASIBLE:
        out["infeasible_reason"] = float(placement["reason"])
        return done(out)

    # sections 7 and 8
    m, pp, dp = sz["m"], ly["pp"], ly["dp"]
    tpot, dec, per_token = speculative(
        hw, lambda tokens: decode_step(hw, md, pr, px, ly, sz, placement, context, output_len,
                                       tokens))
    pre = prefill(hw, md, pr, px, ly, sz, placement, context)
    ttft = pre["time"]

    # section 9 (13)
    e2e = ttft + (output_len - 1) * tpot
    devices = ly["tp"] * pp * ly["ep"] * dp
    throughput = dp * batch * output_len / e2e
    p_pre = phase_power(hw, m * pass_energy(hw, activity(pre)), ttft)
    p_dec = phase_power(hw, m * pass_energy(hw, per_token), tpot)
    energy = p_pre * ttft + p_dec * (output_len - 1) * tpot
    power = devices * energy / e2e
    system_power = power + devices * hw["host_power"]
    rate = devices * hw["cost_fixed"] + hw["cost_energy"] * system_power

    # section 10
    b, near_tie = bound(dec, m, pp, hw["iteration_overhead"])
    cov, near_cov = latency_cov(hw, dec)
    extra["near_bound_tie"] = near_tie
    extra["near_cov_tie"] = near_cov

    out.update(
        ttft=ttft, tpot=tpot, e2e_latency=e2e, throughput=throughput,
        total_throughput=dp * batch * (context + output_len) / e2e,
        throughput_per_device=throughput / devices,
        tokens_per_joule=throughput / power, tokens_per_joule_system=throughput / system_power,
        power=power, system_power=system_power,
        cost_per_mtok=1e6 * rate / throughput, tokens_per_dollar=throughput / rate,
        fits=1.0, infeasible_reason=0.0, bound=float(b),
        arithmetic_intensity=dec["flops"] / dec["traffic"],
        mfu=m * per_token["flops"] / (px["peak"] * tpot), mbu=m * per_token["t_peak"] / tpot,
        latency_cov=cov, concurrency=batch,
    )
    if diagnostics:
        extra.update(decode=dec, prefill=pre, sizes=sz, placement=placement, p_pre=p_pre,
                     p_dec=p_dec)
    return done(out)


# ------------------------------------------------------------------------------------ the tables
def rows(table: np.ndarray, fields: tuple[str, ...]) -> list[dict]:
    """Table rows as ``{field: float}`` dicts."""
    table = np.asarray(table, dtype=np.float64)
    return [{f: float(v) for f, v in zip(fields, row)} for row in table]


def px_rows(px: np.ndarray) -> list[list[dict]]:
    """The (platform, precision, field) table as nested lists of ``{field: float}`` dicts."""
    px = np.asarray(px, dtype=np.float64)
    return [rows(px[h], PX_FIELDS) for h in range(px.shape[0])]


def reference_grid(hw, md, px, batch, context, output_len, pr, ly,
                   mode: float = MODE_STATIC) -> np.ndarray:
    """Same signature and output layout as ``kernels.evaluate_grid``, one point at a time."""
    hws, mds, pxs = rows(hw, HW_FIELDS), rows(md, MODEL_FIELDS), px_rows(px)
    prs, lys = rows(pr, PRECISION_FIELDS), rows(ly, LAYOUT_FIELDS)
    bs, ss, os_ = (np.asarray(a, dtype=np.float64).reshape(-1)
                   for a in (batch, context, output_len))
    shape = (len(METRICS), len(hws), len(mds), len(bs), len(ss), len(os_), len(prs), len(lys))
    out = np.empty(shape, dtype=np.float32)
    for (h, hwd), (mi, mdd), (bi, b), (si, s), (oi, o), (pi, prd), (li, lyd) in itertools.product(
            enumerate(hws), enumerate(mds), enumerate(bs), enumerate(ss), enumerate(os_),
            enumerate(prs), enumerate(lys)):
        res = reference_point(hwd, mdd, pxs[h][pi], b, s, o, prd, lyd, mode)
        out[:, h, mi, bi, si, oi, pi, li] = [res[name] for name in METRICS]
    return out


def reference_points(hw, md, px, pr, ly, hi, mi, pi, li, batch, context, output_len,
                     mode=None) -> np.ndarray:
    """Same signature and output layout as ``kernels.evaluate_points``."""
    hws, mds, pxs = rows(hw, HW_FIELDS), rows(md, MODEL_FIELDS), px_rows(px)
    prs, lys = rows(pr, PRECISION_FIELDS), rows(ly, LAYOUT_FIELDS)
    idx = [np.asarray(a).reshape(-1).astype(np.int64) for a in (hi, mi, pi, li)]
    wl = [np.asarray(a, dtype=np.float64).reshape(-1) for a in (batch, context, output_len)]
    n = idx[0].shape[0]
    flags = (np.zeros(n) if mode is None
             else np.broadcast_to(np.asarray(mode, dtype=np.float64).reshape(-1), (n,)))
    out = np.empty((len(METRICS), n), dtype=np.float32)
    for j in range(n):
        h, m_, p, la = (int(a[j]) for a in idx)
        res = reference_point(hws[h], mds[m_], pxs[h][p], wl[0][j], wl[1][j], wl[2][j],
                              prs[p], lys[la], float(flags[j]))
        out[:, j] = [res[name] for name in METRICS]
    return out
